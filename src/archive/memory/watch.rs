//! What a query watches while the allocation map is built: the ranges
//! live at a sequence id, the life of one address, and the map around it
//! at the points fault attribution weighs.

use crate::archive::memory::map::{AllocationMap, Hit, Range};
use crate::archive::memory::ops::{Op, PieceOps, Pointer, Stamp};

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
    pub(crate) fn before(&mut self, map: &AllocationMap, stamp: Stamp, op: Op, piece: &PieceOps) {
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
        let Some((name, ptrs)) = piece.launch_of(op) else {
            return;
        };
        let at_event = self.at == Some(stamp.seq);
        let of_kernel = self.kernel.as_deref() == Some(name);
        if !(at_event || of_kernel) {
            return;
        }
        let launch = Some((
            String::from_utf8_lossy(name).into_owned(),
            ptrs.iter().collect(),
        ));
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

    pub(crate) fn born(&mut self, r: &Range) -> u32 {
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

    pub(crate) fn died(&mut self, r: &Range) {
        if let Some(h) = self.history.get_mut(r.hist as usize) {
            h.freed = r.freed;
        }
    }

    pub(crate) fn passed(&mut self, seq: u64, name: &[u8], p: &Pointer, hit: Hit) {
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
