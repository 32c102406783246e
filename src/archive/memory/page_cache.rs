//! What the audit knows of 4 KiB pages: whether one live range holds a
//! page, or the 2 MiB granule around it, whole, so that every pointer into
//! it is live and costs one probe ([`WholeBlocks`]); and, for the pointers
//! into no range, which addresses it already found there ([`Nowhere`]).
//!
//! A view keeps what it learnt from piece to piece. Between the state it
//! learnt it in and the state before the piece it audits next lie the
//! changes of the pieces in between (applied after it, or before it when
//! it audits an earlier piece): the map keeps the pages those changes met,
//! for the last [`LOG_PIECES`] pieces ([`ChangeLog`]), and the view follows
//! them before it starts ([`PageCache::follow`]). Moving forward, it
//! forgets what they may have changed and knows the first block of each
//! live range that came whole; moving back, it undoes them and only
//! forgets. A view further behind forgets every page.

use std::collections::VecDeque;

use crate::archive::memory::nowhere::Nowhere;
use crate::archive::memory::view::Change;
use crate::archive::memory::whole_blocks::{Avx2, WholeBlocks};
use crate::archive::summary::arg_shapes::Listed;

/// Address bits below a page.
pub(crate) const PAGE_BITS: u32 = 12;
/// Address bits below a granule: a huge page, and the size a caching
/// allocator rounds its segments to.
const GRANULE_BITS: u32 = 21;
/// Entries of the page table: 32 KiB of eight-byte entries, which keep
/// each page as its last address (a pointer is told by one `or` and one
/// compare), in the first-level cache beside what the decoder reads.
const PAGE_ENTRIES: usize = 1 << 12;
/// Entries of the granule table: 256 KiB of two-byte entries, which hold
/// the tags of granules below 2^53.
const GRANULE_ENTRIES: usize = 1 << 17;
/// Which pages are whole.
pub(super) type Pages = WholeBlocks<u64, PAGE_BITS, PAGE_ENTRIES, false>;
/// Which granules are whole.
pub(super) type Granules = WholeBlocks<u16, GRANULE_BITS, GRANULE_ENTRIES, true>;
/// Pieces whose changes the log keeps.
const LOG_PIECES: usize = 64;
/// How many times, on average, a view may look at each page entry to
/// forget the pages of the changes before a piece one by one, before it
/// forgets every page instead: an entry forgotten for nothing costs a
/// look in the map's trees to learn again, far more than a look.
const FORGET_LOOKS: u64 = 16;

/// The bytes of a range (live or freed) that came or went.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Met {
    base: u64,
    /// Past its last byte (saturating, so above `base`).
    end: u64,
    /// Whether the range is live: only a live range that comes or goes
    /// makes pages whole or not, and only those it holds whole.
    live: bool,
    /// Whether the range came (else it went): the blocks a live range
    /// that came holds whole are whole until a later change meets them.
    came: bool,
}

impl Met {
    /// What change `c` meets (its range holds at least one byte): a live
    /// range that comes or goes makes the pages and granules it holds
    /// whole or not, and any range that comes or goes changes where an
    /// address in the pages it meets lies.
    pub(crate) fn of_change(c: &Change) -> Met {
        let r = c.range();
        Met {
            base: r.base,
            end: r.end(),
            live: r.freed.is_none(),
            came: matches!(c, Change::Add(_)),
        }
    }

    /// The same bytes as a range that went: what a view that moves back
    /// past the change forgets (the range it undoes may have come or gone).
    fn undone(self) -> Met {
        Met {
            came: false,
            ..self
        }
    }

    /// Whether it meets any of the bytes `low..high`.
    pub(crate) fn meets(&self, low: u64, high: u64) -> bool {
        self.base < high && low < self.end
    }

    /// Whether it meets any of the pages `low..=high`.
    pub(crate) fn meets_pages(&self, low: u64, high: u64) -> bool {
        self.base >> PAGE_BITS <= high && low <= (self.end - 1) >> PAGE_BITS
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

/// Whether pages and granules are whole, and the addresses found in no
/// range, as of the state before one piece (or a launch of it, while it is
/// audited).
#[derive(Default)]
pub(crate) struct PageCache {
    /// Which pages one live range holds whole.
    pages: Pages,
    /// Which granules one live range holds whole: asked about only for a
    /// pointer whose page the cache does not know whole.
    granules: Granules,
    /// The piece before which the entries hold, once the pages in
    /// `pending` are forgotten.
    as_of: Option<u64>,
    /// Pages met since the entries were learnt.
    pending: Vec<Met>,
    /// Addresses found in no range, forgotten with the pages.
    nowhere: Nowhere,
}

impl PageCache {
    /// Takes from `log` the pages to forget before auditing piece `n`
    /// (run under the lock the log is kept under; the forgetting itself
    /// waits for [`Self::start`]).
    pub(crate) fn catch_up(&mut self, n: u64, log: &ChangeLog) {
        if let Some(s) = self.as_of.filter(|&s| s != n) {
            match log.between(s.min(n), s.max(n)) {
                Some(met) if s < n => self.pending.extend(met),
                Some(met) => self.pending.extend(met.map(|m| m.undone())),
                None => self.as_of = None,
            }
        }
        self.as_of = self.as_of.map(|_| n);
    }

    /// Starts the audit of piece `n`: what may have changed since the
    /// entries were learnt is forgotten (every entry, when the view was not
    /// caught up to `n`; every entry of a table, when forgetting the blocks
    /// live changes held one by one would look at each of its entries more
    /// than [`FORGET_LOOKS`] times, as many large segments coming and going
    /// do to the page table, while the granule table forgets theirs one by
    /// one).
    pub(crate) fn start(&mut self, n: u64) {
        if self.as_of != Some(n) {
            self.forget_all();
        }
        let looks = |f: &dyn Fn(u64, u64) -> u64| {
            (self.pending.iter().filter(|m| m.live))
                .fold(0u64, |sum, m| sum.saturating_add(f(m.base, m.end)))
        };
        let pages =
            looks(&|f, l| self.pages.forget_looks(f, l)) <= FORGET_LOOKS * PAGE_ENTRIES as u64;
        let granules = looks(&|f, l| self.granules.forget_looks(f, l))
            <= FORGET_LOOKS * GRANULE_ENTRIES as u64;
        if !pages {
            self.pages.clear();
        }
        if !granules {
            self.granules.clear();
        }
        // An emptied table lists no filled entry: forgetting costs it
        // nothing more.
        for m in std::mem::take(&mut self.pending) {
            self.follow(m);
        }
        self.as_of = Some(n);
    }

    /// Ends the audit of piece `n`: the entries hold before piece `n + 1`.
    pub(crate) fn end(&mut self, n: u64) {
        self.as_of = Some(n + 1);
    }

    /// Zero when the cache already knows the page of `a` is whole, else
    /// not ([`WholeBlocks::misses`]); never zero for a null pointer.
    #[inline]
    pub(crate) fn page_misses(&self, a: u64) -> u64 {
        self.pages.misses(a)
    }

    /// Zero when the cache already knows the page of every word `listed`
    /// lists is whole, else not, asked eight at a time with `avx2`
    /// ([`WholeBlocks::listed_misses`]); never zero for a null pointer.
    #[inline]
    pub(in crate::archive) fn listed_page_misses(
        &self,
        listed: Listed<'_>,
        avx2: Option<Avx2>,
    ) -> u64 {
        self.pages.listed_misses(listed, avx2)
    }

    /// Zero when the cache already knows the granule of every word
    /// `listed` lists is whole, else not, as [`Self::listed_page_misses`].
    #[inline]
    pub(in crate::archive) fn listed_granule_misses(
        &self,
        listed: Listed<'_>,
        avx2: Option<Avx2>,
    ) -> u64 {
        self.granules.listed_misses(listed, avx2)
    }

    /// Zero when the cache already knows the granule of `a` is whole, else
    /// not ([`WholeBlocks::misses`]); never zero for a null pointer.
    #[inline]
    pub(crate) fn granule_misses(&self, a: u64) -> u64 {
        self.granules.misses(a)
    }

    /// Whether the page of `a` is whole, asking `holds` (with the first
    /// address and the address bits of a page or a granule) what the cache
    /// does not know: for a page it knows nothing of, whether the granule
    /// is whole, and only when it is not, the page. A page in a whole
    /// granule takes no page entry, so the pages of large segments do not
    /// crowd out those of small buffers; a page known not whole is in no
    /// whole granule, and asks nothing.
    #[inline]
    pub(crate) fn whole(&mut self, a: u64, mut holds: impl FnMut(u64, u32) -> bool) -> bool {
        if let Some(whole) = self.pages.known(a) {
            return whole;
        }
        if self.granules.whole(a, |g| holds(g, GRANULE_BITS)) {
            return true;
        }
        self.pages.whole(a, |p| holds(p, PAGE_BITS))
    }

    /// Follows a change that met `m`, in stream order: forgets the
    /// addresses found in no range in the pages it meets, and when `m` is a
    /// live range's, whether the pages and granules it holds whole are
    /// whole (whether another is cannot have changed: none of them is whole
    /// by this range). Of a live range that came, the first granule it
    /// holds whole is then known whole ([`WholeBlocks::came_whole`]), and
    /// the first page only when it holds no granule whole, so that the
    /// pages of large segments still take no entry.
    pub(crate) fn follow(&mut self, m: Met) {
        self.nowhere.forget(m);
        if !m.live {
            return;
        }
        if m.came && !Granules::hold_one(m.base, m.end) {
            self.pages.came_whole(m.base, m.end);
        } else {
            self.pages.forget(m.base, m.end);
        }
        match m.came {
            true => self.granules.came_whole(m.base, m.end),
            false => self.granules.forget(m.base, m.end),
        }
    }

    fn forget_all(&mut self) {
        self.pages.clear();
        self.granules.clear();
        self.nowhere.clear();
        self.pending.clear();
    }

    /// Whether `a` (not null) is already known to lie in no range.
    pub(crate) fn knows_nowhere(&self, a: u64) -> bool {
        self.nowhere.knows(a)
    }

    /// Remembers that `a` (not null) lies in no range, and with it the
    /// span `gap` around it that no range meets when it is known, until a
    /// change meets its page or the span.
    pub(crate) fn learn_nowhere(&mut self, a: u64, gap: Option<(u64, u64)>) {
        self.nowhere.learn(a, gap);
    }
}
