//! A range as the map's B-trees hold it: packed, without its base (the
//! tree's key), to well under half of a [`Range`].
//!
//! The trees' nodes, and the copies of them the pieces in flight still
//! share, are most of the map's memory, and copying a node is most of the
//! cost of changing the map; both grow with the entry's size. A live entry
//! takes 40 bytes with its key, against 88 unpacked; a freed one 64,
//! against 96. Packing is exact: every field comes back as it went in.

use crate::archive::memory::map::{Death, Range, Source};

/// Flag bits: which of the optional fields are present, and the source.
const ALLOC_SEQ: u8 = 1;
const THREAD: u8 = 1 << 1;
const FREE_API: u8 = 1 << 2;
const FREE_SEQ: u8 = 1 << 3;
const SEGMENT: u8 = 1 << 4;
const BLOCK: u8 = 1 << 5;

/// A live range without its base.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Live {
    size: u64,
    alloc_seq: u64,
    thread: u64,
    hist: u32,
    /// The allocating API's id, for [`Source::Api`].
    api: u16,
    flags: u8,
}

/// A freed range without its base, with the ordinal of its free.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Freed {
    range: Live,
    free_seq: u64,
    /// The ordinal of its free ([`super::map::AllocationMap`] drops the
    /// oldest at the cap).
    pub(crate) ord: u64,
    free_api: u16,
}

impl Live {
    /// `r` packed (its `freed` is not kept: see [`Freed`]).
    pub(crate) fn pack(r: &Range) -> Live {
        let (api, source) = match r.source {
            Source::Api(api) => (api, 0),
            Source::RegionSegment => (0, SEGMENT),
            Source::RegionBlock => (0, BLOCK),
        };
        Live {
            size: r.size,
            alloc_seq: r.alloc_seq.unwrap_or(0),
            thread: r.thread.unwrap_or(0),
            hist: r.hist,
            api,
            flags: source
                | flag(ALLOC_SEQ, r.alloc_seq.is_some())
                | flag(THREAD, r.thread.is_some()),
        }
    }

    /// The range at `base`.
    pub(crate) fn unpack(&self, base: u64) -> Range {
        let source = if self.flags & SEGMENT != 0 {
            Source::RegionSegment
        } else if self.flags & BLOCK != 0 {
            Source::RegionBlock
        } else {
            Source::Api(self.api)
        };
        Range {
            source,
            base,
            size: self.size,
            alloc_seq: self.has(ALLOC_SEQ).then_some(self.alloc_seq),
            thread: self.has(THREAD).then_some(self.thread),
            freed: None,
            hist: self.hist,
        }
    }

    /// One past its last byte, for a range at `base` (saturating).
    pub(crate) fn end(&self, base: u64) -> u64 {
        base.saturating_add(self.size)
    }

    fn has(&self, bit: u8) -> bool {
        self.flags & bit != 0
    }
}

impl Freed {
    /// `r`, freed as `death`, packed with `ord`, the ordinal of its free.
    pub(crate) fn pack(r: &Range, death: Death, ord: u64) -> Freed {
        let mut range = Live::pack(r);
        range.flags |= flag(FREE_API, death.api.is_some()) | flag(FREE_SEQ, death.seq.is_some());
        Freed {
            range,
            free_seq: death.seq.unwrap_or(0),
            ord,
            free_api: death.api.unwrap_or(0),
        }
    }

    /// The range at `base`.
    pub(crate) fn unpack(&self, base: u64) -> Range {
        let l = &self.range;
        Range {
            freed: Some(Death {
                api: l.has(FREE_API).then_some(self.free_api),
                seq: l.has(FREE_SEQ).then_some(self.free_seq),
            }),
            ..l.unpack(base)
        }
    }

    /// One past its last byte, for a range at `base` (saturating).
    pub(crate) fn end(&self, base: u64) -> u64 {
        self.range.end(base)
    }
}

fn flag(bit: u8, on: bool) -> u8 {
    if on {
        bit
    } else {
        0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ranges() -> Vec<Range> {
        let mut all = Vec::new();
        let sources = [
            Source::Api(0),
            Source::Api(u16::MAX),
            Source::RegionSegment,
            Source::RegionBlock,
        ];
        let deaths = [
            None,
            Some(Death {
                api: None,
                seq: None,
            }),
            Some(Death {
                api: Some(u16::MAX),
                seq: Some(0),
            }),
            Some(Death {
                api: Some(0),
                seq: Some(u64::MAX),
            }),
        ];
        for source in sources {
            for (seq, thread) in [
                (None, None),
                (Some(0), Some(u64::MAX)),
                (Some(u64::MAX), None),
            ] {
                for freed in deaths {
                    all.push(Range {
                        source,
                        base: u64::MAX - 3,
                        size: u64::MAX,
                        alloc_seq: seq,
                        thread,
                        freed,
                        hist: 7,
                    });
                }
            }
        }
        all
    }

    #[test]
    fn every_field_comes_back_as_it_went_in() {
        for r in ranges() {
            if let Some(death) = r.freed {
                assert_eq!(Freed::pack(&r, death, 9).unpack(r.base), r);
                assert_eq!(Freed::pack(&r, death, 9).ord, 9);
            }
            let live = Range { freed: None, ..r };
            assert_eq!(Live::pack(&r).unpack(r.base), live);
            assert_eq!(Live::pack(&r).end(r.base), u64::MAX);
        }
    }

    #[test]
    fn a_live_entry_takes_under_half_an_unpacked_one() {
        let entry = |n: usize| n + std::mem::size_of::<u64>();
        assert_eq!(entry(std::mem::size_of::<Live>()), 40);
        assert_eq!(entry(std::mem::size_of::<Freed>()), 64);
        assert_eq!(entry(std::mem::size_of::<Range>()), 88);
    }
}
