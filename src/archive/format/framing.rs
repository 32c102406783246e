//! Streaming reader of the `events.bin` record stream (reference §5–§9).
//!
//! The whole file is never held in memory: records are parsed in place from a
//! fixed-size chunk buffer that only grows for a single record larger than the
//! chunk, and never past the 64 MiB record cap. The same framing reads region
//! sidecars (`regions/*.hrrr`, §14).
//!
//! Torn-tail rules (§9): a partial header, a `payload_length` below 32 or above
//! the cap, or a body shorter than announced ends the stream as *torn*; every
//! complete record before it is kept.

use std::fmt;
use std::io::{self, Read};

/// Size of the `events.bin` file header.
pub const FILE_HEADER_LEN: usize = 8;
/// Size of every event header.
pub const EVENT_HEADER_LEN: usize = 32;
/// Largest record the reader accepts (`kMaxRecordBytes` upstream).
pub const MAX_RECORD_BYTES: u32 = 64 << 20;
/// On-disk magic of `events.bin` (`HRR_MAGIC` 0x52524845, bytes "EHRR").
pub const EVENTS_MAGIC: [u8; 4] = *b"EHRR";
/// `event_type` of the clean-shutdown trailer.
pub const TRAILER_TYPE: u16 = 0xFFFF;
/// Size of the trailer record.
pub const TRAILER_LEN: u32 = 44;
/// On-disk magic of the trailer (`HRR_EOF_MAGIC` 0x464F4548, bytes "HEOF").
pub const TRAILER_MAGIC: [u8; 4] = *b"HEOF";
/// Default chunk of the streaming buffer.
pub const DEFAULT_CHUNK: usize = 1 << 20;

/// Little-endian field readers over a byte slice; callers bounds-check first.
#[inline]
pub(crate) fn le_u16(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}

/// Reads a little-endian u32 at `at` (caller guarantees 4 bytes).
#[inline]
pub(crate) fn le_u32(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}

/// Reads a little-endian u64 at `at` (caller guarantees 8 bytes).
#[inline]
pub(crate) fn le_u64(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

/// The 8-byte file header: magic, format version, flags.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileHeader {
    /// Raw magic bytes as found on disk.
    pub magic: [u8; 4],
    /// Format version (`HRR_VERSION` of the writer).
    pub version: u16,
    /// `HRR_FILE_FLAG_*` bits (v7+: bit 0 = packed host rects).
    pub flags: u16,
}

impl FileHeader {
    /// Parses the first 8 bytes of a file; `None` when fewer are given.
    pub fn parse(bytes: &[u8]) -> Option<FileHeader> {
        if bytes.len() < FILE_HEADER_LEN {
            return None;
        }
        Some(FileHeader {
            magic: bytes[0..4].try_into().expect("4 bytes"),
            version: le_u16(bytes, 4),
            flags: le_u16(bytes, 6),
        })
    }
}

/// The 32-byte header in front of every record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EventHeader {
    /// API id (or a sentinel: 0xFFFF trailer, 0xFFFD region batch).
    pub event_type: u16,
    /// Per-process sequence number.
    pub sequence_id: u64,
    /// CLOCK_MONOTONIC nanoseconds at capture.
    pub timestamp_ns: u64,
    /// OS thread id of the caller.
    pub thread_id: u64,
    /// Total record size including this header.
    pub payload_length: u32,
}

impl EventHeader {
    /// Parses a header from at least 32 bytes.
    pub fn parse(b: &[u8]) -> EventHeader {
        EventHeader {
            event_type: le_u16(b, 0),
            sequence_id: le_u64(b, 2),
            timestamp_ns: le_u64(b, 10),
            thread_id: le_u64(b, 18),
            payload_length: le_u32(b, 26),
        }
    }
}

/// One complete record, borrowed from the reader's buffer.
#[derive(Debug, Clone, Copy)]
pub struct Record<'a> {
    /// The parsed header.
    pub header: EventHeader,
    /// The whole record, header included (`payload_length` bytes); payload
    /// offsets of the reference index into this slice.
    pub bytes: &'a [u8],
    /// File offset of the record's first byte.
    pub offset: u64,
}

impl Record<'_> {
    /// The trailer's `total_events` when this record is a valid trailer
    /// (type 0xFFFF, length 44 and "HEOF" at offset 40), else `None`.
    pub fn trailer_count(&self) -> Option<u64> {
        (self.header.event_type == TRAILER_TYPE
            && self.header.payload_length == TRAILER_LEN
            && self.bytes[40..44] == TRAILER_MAGIC)
            .then(|| le_u64(self.bytes, 32))
    }
}

/// Why the stream ended early (reference §9).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TornReason {
    /// 1–31 bytes where a header should be.
    PartialHeader,
    /// `payload_length` below the 32-byte header.
    LengthTooSmall(u32),
    /// `payload_length` above the 64 MiB record cap.
    LengthOverCap(u32),
    /// The body is shorter than `payload_length` announces.
    BodyShort {
        /// Bytes the header announced (whole record).
        announced: u32,
    },
}

/// Where and why the stream was torn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Torn {
    /// File offset of the torn record.
    pub offset: u64,
    /// Bytes from that offset to the end of the file (discarded).
    pub bytes: u64,
    /// The rule that classified it as torn.
    pub reason: TornReason,
}

impl fmt::Display for Torn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let at = self.offset;
        let n = self.bytes;
        match self.reason {
            TornReason::PartialHeader => {
                write!(f, "{n} stray bytes at offset {at}: a partial event header")
            }
            TornReason::LengthTooSmall(len) => write!(
                f,
                "record at offset {at} claims payload_length {len}, less than its 32-byte header ({n} bytes discarded)"
            ),
            TornReason::LengthOverCap(len) => write!(
                f,
                "record at offset {at} claims payload_length {len}, over the 64 MiB record cap ({n} bytes discarded)"
            ),
            TornReason::BodyShort { announced } => write!(
                f,
                "record at offset {at} announces {announced} bytes but only {n} remain"
            ),
        }
    }
}

/// Streams complete records from a reader positioned just after the file
/// header. Holds at most one chunk plus one record in memory.
pub struct RecordReader<R> {
    src: R,
    buf: Vec<u8>,
    start: usize,
    end: usize,
    /// File offset of `buf[start]`.
    offset: u64,
    /// Bytes of the source not yet pulled into `buf`.
    unread: u64,
    torn: Option<Torn>,
    done: bool,
}

impl<R: Read> RecordReader<R> {
    /// A reader over `src`, which holds `len` bytes starting at file offset
    /// `offset` (8 for `events.bin` after its header). `chunk` is the
    /// streaming buffer size.
    pub fn new(src: R, offset: u64, len: u64, chunk: usize) -> RecordReader<R> {
        RecordReader {
            src,
            buf: vec![0; chunk.max(EVENT_HEADER_LEN * 2)],
            start: 0,
            end: 0,
            offset,
            unread: len,
            torn: None,
            done: false,
        }
    }

    /// Where and why the stream was torn, once [`next_record`](Self::next_record)
    /// has returned `None`.
    pub fn torn(&self) -> Option<Torn> {
        self.torn
    }

    /// Makes at least `need` bytes available from `start`, growing the buffer
    /// only for a record larger than the chunk. Returns the bytes available.
    fn fill(&mut self, need: usize) -> io::Result<usize> {
        if self.end - self.start >= need {
            return Ok(self.end - self.start);
        }
        if self.start + need > self.buf.len() {
            self.buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
            if need > self.buf.len() {
                self.buf.resize(need, 0);
            }
        }
        while self.end - self.start < need && self.unread > 0 {
            // Never past `len`, whatever the file has grown to since.
            let cap = usize::try_from(self.unread).unwrap_or(usize::MAX);
            let stop = self.buf.len().min(self.end.saturating_add(cap));
            let room = &mut self.buf[self.end..stop];
            let n = match self.src.read(room) {
                Ok(0) => {
                    self.unread = 0;
                    break;
                }
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            self.end += n;
            self.unread = self.unread.saturating_sub(n as u64);
        }
        Ok(self.end - self.start)
    }

    fn tear(&mut self, reason: TornReason, have: usize) {
        self.torn = Some(Torn {
            offset: self.offset,
            bytes: have as u64 + self.unread,
            reason,
        });
        self.done = true;
    }

    /// The next complete record, or `None` at a clean end or a torn tail
    /// (then [`torn`](Self::torn) says which). I/O errors are returned as is.
    pub fn next_record(&mut self) -> io::Result<Option<Record<'_>>> {
        if self.done {
            return Ok(None);
        }
        let have = self.fill(EVENT_HEADER_LEN)?;
        if have == 0 {
            self.done = true;
            return Ok(None);
        }
        if have < EVENT_HEADER_LEN {
            self.tear(TornReason::PartialHeader, have);
            return Ok(None);
        }
        let header = EventHeader::parse(&self.buf[self.start..self.start + EVENT_HEADER_LEN]);
        let len = header.payload_length;
        if (len as usize) < EVENT_HEADER_LEN {
            self.tear(TornReason::LengthTooSmall(len), have);
            return Ok(None);
        }
        if len > MAX_RECORD_BYTES {
            self.tear(TornReason::LengthOverCap(len), have);
            return Ok(None);
        }
        let need = len as usize;
        // Rule 4 checked before any allocation: the body must fit in what is
        // left of the file.
        if (have as u64) + self.unread < need as u64 {
            self.tear(TornReason::BodyShort { announced: len }, have);
            return Ok(None);
        }
        let have = self.fill(need)?;
        if have < need {
            self.tear(TornReason::BodyShort { announced: len }, have);
            return Ok(None);
        }
        let at = self.start;
        let offset = self.offset;
        self.start += need;
        self.offset += need as u64;
        Ok(Some(Record {
            header,
            bytes: &self.buf[at..at + need],
            offset,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(event_type: u16, seq: u64, total: u32) -> Vec<u8> {
        let mut r = vec![0u8; total as usize];
        r[0..2].copy_from_slice(&event_type.to_le_bytes());
        r[2..10].copy_from_slice(&seq.to_le_bytes());
        r[26..30].copy_from_slice(&total.to_le_bytes());
        r
    }

    fn read_all(bytes: &[u8], chunk: usize) -> (Vec<(u16, usize)>, Option<Torn>) {
        let mut rd = RecordReader::new(bytes, 8, bytes.len() as u64, chunk);
        let mut out = Vec::new();
        while let Some(r) = rd.next_record().unwrap() {
            out.push((r.header.event_type, r.bytes.len()));
        }
        (out, rd.torn())
    }

    #[test]
    fn records_straddling_small_chunks_are_reassembled() {
        let mut s = Vec::new();
        for i in 0..50u32 {
            s.extend(record(215, u64::from(i), 32 + i * 7));
        }
        let (recs, torn) = read_all(&s, 64);
        assert_eq!(recs.len(), 50);
        assert_eq!(recs[49], (215, 32 + 49 * 7));
        assert_eq!(torn, None);
    }

    #[test]
    fn short_body_is_torn_without_allocating_the_claim() {
        let mut s = record(215, 0, 40);
        let mut big = record(308, 1, 32);
        big[26..30].copy_from_slice(&(60u32 << 20).to_le_bytes());
        s.extend(&big);
        let mut rd = RecordReader::new(&s[..], 8, s.len() as u64, 128);
        assert!(rd.next_record().unwrap().is_some());
        assert!(rd.next_record().unwrap().is_none());
        assert_eq!(
            rd.torn().unwrap().reason,
            TornReason::BodyShort {
                announced: 60 << 20
            }
        );
        assert!(rd.buf.len() <= 128, "buffer grew to {}", rd.buf.len());
    }
}
