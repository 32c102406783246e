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
use crate::archive::memory::ops::{PieceOps, Pointer};
use crate::archive::memory::watch::Watch;

/// Address bits below a page: the map answers for the 4 KiB pages the
/// pointers fall in, and the pointer cache keeps one entry per page (a
/// buffer's base and the offsets past it that kernels are passed share
/// one).
pub(crate) const PAGE_BITS: u32 = 12;

/// One change the map made to its ranges while applying a piece.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Change {
    /// A range became live (`freed` unset) or freed (`freed` set).
    Add(Range),
    /// The live (or freed) range of `layer` at `base` is gone: freed or
    /// superseded (reallocated or forgotten).
    Remove {
        layer: usize,
        base: u64,
        freed: bool,
    },
}

/// What the map hands a piece's audit.
#[derive(Debug, Default)]
pub(crate) struct Prepared {
    /// The live and freed ranges meeting the piece's pointer pages before
    /// its first event (a range may come more than once).
    pub(crate) ranges: Vec<Range>,
    /// The changes made while applying the piece, each with the index of
    /// the event it was made at (region records applied before an event
    /// carry that event's index).
    pub(crate) changes: Vec<(u32, Change)>,
}

impl Prepared {
    /// Empties it for the next piece, keeping its buffers.
    pub(crate) fn clear(&mut self) {
        self.ranges.clear();
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
        self.load(&prepared.ranges);
        let mut audit = Audit::default();
        let mut changes = prepared.changes.iter().peekable();
        for (i, &(stamp, op)) in piece.events.iter().enumerate() {
            let Some((name, ptrs)) = piece.launch_of(op) else {
                continue;
            };
            while let Some((_, c)) = changes.next_if(|(at, _)| *at as usize <= i) {
                self.change(c);
            }
            self.launch(stamp.seq, name, ptrs, &mut audit, &mut watch);
        }
        audit
    }

    /// Starts the view of a new piece from the map's answers.
    fn load(&mut self, ranges: &[Range]) {
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
        for r in ranges {
            let layer = r.source.layer();
            match r.freed {
                Some(_) => {
                    self.freed[layer].insert(r.base, *r);
                }
                None if !self.live[layer].contains_key(&r.base) => self.add_live(*r),
                None => {}
            }
        }
    }

    fn change(&mut self, c: &Change) {
        match *c {
            Change::Add(r) if r.freed.is_some() => {
                self.freed[r.source.layer()].insert(r.base, r);
            }
            Change::Add(r) => {
                self.remove_live(r.source.layer(), r.base);
                self.add_live(r);
            }
            Change::Remove {
                layer,
                base,
                freed: true,
            } => {
                self.freed[layer].remove(&base);
            }
            Change::Remove { layer, base, .. } => self.remove_live(layer, base),
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
        ptrs: &[Pointer],
        audit: &mut Audit,
        watch: &mut Option<&mut Watch>,
    ) {
        let mut stale = false;
        let top = self.top_layer();
        audit.pointer_args += ptrs.len() as u64;
        for p in ptrs {
            let hit = self.locate(p.address, top);
            if let Some(w) = watch.as_deref_mut() {
                w.passed(seq, name, p, hit);
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
