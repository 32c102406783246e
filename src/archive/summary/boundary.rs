//! A record boundary found inside a window of `events.bin` without walking
//! the length chain from the start of the file, so decoders can frame
//! their windows at once, each on its own core.
//!
//! Nothing here decides what the stream holds. The boundary is a guess and
//! the walk from it a speculation: the mapped cutter accepts a window's
//! walk only when the serial walk, arriving from the window before, lands
//! on one of its record starts (the walk from any start is the same), and
//! walks the window serially otherwise. A wrong guess costs time, never a
//! different summary.

use crate::archive::format::apis::V7_COUNT;
use crate::archive::format::framing::{
    le_u16, le_u32, le_u64, EVENT_HEADER_LEN, MAX_RECORD_BYTES, TRAILER_TYPE,
};
use crate::archive::format::regions::REGION_EVENT;
use crate::archive::summary::chunks::RecordStarts;
use crate::archive::summary::prefetch::prefetch;

/// Headers that must chain from a candidate before it is taken for a
/// boundary (fewer only where the window or the data ends first).
const CHAIN: usize = 4;
/// Largest step between the sequence ids of chained headers: ids are
/// handed out under the writer's lock in file order, so neighbours differ
/// by little even when threads interleave.
const SEQUENCE_STEP: u64 = 1 << 16;
/// How far ahead of the record being walked the speculative walk asks for
/// the bytes it will reach (as the serial walk does).
const WALK_PREFETCH: usize = 4096;

/// Whether the 32 bytes at `data[at..]` look like an event header: a type
/// of the API tables or a sentinel, a length from a header to the record
/// cap, zero reserved bytes.
fn plausible(data: &[u8], at: usize) -> bool {
    let Some(h) = data.get(at..at + EVENT_HEADER_LEN) else {
        return false;
    };
    let event_type = le_u16(h, 0);
    let len = le_u32(h, 26);
    (event_type < V7_COUNT || event_type == TRAILER_TYPE || event_type == REGION_EVENT)
        && (EVENT_HEADER_LEN as u32..=MAX_RECORD_BYTES).contains(&len)
        && h[30] == 0
        && h[31] == 0
}

/// Whether [`CHAIN`] plausible headers with nearby sequence ids chain from
/// `at`, each at the end of the one before, inside `data` (fewer only when
/// the chain ends exactly at the end of `data`).
fn chains(data: &[u8], at: usize) -> bool {
    let mut pos = at;
    let mut sequence = None;
    for _ in 0..CHAIN {
        if pos == data.len() {
            return true;
        }
        if !plausible(data, pos) {
            return false;
        }
        let id = le_u64(data, pos + 2);
        if sequence.is_some_and(|prev: u64| prev.abs_diff(id) > SEQUENCE_STEP) {
            return false;
        }
        sequence = Some(id);
        pos = pos.saturating_add(le_u32(data, pos + 26) as usize);
    }
    pos <= data.len()
}

/// The first offset in `from..limit` where a chain of plausible headers
/// starts: the likely first record boundary of a window whose records are
/// those starting before `limit`.
pub(in crate::archive) fn find(data: &[u8], from: usize, limit: usize) -> Option<usize> {
    (from..limit.min(data.len())).find(|&at| chains(data, at))
}

/// Walks records from `at` along their lengths, noting each start in
/// `starts`, until the walk reaches `limit`; returns where it ended.
/// `None` when the walk meets anything the framing rules treat apart (a
/// length the serial walk would tear at, a record not wholly in `data`, a
/// partial header, a trailer-typed record): the window is then walked
/// serially, which settles it.
pub(in crate::archive) fn walk(
    data: &[u8],
    at: usize,
    limit: usize,
    starts: &mut RecordStarts,
) -> Option<usize> {
    let mut pos = at;
    let mut ahead = 0;
    let stop = limit.min(data.len());
    while pos < stop {
        if ahead < pos + WALK_PREFETCH {
            prefetch(data, ahead, pos + WALK_PREFETCH);
            ahead = pos + WALK_PREFETCH;
        }
        let h = data.get(pos..pos + EVENT_HEADER_LEN)?;
        let len = le_u32(h, 26);
        if !(EVENT_HEADER_LEN as u32..=MAX_RECORD_BYTES).contains(&len)
            || le_u16(h, 0) == TRAILER_TYPE
        {
            return None;
        }
        let end = pos.checked_add(len as usize)?;
        if end > data.len() {
            return None;
        }
        starts.push(u32::try_from(pos).ok()?, le_u16(h, 0));
        pos = end;
    }
    Some(pos)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(event_type: u16, seq: u64, len: u32) -> Vec<u8> {
        let mut r = vec![0u8; len as usize];
        r[0..2].copy_from_slice(&event_type.to_le_bytes());
        r[2..10].copy_from_slice(&seq.to_le_bytes());
        r[26..30].copy_from_slice(&len.to_le_bytes());
        r
    }

    #[test]
    fn the_boundary_after_a_record_cut_by_the_window_is_found() {
        let mut s = Vec::new();
        for i in 0..20u32 {
            s.extend(header(215, u64::from(i), 40 + i * 3));
        }
        // From inside the first record: the second record's start.
        assert_eq!(find(&s, 5, s.len()), Some(40));
        let mut starts = RecordStarts::default();
        let end = walk(&s, 40, s.len(), &mut starts).unwrap();
        assert_eq!((end, starts.at().len()), (s.len(), 19));
    }

    #[test]
    fn headers_with_far_sequence_ids_or_reserved_bytes_do_not_chain() {
        let mut s = header(215, 0, 64);
        s.extend(header(215, 1 << 40, 64));
        s.extend(header(215, 2, 64));
        assert!(!chains(&s, 0));
        let mut r = header(215, 0, 64);
        r[31] = 1;
        assert!(!plausible(&r, 0));
    }

    #[test]
    fn the_speculative_walk_leaves_trailers_and_torn_lengths_to_the_serial_walk() {
        let mut s = header(215, 0, 64);
        s.extend(header(TRAILER_TYPE, 1, 44));
        assert_eq!(walk(&s, 0, s.len(), &mut RecordStarts::default()), None);
        let mut s = header(215, 0, 64);
        s.extend(&header(215, 1, 64)[..40]);
        assert_eq!(walk(&s, 0, s.len(), &mut RecordStarts::default()), None);
    }
}
