//! Addresses the audit found in no range, remembered: a pointer passed
//! again and again into memory the map never saw (a symbol, a texture,
//! memory of an API the format does not record) is then counted without
//! looking it up in the map's trees each time.
//!
//! So is one in a span between ranges that such a pointer was found in
//! (the globals of a module lie between a few of them): the last few
//! spans are kept whole, not only the addresses found in them.
//!
//! An address lies nowhere until a range meeting it comes, and a range
//! that comes or goes is a change whose pages and spans the audit forgets
//! ([`super::page_cache::PageCache::follow`]), so what is remembered holds
//! at every point the view audits, earlier pieces included.

use crate::archive::memory::page_cache::{Met, PAGE_BITS};

/// Bits of an entry's index.
const INDEX_BITS: u32 = 6;
/// Addresses remembered at most; 8 bytes each.
const SLOTS: usize = 1 << INDEX_BITS;
/// The odd multiplier that spreads addresses over the entries (2^64 over
/// the golden ratio): symbols a few bytes apart fall in entries of their
/// own.
const SPREAD: u64 = 0x9E37_79B9_7F4A_7C15;
/// An entry that remembers nothing: the null address, which the audit
/// never looks up.
const EMPTY: u64 = 0;
/// Spans between ranges remembered at most, the oldest replaced first.
const GAPS: usize = 8;
/// A span that remembers nothing: it holds no address.
const NO_GAP: (u64, u64) = (0, 0);

/// Addresses found in no range, direct-mapped by address.
pub(crate) struct Nowhere {
    addresses: Box<[u64; SLOTS]>,
    /// The lowest and highest pages of the addresses remembered (`None`:
    /// none), so that a change far from all of them is told apart without
    /// looking at each.
    pages: Option<(u64, u64)>,
    /// Spans `low..high` that no range meets.
    gaps: [(u64, u64); GAPS],
    /// The entry of `gaps` the next span takes.
    next_gap: usize,
}

impl Default for Nowhere {
    fn default() -> Nowhere {
        Nowhere {
            addresses: Box::new([EMPTY; SLOTS]),
            pages: None,
            gaps: [NO_GAP; GAPS],
            next_gap: 0,
        }
    }
}

impl Nowhere {
    fn entry(a: u64) -> usize {
        (a.wrapping_mul(SPREAD) >> (u64::BITS - INDEX_BITS)) as usize
    }

    /// Whether `a` (not null) is remembered as lying in no range.
    pub(crate) fn knows(&self, a: u64) -> bool {
        self.addresses[Self::entry(a)] == a
            || self.gaps.iter().any(|&(low, high)| low <= a && a < high)
    }

    /// Remembers that `a` (not null) lies in no range: the span `gap`
    /// around it that no range meets, when it is known, else `a` alone.
    pub(crate) fn learn(&mut self, a: u64, gap: Option<(u64, u64)>) {
        if let Some(gap) = gap {
            self.gaps[self.next_gap] = gap;
            self.next_gap = (self.next_gap + 1) % GAPS;
            return;
        }
        self.addresses[Self::entry(a)] = a;
        take_in(&mut self.pages, a >> PAGE_BITS);
    }

    /// Forgets the spans `m` meets, and the addresses in the pages it
    /// meets; the bounds then close in on those left.
    pub(crate) fn forget(&mut self, m: Met) {
        for gap in self.gaps.iter_mut().filter(|g| m.meets(g.0, g.1)) {
            *gap = NO_GAP;
        }
        let Some((low, high)) = self.pages else {
            return;
        };
        if !m.meets_pages(low, high) {
            return;
        }
        let mut left = None;
        for e in self.addresses.iter_mut().filter(|e| **e != EMPTY) {
            let page = *e >> PAGE_BITS;
            if m.meets_pages(page, page) {
                *e = EMPTY;
            } else {
                take_in(&mut left, page);
            }
        }
        self.pages = left;
    }

    /// Forgets every address.
    pub(crate) fn clear(&mut self) {
        self.addresses.fill(EMPTY);
        self.pages = None;
        self.gaps = [NO_GAP; GAPS];
    }
}

/// Widens the bounds `pages` to take in `page`.
fn take_in(pages: &mut Option<(u64, u64)>, page: u64) {
    *pages = Some(pages.map_or((page, page), |(low, high)| (low.min(page), high.max(page))));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::archive::memory::map::{Range, Source};
    use crate::archive::memory::view::Change;

    fn met(base: u64, size: u64) -> Met {
        let r = Range {
            source: Source::Api(crate::archive::format::apis::id::HIP_MALLOC),
            base,
            size,
            alloc_seq: Some(1),
            thread: Some(1),
            freed: None,
            hist: u32::MAX,
        };
        Met::of_change(&Change::Add(r))
    }

    /// Symbols a few bytes apart are all remembered; a range that comes
    /// over one page forgets the addresses in it and keeps the others.
    #[test]
    fn a_range_that_comes_forgets_only_the_addresses_it_meets() {
        let mut n = Nowhere::default();
        let symbols: Vec<u64> = (0..8).map(|i| 0x55d0_0000_1000 + i * 0x10).collect();
        let far = 0x55d0_0004_0000;
        for &a in symbols.iter().chain([&far]) {
            assert!(!n.knows(a), "{a:#x} before it was learnt");
            n.learn(a, None);
        }
        assert!(symbols.iter().chain([&far]).all(|&a| n.knows(a)));
        n.forget(met(0x55d0_0000_1040, 0x100));
        assert!(
            symbols.iter().all(|&a| !n.knows(a)),
            "same page as the range"
        );
        assert!(n.knows(far), "a page the range does not meet");
        n.clear();
        assert!(!n.knows(far));
    }

    /// A span learnt is known nowhere at every address in it, an address
    /// learnt without one only there; a range that comes into the span
    /// forgets it, even far from the address it was learnt at.
    #[test]
    fn a_span_is_known_until_a_range_comes_into_it() {
        let mut n = Nowhere::default();
        let (low, high) = (0x7f01_0000_0000, 0x7f02_0000_0000);
        n.learn(0x7f01_8000_0000, Some((low, high)));
        n.learn(0x55d0_0000_1000, None);
        for a in [low, 0x7f01_8000_0040, high - 1] {
            assert!(n.knows(a), "{a:#x} in the span");
        }
        assert!(!n.knows(high), "the span's end");
        assert!(!n.knows(low - 1), "before the span");
        assert!(!n.knows(0x55d0_0000_1008), "beside an address alone");
        n.forget(met(high - 0x1000, 0x2000));
        assert!(!n.knows(0x7f01_8000_0000), "a range came into the span");
        assert!(n.knows(0x55d0_0000_1000), "far from the range");
    }
}
