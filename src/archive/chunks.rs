//! `events.bin` cut into chunks of whole event records, for decoding on
//! several threads (DESIGN §11: `archive info` at a large fraction of `cat`
//! speed).
//!
//! The reader thread applies the framing rules of reference §8–§9 while it
//! cuts: torn tails, the trailer and the records after it are settled here,
//! so a [`Chunk`] holds only complete event records before the trailer and
//! can be decoded by any worker in any order. Buffers are handed back and
//! reused; only a record larger than the chunk grows one (up to the 64 MiB
//! record cap plus a chunk).

use std::io::{self, Read};

use super::events::le_u16;
use super::events::{
    le_u32, le_u64, Torn, TornReason, EVENT_HEADER_LEN, MAX_RECORD_BYTES, TRAILER_LEN,
    TRAILER_MAGIC, TRAILER_TYPE,
};

/// Whole event records `buf[..events_end]`, the first at file offset `offset`.
pub struct Chunk {
    /// The buffer (its length is its capacity in use, not the data length).
    pub buf: Vec<u8>,
    /// End of the event records in `buf`.
    pub events_end: usize,
    /// File offset of `buf[0]`.
    pub offset: u64,
}

/// Cuts a stream positioned after the file header into [`Chunk`]s.
pub struct EventChunks<R> {
    src: R,
    unread: u64,
    carry: Vec<u8>,
    offset: u64,
    chunk: usize,
    torn: Option<Torn>,
    trailer: Option<u64>,
    after_trailer: u64,
    done: bool,
}

impl<R: Read> EventChunks<R> {
    /// A cutter over `src`, holding `len` bytes from file offset `offset`,
    /// producing chunks of about `chunk` bytes.
    pub fn new(src: R, offset: u64, len: u64, chunk: usize) -> EventChunks<R> {
        EventChunks {
            src,
            unread: len,
            carry: Vec::new(),
            offset,
            chunk: chunk.max(EVENT_HEADER_LEN * 2),
            torn: None,
            trailer: None,
            after_trailer: 0,
            done: false,
        }
    }

    /// The torn tail, once the stream is exhausted.
    pub fn torn(&self) -> Option<Torn> {
        self.torn
    }

    /// The first valid trailer's count.
    pub fn trailer(&self) -> Option<u64> {
        self.trailer
    }

    /// Complete records after the trailer (counted, never decoded).
    pub fn after_trailer(&self) -> u64 {
        self.after_trailer
    }

    fn read_to(&mut self, buf: &mut Vec<u8>, mut filled: usize, want: usize) -> io::Result<usize> {
        if buf.len() < want {
            buf.resize(want, 0);
        }
        while filled < want && self.unread > 0 {
            match self.src.read(&mut buf[filled..want]) {
                Ok(0) => self.unread = 0,
                Ok(n) => {
                    filled += n;
                    self.unread = self.unread.saturating_sub(n as u64);
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(filled)
    }

    /// The next chunk holding at least one event record, reusing `buf`;
    /// `None` when the stream is exhausted.
    pub fn next_chunk(&mut self, mut buf: Vec<u8>) -> io::Result<Option<Chunk>> {
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
            let filled = self.read_to(&mut buf, carried, want)?;
            let base = self.offset;
            let (end, events_end) = self.walk(&buf[..filled], base);
            if self.torn.is_none() {
                self.carry.extend_from_slice(&buf[end..filled]);
                self.offset = base + end as u64;
            }
            if self.torn.is_some() || (self.unread == 0 && self.carry.is_empty()) {
                self.done = true;
            }
            if events_end > 0 {
                return Ok(Some(Chunk {
                    buf,
                    events_end,
                    offset: base,
                }));
            }
        }
        Ok(None)
    }

    /// Walks the records of `data`; returns where the complete records end
    /// and where the event records (before a trailer) end.
    fn walk(&mut self, data: &[u8], base: u64) -> (usize, usize) {
        let trailer_before = self.trailer.is_some();
        let mut pos = 0;
        let mut events_end = None;
        while pos < data.len() {
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
                events_end = Some(pos);
            }
            pos += len;
        }
        let events_end = match events_end {
            Some(e) => e,
            None if trailer_before => 0,
            None => pos,
        };
        (pos, events_end)
    }

    fn tear(&mut self, offset: u64, bytes: u64, reason: TornReason) {
        self.torn = Some(Torn {
            offset,
            bytes,
            reason,
        });
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
        let mut buf = Vec::new();
        while let Some(ch) = c.next_chunk(buf).unwrap() {
            let mut pos = 0;
            while pos < ch.events_end {
                pos += le_u32(&ch.buf, pos + 26) as usize;
                records += 1;
            }
            buf = ch.buf;
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
        assert_eq!(c.torn(), None);
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
        assert_eq!((n, c.trailer(), c.after_trailer()), (1, Some(1), 2));
        assert_eq!(c.torn().unwrap().reason, TornReason::PartialHeader);
    }
}

#[cfg(test)]
mod agreement {
    use super::*;
    use crate::archive::events::RecordReader;

    /// Cutting into chunks of any size settles events, trailer, records
    /// after it and the torn tail exactly as the record-by-record reader.
    #[test]
    fn chunks_agree_with_the_record_reader_at_every_chunk_size() {
        let mut seed: u64 = 0x2545_F491_4F6C_DD1D;
        for case in 0..60 {
            let mut s = Vec::new();
            for _ in 0..(case % 9) {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
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
            for chunk in [64usize, 100, 257, 4096] {
                let mut expect_events = 0;
                let mut expect_after = 0;
                let mut expect_trailer = None;
                let mut rd = RecordReader::new(&s[..], 8, s.len() as u64, 64);
                while let Some(r) = rd.next_record().unwrap() {
                    if expect_trailer.is_some() {
                        expect_after += 1;
                    } else if let Some(n) = r.trailer_count() {
                        expect_trailer = Some(n);
                    } else {
                        expect_events += 1;
                    }
                }
                let mut c = EventChunks::new(&s[..], 8, s.len() as u64, chunk);
                let mut events = 0;
                let mut buf = Vec::new();
                while let Some(ch) = c.next_chunk(buf).unwrap() {
                    let mut pos = 0;
                    while pos < ch.events_end {
                        pos += le_u32(&ch.buf, pos + 26) as usize;
                        events += 1;
                    }
                    buf = ch.buf;
                }
                let what = format!("case {case} chunk {chunk}");
                assert_eq!(events, expect_events, "{what}");
                assert_eq!(c.trailer(), expect_trailer, "{what}");
                assert_eq!(c.after_trailer(), expect_after, "{what}");
                assert_eq!(c.torn(), rd.torn(), "{what}");
            }
        }
    }
}
