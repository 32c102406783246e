//! The launch pointer audit of one piece of the stream, run by any decoder
//! while the map goes on with later pieces.
//!
//! The map applies a piece's allocations and frees in stream order
//! ([`super::map`]); before it does, it answers which ranges (live and
//! freed) meet the pages the piece's pointers fall in, and while it does,
//! it records each change it makes to its ranges. Those answers and
//! changes are the piece's [`Prepared`]. A [`View`] loads the answers and
//! replays the changes at the events where they were made, so at each
//! launch it holds every range of the map that meets the page of any of
//! the launch's pointers, exactly as the map held them at that launch: the
//! audit's answers are those of the map itself, and only the allocations
//! and frees stay serial.

use std::collections::BTreeMap;

use crate::archive::memory::map::{Hit, PointerExample, Range, MAX_EXAMPLES};
use crate::archive::memory::ops::{Held, PieceOps};
use crate::archive::memory::watch::Watch;

/// Address bits below a page: the map answers for the 4 KiB pages the
/// pointers fall in, and the pointer cache keeps one entry per page (a
/// buffer's base and the offsets past it that kernels are passed share
/// one).
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
#[derive(Debug, Default)]
pub(crate) struct Prepared {
    /// The live and freed ranges meeting the piece's pointer pages before
    /// its first event, page by page (a range may come more than once).
    pub(crate) ranges: Vec<Range>,
    /// Per page of the piece ([`PieceOps::pages`]), the index in `ranges`
    /// of its first range: its ranges run to the next page's first.
    pub(crate) starts: Vec<u32>,
    /// The changes made while applying the piece, each with the index of
    /// the piece's next launch when it was made (region records applied
    /// before a launch carry its index): they come before that launch.
    pub(crate) changes: Vec<(u32, Change)>,
    /// Per page of the piece, whether it was whole before its first event:
    /// a live range held all of it.
    pub(crate) whole: Vec<bool>,
}

impl Prepared {
    /// Empties it for the next piece, keeping its buffers.
    pub(crate) fn clear(&mut self) {
        self.ranges.clear();
        self.starts.clear();
        self.changes.clear();
        self.whole.clear();
    }

    /// The ranges meeting page `i` of the piece before its first event.
    fn ranges_of(&self, i: usize) -> &[Range] {
        let start = self.starts[i] as usize;
        let end = self
            .starts
            .get(i + 1)
            .map_or(self.ranges.len(), |&e| e as usize);
        &self.ranges[start..end]
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

/// Entries of the pointer cache (a power of two).
const CACHE: usize = 4096;

/// The live range a pointer into a page was last found in, with its
/// bounds, so a hit reads the entry and the slot's generation only.
#[derive(Clone, Copy)]
struct CacheEntry {
    base: u64,
    end: u64,
    slot: u32,
    gen: u32,
    layer: usize,
}

impl CacheEntry {
    /// An entry no address lies in.
    const EMPTY: CacheEntry = CacheEntry {
        base: 0,
        end: 0,
        slot: 0,
        gen: 0,
        layer: 0,
    };
}

/// The ranges of the map that meet one piece's pointer pages, as they
/// stand at the event being audited. Reused from piece to piece.
pub(crate) struct View {
    /// The slab of live ranges (dead ones' slots are reused).
    slots: Vec<Range>,
    free_slots: Vec<u32>,
    /// Per slab slot, its generation: it changes when the slot's range
    /// leaves the view, so a cached slot is checked in one load.
    gens: Vec<u32>,
    /// Per layer: live ranges by base, as slab slots.
    live: [BTreeMap<u64, u32>; 3],
    /// Per layer: freed ranges by base.
    freed: [BTreeMap<u64, Range>; 3],
    cache: Box<[CacheEntry; CACHE]>,
    /// Per page of the piece, whether it is still whole and untouched: a
    /// live range held all of it before the piece, and no change of the
    /// piece met it since. Every pointer into it is live (in whichever
    /// live range is the most specific there), which the audit without a
    /// watch checks with this one load; and its ranges are loaded into the
    /// view only when the first change meets it.
    whole: Vec<bool>,
    /// The piece's pages by page, with their index, once a change came in
    /// the piece (empty before).
    by_page: Vec<(u64, u32)>,
}

impl Default for View {
    fn default() -> View {
        View {
            slots: Vec::new(),
            free_slots: Vec::new(),
            gens: Vec::new(),
            live: Default::default(),
            freed: Default::default(),
            cache: Box::new([CacheEntry::EMPTY; CACHE]),
            whole: Vec::new(),
            by_page: Vec::new(),
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
        self.load(prepared, watch.is_some());
        let mut audit = Audit::default();
        let mut changes = prepared.changes.iter().peekable();
        for (k, l) in piece.launches.iter().enumerate() {
            while let Some((_, c)) = changes.next_if(|(at, _)| *at as usize <= k) {
                self.change(c, piece, prepared);
            }
            let (name, ptrs) = piece.of_launch(l);
            audit.pointer_args += ptrs.len() as u64;
            // The watch hears of every pointer; without one, a launch whose
            // pointers all fall in whole pages has nothing to report.
            if watch.is_none() && ptrs.iter().all(|h| self.whole[h.page as usize]) {
                continue;
            }
            self.launch(l.seq, name, ptrs, piece, &mut audit, &mut watch);
        }
        audit
    }

    /// Starts the view of a new piece from the map's answers, with the
    /// ranges of the pages that are not whole, or of all pages for a
    /// watch, which hears where every pointer lies.
    fn load(&mut self, prepared: &Prepared, all: bool) {
        for layer in &mut self.live {
            layer.clear();
        }
        for layer in &mut self.freed {
            layer.clear();
        }
        // Every slot leaves the view: a cache entry naming one is stale.
        self.free_slots.clear();
        for (s, gen) in self.gens.iter_mut().enumerate() {
            *gen = gen.wrapping_add(1);
            self.free_slots.push(s as u32);
        }
        self.whole.clear();
        self.by_page.clear();
        match all {
            true => {
                self.whole.resize(prepared.whole.len(), false);
                (0..prepared.whole.len()).for_each(|i| self.load_page(prepared, i));
            }
            false => {
                self.whole.extend_from_slice(&prepared.whole);
                for (i, _) in prepared.whole.iter().enumerate().filter(|(_, w)| !**w) {
                    self.load_page(prepared, i);
                }
            }
        }
    }

    /// Adds the ranges meeting page `i` before the piece, where the view
    /// does not hold a range at their base yet: each change meeting the
    /// page comes after its ranges were loaded, so one the view holds is
    /// the newer.
    fn load_page(&mut self, prepared: &Prepared, i: usize) {
        for r in prepared.ranges_of(i) {
            let layer = r.source.layer();
            match r.freed {
                Some(_) => {
                    self.freed[layer].entry(r.base).or_insert(*r);
                }
                None if !self.live[layer].contains_key(&r.base) => self.add_live(*r),
                None => {}
            }
        }
    }

    /// Replays one change of the map, after loading the ranges of the
    /// whole pages it meets, which are no longer whole.
    fn change(&mut self, c: &Change, piece: &PieceOps, prepared: &Prepared) {
        let (Change::Add(r) | Change::Remove(r)) = *c;
        self.touch(&r, &piece.pages, prepared);
        let layer = r.source.layer();
        match (*c, r.freed) {
            (Change::Add(_), Some(_)) => {
                self.freed[layer].insert(r.base, r);
            }
            (Change::Add(_), None) => {
                self.remove_live(layer, r.base);
                self.add_live(r);
            }
            (Change::Remove(_), Some(_)) => {
                self.freed[layer].remove(&r.base);
            }
            (Change::Remove(_), None) => self.remove_live(layer, r.base),
        }
    }

    /// Loads the ranges of the whole pages of the piece that `r` meets, and
    /// marks them no longer whole.
    fn touch(&mut self, r: &Range, pages: &[u64], prepared: &Prepared) {
        if self.by_page.is_empty() {
            self.by_page
                .extend(pages.iter().enumerate().map(|(i, &p)| (p, i as u32)));
            self.by_page.sort_unstable();
        }
        let first = r.base >> PAGE_BITS;
        let last = (r.end() - 1) >> PAGE_BITS;
        let from = self.by_page.partition_point(|&(p, _)| p < first);
        for k in from..self.by_page.len() {
            let (p, i) = self.by_page[k];
            if p > last {
                break;
            }
            if std::mem::replace(&mut self.whole[i as usize], false) {
                self.load_page(prepared, i as usize);
            }
        }
    }

    fn add_live(&mut self, r: Range) {
        let slot = match self.free_slots.pop() {
            Some(s) => {
                self.slots[s as usize] = r;
                s
            }
            None => {
                self.slots.push(r);
                self.gens.push(0);
                (self.slots.len() - 1) as u32
            }
        };
        self.live[r.source.layer()].insert(r.base, slot);
    }

    fn remove_live(&mut self, layer: usize, base: u64) {
        if let Some(s) = self.live[layer].remove(&base) {
            let gen = &mut self.gens[s as usize];
            *gen = gen.wrapping_add(1);
            self.free_slots.push(s);
        }
    }

    /// The live range of `layer` holding `a`.
    fn live_in(&self, layer: usize, a: u64) -> Option<(u32, Range)> {
        let (_, &s) = self.live[layer].range(..=a).next_back()?;
        let r = self.slots[s as usize];
        r.contains(a).then_some((s, r))
    }

    /// The freed range of `layer` holding `a`.
    fn freed_in(&self, layer: usize, a: u64) -> Option<Range> {
        let (_, r) = self.freed[layer].range(..=a).next_back()?;
        r.contains(a).then_some(*r)
    }

    /// The cache entry of the page of `a`.
    #[inline]
    fn cache_slot(a: u64) -> usize {
        let page = a >> PAGE_BITS;
        (page ^ (page >> 12) ^ (page >> 24)) as usize % CACHE
    }

    /// The most specific layer holding a live range (0 when none does).
    fn top_layer(&self) -> usize {
        (1..3)
            .rev()
            .find(|&l| !self.live[l].is_empty())
            .unwrap_or(0)
    }

    /// Whether the pointer cache says `a` is in a live range: the range
    /// found for its page before holds it, is still in the view (its slot's
    /// generation is unchanged), and is of layer `top` (the
    /// [`Self::top_layer`]) or above, so no live range of a more specific
    /// layer could hold `a` instead.
    #[inline]
    fn cached_live(&self, a: u64, top: usize) -> Option<u32> {
        let e = &self.cache[Self::cache_slot(a)];
        let hit = a >= e.base
            && a < e.end
            && e.layer >= top
            && self.gens.get(e.slot as usize) == Some(&e.gen);
        hit.then_some(e.slot)
    }

    /// Where `a` lies: the most specific live range holding it (the
    /// pointer cache first), else the most specific freed one, else
    /// nowhere.
    #[inline]
    fn locate(&mut self, a: u64, top: usize) -> Hit {
        if let Some(s) = self.cached_live(a, top) {
            return Hit::Live(self.slots[s as usize]);
        }
        if let Some((s, r)) = (0..3).rev().find_map(|l| self.live_in(l, a)) {
            self.cache[Self::cache_slot(a)] = CacheEntry {
                base: r.base,
                end: r.end(),
                slot: s,
                gen: self.gens[s as usize],
                layer: r.source.layer(),
            };
            return Hit::Live(r);
        }
        match (0..3).rev().find_map(|l| self.freed_in(l, a)) {
            Some(r) => Hit::Freed(r),
            None => Hit::Nowhere,
        }
    }

    /// Checks each pointer of a launch.
    fn launch(
        &mut self,
        seq: u64,
        name: &[u8],
        ptrs: &[Held],
        piece: &PieceOps,
        audit: &mut Audit,
        watch: &mut Option<&mut Watch>,
    ) {
        let mut stale = false;
        let top = self.top_layer();
        for &h in ptrs {
            // A whole page's pointers are live, and without a watch (which
            // loads all pages) its ranges are not in the view.
            if self.whole[h.page as usize] {
                continue;
            }
            let p = piece.pointer_of(h);
            let hit = self.locate(p.address, top);
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
