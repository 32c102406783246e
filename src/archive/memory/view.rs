//! The launch pointer audit of one piece of the stream, run by any decoder
//! while the map goes on with later pieces.
//!
//! The map applies a piece's allocations and frees in stream order
//! ([`super::map`]). Before it does, it hands the piece a copy of its
//! ranges as they stand ([`Ranges`], persistent: the copy shares their
//! nodes), and while it does, it records each change it makes. Those are
//! the piece's [`Prepared`]. A [`View`] starts from the copy and replays
//! the changes at the launches where they were made, so at each launch it
//! holds the map exactly as the map held it there: the audit's answers are
//! those of the map itself, and only the allocations and frees stay serial.
//!
//! Most pointers fall in a page that one live range holds whole (a
//! buffer's base and the offsets past it that kernels are passed): the
//! view finds that once per page and piece, and a later change meeting the
//! page makes it look again, so such a pointer costs one cache probe.

use crate::archive::memory::map::{Hit, PointerExample, Range, MAX_EXAMPLES};
use crate::archive::memory::ops::{PieceOps, Pointer};
use crate::archive::memory::ranges::Ranges;
use crate::archive::memory::watch::Watch;

/// Address bits below a page: the audit asks once per 4 KiB page and
/// piece whether a live range holds it whole.
pub(crate) const PAGE_BITS: u32 = 12;

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

/// What the map hands a piece's audit.
#[derive(Default)]
pub(crate) struct Prepared {
    /// The map's ranges before the piece's first event.
    pub(crate) before: Ranges,
    /// The changes made while applying the piece, each with the index of
    /// the piece's next launch when it was made (region records applied
    /// before a launch carry its index): they come before that launch.
    pub(crate) changes: Vec<(u32, Change)>,
}

impl Prepared {
    /// Empties it for the next piece, keeping its buffer and letting go of
    /// the ranges it shares with the map.
    pub(crate) fn clear(&mut self) {
        self.before = Ranges::default();
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

/// Entries of the page cache (a power of two).
const CACHE: usize = 4096;

/// What the view found of one 4 KiB page in the piece being audited.
#[derive(Debug, Clone, Copy, Default)]
struct Known {
    page: u64,
    /// The audit it was found in (0: none).
    audit: u32,
    /// A live range holds all of it: every address in it is live (in
    /// whichever live range is the most specific there).
    whole: bool,
}

/// The map as it stands at the launch being audited. Reused from piece to
/// piece.
pub(crate) struct View {
    ranges: Ranges,
    /// Whether the pages asked of in this audit are whole, direct-mapped
    /// by page; an entry of an earlier audit is stale.
    known: Box<[Known; CACHE]>,
    /// This audit's number.
    audit: u32,
}

impl Default for View {
    fn default() -> View {
        View {
            ranges: Ranges::default(),
            known: Box::new([Known::default(); CACHE]),
            audit: 0,
        }
    }
}

impl View {
    /// Audits every launch of `piece` against the map as `prepared`
    /// describes it; `watch` hears of every pointer into its address.
    pub(crate) fn audit(
        &mut self,
        piece: &PieceOps,
        prepared: &Prepared,
        mut watch: Option<&mut Watch>,
    ) -> Audit {
        self.ranges = prepared.before.clone();
        self.forget_pages();
        let mut audit = Audit::default();
        let mut changes = prepared.changes.iter().peekable();
        for (k, l) in piece.launches.iter().enumerate() {
            while let Some((_, c)) = changes.next_if(|(at, _)| *at as usize <= k) {
                self.change(c);
            }
            let (name, ptrs) = piece.of_launch(l);
            audit.pointer_args += ptrs.len() as u64;
            // The watch hears of every pointer; without one, a launch whose
            // pointers all fall in whole pages has nothing to report.
            if watch.is_none() && ptrs.iter().all(|p| self.whole(p.address)) {
                continue;
            }
            self.launch(l.seq, name, ptrs, &mut audit, &mut watch);
        }
        // The copy shares nodes with the map: let go of them.
        self.ranges = Ranges::default();
        audit
    }

    /// Starts a new audit: no page is known.
    fn forget_pages(&mut self) {
        self.audit = self.audit.wrapping_add(1);
        if self.audit == 0 {
            // Past 2^32 audits, entries of the first could pass for new.
            self.known.fill(Known::default());
            self.audit = 1;
        }
    }

    /// The page cache's entry for `page`.
    #[inline]
    fn entry(page: u64) -> usize {
        (page ^ (page >> 12) ^ (page >> 24)) as usize % CACHE
    }

    /// Whether the page of `a` is whole now (asked of the ranges the first
    /// time in this audit, or after a change meeting it).
    #[inline]
    fn whole(&mut self, a: u64) -> bool {
        let page = a >> PAGE_BITS;
        let e = &mut self.known[Self::entry(page)];
        if e.page != page || e.audit != self.audit {
            *e = Known {
                page,
                audit: self.audit,
                whole: self.ranges.holds_page(page),
            };
        }
        e.whole
    }

    /// Replays one change of the map; a live range that came or went
    /// leaves the pages it meets to be asked again.
    fn change(&mut self, c: &Change) {
        let (Change::Add(r) | Change::Remove(r)) = *c;
        let layer = r.source.layer();
        match (*c, r.freed) {
            (Change::Add(_), Some(_)) => {
                self.ranges.freed[layer].insert(r.base, (r, 0));
            }
            (Change::Remove(_), Some(_)) => {
                self.ranges.freed[layer].remove(&r.base);
            }
            (Change::Add(_), None) => {
                self.ranges.live[layer].insert(r.base, r);
                self.ask_again(&r);
            }
            (Change::Remove(_), None) => {
                self.ranges.live[layer].remove(&r.base);
                self.ask_again(&r);
            }
        }
    }

    /// Forgets what is known of the pages `r` meets: of all pages, when it
    /// meets more than the cache holds.
    fn ask_again(&mut self, r: &Range) {
        let first = r.base >> PAGE_BITS;
        let last = (r.end() - 1) >> PAGE_BITS;
        if last - first >= CACHE as u64 {
            self.forget_pages();
            return;
        }
        for page in first..=last {
            let e = &mut self.known[Self::entry(page)];
            if e.page == page {
                e.audit = 0;
            }
        }
    }

    /// Checks each pointer of a launch.
    fn launch(
        &mut self,
        seq: u64,
        name: &[u8],
        ptrs: &[Pointer],
        audit: &mut Audit,
        watch: &mut Option<&mut Watch>,
    ) {
        let mut stale = false;
        for &p in ptrs {
            if watch.is_none() && self.whole(p.address) {
                continue;
            }
            let hit = self.ranges.locate(p.address);
            if let Some(w) = watch.as_deref_mut() {
                w.passed(seq, name, &p, hit);
            }
            let (examples, freed) = match hit {
                Hit::Live(_) => continue,
                Hit::Freed(r) => {
                    stale = true;
                    (&mut audit.stale_examples, Some(r))
                }
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
        }
        if stale {
            audit.stale_pointer_launches += 1;
        }
    }
}
