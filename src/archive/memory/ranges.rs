//! The ranges of the allocation map at one point of the stream, and where
//! an address lies among them.
//!
//! They are held in persistent B-trees, so a copy costs a few reference
//! counts and shares every node until one of the two changes: the map
//! hands each piece a copy as it stood before the piece, and the piece's
//! audit runs on any decoder from that copy while the map goes on with
//! later pieces ([`super::view`]).

use imbl::OrdMap;

use crate::archive::memory::map::{Hit, Range};
use crate::archive::memory::page_cache::PAGE_BITS;

/// Live ranges and freed (not reallocated) ones, per layer, by base.
#[derive(Clone, Default)]
pub(crate) struct Ranges {
    /// Per layer: live ranges.
    pub(crate) live: [OrdMap<u64, Range>; 3],
    /// Per layer: freed ranges, each with the ordinal of its free.
    pub(crate) freed: [OrdMap<u64, (Range, u64)>; 3],
}

impl Ranges {
    /// Live ranges now.
    pub(crate) fn live_count(&self) -> usize {
        self.live.iter().map(OrdMap::len).sum()
    }

    /// Freed ranges remembered now.
    pub(crate) fn freed_count(&self) -> usize {
        self.freed.iter().map(OrdMap::len).sum()
    }

    /// Every live range holding `a`, most specific first.
    pub(crate) fn live_holding(&self, a: u64) -> Vec<Range> {
        (0..3).rev().filter_map(|l| self.live_in(l, a)).collect()
    }

    /// The live ranges nearest `a` that end at or before it and that
    /// start after it (any layer).
    pub(crate) fn neighbours(&self, a: u64) -> (Option<Range>, Option<Range>) {
        let mut below: Option<Range> = None;
        let mut above: Option<Range> = None;
        for l in 0..3 {
            if let Some((_, &r)) = self.live[l].get_prev(&a) {
                if !r.contains(a) && below.is_none_or(|b| r.end() > b.end()) {
                    below = Some(r);
                }
            }
            if let Some((_, &r)) = self.live[l].range(a.saturating_add(1)..).next() {
                if above.is_none_or(|b| r.base < b.base) {
                    above = Some(r);
                }
            }
        }
        (below, above)
    }
}

impl Layers for Ranges {
    fn live_in(&self, layer: usize, a: u64) -> Option<Range> {
        let (_, r) = self.live[layer].get_prev(&a)?;
        r.contains(a).then_some(*r)
    }

    fn freed_in(&self, layer: usize, a: u64) -> Option<Range> {
        let (_, (r, _)) = self.freed[layer].get_prev(&a)?;
        r.contains(a).then_some(*r)
    }
}

/// The map's ranges at one point of the stream, layer by layer: where an
/// address lies among them follows from which range of each layer holds
/// it, by the rules written once here.
pub(crate) trait Layers {
    /// The live range of `layer` holding `a` (ranges of a layer never
    /// overlap).
    fn live_in(&self, layer: usize, a: u64) -> Option<Range>;

    /// The freed range of `layer` holding `a`.
    fn freed_in(&self, layer: usize, a: u64) -> Option<Range>;

    /// Where `a` lies: the most specific live range holding it, else the
    /// most specific freed one, else nowhere.
    fn locate(&self, a: u64) -> Hit {
        if let Some(r) = (0..3).rev().find_map(|l| self.live_in(l, a)) {
            return Hit::Live(r);
        }
        match (0..3).rev().find_map(|l| self.freed_in(l, a)) {
            Some(r) => Hit::Freed(r),
            None => Hit::Nowhere,
        }
    }

    /// Whether one live range holds all of the 4 KiB page `page`, so every
    /// address in it is live. None holds the last page whole: no range
    /// holds the last address, where range ends saturate.
    fn holds_page(&self, page: u64) -> bool {
        let start = page << PAGE_BITS;
        let Some(end) = start.checked_add(1 << PAGE_BITS) else {
            return false;
        };
        (0..3).any(|l| self.live_in(l, start).is_some_and(|r| r.end() >= end))
    }
}
