//! The launch pointer audit of one piece of the stream, run by the
//! decoder that tallies the piece while the map goes on with later pieces.
//!
//! The decoder takes the piece's allocations and frees out first
//! ([`super::ops`]); the map applies them in stream order
//! ([`super::map`]), recording each change it makes, and then hands the
//! piece a copy of its ranges as they stand ([`Ranges`], persistent: the
//! copy shares their nodes). Those are the piece's [`Prepared`]. As the
//! decoder tallies the piece, the audit ([`PieceAudit`]) puts the changes
//! in effect at the records where they were made ([`Overlay`]) and checks
//! each launch's pointers as the launch is parsed, so at each launch it
//! asks the map exactly as the map stood there: the audit's answers are
//! those of the map itself, no pointer is kept, and only the allocations
//! and frees stay serial.
//!
//! Most pointers fall in a page that one live range holds whole (a
//! buffer's base and the offsets past it that kernels are passed): a view
//! keeps which pages are whole from piece to piece ([`PageCache`]), and a
//! change meeting a page makes it ask again (but for the first page of a
//! live range that came, which it then knows whole), so such a pointer
//! costs one cache probe.

use crate::archive::memory::map::{Hit, PointerExample, Range, MAX_EXAMPLES};
use crate::archive::memory::ops::{listed_pointers, PieceOps, Pointer};
use crate::archive::memory::overlay::{Overlay, SCAN_BUDGET};
use crate::archive::memory::page_cache::{Met, PageCache};
use crate::archive::memory::ranges::{Layers, Ranges};
use crate::archive::memory::watch::Watch;
use crate::archive::memory::whole_blocks::Avx2;
use crate::archive::summary::arg_shapes::{Listed, MAX_WORDS};

// A launch's listed words are one bit each of a `u32`.
const _: () = assert!(MAX_WORDS <= u32::BITS as usize);

/// One change the map made to its ranges while applying a piece: a live
/// range (`freed` unset) or a freed one (`freed` set) came or went. A live
/// range goes when it is freed or superseded (reallocated), a freed one
/// when its memory is allocated again or it is forgotten at the cap.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Change {
    /// The range came.
    Add(Range),
    /// The range went.
    Remove(Range),
}

impl Change {
    /// The range that came or went.
    pub(crate) fn range(&self) -> &Range {
        let (Change::Add(r) | Change::Remove(r)) = self;
        r
    }
}

/// What the map hands a piece's audit.
#[derive(Default)]
pub(crate) struct Prepared {
    /// The map's ranges after the piece's last event (a copy that shares
    /// their nodes until the map changes them).
    pub(crate) after: Ranges,
    /// The changes made while applying the piece, each with the index of
    /// the first of the piece's records it is in effect for (the record
    /// after an allocation or free; a launch's own for the region records
    /// applied before it).
    pub(crate) changes: Vec<(u32, Change)>,
}

impl Prepared {
    /// Empties it for the next piece, keeping its buffer and letting go of
    /// the ranges it shares with the map.
    pub(crate) fn clear(&mut self) {
        self.after = Ranges::default();
        self.changes.clear();
    }
}

/// What the audit found in a stretch of the stream.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Audit {
    /// Pointer arguments checked.
    pub pointer_args: u64,
    /// Launches passing at least one pointer into freed memory.
    pub stale_pointer_launches: u64,
    /// Pointer arguments in no range.
    pub unattributed_pointer_args: u64,
    /// First stale pointers.
    pub stale_examples: Vec<PointerExample>,
    /// First unattributed pointers.
    pub unattributed_examples: Vec<PointerExample>,
}

impl Audit {
    /// Adds the audit of the stretch right after this one.
    pub(crate) fn extend(&mut self, later: Audit) {
        self.pointer_args += later.pointer_args;
        self.stale_pointer_launches += later.stale_pointer_launches;
        self.unattributed_pointer_args += later.unattributed_pointer_args;
        for (mine, theirs) in [
            (&mut self.stale_examples, later.stale_examples),
            (&mut self.unattributed_examples, later.unattributed_examples),
        ] {
            let room = MAX_EXAMPLES.saturating_sub(mine.len());
            mine.extend(theirs.into_iter().take(room));
        }
    }
}

/// Audits pieces one after the other, keeping what it learnt of pages.
pub(crate) struct View {
    /// Which pages one live range holds whole, and the addresses found in
    /// no range.
    pub(crate) pages: PageCache,
    /// Changes of a piece looked through before a copy of the ranges is
    /// made ([`Overlay`]).
    budget: usize,
    /// The table that knew the last probed launch's words whole: the
    /// launches behind one allocator keep to one for long runs.
    first_asked: FirstAsked,
    /// Where the CPU has AVX2, the page cache is asked of a launch's words
    /// eight at a time ([`super::whole_blocks::WholeBlocks::listed_misses`]).
    avx2: Option<Avx2>,
}

impl Default for View {
    fn default() -> View {
        View::with_budget(SCAN_BUDGET)
    }
}

impl View {
    /// A view that looks through at most `budget` changes of a piece
    /// before it makes a copy of the ranges.
    pub(crate) fn with_budget(budget: usize) -> View {
        View {
            pages: PageCache::default(),
            budget,
            first_asked: FirstAsked::Pages,
            avx2: Avx2::detect(),
        }
    }

    /// Audits every launch `piece` holds (with their pointers: a watch's
    /// pieces) against the map as `prepared` describes it; `watch` hears
    /// of every pointer into its address.
    pub(crate) fn audit(
        &mut self,
        number: u64,
        piece: &PieceOps,
        prepared: &Prepared,
        watch: Option<&mut Watch>,
    ) -> Audit {
        let mut audit = PieceAudit::new(self, number, prepared, watch);
        for l in &piece.launches {
            let ptrs = piece.pointers(l.pointers());
            audit.launch(l.at, l.seq, piece.name_of(l), ptrs.iter());
        }
        audit.finish()
    }
}

/// The table of the page cache that a launch's words are first asked of
/// all at once ([`PieceAudit::listed`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum FirstAsked {
    /// The page table: buffers of any size.
    Pages,
    /// The granule table: the segments of a caching allocator, whose pages
    /// take no entry.
    Granules,
}

/// What [`probe`] found of a launch's words.
struct Probed {
    /// The words that are not null.
    count: u64,
    /// One bit per word, those not null that lie in no page or granule
    /// the cache knows whole.
    unknown: u32,
    /// The table to ask first at the next launch: the granules when a word
    /// was known whole by its granule alone.
    next: FirstAsked,
}

/// Probes each word `listed` lists, one by one, in the page cache `pages`.
/// Kept out of line so that the loop has the registers to itself. The cache
/// never knows the null pointer's page, so a word is tested for null only
/// when the page table misses.
#[inline(never)]
fn probe(pages: &PageCache, listed: Listed<'_>) -> Probed {
    let mut nulls = 0;
    let mut unknown = 0;
    let mut next = FirstAsked::Pages;
    for (i, (_, address)) in listed.iter().enumerate() {
        if pages.page_misses(address) != 0 {
            if address == 0 {
                nulls += 1;
            } else if pages.granule_misses(address) == 0 {
                next = FirstAsked::Granules;
            } else {
                unknown |= 1 << i;
            }
        }
    }
    Probed {
        count: listed.len() as u64 - nulls,
        unknown,
        next,
    }
}

/// The record the next change of `now` not yet in effect is made before,
/// `u64::MAX` when none is left.
fn next_change(now: &Overlay<'_>) -> u64 {
    now.next_change().map_or(u64::MAX, |c| c as u64)
}

/// The audit of one piece, launch by launch, as its records are read.
pub(crate) struct PieceAudit<'a> {
    view: &'a mut View,
    now: Overlay<'a>,
    /// The record the next change not yet in effect is made before
    /// ([`Overlay::next_change`]), `u64::MAX` when none is left: kept here
    /// so that a launch tells whether to catch up by one compare.
    next_change: u64,
    number: u64,
    audit: Audit,
    watch: Option<&'a mut Watch>,
}

impl<'a> PieceAudit<'a> {
    /// Starts the audit of piece `number` against the map as `prepared`
    /// describes it; `watch` hears of every pointer into its address.
    pub(crate) fn new(
        view: &'a mut View,
        number: u64,
        prepared: &'a Prepared,
        watch: Option<&'a mut Watch>,
    ) -> PieceAudit<'a> {
        // The watch asks of every pointer: a copy is made from the start.
        let budget = if watch.is_some() { 0 } else { view.budget };
        view.pages.start(number);
        let now = Overlay::new(&prepared.after, &prepared.changes, budget);
        PieceAudit {
            next_change: next_change(&now),
            now,
            view,
            number,
            audit: Audit::default(),
            watch,
        }
    }

    /// Checks the non-null pointers `ptrs` of the launch of kernel `name`
    /// with sequence id `seq` at the piece's record `at` (launches come in
    /// record order): most lie in a whole page and cost one probe.
    #[inline]
    pub(crate) fn launch(
        &mut self,
        at: u32,
        seq: u64,
        name: &[u8],
        ptrs: impl Iterator<Item = Pointer>,
    ) {
        self.catch_up_to(at);
        let mut stale = false;
        for p in ptrs {
            self.audit.pointer_args += 1;
            stale |= self.check(seq, name, p);
        }
        self.stale_if(stale);
    }

    /// Checks the launch as [`Self::launch`] does the pointers `listed`
    /// lists, in rounds that ask and change nothing until the last: all the
    /// words at once in the table that knew the last launch's, with no
    /// branch per word (most launches end there); then, when one missed,
    /// each word in both tables; and only the words the cache does not know
    /// whole are checked one by one.
    #[inline]
    pub(in crate::archive) fn listed(
        &mut self,
        at: u32,
        seq: u64,
        name: &[u8],
        listed: Listed<'_>,
    ) {
        if self.watch.is_some() {
            return self.launch(at, seq, name, listed_pointers(listed));
        }
        self.catch_up_to(at);
        let pages = &self.view.pages;
        let missed = match self.view.first_asked {
            FirstAsked::Pages => pages.listed_page_misses(listed, self.view.avx2),
            FirstAsked::Granules => pages.listed_granule_misses(listed, self.view.avx2),
        };
        if missed == 0 {
            // No word is null: the cache never knows a null pointer's block.
            self.audit.pointer_args += listed.len() as u64;
            return;
        }
        let probed = probe(pages, listed);
        self.view.first_asked = probed.next;
        self.audit.pointer_args += probed.count;
        if probed.unknown != 0 {
            self.check_unknown(seq, name, listed, probed.unknown);
        }
    }

    /// Checks the listed words of a launch whose bits are set in `unknown`
    /// (none of them null).
    #[cold]
    fn check_unknown(&mut self, seq: u64, name: &[u8], listed: Listed<'_>, unknown: u32) {
        let mut stale = false;
        for (i, (w, address)) in listed.iter().enumerate() {
            if unknown >> i & 1 == 1 {
                stale |= self.check(
                    seq,
                    name,
                    Pointer {
                        arg: w.arg,
                        address,
                    },
                );
            }
        }
        self.stale_if(stale);
    }

    /// Puts in effect the changes made before record `at`, when there are.
    #[inline]
    fn catch_up_to(&mut self, at: u32) {
        if u64::from(at) >= self.next_change {
            self.catch_up(Some(at as usize));
        }
    }

    /// Whether the non-null pointer `p` of a launch is stale: one probe
    /// when its page is whole, one more when it was found in no range
    /// before, else where it lies.
    #[inline]
    fn check(&mut self, seq: u64, name: &[u8], p: Pointer) -> bool {
        if self.watch.is_none() {
            let now = &self.now;
            let pages = &mut self.view.pages;
            if pages.whole(p.address, |start, bits| now.holds_block(start, bits)) {
                return false;
            }
            if pages.knows_nowhere(p.address) {
                return self.count(seq, name, p, Hit::Nowhere);
            }
        }
        self.locate(seq, name, p)
    }

    /// Counts a launch that passed a stale pointer.
    #[inline]
    fn stale_if(&mut self, stale: bool) {
        if stale {
            self.audit.stale_pointer_launches += 1;
        }
    }

    /// Where pointer `p` of a launch lies, counted and kept as an example
    /// when it is in no range (and remembered there) or in freed memory;
    /// whether it is stale.
    #[cold]
    fn locate(&mut self, seq: u64, name: &[u8], p: Pointer) -> bool {
        let hit = self.now.locate(p.address);
        if let Some(w) = self.watch.as_deref_mut() {
            w.passed(seq, name, &p, hit);
        }
        if let Hit::Nowhere = hit {
            let gap = self.now.gap_around(p.address);
            self.view.pages.learn_nowhere(p.address, gap);
        }
        self.count(seq, name, p, hit)
    }

    /// Counts pointer `p` of a launch where it lies, `hit`, and keeps it as
    /// an example when it is in no range or in freed memory; whether it is
    /// stale.
    fn count(&mut self, seq: u64, name: &[u8], p: Pointer, hit: Hit) -> bool {
        let audit = &mut self.audit;
        let (examples, freed) = match hit {
            Hit::Live(_) => return false,
            Hit::Freed(r) => (&mut audit.stale_examples, Some(r)),
            Hit::Nowhere => {
                audit.unattributed_pointer_args += 1;
                (&mut audit.unattributed_examples, None)
            }
        };
        if examples.len() < MAX_EXAMPLES {
            examples.push(PointerExample {
                launch_seq: seq,
                kernel: String::from_utf8_lossy(name).into_owned(),
                argument: p.arg,
                address: p.address,
                freed,
            });
        }
        freed.is_some()
    }

    /// Puts in effect the changes made before record `at` (all, for
    /// `None`), in stream order: a range that came or went leaves the pages
    /// it meets to be asked again, but for the first whole block of a live
    /// range that came ([`PageCache::follow`]).
    fn catch_up(&mut self, at: Option<usize>) {
        while let Some(c) = self.now.next_before(at) {
            self.view.pages.follow(Met::of_change(&c));
        }
        self.next_change = next_change(&self.now);
    }

    /// Ends the audit: what it found.
    pub(crate) fn finish(mut self) -> Audit {
        self.catch_up(None);
        self.view.pages.end(self.number);
        self.audit
    }
}
