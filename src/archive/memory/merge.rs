//! Per-piece results applied to the allocation map in stream order.
//!
//! Decoders take pieces from the cutter in file order, each numbered as it
//! is taken (under the cutter's lock), and finish them in any order. A
//! finished piece whose number is the next one due is applied at once by
//! the decoder that finished it, followed by any later pieces already
//! waiting; a piece finished early waits, so at most about one piece per
//! decoder is ever held.

use std::collections::BTreeMap;
use std::sync::Mutex;

use crate::archive::memory::map::{AllocationMap, Watch};
use crate::archive::memory::ops::PieceOps;

struct Order {
    map: AllocationMap,
    watch: Option<Watch>,
    /// Number of the next piece due.
    next: u64,
    /// Pieces finished before their turn.
    waiting: BTreeMap<u64, PieceOps>,
    /// Emptied buffers, for the next decoder that parks a piece.
    spare: Vec<PieceOps>,
}

/// The map shared by the decoders of one pass.
pub struct OrderedMap {
    inner: Mutex<Order>,
}

impl OrderedMap {
    /// An empty map (and watch, for a query) that pieces are applied to.
    pub fn new(map: AllocationMap, watch: Option<Watch>) -> OrderedMap {
        OrderedMap {
            inner: Mutex::new(Order {
                map,
                watch,
                next: 0,
                waiting: BTreeMap::new(),
                spare: Vec::new(),
            }),
        }
    }

    /// Hands in piece number `n`: applied now when it is due (then the
    /// pieces waiting behind it), kept otherwise. `ops` is left empty and
    /// ready for the decoder's next piece.
    pub fn submit(&self, n: u64, ops: &mut PieceOps) {
        let mut o = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        let o = &mut *o;
        if n != o.next {
            let empty = o.spare.pop().unwrap_or_default();
            o.waiting.insert(n, std::mem::replace(ops, empty));
            return;
        }
        o.map.apply(ops, o.watch.as_mut());
        ops.clear();
        o.next += 1;
        while let Some(mut p) = o.waiting.remove(&o.next) {
            o.map.apply(&p, o.watch.as_mut());
            p.clear();
            o.spare.push(p);
            o.next += 1;
        }
    }

    /// The map after every piece (and the region records after the last
    /// event), with the watch's findings.
    pub fn finish(self) -> (AllocationMap, Option<Watch>) {
        let mut o = self.inner.into_inner().unwrap_or_else(|e| e.into_inner());
        o.map.finish(&mut o.watch.as_mut());
        if let Some(w) = o.watch.as_mut() {
            w.end(&o.map);
        }
        (o.map, o.watch)
    }
}
