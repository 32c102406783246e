//! What the audit knows of 4 KiB pages: whether one live range holds a
//! page whole, so that every pointer into it is live and costs one probe;
//! and, for the pointers into no range, which addresses it already found
//! there ([`Nowhere`]).
//!
//! A view keeps what it learnt from piece to piece. Between the state it
//! learnt it in and the state before the piece it audits next lie the
//! changes of the pieces in between (applied after it, or before it when
//! it audits an earlier piece): the map keeps the pages those changes met,
//! for the last [`LOG_PIECES`] pieces ([`ChangeLog`]), and the view forgets
//! them before it starts. A view further behind forgets every page.

use std::collections::VecDeque;

use crate::archive::memory::nowhere::Nowhere;
use crate::archive::memory::view::Change;

/// Address bits below a page.
pub(crate) const PAGE_BITS: u32 = 12;
/// Bits of an entry's index.
const INDEX_BITS: u32 = 12;
/// Entries of the cache; 4 bytes each.
const CACHE: usize = 1 << INDEX_BITS;
/// The least of the values too large for a tag.
const NO_TAG: u32 = u32::MAX >> 1;
/// An entry that knows no page: that of the first page with no tag, not
/// whole, which no page's entry is.
const EMPTY: u32 = NO_TAG << 1;
/// Pieces whose changes the log keeps.
const LOG_PIECES: usize = 64;

/// The pages a range (live or freed) meets.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Met {
    first: u64,
    last: u64,
    /// Whether the range is live: only a live range that comes or goes
    /// makes pages whole or not.
    live: bool,
}

impl Met {
    /// The pages change `c` meets (its range holds at least one byte): a
    /// live range that comes or goes makes them whole or not, and any
    /// range that comes or goes changes where an address in them lies.
    pub(crate) fn of_change(c: &Change) -> Met {
        let r = c.range();
        Met {
            first: r.base >> PAGE_BITS,
            last: (r.end() - 1) >> PAGE_BITS,
            live: r.freed.is_none(),
        }
    }

    /// Whether it meets any of the pages `low..=high`.
    pub(crate) fn meets_pages(&self, low: u64, high: u64) -> bool {
        self.first <= high && low <= self.last
    }
}

/// The pages the map's changes met, per applied piece, for the last
/// [`LOG_PIECES`] pieces.
#[derive(Default)]
pub(crate) struct ChangeLog {
    /// Number of the first piece kept.
    first: u64,
    pieces: VecDeque<Vec<Met>>,
}

impl ChangeLog {
    /// Keeps the changes of piece `n`, the piece after the last one
    /// kept (the log starts again at `n` otherwise).
    pub(crate) fn applied(&mut self, n: u64, changes: &[(u32, Change)]) {
        if self.first.checked_add(self.pieces.len() as u64) != Some(n) {
            self.pieces.clear();
        }
        if self.pieces.is_empty() {
            self.first = n;
        }
        let mut met = match self.pieces.len() >= LOG_PIECES {
            true => {
                self.first += 1;
                self.pieces.pop_front().unwrap_or_default()
            }
            false => Vec::new(),
        };
        met.clear();
        met.extend(changes.iter().map(|(_, c)| Met::of_change(c)));
        self.pieces.push_back(met);
    }

    /// The changes of pieces `from..to`, if all are kept.
    fn between(&self, from: u64, to: u64) -> Option<impl Iterator<Item = &Met>> {
        let start = usize::try_from(from.checked_sub(self.first)?).ok()?;
        let end = usize::try_from(to.checked_sub(self.first)?).ok()?;
        if start > end || end > self.pieces.len() {
            return None;
        }
        Some(self.pieces.range(start..end).flatten())
    }
}

/// Whether pages are whole, direct-mapped by page, and the addresses found
/// in no range, as of the state before one piece (or a launch of it, while
/// it is audited).
pub(crate) struct PageCache {
    /// Per entry, `tag << 1 | whole` ([`Self::tag`]), or [`EMPTY`].
    known: Box<[u32; CACHE]>,
    /// The piece before which the entries hold, once the pages in
    /// `pending` are forgotten.
    as_of: Option<u64>,
    /// Pages met since the entries were learnt.
    pending: Vec<Met>,
    /// Addresses found in no range, forgotten with the pages.
    nowhere: Nowhere,
}

impl Default for PageCache {
    fn default() -> PageCache {
        PageCache {
            known: Box::new([EMPTY; CACHE]),
            as_of: None,
            pending: Vec::new(),
            nowhere: Nowhere::default(),
        }
    }
}

impl PageCache {
    /// Takes from `log` the pages to forget before auditing piece `n`
    /// (run under the lock the log is kept under; the forgetting itself
    /// waits for [`Self::start`]).
    pub(crate) fn catch_up(&mut self, n: u64, log: &ChangeLog) {
        if let Some(s) = self.as_of.filter(|&s| s != n) {
            match log.between(s.min(n), s.max(n)) {
                Some(met) => self.pending.extend(met),
                None => self.as_of = None,
            }
        }
        self.as_of = self.as_of.map(|_| n);
    }

    /// Starts the audit of piece `n`: what may have changed since the
    /// entries were learnt is forgotten (every page, when the view was not
    /// caught up to `n`, or when the pages live changes met number more
    /// than the cache holds, which costs less than forgetting them one by
    /// one).
    pub(crate) fn start(&mut self, n: u64) {
        let met = self
            .pending
            .iter()
            .filter(|m| m.live)
            .fold(0u64, |sum, m| sum.saturating_add(m.last - m.first + 1));
        if self.as_of != Some(n) || met > CACHE as u64 {
            self.forget_all();
        }
        for m in std::mem::take(&mut self.pending) {
            self.forget(m);
        }
        self.as_of = Some(n);
    }

    /// Ends the audit of piece `n`: the entries hold before piece `n + 1`.
    pub(crate) fn end(&mut self, n: u64) {
        self.as_of = Some(n + 1);
    }

    /// The cache's entry for `page`: its low index bits folded with the
    /// next ones. Consecutive pages (one buffer's) and buffers aligned to
    /// large powers of two (whose pages share their low bits) mostly fall
    /// in entries of their own; pages that share one (such as two 16 MiB
    /// apart) are told apart by their tags. Folding in the bits above too
    /// would cost the probe three instructions a pointer, for pages that
    /// are told apart all the same.
    #[inline]
    fn entry(page: u64) -> usize {
        (page ^ (page >> INDEX_BITS)) as usize % CACHE
    }

    /// The tag an entry keeps of `page`: the page's bits above the
    /// entry's index, which with the index tell the page. `None` for a page
    /// too high for a tag (an address of 2^55 or more), which no entry
    /// knows; no tag is [`EMPTY`]'s.
    #[inline]
    fn tag(page: u64) -> Option<u32> {
        u32::try_from(Self::above_index(page))
            .ok()
            .filter(|&t| t < NO_TAG)
    }

    /// The bits of `page` above its entry's index, of which a tag is made.
    #[inline]
    fn above_index(page: u64) -> u64 {
        page >> INDEX_BITS
    }

    /// Whether the cache already knows the page of `a` is whole; it asks
    /// nothing and changes no entry. The entry is compared as a `u64` with
    /// the page's tag and whole bit, so a page with no tag (whose tag does
    /// not fit 31 bits) matches none.
    #[inline]
    pub(crate) fn knows_whole(&self, a: u64) -> bool {
        let page = a >> PAGE_BITS;
        u64::from(self.known[Self::entry(page)]) == Self::above_index(page) << 1 | 1
    }

    /// Whether the page of `a` is whole, asking `holds` the first time (or
    /// after a change met it, and every time for a page with no tag).
    #[inline]
    pub(crate) fn whole(&mut self, a: u64, holds: impl FnOnce(u64) -> bool) -> bool {
        let page = a >> PAGE_BITS;
        let Some(tag) = Self::tag(page) else {
            return holds(page);
        };
        let e = &mut self.known[Self::entry(page)];
        if *e >> 1 != tag {
            *e = tag << 1 | u32::from(holds(page));
        }
        *e & 1 == 1
    }

    /// Forgets what it knew of the pages `m` meets: the addresses found in
    /// no range there, and whether they are whole when `m` is a live
    /// range's (every page, when it meets more than the cache holds).
    pub(crate) fn forget(&mut self, m: Met) {
        self.nowhere.forget(m);
        if !m.live {
            return;
        }
        if m.last - m.first >= CACHE as u64 {
            self.forget_all();
            return;
        }
        for page in m.first..=m.last {
            let e = &mut self.known[Self::entry(page)];
            if Self::tag(page) == Some(*e >> 1) {
                *e = EMPTY;
            }
        }
    }

    fn forget_all(&mut self) {
        self.known.fill(EMPTY);
        self.nowhere.clear();
        self.pending.clear();
    }

    /// Whether `a` (not null) is already known to lie in no range.
    pub(crate) fn knows_nowhere(&self, a: u64) -> bool {
        self.nowhere.knows(a)
    }

    /// Remembers that `a` (not null) lies in no range, until a change meets
    /// its page.
    pub(crate) fn learn_nowhere(&mut self, a: u64) {
        self.nowhere.learn(a);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A page is asked about once and then answered from its entry; a
    /// second page of the same entry (its bits above the index differ) is
    /// told apart and takes the entry over, so the first is asked about
    /// again; a page too high for a tag is asked about at every probe.
    #[test]
    fn pages_sharing_an_entry_or_too_high_are_never_mistaken() {
        let mut cache = PageCache::default();
        let mut asks = 0;
        let mut probe = |cache: &mut PageCache, page: u64, whole: bool| {
            cache.whole(page << PAGE_BITS, |_| {
                asks += 1;
                whole
            })
        };
        let low = 0x7f00_0000_0000u64 >> PAGE_BITS;
        let twin = (1..u64::from(u32::MAX))
            .map(|t| (low & 0xfff) | ((t + (low >> INDEX_BITS)) << INDEX_BITS))
            .find(|&p| PageCache::entry(p) == PageCache::entry(low))
            .expect("a page of the same entry");
        assert!(probe(&mut cache, low, true));
        assert!(probe(&mut cache, low, false), "answered from the entry");
        assert!(
            !probe(&mut cache, twin, false),
            "the twin page was answered from the first page's entry"
        );
        assert!(probe(&mut cache, low, true));
        let high = 1u64 << (56 - PAGE_BITS);
        for _ in 0..3 {
            assert!(probe(&mut cache, high, true));
        }
        assert_eq!(
            asks,
            1 + 1 + 1 + 3,
            "low, twin, low again, and high each time"
        );
        assert!(cache.knows_whole(low << PAGE_BITS));
        assert!(!cache.knows_whole(twin << PAGE_BITS), "taken over by low");
        assert!(!cache.knows_whole(high << PAGE_BITS), "no tag, never known");
    }

    /// The probe that asks nothing knows no page of an empty cache: not
    /// the null page, nor the pages whose tags lie at or past the largest
    /// (whose entries would read as an empty one's), nor the last page.
    #[test]
    fn an_empty_cache_knows_no_page_whole() {
        let cache = PageCache::default();
        let first_untagged = u64::from(NO_TAG) << INDEX_BITS;
        for page in [
            0,
            1,
            first_untagged - 1,
            first_untagged,
            first_untagged + 0xfff,
        ]
        .into_iter()
        .chain([first_untagged << 1, u64::MAX >> PAGE_BITS])
        {
            assert!(!cache.knows_whole(page << PAGE_BITS), "{page:#x}");
        }
    }
}
