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
use crate::archive::memory::packed::{Freed, Live};

/// Live ranges and freed (not reallocated) ones, per layer, by base,
/// packed ([`super::packed`]).
#[derive(Clone, Default)]
pub(crate) struct Ranges {
    /// Per layer: live ranges.
    live: [OrdMap<u64, Live>; 3],
    /// Per layer: freed ranges, each with the ordinal of its free.
    freed: [OrdMap<u64, Freed>; 3],
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

    /// Every live range, by layer then base.
    pub(crate) fn live_ranges(&self) -> impl Iterator<Item = Range> + '_ {
        self.live
            .iter()
            .flat_map(|l| l.iter().map(|(&b, r)| r.unpack(b)))
    }

    /// The live range of `layer` starting last at or before `a`.
    pub(crate) fn live_from(&self, layer: usize, a: u64) -> Option<Range> {
        let (&b, r) = self.live[layer].get_prev(&a)?;
        Some(r.unpack(b))
    }

    /// The freed range of `layer` starting last at or before `a`.
    pub(crate) fn freed_from(&self, layer: usize, a: u64) -> Option<Range> {
        let (&b, r) = self.freed[layer].get_prev(&a)?;
        Some(r.unpack(b))
    }

    /// The ordinal of the free of the freed range of `layer` at `base`.
    pub(crate) fn freed_ord(&self, layer: usize, base: u64) -> Option<u64> {
        self.freed[layer].get(&base).map(|f| f.ord)
    }

    /// Puts `r` in its layer's live ranges, or its freed ones (with `ord`,
    /// the ordinal of its free) once it is freed.
    pub(crate) fn put(&mut self, r: &Range, ord: u64) {
        let layer = r.source.layer();
        match r.freed {
            Some(death) => drop(self.freed[layer].insert(r.base, Freed::pack(r, death, ord))),
            None => drop(self.live[layer].insert(r.base, Live::pack(r))),
        }
    }

    /// Takes `r` out of its layer's live or freed ranges.
    pub(crate) fn take(&mut self, r: &Range) {
        match r.freed {
            Some(_) => drop(self.remove_freed(r.source.layer(), r.base)),
            None => drop(self.remove_live(r.source.layer(), r.base)),
        }
    }

    /// Takes the live range of `layer` at `base` out, if there is one.
    pub(crate) fn remove_live(&mut self, layer: usize, base: u64) -> Option<Range> {
        self.live[layer].remove(&base).map(|r| r.unpack(base))
    }

    /// Takes the freed range of `layer` at `base` out, if there is one.
    pub(crate) fn remove_freed(&mut self, layer: usize, base: u64) -> Option<Range> {
        self.freed[layer].remove(&base).map(|r| r.unpack(base))
    }

    /// The widest span `(low, high)` around `a` that no range, live or
    /// freed, of any layer meets: from the end of the last range that
    /// starts at or before `a` to the start of the first one after it.
    /// `None` when a range holds `a`.
    pub(crate) fn gap_around(&self, a: u64) -> Option<(u64, u64)> {
        let after = a.saturating_add(1);
        let mut gap = (0, u64::MAX);
        for l in 0..3 {
            let near = [
                self.live[l].get_prev(&a).map(|(&b, r)| (b, r.end(b))),
                self.freed[l].get_prev(&a).map(|(&b, r)| (b, r.end(b))),
                self.live[l].get_next(&after).map(|(&b, _)| (b, b)),
                self.freed[l].get_next(&after).map(|(&b, _)| (b, b)),
            ];
            for (base, end) in near.into_iter().flatten() {
                gap = narrowed(gap, a, base, end)?;
            }
        }
        Some(gap)
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
            if let Some(r) = self.live_from(l, a) {
                if !r.contains(a) && below.is_none_or(|b| r.end() > b.end()) {
                    below = Some(r);
                }
            }
            if let Some((&b, r)) = self.live[l].range(a.saturating_add(1)..).next() {
                if above.is_none_or(|n| b < n.base) {
                    above = Some(r.unpack(b));
                }
            }
        }
        (below, above)
    }
}

impl Layers for Ranges {
    fn live_in(&self, layer: usize, a: u64) -> Option<Range> {
        let (&b, r) = self.live[layer].get_prev(&a)?;
        (a < r.end(b)).then(|| r.unpack(b))
    }

    fn freed_in(&self, layer: usize, a: u64) -> Option<Range> {
        let (&b, r) = self.freed[layer].get_prev(&a)?;
        (a < r.end(b)).then(|| r.unpack(b))
    }
}

/// The span `gap` around `a` cut to leave out the bytes `base..end` (a
/// range of no bytes at `base > a` cuts the span there); `None` when they
/// hold `a`.
pub(crate) fn narrowed(gap: (u64, u64), a: u64, base: u64, end: u64) -> Option<(u64, u64)> {
    let (low, high) = gap;
    if end <= a {
        Some((low.max(end), high))
    } else if base > a {
        Some((low, high.min(base)))
    } else {
        None
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

    /// Whether one live range holds all of the aligned block of 2^`bits`
    /// bytes from `start` (a page or a granule), so every address in it is
    /// live. None holds the last block whole: no range holds the last
    /// address, where range ends saturate.
    fn holds_block(&self, start: u64, bits: u32) -> bool {
        let Some(end) = start.checked_add(1 << bits) else {
            return false;
        };
        (0..3).any(|l| self.live_in(l, start).is_some_and(|r| r.end() >= end))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::archive::format::apis::id;
    use crate::archive::memory::map::{Death, Source};

    fn range(source: Source, base: u64, size: u64, freed: bool) -> Range {
        Range {
            source,
            base,
            size,
            alloc_seq: Some(1),
            thread: Some(1),
            freed: freed.then_some(Death {
                api: Some(id::HIP_FREE),
                seq: Some(2),
            }),
            hist: u32::MAX,
        }
    }

    /// The span around an address runs from the nearest range's end below
    /// it to the nearest start above it, freed ranges and every layer
    /// included; an address in a range has none.
    #[test]
    fn the_gap_around_an_address_is_bounded_by_every_kind_of_range() {
        let mut r = Ranges::default();
        r.put(&range(Source::Api(id::HIP_MALLOC), 0x1000, 0x100, false), 0);
        r.put(&range(Source::Api(id::HIP_MALLOC), 0x3000, 0x100, true), 1);
        r.put(&range(Source::RegionBlock, 0x5000, 0x100, false), 0);
        assert_eq!(r.gap_around(0x2000), Some((0x1100, 0x3000)));
        assert_eq!(r.gap_around(0x1100), Some((0x1100, 0x3000)), "an end");
        assert_eq!(r.gap_around(0x4000), Some((0x3100, 0x5000)), "freed, block");
        assert_eq!(r.gap_around(0x10), Some((0, 0x1000)));
        assert_eq!(r.gap_around(0x6000), Some((0x5100, u64::MAX)));
        assert_eq!(r.gap_around(0x1050), None, "live");
        assert_eq!(r.gap_around(0x3000), None, "freed");
        assert_eq!(r.gap_around(0x50ff), None, "a block");
    }
}
