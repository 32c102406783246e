//! The allocation map: the ranges live at each point of the stream, the
//! ranges freed and not reallocated, and the launch pointer audit against
//! them.
//!
//! Three layers of ranges, from the least specific: the HIP API ranges
//! (`hipMalloc` and the rest of [`super::ops`]), the allocator segments of
//! region sidecars and the blocks inside them. Within a layer live ranges
//! never overlap: an allocation over a live range of its layer (whose free
//! was not recorded) ends that range, which is counted, not called freed.
//! An allocation over a freed range reallocates it: it is no longer freed.
//!
//! Bounded: at most [`MAX_LIVE`] live ranges and [`MAX_FREED`] freed ones
//! are kept; past either cap the newest allocations (or the oldest freed
//! ranges) are left out and the summary's notes say so. A live range costs
//! its [`Range`] (80 bytes) in a slab that grows by doubling, its index
//! entry and its generation: about 150–190 bytes of resident memory as
//! measured (`hrr-bench-archive`: 100 k live ranges, peak RSS 36 MiB
//! against 17–22 MiB without the map).

use std::collections::{BTreeMap, VecDeque};

use crate::archive::format::regions::RegionRecord;
use crate::archive::memory::ops::{Op, PieceOps, Pointer, Stamp};

/// Live ranges tracked at most.
pub const MAX_LIVE: usize = 1 << 17;
/// Freed (not reallocated) ranges remembered at most, the oldest dropped.
pub const MAX_FREED: usize = 1 << 16;
/// Examples of each kind the audit keeps.
pub const MAX_EXAMPLES: usize = 8;

/// What allocated a range.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// A HIP API call (v7 id).
    Api(u16),
    /// A region sidecar SEGMENT record.
    RegionSegment,
    /// A region sidecar BLOCK record.
    RegionBlock,
}

impl Source {
    fn layer(self) -> usize {
        match self {
            Source::Api(_) => 0,
            Source::RegionSegment => 1,
            Source::RegionBlock => 2,
        }
    }
}

/// How a range ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Death {
    /// The freeing API (v7 id), or `None` for a region DEL record.
    pub api: Option<u16>,
    /// Its sequence id (`None` for a region record, which has none).
    pub seq: Option<u64>,
}

/// One life of a range.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Range {
    /// What allocated it.
    pub source: Source,
    /// First byte.
    pub base: u64,
    /// Bytes.
    pub size: u64,
    /// Sequence id of the allocation (`None` for region records).
    pub alloc_seq: Option<u64>,
    /// Thread of the allocation (`None` for region records).
    pub thread: Option<u64>,
    /// How it ended, once freed.
    pub freed: Option<Death>,
    /// Index in the watched address's history, or `u32::MAX`.
    hist: u32,
}

impl Range {
    /// One past the last byte (saturating).
    pub fn end(&self) -> u64 {
        self.base.saturating_add(self.size)
    }

    /// Whether `a` lies in it.
    pub fn contains(&self, a: u64) -> bool {
        a >= self.base && a < self.end()
    }
}

/// A launch argument pointing into freed memory, or into no range.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PointerExample {
    /// Sequence id of the launch.
    pub launch_seq: u64,
    /// Kernel name (lossy UTF-8 of the recorded bytes).
    pub kernel: String,
    /// Argument index.
    pub argument: u16,
    /// The pointer.
    pub address: u64,
    /// The freed range it points into (none for an unattributed pointer).
    pub freed: Option<Range>,
}

/// What the audit and the map counted over the stream.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Totals {
    /// Allocations followed (HIP calls and region ADD records).
    pub allocations: u64,
    /// Frees followed (HIP calls and region DEL records).
    pub frees: u64,
    /// Frees of an address no live range starts at.
    pub unmatched_frees: u64,
    /// Live ranges ended by an allocation over them.
    pub superseded: u64,
    /// Allocations left out at the live cap.
    pub capped_allocations: u64,
    /// Freed ranges forgotten at the freed cap.
    pub forgotten_frees: u64,
    /// Region records left out at the region cap.
    pub regions_capped: bool,
    /// Largest sum of live HIP API range sizes.
    pub peak_live_bytes: u64,
    /// Launches passing at least one pointer into freed memory.
    pub stale_pointer_launches: u64,
    /// Pointer arguments in no range.
    pub unattributed_pointer_args: u64,
    /// Pointer arguments checked.
    pub pointer_args: u64,
    /// First stale pointers.
    pub stale_examples: Vec<PointerExample>,
    /// First unattributed pointers.
    pub unattributed_examples: Vec<PointerExample>,
}

/// Where a pointer lies at a point of the stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hit {
    /// In a live range (the most specific one).
    Live(Range),
    /// In a range freed and not reallocated.
    Freed(Range),
    /// In no range the map knows.
    Nowhere,
}

/// Entries of the pointer cache (a power of two).
const CACHE: usize = 4096;
/// Address bits below the pointer cache's granule: the pointers into one
/// 4 KiB page (a buffer's base and the offsets past it that kernels are
/// passed) share an entry.
const PAGE_BITS: u32 = 12;

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

/// The map of one process's stream.
pub struct AllocationMap {
    /// The slab of live ranges (and dead ones, whose slots are reused).
    slots: Vec<Range>,
    free_slots: Vec<u32>,
    /// Per layer: live ranges by base, as slab slots.
    live: [BTreeMap<u64, u32>; 3],
    /// Per layer: freed ranges by base.
    freed: [BTreeMap<u64, Range>; 3],
    /// Freed ranges in the order they were freed (layer, base, free seq),
    /// for dropping the oldest at the cap.
    freed_order: VecDeque<(usize, u64, Option<u64>)>,
    live_bytes: u64,
    /// Per slab slot, its generation: it changes when the slot's range
    /// dies, so a cached slot is checked in one load of a small array.
    gens: Vec<u32>,
    cache: Box<[CacheEntry; CACHE]>,
    regions: Vec<RegionRecord>,
    next_region: usize,
    /// The counts and examples so far.
    pub totals: Totals,
}

impl AllocationMap {
    /// An empty map that merges `regions` (sorted by time) into the events.
    pub fn new(regions: Vec<RegionRecord>, regions_capped: bool) -> AllocationMap {
        AllocationMap {
            slots: Vec::new(),
            free_slots: Vec::new(),
            live: Default::default(),
            freed: Default::default(),
            freed_order: VecDeque::new(),
            live_bytes: 0,
            gens: Vec::new(),
            cache: Box::new([CacheEntry::EMPTY; CACHE]),
            regions,
            next_region: 0,
            totals: Totals {
                regions_capped,
                ..Totals::default()
            },
        }
    }

    /// Live ranges now.
    pub fn live_count(&self) -> usize {
        self.live.iter().map(BTreeMap::len).sum()
    }

    /// Every live range, by layer then base.
    pub fn live_ranges(&self) -> impl Iterator<Item = Range> + '_ {
        self.live
            .iter()
            .flat_map(|l| l.values().map(|&s| self.slots[s as usize]))
    }

    /// Applies the region records stamped at or before `ns`.
    pub fn regions_until(&mut self, ns: u64, watch: &mut Option<&mut Watch>) {
        while let Some(r) = self.regions.get(self.next_region).copied() {
            if r.mono_ns > ns {
                break;
            }
            self.next_region += 1;
            let source = if r.segment {
                Source::RegionSegment
            } else {
                Source::RegionBlock
            };
            if r.add {
                self.allocate(source, r.base, r.size, None, None, watch);
            } else {
                self.free(
                    source.layer(),
                    r.base,
                    Death {
                        api: None,
                        seq: None,
                    },
                    watch,
                );
            }
        }
    }

    /// Applies every region record left (those after the last event).
    pub fn finish(&mut self, watch: &mut Option<&mut Watch>) {
        self.regions_until(u64::MAX, watch);
    }

    /// Applies one piece's events, in order.
    pub fn apply(&mut self, piece: &PieceOps, mut watch: Option<&mut Watch>) {
        for &(stamp, op) in &piece.events {
            if self.next_region < self.regions.len() {
                self.regions_until(stamp.ns, &mut watch);
            }
            if let Some(w) = watch.as_deref_mut() {
                w.before(self, stamp, op, piece);
            }
            match op {
                Op::Alloc { api, base, size } => {
                    self.allocate(
                        Source::Api(api),
                        base,
                        size,
                        Some(stamp.seq),
                        Some(stamp.thread),
                        &mut watch,
                    );
                }
                Op::Free { api, ptr } => {
                    let death = Death {
                        api: Some(api),
                        seq: Some(stamp.seq),
                    };
                    if ptr != 0 {
                        self.free(0, ptr, death, &mut watch);
                    }
                }
                Op::Launch {
                    kernel,
                    first,
                    count,
                } => {
                    let ptrs = &piece.ptrs[first as usize..(first + count) as usize];
                    let name = &piece.names[kernel as usize];
                    self.audit(stamp.seq, name, ptrs, &mut watch);
                }
            }
        }
    }

    fn allocate(
        &mut self,
        source: Source,
        base: u64,
        size: u64,
        seq: Option<u64>,
        thread: Option<u64>,
        watch: &mut Option<&mut Watch>,
    ) {
        self.totals.allocations += 1;
        if base == 0 || size == 0 {
            return;
        }
        let end = base.saturating_add(size);
        let layer = source.layer();
        // A live range of the layer under the new one lost its free. Ranges
        // of a layer never overlap, so those under it are the last ones
        // starting before its end, back to the first that ends before it.
        while let Some((&b, &s)) = self.live[layer].range(..end).next_back() {
            if self.slots[s as usize].end() <= base {
                break;
            }
            self.live[layer].remove(&b);
            self.kill(s);
            self.totals.superseded += 1;
        }
        // Freed ranges under it are reallocated: no longer freed. An API
        // allocation reallocates memory of every layer; a region record
        // only its own layer's.
        let layers = if layer == 0 { 0..3 } else { layer..layer + 1 };
        for l in layers {
            while let Some((&b, r)) = self.freed[l].range(..end).next_back() {
                if r.end() <= base {
                    break;
                }
                self.freed[l].remove(&b);
            }
        }
        if self.live_count() >= MAX_LIVE {
            self.totals.capped_allocations += 1;
            return;
        }
        let mut range = Range {
            source,
            base,
            size,
            alloc_seq: seq,
            thread,
            freed: None,
            hist: u32::MAX,
        };
        if let Some(w) = watch.as_deref_mut() {
            range.hist = w.born(&range);
        }
        let slot = match self.free_slots.pop() {
            Some(s) => {
                self.slots[s as usize] = range;
                s
            }
            None => {
                self.slots.push(range);
                self.gens.push(0);
                (self.slots.len() - 1) as u32
            }
        };
        self.live[layer].insert(base, slot);
        if layer == 0 {
            self.live_bytes = self.live_bytes.saturating_add(size);
            self.totals.peak_live_bytes = self.totals.peak_live_bytes.max(self.live_bytes);
        }
    }

    /// Ends slab slot `s` (already out of the live index).
    fn kill(&mut self, s: u32) -> Range {
        let gen = &mut self.gens[s as usize];
        *gen = gen.wrapping_add(1);
        self.free_slots.push(s);
        let range = self.slots[s as usize];
        if range.source.layer() == 0 {
            self.live_bytes = self.live_bytes.saturating_sub(range.size);
        }
        range
    }

    fn free(&mut self, layer: usize, base: u64, death: Death, watch: &mut Option<&mut Watch>) {
        self.totals.frees += 1;
        let Some(s) = self.live[layer].remove(&base) else {
            self.totals.unmatched_frees += 1;
            return;
        };
        let mut range = self.kill(s);
        range.freed = Some(death);
        if let Some(w) = watch.as_deref_mut() {
            w.died(&range);
        }
        if self.freed_order.len() >= MAX_FREED {
            if let Some((l, b, seq)) = self.freed_order.pop_front() {
                if self.freed[l]
                    .get(&b)
                    .is_some_and(|r| r.freed.and_then(|d| d.seq) == seq)
                {
                    self.freed[l].remove(&b);
                    self.totals.forgotten_frees += 1;
                }
            }
        }
        self.freed_order.push_back((layer, base, death.seq));
        self.freed[layer].insert(base, range);
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

    /// Where `a` lies now: the most specific live range holding it, else
    /// the most specific freed one, else nowhere.
    pub fn locate(&self, a: u64) -> Hit {
        if let Some((_, r)) = (0..3).rev().find_map(|l| self.live_in(l, a)) {
            return Hit::Live(r);
        }
        match (0..3).rev().find_map(|l| self.freed_in(l, a)) {
            Some(r) => Hit::Freed(r),
            None => Hit::Nowhere,
        }
    }

    /// Every live range holding `a`, most specific first.
    pub fn live_holding(&self, a: u64) -> Vec<Range> {
        (0..3)
            .rev()
            .filter_map(|l| self.live_in(l, a))
            .map(|(_, r)| r)
            .collect()
    }

    /// The live ranges nearest `a` that end at or before it and that
    /// start after it (any layer).
    pub fn neighbours(&self, a: u64) -> (Option<Range>, Option<Range>) {
        let mut below: Option<Range> = None;
        let mut above: Option<Range> = None;
        for l in 0..3 {
            if let Some((_, &s)) = self.live[l].range(..=a).next_back() {
                let r = self.slots[s as usize];
                if !r.contains(a) && below.is_none_or(|b| r.end() > b.end()) {
                    below = Some(r);
                }
            }
            if let Some((_, &s)) = self.live[l].range(a.saturating_add(1)..).next() {
                let r = self.slots[s as usize];
                if above.is_none_or(|b| r.base < b.base) {
                    above = Some(r);
                }
            }
        }
        (below, above)
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
    /// found for its page before holds it, still lives (its slot's
    /// generation is unchanged; a slot's generation changes when it dies),
    /// and is of layer `top` (the [`Self::top_layer`]) or above, so no
    /// live range of a more specific layer could hold `a` instead.
    #[inline]
    fn cached_live(&self, a: u64, top: usize) -> Option<u32> {
        let e = &self.cache[Self::cache_slot(a)];
        let hit = a >= e.base
            && a < e.end
            && e.layer >= top
            && self.gens.get(e.slot as usize) == Some(&e.gen);
        hit.then_some(e.slot)
    }

    /// The live range holding `a`: the pointer cache first, then the index.
    #[inline]
    fn live_hit(&mut self, a: u64) -> Option<Range> {
        if let Some(s) = self.cached_live(a, self.top_layer()) {
            return Some(self.slots[s as usize]);
        }
        let (s, r) = (0..3).rev().find_map(|l| self.live_in(l, a))?;
        self.cache[Self::cache_slot(a)] = CacheEntry {
            base: r.base,
            end: r.end(),
            slot: s,
            gen: self.gens[s as usize],
            layer: r.source.layer(),
        };
        Some(r)
    }

    /// Checks each pointer of a launch against the map.
    fn audit(&mut self, seq: u64, name: &[u8], ptrs: &[Pointer], watch: &mut Option<&mut Watch>) {
        let mut stale = false;
        let top = self.top_layer();
        self.totals.pointer_args += ptrs.len() as u64;
        for p in ptrs {
            if watch.is_none() && self.cached_live(p.address, top).is_some() {
                continue;
            }
            let hit = match self.live_hit(p.address) {
                Some(r) => Hit::Live(r),
                None => match (0..3).rev().find_map(|l| self.freed_in(l, p.address)) {
                    Some(r) => Hit::Freed(r),
                    None => Hit::Nowhere,
                },
            };
            if let Some(w) = watch.as_deref_mut() {
                w.passed(seq, name, p, hit);
            }
            let example = || PointerExample {
                launch_seq: seq,
                kernel: String::from_utf8_lossy(name).into_owned(),
                argument: p.arg,
                address: p.address,
                freed: match hit {
                    Hit::Freed(r) => Some(r),
                    _ => None,
                },
            };
            match hit {
                Hit::Live(_) => {}
                Hit::Freed(_) => {
                    stale = true;
                    if self.totals.stale_examples.len() < MAX_EXAMPLES {
                        let e = example();
                        self.totals.stale_examples.push(e);
                    }
                }
                Hit::Nowhere => {
                    self.totals.unattributed_pointer_args += 1;
                    if self.totals.unattributed_examples.len() < MAX_EXAMPLES {
                        let e = example();
                        self.totals.unattributed_examples.push(e);
                    }
                }
            }
        }
        if stale {
            self.totals.stale_pointer_launches += 1;
        }
    }
}

/// Ranges listed at most by a snapshot or a history.
pub const MAX_LISTED: usize = 10_000;

/// The state around one address at one point of the stream (what fault
/// attribution weighs).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Surroundings {
    /// Sequence id of the event the point is at (`None`: end of stream).
    pub seq: Option<u64>,
    /// Live ranges holding the address, most specific first.
    pub holding: Vec<Range>,
    /// The freed range holding it, when no live one does.
    pub freed: Option<Range>,
    /// The nearest live range ending at or before it.
    pub below: Option<Range>,
    /// The nearest live range starting after it.
    pub above: Option<Range>,
    /// The launch at that point: its kernel and pointer arguments.
    pub launch: Option<(String, Vec<Pointer>)>,
}

/// A launch that passed a pointer into a range of the watched address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Passing {
    /// Launch sequence id.
    pub seq: u64,
    /// Kernel name.
    pub kernel: String,
    /// Argument index.
    pub argument: u16,
    /// The pointer passed.
    pub address: u64,
    /// Whether the range it points into was live (else freed, or none).
    pub live: bool,
}

/// What a query watches while the map is built: the ranges live at a
/// sequence id, and the life of one address.
#[derive(Debug, Default)]
pub struct Watch {
    /// Sequence id whose live ranges are wanted.
    pub at: Option<u64>,
    /// Address whose history and surroundings are wanted.
    pub address: Option<u64>,
    /// Kernel whose last launch is a point of interest.
    pub kernel: Option<Vec<u8>>,
    /// Live ranges before the first event past `at` (and how many there
    /// were, when more than [`MAX_LISTED`]).
    pub live_at: Option<(Vec<Range>, usize)>,
    /// Every range that held `address`, in allocation order.
    pub history: Vec<Range>,
    /// Ranges left out of the history at the cap.
    pub history_more: u64,
    /// Launches passing a pointer into one of those ranges (or the address).
    pub passes: Vec<Passing>,
    /// Passes left out at the cap.
    pub passes_more: u64,
    /// Surroundings at the event whose sequence id is `at`.
    pub at_event: Option<Surroundings>,
    /// Surroundings at the last launch of `kernel`.
    pub at_kernel: Option<Surroundings>,
    /// Surroundings at the end of the stream.
    pub at_end: Option<Surroundings>,
}

impl Watch {
    fn surroundings(
        &self,
        map: &AllocationMap,
        seq: Option<u64>,
        launch: Option<(String, Vec<Pointer>)>,
    ) -> Option<Surroundings> {
        let a = self.address?;
        let holding = map.live_holding(a);
        let freed = match holding.is_empty() {
            true => match map.locate(a) {
                Hit::Freed(r) => Some(r),
                _ => None,
            },
            false => None,
        };
        let (below, above) = map.neighbours(a);
        Some(Surroundings {
            seq,
            holding,
            freed,
            below,
            above,
            launch,
        })
    }

    /// Called before each event is applied.
    fn before(&mut self, map: &AllocationMap, stamp: Stamp, op: Op, piece: &PieceOps) {
        if let Some(at) = self.at {
            if self.live_at.is_none() && stamp.seq > at {
                self.snapshot(map);
                if self.at_event.is_none() {
                    // The event at `at` launched no kernel: the map just
                    // before the first event past it.
                    self.at_event = self.surroundings(map, Some(at), None);
                }
            }
        }
        let Op::Launch {
            kernel,
            first,
            count,
        } = op
        else {
            return;
        };
        let name = &piece.names[kernel as usize];
        let at_event = self.at == Some(stamp.seq);
        let of_kernel = self.kernel.as_deref() == Some(&**name);
        if !(at_event || of_kernel) {
            return;
        }
        let ptrs = piece.ptrs[first as usize..(first + count) as usize].to_vec();
        let launch = Some((String::from_utf8_lossy(name).into_owned(), ptrs));
        let s = self.surroundings(map, Some(stamp.seq), launch);
        if at_event {
            self.at_event = s.clone();
        }
        if of_kernel {
            self.at_kernel = s;
        }
    }

    fn snapshot(&mut self, map: &AllocationMap) {
        let total = map.live_count();
        self.live_at = Some((map.live_ranges().take(MAX_LISTED).collect(), total));
    }

    /// Called at the end of the stream.
    pub fn end(&mut self, map: &AllocationMap) {
        if self.at.is_some() && self.live_at.is_none() {
            self.snapshot(map);
        }
        if self.at.is_some() && self.at_event.is_none() {
            // No event came past `at`: the map at the end.
            self.at_event = self.surroundings(map, self.at, None);
        }
        self.at_end = self.surroundings(map, None, None);
    }

    fn born(&mut self, r: &Range) -> u32 {
        match self.address {
            Some(a) if r.contains(a) => {
                if self.history.len() >= MAX_LISTED {
                    self.history_more += 1;
                    return u32::MAX;
                }
                self.history.push(*r);
                (self.history.len() - 1) as u32
            }
            _ => u32::MAX,
        }
    }

    fn died(&mut self, r: &Range) {
        if let Some(h) = self.history.get_mut(r.hist as usize) {
            h.freed = r.freed;
        }
    }

    fn passed(&mut self, seq: u64, name: &[u8], p: &Pointer, hit: Hit) {
        let (watched, live) = match hit {
            Hit::Live(r) => (r.hist != u32::MAX, true),
            Hit::Freed(r) => (r.hist != u32::MAX, false),
            Hit::Nowhere => (self.address == Some(p.address), false),
        };
        if !watched {
            return;
        }
        if self.passes.len() >= MAX_LISTED {
            self.passes_more += 1;
            return;
        }
        self.passes.push(Passing {
            seq,
            kernel: String::from_utf8_lossy(name).into_owned(),
            argument: p.arg,
            address: p.address,
            live,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::archive::format::apis::id;

    fn piece(events: &[(u64, Op)], ptrs: &[Pointer]) -> PieceOps {
        let mut p = PieceOps::default();
        p.events = events
            .iter()
            .map(|&(seq, op)| {
                let stamp = Stamp {
                    seq,
                    ns: 1000 + seq,
                    thread: 1,
                };
                (stamp, op)
            })
            .collect();
        p.ptrs = ptrs.to_vec();
        p.names = vec![b"k".to_vec().into_boxed_slice()];
        p
    }

    fn alloc(base: u64, size: u64) -> Op {
        Op::Alloc {
            api: id::HIP_MALLOC,
            base,
            size,
        }
    }

    /// What a live range holds in the slab stays small: its record, its
    /// generation and its index entry (a 12-byte key and slot in a B-tree
    /// node, about twice that with the node's slack).
    #[test]
    fn a_live_range_costs_about_a_hundred_and_twenty_bytes() {
        let per_range = std::mem::size_of::<Range>() + 4 + 24;
        assert!(per_range <= 128, "{per_range} bytes");
    }

    /// Past the live cap, further allocations are counted and left out,
    /// and the map keeps working; past the freed cap the oldest freed
    /// ranges are forgotten.
    #[test]
    fn the_caps_bound_the_map_and_are_counted() {
        let mut m = AllocationMap::new(Vec::new(), false);
        let n = MAX_LIVE as u64 + 10;
        let events: Vec<(u64, Op)> = (0..n).map(|i| (i, alloc(0x1000 * (i + 1), 16))).collect();
        m.apply(&piece(&events, &[]), None);
        assert_eq!(m.live_count(), MAX_LIVE);
        assert_eq!(m.totals.capped_allocations, 10);
        let frees: Vec<(u64, Op)> = (0..MAX_LIVE as u64)
            .map(|i| {
                let op = Op::Free {
                    api: id::HIP_FREE,
                    ptr: 0x1000 * (i + 1),
                };
                (n + i, op)
            })
            .collect();
        m.apply(&piece(&frees, &[]), None);
        assert_eq!(m.live_count(), 0);
        assert_eq!(
            m.totals.forgotten_frees,
            (MAX_LIVE - MAX_FREED) as u64,
            "the oldest frees go"
        );
        // The first range was forgotten, the last is still known as freed.
        assert_eq!(m.locate(0x1000), Hit::Nowhere);
        assert!(matches!(m.locate(0x1000 * MAX_LIVE as u64), Hit::Freed(_)));
        let (_, notes) = crate::archive::memory::MemorySection::of(&m.totals, 0);
        assert_eq!(notes.len(), 2, "{notes:?}");
    }

    /// An allocation over a live range whose free was not recorded ends
    /// it (not freed: no stale pointer), and the pointer cache never
    /// answers for a range that died.
    #[test]
    fn an_allocation_over_a_live_range_supersedes_it_and_the_cache_follows() {
        let mut m = AllocationMap::new(Vec::new(), false);
        let p = [Pointer {
            arg: 0,
            address: 0x2010,
        }];
        let launch = Op::Launch {
            kernel: 0,
            first: 0,
            count: 1,
        };
        let free = Op::Free {
            api: id::HIP_FREE,
            ptr: 0x2000,
        };
        let events = [
            (0, alloc(0x2000, 256)),
            (1, launch),
            (2, alloc(0x1f00, 1024)),
            (3, launch),
            (4, free),
            (5, launch),
        ];
        m.apply(&piece(&events, &p), None);
        assert_eq!(m.totals.superseded, 1);
        assert_eq!(
            m.totals.unmatched_frees, 1,
            "0x2000 no longer starts a range"
        );
        assert_eq!(m.totals.stale_pointer_launches, 0);
        assert_eq!(m.totals.unattributed_pointer_args, 0);
        let free = Op::Free {
            api: id::HIP_FREE,
            ptr: 0x1f00,
        };
        m.apply(&piece(&[(6, free), (7, launch)], &p), None);
        assert_eq!(m.totals.stale_pointer_launches, 1, "the cached range died");
        let e = &m.totals.stale_examples[0];
        assert_eq!((e.launch_seq, e.freed.unwrap().base), (7, 0x1f00));
    }

    /// A watched point at an event that launches nothing is the map just
    /// before the first event past it; a watched kernel's point is its
    /// last launch.
    #[test]
    fn watched_points_are_taken_where_they_fall() {
        let mut m = AllocationMap::new(Vec::new(), false);
        let mut w = Watch {
            at: Some(1),
            address: Some(0x2010),
            kernel: Some(b"k".to_vec()),
            ..Watch::default()
        };
        let launch = Op::Launch {
            kernel: 0,
            first: 0,
            count: 1,
        };
        let free = Op::Free {
            api: id::HIP_FREE,
            ptr: 0x2000,
        };
        let p = [Pointer {
            arg: 0,
            address: 0x2000,
        }];
        let events = [
            (0, alloc(0x2000, 256)),
            (1, free),
            (2, alloc(0x2000, 64)),
            (3, launch),
        ];
        m.apply(&piece(&events, &p), Some(&mut w));
        w.end(&m);
        let at = w.at_event.unwrap();
        assert_eq!((at.seq, at.holding.len()), (Some(1), 0));
        assert_eq!(at.freed.unwrap().freed.unwrap().seq, Some(1));
        let k = w.at_kernel.unwrap();
        assert_eq!(k.seq, Some(3));
        assert_eq!(k.holding[0].size, 64, "reallocated before the launch");
        assert_eq!(w.history.len(), 2);
        assert_eq!(w.live_at.unwrap().1, 0, "nothing live after the free");
    }
}
