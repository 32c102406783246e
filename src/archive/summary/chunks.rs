//! `events.bin` cut into pieces of whole event records, for decoding on
//! several threads (DESIGN §11: `archive info` at a large fraction of `cat`
//! speed).
//!
//! A [`Cutter`] is shared by the decoders; each takes the next piece under
//! a lock, frames it ([`Piece::frame`], outside the lock) and has it
//! settled ([`Cutter::settle`], under the lock, in the order the pieces
//! were handed out). The cutter applies the framing rules of reference
//! §8–§9 ([`Framing`]): torn tails, the trailer and the records after it
//! are settled there, so a settled piece holds only complete event records
//! before the trailer and can be decoded by any worker in any order. The
//! piece notes where each record starts, so a decoder does not walk the
//! length chain a second time (that walk waits on one load per record).
//!
//! Two cutters share the framing: the mapped one (`mapped.rs`), which hands
//! out windows of the file read in place, each framed by its decoder from
//! a boundary it finds (`boundary.rs`) and checked against the serial walk
//! as it is settled, and [`EventChunks`] here, which reads chunks into
//! reused buffers from any reader, for files that cannot be mapped, and
//! walks each serially as it reads it. A chunk buffer only grows for a record larger than the chunk
//! (up to the 64 MiB record cap plus a chunk).

use std::io::{self, Read};

use crate::archive::format::framing::{
    le_u16, le_u32, le_u64, Torn, TornReason, EVENT_HEADER_LEN, MAX_RECORD_BYTES, TRAILER_LEN,
    TRAILER_MAGIC, TRAILER_TYPE,
};
use crate::archive::memory::ops::may_be_memory;
use crate::archive::summary::prefetch::prefetch;

/// What a decoder holds between its turns at a [`Cutter`]: a buffer the
/// cutter fills, or a window it hands out.
pub(in crate::archive) trait Piece: Default {
    /// The event records the piece holds.
    fn records(&self) -> Records<'_>;
    /// Lets go of what can be let go of without the cutter's lock (a
    /// mapped window), once the piece's records are tallied.
    fn release(&mut self) {}
    /// Frames the piece speculatively, outside the cutter's lock, between
    /// [`Cutter::next`] and [`Cutter::settle`] (a mapped window walks its
    /// records from a boundary it finds itself).
    fn frame(&mut self) {}
}

/// Hands out the records of `events.bin` in pieces, in file order, to the
/// decoders that share it.
pub(in crate::archive) trait Cutter: Send {
    /// What each decoder holds.
    type Piece: Piece;
    /// Hands `piece` the next part of the stream; false when the stream
    /// is exhausted. Pieces are settled in the order they are handed out.
    fn next(&mut self, piece: &mut Self::Piece) -> io::Result<bool>;
    /// Settles the records of a piece [`Piece::frame`] has framed, in the
    /// order the pieces were handed out: after it the piece holds exactly
    /// the event records the serial walk finds in its part (perhaps none).
    /// A cutter that frames as it hands out has nothing left to do.
    fn settle(&mut self, _piece: &mut Self::Piece) -> io::Result<()> {
        Ok(())
    }
    /// The framing outcome: torn tail, trailer, records after it, bytes
    /// after them.
    fn framing(&self) -> &Framing;
    /// The length the pass began with and the length the file was found
    /// at, when it turned out shorter (cut by another program while it
    /// was read).
    fn cut_short(&self) -> Option<(u64, u64)> {
        None
    }
}

/// How far ahead of the record being walked the framing walk asks for the
/// bytes it will reach (measured: without it the walk over a mapped window
/// takes longer than decoding the window).
const WALK_PREFETCH: usize = 4096;

/// Whole event records in `buf`, each starting at one of `starts`, the
/// first byte of `buf` at file offset `offset`. Reused from chunk to chunk.
#[derive(Default)]
pub struct Chunk {
    /// The bytes read (its length is the capacity in use, not the data).
    pub buf: Vec<u8>,
    /// Where each event record starts in `buf`, in file order; every one
    /// is a complete record of at least a header, before any trailer.
    pub starts: RecordStarts,
    /// File offset of `buf[0]`.
    pub offset: u64,
}

impl Piece for Chunk {
    fn records(&self) -> Records<'_> {
        self.starts.records(&self.buf, self.offset)
    }
}

/// Where the records of a chunk or window start, as a walk along their
/// lengths notes them, and which of them may be allocations or frees
/// ([`may_be_memory`]), so the allocation map reads only those.
#[derive(Default)]
pub struct RecordStarts {
    /// Each record's start, in file order.
    at: Vec<u32>,
    /// Indexes into `at` of the records that may be allocations or frees.
    memory: Vec<u32>,
}

impl RecordStarts {
    /// Notes a record of raw type `event_type` starting at `pos`.
    #[inline]
    pub(in crate::archive) fn push(&mut self, pos: u32, event_type: u16) {
        if may_be_memory(event_type) {
            self.memory.push(self.at.len() as u32);
        }
        self.at.push(pos);
    }

    /// Forgets every record.
    pub(in crate::archive) fn clear(&mut self) {
        self.at.clear();
        self.memory.clear();
    }

    /// Where the records start.
    pub(in crate::archive) fn at(&self) -> &[u32] {
        &self.at
    }

    /// Forgets the records before the `i`th (the mapped cutter's, as it
    /// settles a window).
    #[cfg(target_os = "linux")]
    pub(in crate::archive) fn drop_before(&mut self, i: usize) {
        self.at.drain(..i);
        let i = i as u32;
        self.memory.retain(|&m| m >= i);
        self.memory.iter_mut().for_each(|m| *m -= i);
    }

    /// Moves the starts from the `from`th on `by` bytes later (a walk
    /// noted them relative to where it began; the mapped cutter's).
    #[cfg(target_os = "linux")]
    pub(in crate::archive) fn shift(&mut self, from: usize, by: u32) {
        self.at[from..].iter_mut().for_each(|s| *s += by);
    }

    /// The records of `buf`, whose first byte is at file offset `offset`.
    pub(in crate::archive) fn records<'a>(&'a self, buf: &'a [u8], offset: u64) -> Records<'a> {
        Records {
            buf,
            starts: &self.at,
            memory: &self.memory,
            offset,
        }
    }
}

/// Whole event records of a chunk or a mapped window: the bytes, where each
/// record starts in them, and the file offset of the first byte.
#[derive(Clone, Copy)]
pub struct Records<'a> {
    /// Bytes holding the records.
    pub buf: &'a [u8],
    /// Where each record starts in `buf`, in file order.
    pub starts: &'a [u32],
    /// Indexes into `starts` of the records whose event type may be an
    /// allocation or a free ([`may_be_memory`]), noted by the framing walk.
    pub memory: &'a [u32],
    /// File offset of `buf[0]`.
    pub offset: u64,
}

impl<'a> Records<'a> {
    /// The event records with their indexes into `starts` and file offsets.
    pub fn indexed(self) -> impl Iterator<Item = (usize, &'a [u8], u64)> {
        (0..self.starts.len()).filter_map(move |i| {
            let (record, offset) = self.get(i)?;
            Some((i, record, offset))
        })
    }

    /// The record starting at `starts[i]`, with its file offset.
    pub fn get(self, i: usize) -> Option<(&'a [u8], u64)> {
        let start = *self.starts.get(i)? as usize;
        let len = le_u32(self.buf.get(start..start + EVENT_HEADER_LEN)?, 26) as usize;
        let record = self.buf.get(start..start + len)?;
        Some((record, self.offset + start as u64))
    }
}

/// The framing rules of reference §8–§9 applied along a run of records:
/// torn tails, the trailer and the records after it. Shared by the cutter
/// over a reader ([`EventChunks`]) and the one over mapped windows
/// (`mapped.rs`), so both settle a stream identically.
///
/// After a valid trailer the upstream reader only counts whole records
/// (playback-output.md §10.7): a tail there that is no whole record ends
/// the count and is not a torn tail, so it is kept apart
/// ([`Framing::bytes_after_trailer`]) and never sets [`Framing::torn`].
pub(in crate::archive) struct Framing {
    /// Bytes of the stream that follow the data of the next
    /// [`Framing::walk`] (the cutter sets it before each walk).
    pub(in crate::archive) unread: u64,
    torn: Option<Torn>,
    trailer: Option<u64>,
    after_trailer: u64,
    tail_after_trailer: Option<Torn>,
}

impl Framing {
    /// Framing of a stream of `unread` bytes.
    pub(in crate::archive) fn new(unread: u64) -> Framing {
        Framing {
            unread,
            torn: None,
            trailer: None,
            after_trailer: 0,
            tail_after_trailer: None,
        }
    }

    /// The torn tail, once the stream is exhausted.
    pub(in crate::archive) fn torn(&self) -> Option<Torn> {
        self.torn
    }

    /// The first valid trailer's count.
    pub(in crate::archive) fn trailer(&self) -> Option<u64> {
        self.trailer
    }

    /// Complete records after the trailer (counted, never decoded).
    pub(in crate::archive) fn after_trailer(&self) -> u64 {
        self.after_trailer
    }

    /// Bytes after the trailer (and the whole records after it) that form
    /// no whole record, and where they start.
    pub(in crate::archive) fn bytes_after_trailer(&self) -> Option<Torn> {
        self.tail_after_trailer
    }

    /// The walk has ended before the end of the data: a torn tail, or a
    /// partial record after the trailer.
    pub(in crate::archive) fn stopped(&self) -> bool {
        self.torn.is_some() || self.tail_after_trailer.is_some()
    }

    /// Walks the records of `data` (at file offset `base`, followed by
    /// [`Framing::unread`] more bytes of the stream) that start before
    /// `stop`, noting where each event record (one before the trailer)
    /// starts in `starts`; returns where the walk ended: past the last
    /// record it took, which may reach beyond `stop`.
    pub(in crate::archive) fn walk(
        &mut self,
        data: &[u8],
        base: u64,
        starts: &mut RecordStarts,
        stop: usize,
    ) -> usize {
        let mut pos = 0;
        let mut ahead = 0;
        while pos < data.len() && pos < stop {
            // The walk is a chain of dependent loads; from a mapped window
            // each would wait on memory without a hint this far ahead.
            if ahead < pos + WALK_PREFETCH {
                prefetch(data, ahead, pos + WALK_PREFETCH);
                ahead = pos + WALK_PREFETCH;
            }
            let rest = data.len() - pos;
            let remaining = rest as u64 + self.unread;
            if rest < EVENT_HEADER_LEN {
                if self.unread == 0 {
                    self.tear(base + pos as u64, remaining, TornReason::PartialHeader);
                }
                break;
            }
            let len = le_u32(data, pos + 26);
            if (len as usize) < EVENT_HEADER_LEN {
                self.tear(
                    base + pos as u64,
                    remaining,
                    TornReason::LengthTooSmall(len),
                );
                break;
            }
            if len > MAX_RECORD_BYTES {
                self.tear(base + pos as u64, remaining, TornReason::LengthOverCap(len));
                break;
            }
            let len = len as usize;
            if rest < len {
                if remaining < len as u64 || self.unread == 0 {
                    self.tear(
                        base + pos as u64,
                        remaining,
                        TornReason::BodyShort {
                            announced: len as u32,
                        },
                    );
                }
                break;
            }
            let rec = &data[pos..pos + len];
            if self.trailer.is_some() {
                self.after_trailer += 1;
            } else if le_u16(rec, 0) == TRAILER_TYPE
                && len == TRAILER_LEN as usize
                && rec[40..44] == TRAILER_MAGIC
            {
                self.trailer = Some(le_u64(rec, 32));
            } else {
                starts.push(pos as u32, le_u16(rec, 0));
            }
            pos += len;
        }
        pos
    }

    fn tear(&mut self, offset: u64, bytes: u64, reason: TornReason) {
        let end = Some(Torn {
            offset,
            bytes,
            reason,
        });
        if self.trailer.is_some() {
            self.tail_after_trailer = end;
        } else {
            self.torn = end;
        }
    }
}

/// Cuts a stream positioned after the file header into [`Chunk`]s.
pub struct EventChunks<R> {
    src: R,
    carry: Vec<u8>,
    offset: u64,
    chunk: usize,
    framing: Framing,
    done: bool,
}

impl<R: Read> EventChunks<R> {
    /// A cutter over `src`, holding `len` bytes from file offset `offset`,
    /// producing chunks of about `chunk` bytes.
    pub fn new(src: R, offset: u64, len: u64, chunk: usize) -> EventChunks<R> {
        EventChunks {
            src,
            carry: Vec::new(),
            offset,
            chunk: chunk.max(EVENT_HEADER_LEN * 2),
            framing: Framing::new(len),
            done: false,
        }
    }

    fn read_to(&mut self, buf: &mut Vec<u8>, mut filled: usize, want: usize) -> io::Result<usize> {
        if buf.len() < want {
            buf.resize(want, 0);
        }
        let unread = &mut self.framing.unread;
        while filled < want && *unread > 0 {
            // Never past `len`: a file still growing is read as it was
            // when the pass began, as the mapped cutter reads it.
            let room = (want - filled).min(usize::try_from(*unread).unwrap_or(usize::MAX));
            match self.src.read(&mut buf[filled..filled + room]) {
                Ok(0) => *unread = 0,
                Ok(n) => {
                    filled += n;
                    *unread = unread.saturating_sub(n as u64);
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(filled)
    }

    /// Fills `chunk` with the next run of whole records holding at least
    /// one event record; false when the stream is exhausted.
    pub fn next_chunk(&mut self, chunk: &mut Chunk) -> io::Result<bool> {
        let buf = &mut chunk.buf;
        while !self.done {
            let carried = self.carry.len();
            let mut want = self.chunk.max(carried);
            if carried >= EVENT_HEADER_LEN {
                let announced = le_u32(&self.carry, 26);
                if announced <= MAX_RECORD_BYTES {
                    want = want.max(announced as usize);
                }
            }
            if buf.len() < want {
                buf.resize(want, 0);
            }
            buf[..carried].copy_from_slice(&self.carry);
            self.carry.clear();
            let filled = self.read_to(buf, carried, want)?;
            let base = self.offset;
            chunk.starts.clear();
            let end = self
                .framing
                .walk(&buf[..filled], base, &mut chunk.starts, filled);
            let torn = self.framing.stopped();
            if !torn {
                self.carry.extend_from_slice(&buf[end..filled]);
                self.offset = base + end as u64;
            }
            if torn || (self.framing.unread == 0 && self.carry.is_empty()) {
                self.done = true;
            }
            if !chunk.starts.at().is_empty() {
                chunk.offset = base;
                return Ok(true);
            }
        }
        Ok(false)
    }
}

impl<R: Read + Send> Cutter for EventChunks<R> {
    type Piece = Chunk;

    fn next(&mut self, chunk: &mut Chunk) -> io::Result<bool> {
        self.next_chunk(chunk)
    }

    fn framing(&self) -> &Framing {
        &self.framing
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(event_type: u16, total: u32) -> Vec<u8> {
        let mut r = vec![0u8; total as usize];
        r[0..2].copy_from_slice(&event_type.to_le_bytes());
        r[26..30].copy_from_slice(&total.to_le_bytes());
        r
    }

    fn cut(bytes: &[u8], chunk: usize) -> (usize, EventChunks<&[u8]>) {
        let mut c = EventChunks::new(bytes, 8, bytes.len() as u64, chunk);
        let mut records = 0;
        let mut ch = Chunk::default();
        while c.next_chunk(&mut ch).unwrap() {
            records += ch.records().indexed().count();
        }
        (records, c)
    }

    #[test]
    fn chunk_boundaries_never_split_records_and_big_records_fit() {
        let mut s = Vec::new();
        for i in 0..100u32 {
            s.extend(record(215, 32 + (i * 13) % 300));
        }
        s.extend(record(308, 5000));
        let (n, c) = cut(&s, 100);
        assert_eq!(n, 101);
        assert_eq!(c.framing().torn(), None);
    }

    #[test]
    fn trailer_ends_events_and_later_records_are_counted() {
        let mut s = record(215, 52);
        let mut t = record(TRAILER_TYPE, 44);
        t[32..40].copy_from_slice(&1u64.to_le_bytes());
        t[40..44].copy_from_slice(&TRAILER_MAGIC);
        s.extend(t);
        s.extend(record(90, 44));
        s.extend(record(90, 44));
        s.extend([1, 2, 3]);
        let (n, c) = cut(&s, 64);
        assert_eq!(
            (n, c.framing().trailer(), c.framing().after_trailer()),
            (1, Some(1), 2)
        );
        // Not a torn tail (reference §10.7): kept apart.
        assert_eq!(c.framing().torn(), None);
        let tail = c.framing().bytes_after_trailer().unwrap();
        assert_eq!((tail.reason, tail.bytes), (TornReason::PartialHeader, 3));
    }
}

/// Test helpers shared by the cutters' tests: a seeded generator and the
/// records and framing outcome a cutter or the record reader sees.
#[cfg(test)]
pub(in crate::archive) mod testing {
    use super::*;
    use crate::archive::format::framing::RecordReader;

    /// The event records (offset, length) and the framing outcome (torn,
    /// trailer, records after it) of a stream, for comparing readers.
    pub(in crate::archive) type View = (Vec<(u64, usize)>, String);

    /// A xorshift64 generator from `seed`, for reproducible random streams.
    pub(in crate::archive) fn xorshift(mut seed: u64) -> impl FnMut() -> u64 {
        move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        }
    }

    /// What the record-by-record reader sees in the `len` bytes of `body`,
    /// which starts at file offset `base`.
    pub(in crate::archive) fn by_record_reader(body: &[u8], base: u64, len: u64) -> View {
        let mut rd = RecordReader::new(body, base, len, 64);
        let (mut seen, mut trailer, mut after) = (Vec::new(), None, 0);
        while let Some(r) = rd.next_record().unwrap() {
            if trailer.is_some() {
                after += 1;
            } else if let Some(n) = r.trailer_count() {
                trailer = Some(n);
            } else {
                seen.push((r.offset, r.bytes.len()));
            }
        }
        // The record reader tears wherever it stops; past a trailer that is
        // the tail the framing keeps apart.
        let (torn, tail) = match trailer {
            Some(_) => (None, rd.torn()),
            None => (rd.torn(), None),
        };
        (seen, format!("{torn:?} {trailer:?} {after} {tail:?}"))
    }

    /// What `cutter` hands out, piece by piece, until it is exhausted.
    pub(in crate::archive) fn by_cutter<C: Cutter>(mut cutter: C) -> View {
        let mut piece = C::Piece::default();
        let mut seen = Vec::new();
        while cutter.next(&mut piece).unwrap() {
            piece.frame();
            cutter.settle(&mut piece).unwrap();
            let records = piece.records();
            seen.extend(records.indexed().map(|(_, r, at)| (at, r.len())));
            let may_be = |&(_, r, _): &(usize, &[u8], u64)| may_be_memory(le_u16(r, 0));
            let expected: Vec<u32> = records
                .indexed()
                .filter(may_be)
                .map(|(i, ..)| i as u32)
                .collect();
            assert_eq!(
                records.memory, expected,
                "the walk notes exactly the records that may be allocations or frees"
            );
            piece.release();
        }
        let f = cutter.framing();
        let framing = format!(
            "{:?} {:?} {} {:?}",
            f.torn(),
            f.trailer(),
            f.after_trailer(),
            f.bytes_after_trailer()
        );
        (seen, framing)
    }
}

#[cfg(test)]
mod agreement {
    use super::testing::{by_cutter, by_record_reader, xorshift};
    use super::*;

    /// Cutting into chunks of any size yields the same event records and
    /// settles trailer, records after it and the torn tail exactly as the
    /// record-by-record reader.
    #[test]
    fn chunks_agree_with_the_record_reader_at_every_chunk_size() {
        let mut next = xorshift(0x2545_F491_4F6C_DD1D);
        for case in 0..60 {
            let mut s = Vec::new();
            for _ in 0..(case % 9) {
                let seed = next();
                let len = 32 + (seed % 200) as u32;
                let mut r = vec![0u8; len as usize];
                r[0..2].copy_from_slice(&215u16.to_le_bytes());
                r[26..30].copy_from_slice(&len.to_le_bytes());
                if seed.is_multiple_of(7) {
                    r = vec![0u8; 44];
                    r[0..2].copy_from_slice(&TRAILER_TYPE.to_le_bytes());
                    r[26..30].copy_from_slice(&44u32.to_le_bytes());
                    r[40..44].copy_from_slice(&TRAILER_MAGIC);
                }
                s.extend(r);
            }
            s.extend(vec![0xEE; case % 40]);
            let len = s.len() as u64;
            let expect = by_record_reader(&s, 8, len);
            for chunk in [64usize, 100, 257, 4096] {
                let got = by_cutter(EventChunks::new(&s[..], 8, len, chunk));
                assert_eq!(got, expect, "case {case} chunk {chunk}");
            }
        }
    }
}
