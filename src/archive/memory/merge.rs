//! Per-piece results applied to the allocation map in stream order.
//!
//! Decoders take pieces from the cutter in file order, each numbered as it
//! is taken (under the cutter's lock), and finish them in any order. A
//! finished piece is handed in under a short lock; the decoder that hands
//! in the piece next due, when no other is applying, applies it and every
//! later piece handed in meanwhile, outside that lock, while the others
//! keep decoding. A piece handed in early waits; past
//! [`MAX_WAITING`] waiting pieces, a decoder whose piece is not due waits
//! for room, so memory stays bounded when the map falls behind.

use std::collections::BTreeMap;
use std::sync::{Condvar, Mutex, MutexGuard};

use crate::archive::memory::map::{AllocationMap, Watch};
use crate::archive::memory::ops::PieceOps;

/// Pieces waiting for their turn at most (a piece holds the map's events
/// of one 4 MiB window, about a megabyte).
const MAX_WAITING: usize = 8;

struct Queue {
    /// Number of the next piece due.
    next: u64,
    /// Pieces handed in before their turn.
    waiting: BTreeMap<u64, PieceOps>,
    /// Emptied buffers, for the next decoder that hands a piece in.
    spare: Vec<PieceOps>,
    /// A decoder is applying pieces.
    applying: bool,
    /// A decoder failed: nobody waits for room any more.
    abandoned: bool,
}

/// The map shared by the decoders of one pass.
pub struct OrderedMap {
    queue: Mutex<Queue>,
    /// Signalled when a waiting piece was applied.
    room: Condvar,
    /// Locked only by the one decoder applying pieces.
    map: Mutex<(AllocationMap, Option<Watch>)>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl OrderedMap {
    /// An empty map (and watch, for a query) that pieces are applied to.
    pub fn new(map: AllocationMap, watch: Option<Watch>) -> OrderedMap {
        OrderedMap {
            queue: Mutex::new(Queue {
                next: 0,
                waiting: BTreeMap::new(),
                spare: Vec::new(),
                applying: false,
                abandoned: false,
            }),
            room: Condvar::new(),
            map: Mutex::new((map, watch)),
        }
    }

    /// Hands in piece number `n`; applies it, and the pieces due after it,
    /// when it is due and no other decoder is applying. `ops` is left
    /// empty and ready for the decoder's next piece.
    pub fn submit(&self, n: u64, ops: &mut PieceOps) {
        let mut q = lock(&self.queue);
        while q.waiting.len() >= MAX_WAITING && n != q.next && !q.abandoned {
            q = self.room.wait(q).unwrap_or_else(|e| e.into_inner());
        }
        let empty = q.spare.pop().unwrap_or_default();
        q.waiting.insert(n, std::mem::replace(ops, empty));
        if q.applying {
            return;
        }
        q.applying = true;
        loop {
            let due = q.next;
            let Some(mut piece) = q.waiting.remove(&due) else {
                break;
            };
            drop(q);
            {
                let mut m = lock(&self.map);
                let (map, watch) = &mut *m;
                map.apply(&piece, watch.as_mut());
            }
            piece.clear();
            q = lock(&self.queue);
            q.next += 1;
            q.spare.push(piece);
            self.room.notify_all();
        }
        q.applying = false;
    }

    /// Lets every decoder waiting for room go on: a decoder failed, so the
    /// piece they wait behind may never come (the pass reports the failure).
    pub fn abandon(&self) {
        lock(&self.queue).abandoned = true;
        self.room.notify_all();
    }

    /// The map after every piece (and the region records after the last
    /// event), with the watch's findings.
    pub fn finish(self) -> (AllocationMap, Option<Watch>) {
        let (mut map, mut watch) = self.map.into_inner().unwrap_or_else(|e| e.into_inner());
        map.finish(&mut watch.as_mut());
        if let Some(w) = watch.as_mut() {
            w.end(&map);
        }
        (map, watch)
    }
}
