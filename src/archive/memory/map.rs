//! The allocation map: the ranges live at each point of the stream and the
//! ranges freed and not reallocated, built from the allocations and frees
//! in stream order. The launch pointer audit against it runs beside it, a
//! piece at a time, on whichever decoder is free ([`super::view`]).
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
//! its packed entry in a persistent B-tree node (40 bytes with its key,
//! [`super::packed`]), plus the nodes older copies handed to the pieces in
//! flight still share, and its change in the piece that made it (about
//! 180 bytes of resident memory in all on two CPUs, 300 with fifteen
//! decoders in flight, as `hrr-bench-archive` measures at 100 k live
//! ranges).

use std::collections::VecDeque;

use crate::archive::format::regions::RegionRecord;
use crate::archive::memory::ops::{Op, PieceOps, Stamp};
use crate::archive::memory::ranges::{Layers, Ranges};
use crate::archive::memory::view::{Audit, Change, Prepared};
use crate::archive::memory::watch::Watch;

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
    /// Its layer: 0 for API ranges, 1 for segments, 2 for blocks.
    pub(crate) fn layer(self) -> usize {
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
    pub(crate) hist: u32,
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

/// What the map and the audit counted over the stream.
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
    /// The launch pointer audit.
    pub audit: Audit,
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

/// The map of one process's stream.
pub struct AllocationMap {
    /// The live and freed ranges now.
    ranges: Ranges,
    /// Frees in the order they were made (layer, base, ordinal), for
    /// dropping the oldest freed range at the cap; an entry whose range was
    /// reallocated since (its ordinal no longer the one at its base) is
    /// passed over, and such entries are swept out as they pile up.
    freed_order: VecDeque<(usize, u64, u64)>,
    /// Ordinal of the next free.
    frees_made: u64,
    live_bytes: u64,
    regions: Vec<RegionRecord>,
    next_region: usize,
    /// The counts and examples so far.
    pub totals: Totals,
    /// Where the piece being applied records its changes, and the index
    /// of the piece's next launch at the event being applied.
    changes: Vec<(u32, Change)>,
    event: u32,
}

impl AllocationMap {
    /// An empty map that merges `regions` (sorted by time) into the events.
    pub fn new(regions: Vec<RegionRecord>, regions_capped: bool) -> AllocationMap {
        AllocationMap {
            ranges: Ranges::default(),
            freed_order: VecDeque::new(),
            frees_made: 0,
            live_bytes: 0,
            regions,
            next_region: 0,
            totals: Totals {
                regions_capped,
                ..Totals::default()
            },
            changes: Vec::new(),
            event: 0,
        }
    }

    /// Whether region records are left to merge between events.
    pub(crate) fn regions_left(&self) -> bool {
        self.next_region < self.regions.len()
    }

    /// Live ranges now.
    pub fn live_count(&self) -> usize {
        self.ranges.live_count()
    }

    /// Every live range, by layer then base.
    pub fn live_ranges(&self) -> impl Iterator<Item = Range> + '_ {
        self.ranges.live_ranges()
    }

    /// Applies the region records stamped at or before `ns`.
    fn regions_until(&mut self, ns: u64, watch: &mut Option<&mut Watch>) {
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

    /// Applies every region record left (those after the last event), and
    /// tells `watch` the stream ended.
    pub fn finish(&mut self, mut watch: Option<&mut Watch>) {
        self.regions_until(u64::MAX, &mut watch);
        self.changes.clear();
        if let Some(w) = watch {
            w.end(self);
        }
    }

    /// Applies one piece's allocations and frees (and the region records
    /// stamped before its events), in order. `prepared` receives, for the
    /// piece's audit, the changes made and then the ranges as they stand
    /// after it (a copy that shares their nodes); `watch` sees the map
    /// before each event.
    pub(crate) fn apply(
        &mut self,
        piece: &PieceOps,
        prepared: &mut Prepared,
        mut watch: Option<&mut Watch>,
    ) {
        prepared.clear();
        // The changes are recorded into the piece's (empty) buffer.
        std::mem::swap(&mut self.changes, &mut prepared.changes);
        if watch.is_none() && !self.regions_left() {
            // No region record is left to merge between the launches.
            for m in &piece.memory {
                self.event = m.at + 1;
                self.memory_op(m.stamp, m.op, &mut None);
            }
        } else {
            for (next, stamp, op) in piece.in_order() {
                self.event = next;
                if self.next_region < self.regions.len() {
                    self.regions_until(stamp.ns, &mut watch);
                }
                if let Some(w) = watch.as_deref_mut() {
                    w.before(self, stamp, op, piece);
                }
                self.memory_op(stamp, op, &mut watch);
            }
        }
        std::mem::swap(&mut self.changes, &mut prepared.changes);
        prepared.after = self.ranges.clone();
    }

    /// Applies an allocation or a free (a launch changes nothing).
    fn memory_op(&mut self, stamp: Stamp, op: Op, watch: &mut Option<&mut Watch>) {
        match op {
            Op::Alloc { api, base, size } => {
                self.allocate(
                    Source::Api(api),
                    base,
                    size,
                    Some(stamp.seq),
                    Some(stamp.thread),
                    watch,
                );
            }
            Op::Free { api, ptr } => {
                let death = Death {
                    api: Some(api),
                    seq: Some(stamp.seq),
                };
                if ptr != 0 {
                    self.free(0, ptr, death, watch);
                }
            }
            Op::Launch { .. } => {}
        }
    }

    fn record(&mut self, c: Change) {
        self.changes.push((self.event, c));
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
        // A range holding no byte (no size, or starting at the last
        // address, where its end saturates) is not tracked.
        let end = base.saturating_add(size);
        if base == 0 || end == base {
            return;
        }
        let layer = source.layer();
        // A live range of the layer under the new one lost its free. Ranges
        // of a layer never overlap, so those under it are the last ones
        // starting before its end, back to the first that ends before it.
        while let Some(r) = self.ranges.live_from(layer, end - 1) {
            if r.end() <= base {
                break;
            }
            self.end_live(layer, r.base);
            self.totals.superseded += 1;
        }
        // Freed ranges under it are reallocated: no longer freed. An API
        // allocation reallocates memory of every layer; a region record
        // only its own layer's.
        let layers = if layer == 0 { 0..3 } else { layer..layer + 1 };
        for l in layers {
            while let Some(r) = self.ranges.freed_from(l, end - 1) {
                if r.end() <= base {
                    break;
                }
                self.ranges.remove_freed(l, r.base);
                self.record(Change::Remove(r));
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
        self.ranges.put(&range, 0);
        self.record(Change::Add(range));
        if layer == 0 {
            self.live_bytes = self.live_bytes.saturating_add(size);
            self.totals.peak_live_bytes = self.totals.peak_live_bytes.max(self.live_bytes);
        }
    }

    /// Ends the live range of `layer` at `base`, if there is one.
    fn end_live(&mut self, layer: usize, base: u64) -> Option<Range> {
        let range = self.ranges.remove_live(layer, base)?;
        self.record(Change::Remove(range));
        if layer == 0 {
            self.live_bytes = self.live_bytes.saturating_sub(range.size);
        }
        Some(range)
    }

    fn free(&mut self, layer: usize, base: u64, death: Death, watch: &mut Option<&mut Watch>) {
        self.totals.frees += 1;
        let Some(mut range) = self.end_live(layer, base) else {
            self.totals.unmatched_frees += 1;
            return;
        };
        range.freed = Some(death);
        if let Some(w) = watch.as_deref_mut() {
            w.died(&range);
        }
        let remembered =
            |f: &Ranges, (l, b, ord): (usize, u64, u64)| f.freed_ord(l, b) == Some(ord);
        if self.ranges.freed_count() >= MAX_FREED {
            // The oldest entry still remembered is the oldest freed range.
            while let Some(e) = self.freed_order.pop_front() {
                if remembered(&self.ranges, e) {
                    if let Some(gone) = self.ranges.remove_freed(e.0, e.1) {
                        self.record(Change::Remove(gone));
                    }
                    self.totals.forgotten_frees += 1;
                    break;
                }
            }
        }
        let ord = self.frees_made;
        self.frees_made += 1;
        self.freed_order.push_back((layer, base, ord));
        if self.freed_order.len() > 2 * MAX_FREED {
            let ranges = &self.ranges;
            self.freed_order.retain(|&e| remembered(ranges, e));
        }
        self.ranges.put(&range, ord);
        self.record(Change::Add(range));
    }

    /// Where `a` lies now ([`Ranges::locate`]).
    pub fn locate(&self, a: u64) -> Hit {
        self.ranges.locate(a)
    }

    /// Every live range holding `a`, most specific first.
    pub fn live_holding(&self, a: u64) -> Vec<Range> {
        self.ranges.live_holding(a)
    }

    /// The live ranges nearest `a` that end at or before it and that
    /// start after it (any layer).
    pub fn neighbours(&self, a: u64) -> (Option<Range>, Option<Range>) {
        self.ranges.neighbours(a)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::archive::format::apis::id;
    use crate::archive::memory::ops::{Pointer, Stamp};
    use crate::archive::memory::view::View;

    fn piece(events: &[(u64, Op)], ptrs: &[Pointer]) -> PieceOps {
        let mut p = PieceOps::default();
        for q in ptrs {
            p.pointer(q.arg, q.address);
        }
        for (at, &(seq, op)) in events.iter().enumerate() {
            let stamp = Stamp {
                seq,
                ns: 1000 + seq,
                thread: 1,
            };
            p.push(at as u32, stamp, op);
        }
        p.names = vec![b"k".to_vec().into_boxed_slice()];
        p
    }

    /// Applies `p` to `m` and audits it, as the pass does.
    fn run(m: &mut AllocationMap, p: &PieceOps, mut watch: Option<&mut Watch>) {
        let mut prepared = Prepared::default();
        m.apply(p, &mut prepared, watch.as_deref_mut());
        let audit = View::default().audit(0, p, &prepared, watch);
        m.totals.audit.extend(audit);
    }

    fn alloc(base: u64, size: u64) -> Op {
        Op::Alloc {
            api: id::HIP_MALLOC,
            base,
            size,
        }
    }

    /// What a live range holds stays small: its record and its key in a
    /// B-tree node.
    #[test]
    fn a_live_range_costs_about_a_hundred_bytes() {
        let per_range = std::mem::size_of::<Range>() + 8;
        assert!(per_range <= 96, "{per_range} bytes");
    }

    /// Past the live cap, further allocations are counted and left out,
    /// and the map keeps working; past the freed cap the oldest freed
    /// ranges are forgotten.
    #[test]
    fn the_caps_bound_the_map_and_are_counted() {
        let mut m = AllocationMap::new(Vec::new(), false);
        let n = MAX_LIVE as u64 + 10;
        let events: Vec<(u64, Op)> = (0..n).map(|i| (i, alloc(0x1000 * (i + 1), 16))).collect();
        run(&mut m, &piece(&events, &[]), None);
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
        run(&mut m, &piece(&frees, &[]), None);
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

    /// The freed cap counts the freed ranges remembered, not the frees
    /// seen: a buffer freed once stays known as freed while a loop
    /// allocates and frees another buffer at one address many times over
    /// (two freed ranges remembered, far below the cap), and what the map
    /// keeps of the free order stays bounded.
    #[test]
    fn frees_of_a_reused_address_do_not_push_an_older_freed_range_out() {
        let mut m = AllocationMap::new(Vec::new(), false);
        let free = |ptr| Op::Free {
            api: id::HIP_FREE,
            ptr,
        };
        let mut events = vec![(0, alloc(0x10_0000, 256)), (1, free(0x10_0000))];
        // Past twice the cap of frees, the order of frees is swept of
        // the reallocated ones.
        for i in 0..2 * MAX_FREED as u64 + 1 {
            events.push((2 + 2 * i, alloc(0x20_0000, 256)));
            events.push((3 + 2 * i, free(0x20_0000)));
        }
        let launch = Op::Launch {
            kernel: 0,
            first: 0,
            count: 1,
        };
        events.push((events.len() as u64, launch));
        let p = [Pointer {
            arg: 0,
            address: 0x10_0010,
        }];
        run(&mut m, &piece(&events, &p), None);
        assert_eq!(m.totals.forgotten_frees, 0, "two freed ranges remembered");
        assert!(m.freed_order.len() <= 2 * MAX_FREED, "bounded");
        assert_eq!(m.totals.audit.stale_pointer_launches, 1);
        assert_eq!(m.totals.audit.unattributed_pointer_args, 0);
    }

    /// A freed range forgotten at the cap leaves a piece's audit at the
    /// event it is forgotten at, whether the piece's audit started with it
    /// (freed in an earlier piece) or saw it freed in the piece.
    #[test]
    fn a_range_forgotten_mid_piece_leaves_its_audit_there() {
        let free = |ptr| Op::Free {
            api: id::HIP_FREE,
            ptr,
        };
        let x = |i: u64| 0x1000_0000 + 0x1000 * i;
        let launch = Op::Launch {
            kernel: 0,
            first: 0,
            count: 1,
        };
        let p = [Pointer {
            arg: 0,
            address: x(0) + 0x10,
        }];
        let n = MAX_FREED as u64;
        let mut frees = Vec::new();
        for i in 0..n {
            frees.push((2 * i, alloc(x(i), 256)));
            frees.push((2 * i + 1, free(x(i))));
        }
        let tail = [
            (2 * n, launch),
            (2 * n + 1, alloc(x(n), 256)),
            (2 * n + 2, free(x(n))),
            (2 * n + 3, launch),
        ];
        for split in [false, true] {
            let mut m = AllocationMap::new(Vec::new(), false);
            if split {
                run(&mut m, &piece(&frees, &[]), None);
                run(&mut m, &piece(&tail, &p), None);
            } else {
                let all: Vec<_> = frees.iter().chain(&tail).copied().collect();
                run(&mut m, &piece(&all, &p), None);
            }
            assert_eq!(m.totals.forgotten_frees, 1);
            let a = &m.totals.audit;
            assert_eq!(a.stale_pointer_launches, 1, "split {split}");
            assert_eq!(a.stale_examples[0].launch_seq, 2 * n);
            assert_eq!(a.unattributed_pointer_args, 1, "split {split}");
            assert_eq!(a.unattributed_examples[0].launch_seq, 2 * n + 3);
        }
    }

    /// At the top of the address space a range's end saturates: one
    /// ending there holds the bytes up to it, and one starting at the last
    /// address holds none, so it is not tracked (twice over, it would count
    /// its bytes live twice).
    #[test]
    fn ranges_at_the_top_of_the_address_space() {
        let mut m = AllocationMap::new(Vec::new(), false);
        let top = u64::MAX - 0x1000;
        let launch = Op::Launch {
            kernel: 0,
            first: 0,
            count: 2,
        };
        let p = [
            Pointer {
                arg: 0,
                address: u64::MAX - 1,
            },
            Pointer {
                arg: 1,
                address: u64::MAX,
            },
        ];
        let events = [
            (0, alloc(top, 0x2000)),
            (1, alloc(u64::MAX, 16)),
            (2, alloc(u64::MAX, 16)),
            (3, launch),
        ];
        run(&mut m, &piece(&events, &p), None);
        assert_eq!(m.live_count(), 1);
        assert_eq!(m.totals.peak_live_bytes, 0x2000);
        assert_eq!(m.totals.audit.unattributed_pointer_args, 1, "u64::MAX");
        assert_eq!(m.totals.audit.unattributed_examples[0].address, u64::MAX);
    }

    /// Region DEL records carry no sequence id: a segment freed, added
    /// again and freed again is the newer freed range, which the cap must
    /// not take for the older one (whose place in the free order came
    /// first).
    #[test]
    fn a_segment_freed_again_is_not_forgotten_in_place_of_its_first_free() {
        let seg = |add, mono_ns| RegionRecord {
            add,
            segment: true,
            base: 0x4000_0000,
            size: 0x1000,
            mono_ns,
        };
        // Stamps: event seq s is at 1000 + s (see `piece`).
        let regions = vec![seg(true, 0), seg(false, 1), seg(true, 2), seg(false, 1003)];
        let mut m = AllocationMap::new(regions, false);
        let free = |ptr| Op::Free {
            api: id::HIP_FREE,
            ptr,
        };
        let n = MAX_FREED as u64 - 2;
        let x = |i: u64| 0x1000_0000 + 0x1000 * i;
        // Frees of n distinct buffers; the segment's second DEL falls
        // among them; then one more free: MAX_FREED frees in all, n + 2
        // freed ranges remembered, under the cap.
        let mut events = vec![(0, alloc(x(0), 256)), (1, free(x(0)))];
        for i in 1..=n {
            events.push((2 * i, alloc(x(i), 256)));
            events.push((2 * i + 1, free(x(i))));
        }
        let launch = Op::Launch {
            kernel: 0,
            first: 0,
            count: 2,
        };
        events.push((2 * n + 2, launch));
        let p = [
            Pointer {
                arg: 0,
                address: 0x4000_0010,
            },
            Pointer {
                arg: 1,
                address: x(0) + 0x10,
            },
        ];
        run(&mut m, &piece(&events, &p), None);
        assert_eq!(m.totals.forgotten_frees, 0, "under the cap");
        assert_eq!(m.totals.audit.unattributed_pointer_args, 0);
        assert_eq!(m.totals.audit.stale_pointer_launches, 1);
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
        run(&mut m, &piece(&events, &p), None);
        assert_eq!(m.totals.superseded, 1);
        assert_eq!(
            m.totals.unmatched_frees, 1,
            "0x2000 no longer starts a range"
        );
        assert_eq!(m.totals.audit.stale_pointer_launches, 0);
        assert_eq!(m.totals.audit.unattributed_pointer_args, 0);
        let free = Op::Free {
            api: id::HIP_FREE,
            ptr: 0x1f00,
        };
        run(&mut m, &piece(&[(6, free), (7, launch)], &p), None);
        assert_eq!(
            m.totals.audit.stale_pointer_launches, 1,
            "the cached range died"
        );
        let e = &m.totals.audit.stale_examples[0];
        assert_eq!((e.launch_seq, e.freed.unwrap().base), (7, 0x1f00));
    }

    /// A free of a range of more pages than the audit's page cache holds
    /// (64 MiB) makes it ask of every page again: a pointer whole before
    /// the free is stale after it, in the same piece.
    #[test]
    fn a_free_of_a_range_past_the_page_cache_is_seen_at_the_next_launch() {
        let mut m = AllocationMap::new(Vec::new(), false);
        let base = 0x7f00_0000_0000;
        let p = [Pointer {
            arg: 0,
            address: base + (40 << 20),
        }];
        let launch = Op::Launch {
            kernel: 0,
            first: 0,
            count: 1,
        };
        let free = Op::Free {
            api: id::HIP_FREE,
            ptr: base,
        };
        let events = [
            (0, alloc(base, 64 << 20)),
            (1, launch),
            (2, free),
            (3, launch),
        ];
        run(&mut m, &piece(&events, &p), None);
        assert_eq!(m.totals.audit.stale_pointer_launches, 1);
        let e = &m.totals.audit.stale_examples[0];
        assert_eq!((e.launch_seq, e.freed.unwrap().base), (3, base));
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
        run(&mut m, &piece(&events, &p), Some(&mut w));
        m.finish(Some(&mut w));
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
