//! The map and its per-piece audit against a naive model of the rules in
//! `map.rs`'s documentation: every range in one list, every question
//! answered by scanning it. Streams of allocations (overlapping, reusing
//! addresses), frees (matched or not), region records and launches are cut
//! into pieces at random points, so the answers a piece's audit starts
//! from and the changes it replays are tested at every kind of boundary.

use proptest::prelude::*;

use crate::archive::format::apis::id;
use crate::archive::format::regions::RegionRecord;
use crate::archive::memory::map::{AllocationMap, Totals, MAX_EXAMPLES};
use crate::archive::memory::merge::{OrderedMap, Turn};
use crate::archive::memory::ops::{Op, PieceOps, Pointer, Stamp};
use crate::archive::memory::overlay::SCAN_BUDGET;
use crate::archive::memory::page_cache::ChangeLog;
use crate::archive::memory::view::{Audit, Prepared, View};

/// One range of the model.
#[derive(Clone, Copy, Debug)]
struct R {
    layer: usize,
    base: u64,
    end: u64,
    alloc_seq: Option<u64>,
}

#[derive(Default)]
struct Model {
    live: Vec<R>,
    freed: Vec<R>,
    live_bytes: u64,
    allocations: u64,
    frees: u64,
    unmatched: u64,
    superseded: u64,
    peak: u64,
    pointer_args: u64,
    stale_launches: u64,
    unattributed: u64,
    stale: Vec<Example>,
    unattributed_examples: Vec<Example>,
}

impl Model {
    fn alloc(&mut self, layer: usize, base: u64, size: u64, seq: Option<u64>) {
        self.allocations += 1;
        if base == 0 || size == 0 {
            return;
        }
        let end = base.saturating_add(size);
        let overlaps = |r: &R| r.base < end && base < r.end;
        let before = self.live.len();
        let gone: u64 = self
            .live
            .iter()
            .filter(|r| r.layer == layer && overlaps(r))
            .filter(|r| r.layer == 0)
            .map(|r| r.end - r.base)
            .sum();
        self.live.retain(|r| !(r.layer == layer && overlaps(r)));
        self.live_bytes -= gone;
        self.superseded += (before - self.live.len()) as u64;
        self.freed
            .retain(|r| !((layer == 0 || r.layer == layer) && overlaps(r)));
        self.live.push(R {
            layer,
            base,
            end,
            alloc_seq: seq,
        });
        if layer == 0 {
            self.live_bytes += size;
            self.peak = self.peak.max(self.live_bytes);
        }
    }

    fn free(&mut self, layer: usize, base: u64) {
        self.frees += 1;
        let Some(i) = self
            .live
            .iter()
            .position(|r| r.layer == layer && r.base == base)
        else {
            self.unmatched += 1;
            return;
        };
        let r = self.live.remove(i);
        if layer == 0 {
            self.live_bytes -= r.end - r.base;
        }
        // The freed cap is far above these streams: no range is forgotten.
        self.freed.retain(|f| !(f.layer == layer && f.base == base));
        self.freed.push(r);
    }

    fn launch(&mut self, seq: u64, ptrs: &[Pointer]) {
        self.pointer_args += ptrs.len() as u64;
        let mut stale = false;
        for p in ptrs {
            let holds = |r: &R| r.base <= p.address && p.address < r.end;
            if self.live.iter().any(holds) {
                continue;
            }
            let freed = self.freed.iter().copied().filter(holds);
            match freed.max_by_key(|r| r.layer) {
                Some(r) => {
                    stale = true;
                    let e = (seq, p.arg, p.address, Some((r.base, r.alloc_seq)));
                    if self.stale.len() < MAX_EXAMPLES {
                        self.stale.push(e);
                    }
                }
                None => {
                    self.unattributed += 1;
                    if self.unattributed_examples.len() < MAX_EXAMPLES {
                        self.unattributed_examples
                            .push((seq, p.arg, p.address, None));
                    }
                }
            }
        }
        self.stale_launches += u64::from(stale);
    }
}

/// An example as both sides give it: launch, argument, address, and the
/// freed range's base and allocation.
type Example = (u64, u16, u64, Option<(u64, Option<u64>)>);

/// What the map's totals say, in the model's terms.
fn of_map(t: &Totals) -> (Vec<u64>, Vec<Example>, Vec<Example>) {
    let a = &t.audit;
    let ex = |v: &[crate::archive::memory::map::PointerExample]| -> Vec<Example> {
        v.iter()
            .map(|e| {
                let r = e.freed.map(|r| (r.base, r.alloc_seq));
                (e.launch_seq, e.argument, e.address, r)
            })
            .collect()
    };
    let counts = vec![
        t.allocations,
        t.frees,
        t.unmatched_frees,
        t.superseded,
        t.peak_live_bytes,
        a.pointer_args,
        a.stale_pointer_launches,
        a.unattributed_pointer_args,
    ];
    (counts, ex(&a.stale_examples), ex(&a.unattributed_examples))
}

impl Model {
    fn totals(&self) -> (Vec<u64>, Vec<Example>, Vec<Example>) {
        let counts = vec![
            self.allocations,
            self.frees,
            self.unmatched,
            self.superseded,
            self.peak,
            self.pointer_args,
            self.stale_launches,
            self.unattributed,
        ];
        (
            counts,
            self.stale.clone(),
            self.unattributed_examples.clone(),
        )
    }
}

/// The first of the slots for segments: the slots before it are 2 KiB
/// apart, for buffers of 256 bytes to 16 KiB; the last four are 4 MiB
/// apart and granule-aligned, for segments of 2, 8 and 32 MiB (wider than
/// the page table), some a few pages short of a whole last granule, so
/// that whole granules come and go and the pages at a segment's end are
/// known one by one.
const SEGMENT_SLOTS: u64 = 20;

fn base(slot: u64) -> u64 {
    match slot < SEGMENT_SLOTS {
        true => 0x7f00_0000_0000 + slot * 0x800,
        false => 0x7f10_0000_0000 + (slot - SEGMENT_SLOTS) * 0x40_0000,
    }
}

/// The size of a segment by `x`, whole granules.
fn segment(x: u64) -> u64 {
    0x20_0000 << (x % 3 * 2)
}

/// The size of an allocation at `slot`, by `x`.
fn size(slot: u64, x: u64) -> u64 {
    match slot < SEGMENT_SLOTS {
        true => 0x100 << (x % 7),
        false => segment(x) - (x % 2) * 0x2000,
    }
}

/// A pointer's offset from the base of `slot`, by `x`: into a segment,
/// anywhere in its first 32 MiB, or in the last pages of one.
fn offset(slot: u64, x: u64) -> u64 {
    match (slot < SEGMENT_SLOTS, x % 2) {
        (true, _) => x * 0x40,
        (false, 0) => x * 0x8_0040,
        (false, _) => segment(x) - 0x10 - (x % 4) * 0x1000,
    }
}

/// A generated stream: the events the map is handed and what the model
/// made of them, event by event.
#[derive(Default)]
struct Stream {
    model: Model,
    events: Vec<(u64, Op)>,
    ptrs: Vec<Pointer>,
}

impl Stream {
    /// A hipMalloc at `base` (over other slots, or at one still live, as
    /// it comes).
    fn malloc(&mut self, base: u64, size: u64) {
        let seq = self.events.len() as u64;
        self.model.alloc(0, base, size, Some(seq));
        let op = Op::Alloc {
            api: id::HIP_MALLOC,
            base,
            size,
        };
        self.events.push((seq, op));
    }

    /// A hipFree of `ptr` (matched or not).
    fn free(&mut self, ptr: u64) {
        self.model.free(0, ptr);
        let op = Op::Free {
            api: id::HIP_FREE,
            ptr,
        };
        self.events.push((self.events.len() as u64, op));
    }

    /// A launch passing `p`.
    fn launch(&mut self, p: &[Pointer]) {
        let seq = self.events.len() as u64;
        let first = self.ptrs.len() as u32;
        self.ptrs.extend_from_slice(p);
        self.model.launch(seq, p);
        let op = Op::Launch {
            kernel: 0,
            first,
            count: p.len() as u32,
        };
        self.events.push((seq, op));
    }

    /// The stamp of the event with sequence id `seq`.
    fn ns(seq: u64) -> u64 {
        1000 + 10 * seq
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// Streams of [`generated`] events, cut anywhere.
    #[test]
    fn the_map_and_its_audit_follow_the_rules_at_any_cut(
        gen in proptest::collection::vec((0u8..7, 0u64..24, 0u64..64), 1..300),
        cuts in proptest::collection::vec(0usize..300, 0..12),
    ) {
        let (s, regions) = generated(&gen);
        for threaded in [false, true] {
            let m = cut_and_apply(regions.clone(), &s, cuts.clone(), threaded);
            prop_assert_eq!(of_map(&m.totals), s.model.totals());
        }
    }

    /// The same streams cut into up to a few hundred pieces, applied in
    /// order and then audited in any order by a few views that keep what
    /// they learnt of pages from piece to piece (caught up through the
    /// change log, or starting over past it), each looking through a
    /// piece's changes for a budget of its own before replaying them.
    #[test]
    fn audits_in_any_order_by_reused_views_follow_the_rules(
        gen in proptest::collection::vec((0u8..7, 0u64..24, 0u64..64), 1..300),
        cuts in proptest::collection::vec(0usize..300, 0..300),
        order in proptest::collection::vec(any::<u32>(), 1..64),
        budgets in proptest::collection::vec(prop_oneof![Just(0), 1usize..40, Just(SCAN_BUDGET)], 1..4),
    ) {
        let (s, regions) = generated(&gen);
        let mut map = AllocationMap::new(regions, false);
        let mut log = ChangeLog::default();
        let applied: Vec<(PieceOps, Prepared)> = cut(&s, cuts)
            .into_iter()
            .enumerate()
            .map(|(n, piece)| {
                let mut prepared = Prepared::default();
                map.apply(&piece, &mut prepared, None);
                log.applied(n as u64, &prepared.changes);
                (piece, prepared)
            })
            .collect();
        let mut views: Vec<View> = budgets.iter().map(|&b| View::with_budget(b)).collect();
        let mut by_order: Vec<usize> = (0..applied.len()).collect();
        by_order.sort_by_key(|&n| (order[n % order.len()], n));
        let mut audits = vec![Audit::default(); applied.len()];
        for n in by_order {
            let (piece, prepared) = &applied[n];
            let view = &mut views[order[n % order.len()] as usize % budgets.len()];
            view.pages.catch_up(n as u64, &log);
            audits[n] = view.audit(n as u64, piece, prepared, None);
        }
        map.finish(None);
        for a in audits {
            map.totals.audit.extend(a);
        }
        prop_assert_eq!(of_map(&map.totals), s.model.totals());
    }

    /// Region records fall before any kind of event, a launch passing
    /// pointers among them: one or several before one event, some stamped
    /// at the event's own time, and some after the last event (applied at
    /// the end of the stream).
    #[test]
    fn region_records_apply_before_the_event_after_them(
        gen in proptest::collection::vec((0u8..8, 0u64..24, 0u64..64), 1..300),
        cuts in proptest::collection::vec(0usize..300, 0..12),
    ) {
        let mut s = Stream::default();
        let mut regions = Vec::new();
        let mut pending = Vec::new();
        let mut last_ns = 0;
        for &(kind, slot, x) in &gen {
            // The stamp of the next event: a record stamped at it or
            // after the event before it falls just before it.
            let ns = Stream::ns(s.events.len() as u64);
            let size = 0x100 << (x % 7);
            if kind == 2 || kind == 3 {
                let segment = x % 2 == 0;
                let layer = if segment { 1 } else { 2 };
                let b = base(slot) + if segment { 0 } else { 0x80 };
                let mono_ns = (ns - 4 * (x % 3)).max(last_ns);
                last_ns = mono_ns;
                regions.push(RegionRecord { add: kind == 2, segment, base: b, size: size / 2, mono_ns });
                pending.push((layer, kind == 2, b, size / 2));
                continue;
            }
            for (layer, add, b, size) in pending.drain(..) {
                pending_region(&mut s.model, layer, add, b, size);
            }
            match kind {
                0 => s.malloc(base(slot), size),
                1 => s.free(base(slot)),
                _ => s.launch(&[
                    Pointer { arg: 0, address: base(slot) + 0x80 + x * 0x10 },
                    Pointer { arg: 1, address: base((slot + x) % 24) + 0x90 },
                ]),
            }
        }
        // Records after the last event: the end of the stream applies them.
        for (layer, add, b, size) in pending.drain(..) {
            pending_region(&mut s.model, layer, add, b, size);
        }
        for threaded in [false, true] {
            let m = cut_and_apply(regions.clone(), &s, cuts.clone(), threaded);
            prop_assert_eq!(of_map(&m.totals), s.model.totals());
        }
    }
}

/// The stream and region records of the first property: each generated
/// event is a malloc (0), a free (1), a region ADD (2) or DEL (3), or a
/// launch; at a slot, with a size or offset.
fn generated(gen: &[(u8, u64, u64)]) -> (Stream, Vec<RegionRecord>) {
    let mut s = Stream::default();
    let mut regions = Vec::new();
    for &(kind, slot, x) in gen {
        let size = size(slot, x);
        match kind {
            0 => s.malloc(base(slot), size),
            1 => s.free(base(slot)),
            2 | 3 => {
                // A region record stamped just before the next event: the
                // map applies it before that event, a launch passing
                // nothing.
                let segment = x % 2 == 0;
                let layer = if segment { 1 } else { 2 };
                let b = base(slot) + if segment { 0 } else { 0x80 };
                let add = kind == 2;
                let mono_ns = Stream::ns(s.events.len() as u64) - 5;
                regions.push(RegionRecord {
                    add,
                    segment,
                    base: b,
                    size: size / 2,
                    mono_ns,
                });
                pending_region(&mut s.model, layer, add, b, size / 2);
                s.launch(&[]);
            }
            _ => s.launch(&[
                Pointer {
                    arg: 0,
                    address: base(slot) + offset(slot, x),
                },
                Pointer {
                    arg: 2,
                    address: base((slot + x) % 24) + 0x10,
                },
            ]),
        }
    }
    (s, regions)
}

/// The stream's events cut into pieces before the indexes `cuts`, handed
/// to an ordered map with `regions` (applied by a thread of its own when
/// `threaded`, else by the decoder handing them in) and each audited as a
/// decoder audits it: the map at the end of the stream.
fn cut_and_apply(
    regions: Vec<RegionRecord>,
    s: &Stream,
    cuts: Vec<usize>,
    threaded: bool,
) -> AllocationMap {
    let map = OrderedMap::new(AllocationMap::new(regions, false), None);
    let (mut prepared, mut view) = (Prepared::default(), View::default());
    std::thread::scope(|scope| {
        let applier = threaded.then(|| {
            map.apply_on_own_thread();
            scope.spawn(|| map.apply_all())
        });
        for (n, mut piece) in cut(s, cuts).into_iter().enumerate() {
            let n = n as u64;
            assert_eq!(
                map.prepare(n, &mut piece, &mut prepared, &mut view),
                Turn::Audit
            );
            let audit = view.audit(n, &piece, &prepared, None);
            map.audited(n, audit);
        }
        map.close();
        if let Some(a) = applier {
            a.join().unwrap();
        }
    });
    map.finish().0
}

/// The stream's events cut into pieces before the indexes `cuts`.
fn cut(s: &Stream, cuts: Vec<usize>) -> Vec<PieceOps> {
    let events = &s.events;
    let mut cuts: Vec<usize> = cuts.into_iter().filter(|&c| c < events.len()).collect();
    cuts.push(events.len());
    cuts.sort_unstable();
    cuts.dedup();
    let mut start = 0;
    let mut pieces = Vec::new();
    for &end in &cuts {
        let mut piece = PieceOps::default();
        for (at, &(seq, op)) in events[start..end].iter().enumerate() {
            let op = match op {
                Op::Launch {
                    kernel,
                    first,
                    count,
                } => {
                    let f = piece.addresses.len() as u32;
                    for p in &s.ptrs[first as usize..(first + count) as usize] {
                        piece.pointer(p.arg, p.address);
                    }
                    Op::Launch {
                        kernel,
                        first: f,
                        count: piece.addresses.len() as u32 - f,
                    }
                }
                other => other,
            };
            let stamp = Stamp {
                seq,
                ns: Stream::ns(seq),
                thread: 1,
            };
            piece.push(at as u32, stamp, op);
        }
        piece.names = vec![b"k".to_vec().into_boxed_slice()];
        pieces.push(piece);
        start = end;
    }
    pieces
}

/// A region record in the model: applied where the map applies it, before
/// the event after it.
fn pending_region(model: &mut Model, layer: usize, add: bool, base: u64, size: u64) {
    match add {
        true => model.alloc(layer, base, size, None),
        false => model.free(layer, base),
    }
}
