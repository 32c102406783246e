//! The map's ranges at one launch of a piece being audited: the ranges as
//! they stood before the piece, and the piece's changes made before the
//! launch.
//!
//! Few questions reach the ranges (a page not known yet, a pointer outside
//! a whole page), and a piece makes few changes, so a question is first
//! answered by looking through the changes in effect over the ranges
//! before the piece, which costs no copy of a B-tree node. Once the looking
//! has cost more than [`SCAN_BUDGET`] steps in a piece, the changes are
//! replayed onto a copy of the ranges (which copies the nodes they touch),
//! and later questions are asked of the copy; so a piece of many changes
//! and many questions costs no more than replaying them.

use std::cell::{Cell, OnceCell};

use crate::archive::memory::map::Range;
use crate::archive::memory::ranges::{Layers, Ranges};
use crate::archive::memory::view::Change;

/// Changes looked through per piece before they are replayed instead.
pub(crate) const SCAN_BUDGET: usize = 1 << 14;

/// The ranges before a piece with its first `applied` changes.
pub(crate) struct Overlay<'p> {
    before: &'p Ranges,
    changes: &'p [(u32, Change)],
    /// Changes in effect.
    applied: usize,
    /// Changes looked through so far.
    scanned: Cell<usize>,
    /// Changes looked through at most before they are replayed.
    budget: usize,
    /// The ranges with the changes in effect replayed, once replaying was
    /// chosen.
    replayed: OnceCell<Ranges>,
}

impl<'p> Overlay<'p> {
    /// The ranges `before` a piece whose changes are `changes`, none in
    /// effect yet, looked through for at most `budget` steps in all before
    /// they are replayed (0: from the start).
    pub(crate) fn new(before: &'p Ranges, changes: &'p [(u32, Change)], budget: usize) -> Self {
        let replayed = OnceCell::new();
        if budget == 0 {
            let _ = replayed.set(before.clone());
        }
        Overlay {
            before,
            changes,
            applied: 0,
            scanned: Cell::new(0),
            budget,
            replayed,
        }
    }

    /// Puts the next change in effect and returns it, when it was made
    /// before launch `k` (or `k` is `None`: at the end of the piece).
    pub(crate) fn next_before(&mut self, k: Option<usize>) -> Option<Change> {
        let &(at, c) = self.changes.get(self.applied)?;
        if k.is_some_and(|k| at as usize > k) {
            return None;
        }
        self.applied += 1;
        if let Some(r) = self.replayed.get_mut() {
            replay(r, c);
        }
        Some(c)
    }

    /// The launch the next change is made before, if any is left.
    pub(crate) fn next_change(&self) -> Option<usize> {
        self.changes.get(self.applied).map(|&(at, _)| at as usize)
    }

    /// The ranges with the changes in effect replayed, once looking
    /// through them has cost more than the budget.
    fn replayed(&self) -> Option<&Ranges> {
        if self.scanned.get() <= self.budget {
            return self.replayed.get();
        }
        Some(self.replayed.get_or_init(|| {
            let mut r = self.before.clone();
            for &(_, c) in &self.changes[..self.applied] {
                replay(&mut r, c);
            }
            r
        }))
    }

    /// The range of `layer` holding `a` now, `live` or freed: the one
    /// before the piece unless a change in effect ended it, or the last
    /// one a change in effect added (ranges of a layer and kind never
    /// overlap, so one range of them holds `a` at most).
    fn scan(&self, layer: usize, a: u64, live: bool, before: Option<Range>) -> Option<Range> {
        let changes = &self.changes[..self.applied];
        self.scanned.set(self.scanned.get() + changes.len());
        let mine = |r: &Range| r.source.layer() == layer && r.freed.is_none() == live;
        changes.iter().fold(before, |now, (_, c)| match *c {
            Change::Add(r) if mine(&r) && r.contains(a) => Some(r),
            Change::Remove(r) if mine(&r) && now.is_some_and(|n| n.base == r.base) => None,
            _ => now,
        })
    }
}

/// Makes change `c` to `ranges`.
fn replay(ranges: &mut Ranges, c: Change) {
    let (Change::Add(r) | Change::Remove(r)) = c;
    let layer = r.source.layer();
    match (c, r.freed) {
        (Change::Add(_), Some(_)) => {
            ranges.freed[layer].insert(r.base, (r, 0));
        }
        (Change::Remove(_), Some(_)) => {
            ranges.freed[layer].remove(&r.base);
        }
        (Change::Add(_), None) => {
            ranges.live[layer].insert(r.base, r);
        }
        (Change::Remove(_), None) => {
            ranges.live[layer].remove(&r.base);
        }
    }
}

impl Layers for Overlay<'_> {
    fn live_in(&self, layer: usize, a: u64) -> Option<Range> {
        match self.replayed() {
            Some(r) => r.live_in(layer, a),
            None => self.scan(layer, a, true, self.before.live_in(layer, a)),
        }
    }

    fn freed_in(&self, layer: usize, a: u64) -> Option<Range> {
        match self.replayed() {
            Some(r) => r.freed_in(layer, a),
            None => self.scan(layer, a, false, self.before.freed_in(layer, a)),
        }
    }
}
