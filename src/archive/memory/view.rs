//! The launch pointer audit of one piece of the stream, run by any decoder
//! while the map goes on with later pieces.
//!
//! The map applies a piece's allocations and frees in stream order
//! ([`super::map`]), recording each change it makes, and then hands the
//! piece a copy of its ranges as they stand ([`Ranges`], persistent: the
//! copy shares their nodes). Those are the piece's [`Prepared`]. The audit
//! puts the changes in effect at the launches where they were made
//! ([`Overlay`]), so at each launch it asks the map exactly as the map
//! stood there: the audit's answers are those of the map itself, and only
//! the allocations and frees stay serial.
//!
//! Most pointers fall in a page that one live range holds whole (a
//! buffer's base and the offsets past it that kernels are passed): a view
//! keeps which pages are whole from piece to piece ([`PageCache`]), and a
//! change meeting a page makes it ask again, so such a pointer costs one
//! cache probe.

use crate::archive::memory::map::{Hit, PointerExample, Range, MAX_EXAMPLES};
use crate::archive::memory::ops::{PieceOps, Pointers};
use crate::archive::memory::overlay::{Overlay, SCAN_BUDGET};
use crate::archive::memory::page_cache::{Met, PageCache};
use crate::archive::memory::ranges::{Layers, Ranges};
use crate::archive::memory::watch::Watch;

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
    /// The map's ranges after the piece's last event (a copy that shares
    /// their nodes until the map changes them).
    pub(crate) after: Ranges,
    /// The changes made while applying the piece, each with the index of
    /// the piece's next launch when it was made (region records applied
    /// before a launch carry its index): they come before that launch.
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
    /// Which pages one live range holds whole.
    pub(crate) pages: PageCache,
    /// Changes of a piece looked through before a copy of the ranges is
    /// made ([`Overlay`]).
    budget: usize,
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
        }
    }

    /// Audits every launch of piece `number` against the map as `prepared`
    /// describes it; `watch` hears of every pointer into its address.
    pub(crate) fn audit(
        &mut self,
        number: u64,
        piece: &PieceOps,
        prepared: &Prepared,
        mut watch: Option<&mut Watch>,
    ) -> Audit {
        // The watch asks of every pointer: a copy is made from the start.
        let budget = if watch.is_some() { 0 } else { self.budget };
        let mut now = Overlay::new(&prepared.after, &prepared.changes, budget);
        self.pages.start(number);
        let mut audit = Audit {
            pointer_args: piece.addresses.len() as u64,
            ..Audit::default()
        };
        let launches = &piece.launches;
        let mut k = 0;
        while k < launches.len() {
            self.catch_up(&mut now, Some(k));
            // Launches `k..until` see the map as it is now; without a
            // watch, their pointers (which lie side by side) are probed in
            // one run, and only a launch with a pointer outside a whole
            // page is checked pointer by pointer.
            let until = now
                .next_change()
                .map_or(launches.len(), |at| at.min(launches.len()));
            let next = match watch {
                Some(_) => k,
                None => {
                    let run = launches[k].pointers().start..launches[until - 1].pointers().end;
                    let addresses = &piece.addresses[run.clone()];
                    match addresses.iter().position(|&a| !self.whole(&now, a)) {
                        None => {
                            k = until;
                            continue;
                        }
                        // The launch holding that pointer: the first of the
                        // run to end past it.
                        Some(i) => {
                            let i = (run.start + i) as u32;
                            k + launches[k..until].partition_point(|l| l.first + l.count <= i)
                        }
                    }
                }
            };
            let l = &launches[next];
            let ptrs = piece.pointers(l.pointers());
            self.launch(&now, l.seq, piece.name_of(l), ptrs, &mut audit, &mut watch);
            k = next + 1;
        }
        self.catch_up(&mut now, None);
        self.pages.end(number);
        audit
    }

    /// Puts in effect the changes made before launch `k` (all, for
    /// `None`): a live range that came or went leaves the pages it meets
    /// to be asked again.
    fn catch_up(&mut self, now: &mut Overlay<'_>, k: Option<usize>) {
        while let Some(c) = now.next_before(k) {
            if let Some(m) = Met::of_change(&c) {
                self.pages.forget(m);
            }
        }
    }

    /// Whether the page of `a` is whole now.
    #[inline]
    fn whole(&mut self, now: &Overlay<'_>, a: u64) -> bool {
        self.pages.whole(a, |page| now.holds_page(page))
    }

    /// Checks each pointer of a launch.
    fn launch(
        &mut self,
        now: &Overlay<'_>,
        seq: u64,
        name: &[u8],
        ptrs: Pointers<'_>,
        audit: &mut Audit,
        watch: &mut Option<&mut Watch>,
    ) {
        let mut stale = false;
        for p in ptrs.iter() {
            if watch.is_none() && self.whole(now, p.address) {
                continue;
            }
            let hit = now.locate(p.address);
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
