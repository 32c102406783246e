//! The map's ranges at one launch of a piece being audited: the ranges as
//! the map left them after the piece, with the piece's changes made at or
//! after the launch undone.
//!
//! The map hands a piece a copy of its ranges taken after applying it, so
//! the copy is usually let go (by the audit) before the map changes its
//! ranges again, and the map changes its B-tree nodes in place rather than
//! copying the ones it shares. Few questions reach the ranges (a page not
//! known yet, a pointer outside a whole page), and a piece makes few
//! changes, so a question is answered by looking back through the changes
//! not in effect yet: only those whose range holds the address can change
//! the answer, and at the piece's first question its changes are sorted
//! by base ([`ByBase`]), so those are found without looking through the
//! others. Once the looking has cost more than [`SCAN_BUDGET`] steps in a
//! piece, a copy of the ranges at that launch is made (which copies the
//! nodes it changes), and later questions are asked of it; so a piece of
//! many changes and many questions costs no more than replaying them.

use std::cell::{Cell, OnceCell};

use crate::archive::memory::map::Range;
use crate::archive::memory::ranges::{narrowed, Layers, Ranges};
use crate::archive::memory::view::Change;

/// Changes looked through per piece before a copy of the ranges is made
/// instead.
pub(crate) const SCAN_BUDGET: usize = 1 << 14;

/// A piece's changes by the base of their range, to find those holding an
/// address.
struct ByBase {
    /// Each change's range (`base`, `end`) and index, by base.
    ranges: Vec<(u64, u64, u32)>,
    /// Per entry of `ranges`: the furthest end of it and those before it,
    /// so a look back for the ranges holding an address stops where none
    /// earlier reaches it.
    reach: Vec<u64>,
}

impl ByBase {
    fn of(changes: &[(u32, Change)]) -> ByBase {
        let mut ranges: Vec<_> = (changes.iter().enumerate())
            .map(|(i, (_, c))| (c.range().base, c.range().end(), i as u32))
            .collect();
        ranges.sort_unstable();
        let mut far = 0;
        let reach = (ranges.iter())
            .map(|&(_, end, _)| {
                far = end.max(far);
                far
            })
            .collect();
        ByBase { ranges, reach }
    }

    /// Puts in `holding` the indexes of the changes from `first` on whose
    /// range holds `a`; how many entries it looked at (one at least).
    fn holding(&self, a: u64, first: usize, holding: &mut Vec<u32>) -> usize {
        let before = self.ranges.partition_point(|&(base, _, _)| base <= a);
        let mut looked = 1;
        for i in (0..before).rev() {
            if self.reach[i] <= a {
                break;
            }
            looked += 1;
            let (_, end, at) = self.ranges[i];
            if a < end && at as usize >= first {
                holding.push(at);
            }
        }
        looked
    }

    /// The span `gap` around `a` cut to leave out every change's range;
    /// `None` when one holds `a`.
    fn narrowed(&self, mut gap: (u64, u64), a: u64) -> Option<(u64, u64)> {
        let before = self.ranges.partition_point(|&(base, _, _)| base <= a);
        if let Some(i) = before.checked_sub(1) {
            // The changes starting at or before `a` end by `reach[i]`.
            gap = narrowed(gap, a, self.ranges[i].0, self.reach[i])?;
        }
        if let Some(&(base, _, _)) = self.ranges.get(before) {
            gap = narrowed(gap, a, base, base)?;
        }
        Some(gap)
    }
}

/// The ranges after a piece, with all but its first `applied` changes
/// undone.
pub(crate) struct Overlay<'p> {
    after: &'p Ranges,
    changes: &'p [(u32, Change)],
    /// Changes in effect.
    applied: usize,
    /// The changes by base, sorted at the first question.
    by_base: OnceCell<ByBase>,
    /// Indexes of the changes holding the address asked about (a buffer
    /// kept from question to question).
    holding: Cell<Vec<u32>>,
    /// Which layers and kinds (live, freed) any of the piece's changes
    /// touches: a question about another is asked of `after` alone.
    touched: [[bool; 2]; 3],
    /// Changes looked through so far.
    scanned: Cell<usize>,
    /// Changes looked through at most before a copy is made.
    budget: usize,
    /// The ranges with the changes in effect, replayed onto a copy once
    /// replaying was chosen.
    replayed: OnceCell<Ranges>,
}

impl<'p> Overlay<'p> {
    /// The ranges as they stand `after` a piece whose changes are
    /// `changes`, with none of them in effect yet, looked through for at
    /// most `budget` steps in all before a copy is made (0: from the
    /// start).
    pub(crate) fn new(after: &'p Ranges, changes: &'p [(u32, Change)], budget: usize) -> Self {
        let mut touched = [[false; 2]; 3];
        for (_, c) in changes {
            let r = c.range();
            touched[r.source.layer()][usize::from(r.freed.is_some())] = true;
        }
        let now = Overlay {
            after,
            changes,
            applied: 0,
            by_base: OnceCell::new(),
            holding: Cell::new(Vec::new()),
            touched,
            scanned: Cell::new(0),
            budget,
            replayed: OnceCell::new(),
        };
        if budget == 0 {
            let _ = now.replayed.set(now.copy_now());
        }
        now
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
            redo(r, c);
        }
        Some(c)
    }

    /// The launch the next change is made before, if any is left.
    pub(crate) fn next_change(&self) -> Option<usize> {
        self.changes.get(self.applied).map(|&(at, _)| at as usize)
    }

    /// The widest span around `a` that no range meets now, as far as the
    /// ranges after the piece and the piece's changes tell it (those now
    /// are among them); `None` when one of them holds `a`.
    pub(crate) fn gap_around(&self, a: u64) -> Option<(u64, u64)> {
        let gap = self.after.gap_around(a)?;
        self.by_base
            .get_or_init(|| ByBase::of(self.changes))
            .narrowed(gap, a)
    }

    /// A copy of the ranges now: those after the piece with the changes
    /// not in effect undone, the last first.
    fn copy_now(&self) -> Ranges {
        let mut r = self.after.clone();
        for &(_, c) in self.changes[self.applied..].iter().rev() {
            undo(&mut r, c);
        }
        r
    }

    /// The copy of the ranges now, once looking through the changes has
    /// cost more than the budget.
    fn replayed(&self) -> Option<&Ranges> {
        if self.scanned.get() <= self.budget {
            return self.replayed.get();
        }
        Some(self.replayed.get_or_init(|| self.copy_now()))
    }

    /// The range of `layer` holding `a` now, `live` or freed, from the one
    /// holding it after the piece (`after`): undoing the changes not in
    /// effect, the last first, an added range that holds it goes and a
    /// removed range that holds it comes back (ranges of a layer and kind
    /// never overlap, so one of them holds `a` at most). A change whose
    /// range does not hold `a` changes nothing (an added range that goes
    /// is the one holding it then), so only those that do are undone.
    fn scan(&self, layer: usize, a: u64, live: bool, after: Option<Range>) -> Option<Range> {
        if !self.touched[layer][usize::from(!live)] {
            return after;
        }
        let mut holding = self.holding.take();
        holding.clear();
        let by_base = self.by_base.get_or_init(|| ByBase::of(self.changes));
        let looked = by_base.holding(a, self.applied, &mut holding);
        self.scanned.set(self.scanned.get() + looked);
        holding.sort_unstable_by(|x, y| y.cmp(x));
        let mine = |r: &Range| r.source.layer() == layer && r.freed.is_none() == live;
        let now = holding
            .iter()
            .fold(after, |now, &at| match self.changes[at as usize].1 {
                Change::Add(r) if mine(&r) && now.is_some_and(|n| n.base == r.base) => None,
                Change::Remove(r) if mine(&r) => Some(r),
                _ => now,
            });
        self.holding.set(holding);
        now
    }
}

/// Makes change `c` to `ranges`.
fn redo(ranges: &mut Ranges, c: Change) {
    match c {
        Change::Add(r) => ranges.put(&r, 0),
        Change::Remove(r) => ranges.take(&r),
    }
}

/// Undoes change `c` to `ranges`.
fn undo(ranges: &mut Ranges, c: Change) {
    match c {
        Change::Add(r) => ranges.take(&r),
        Change::Remove(r) => ranges.put(&r, 0),
    }
}

impl Layers for Overlay<'_> {
    fn live_in(&self, layer: usize, a: u64) -> Option<Range> {
        match self.replayed() {
            Some(r) => r.live_in(layer, a),
            None => self.scan(layer, a, true, self.after.live_in(layer, a)),
        }
    }

    fn freed_in(&self, layer: usize, a: u64) -> Option<Range> {
        match self.replayed() {
            Some(r) => r.freed_in(layer, a),
            None => self.scan(layer, a, false, self.after.freed_in(layer, a)),
        }
    }
}
