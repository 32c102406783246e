//! Per-piece results applied to the allocation map in stream order, and
//! their audits run on whichever decoder is free.
//!
//! Decoders take pieces from the cutter in file order, each numbered as it
//! is taken (under the cutter's lock), and finish them in any order. A
//! finished piece is handed in under a short lock; the decoder that hands
//! in the piece next due, when no other is applying, applies it and every
//! later piece handed in meanwhile to the map, outside that lock: only
//! their allocations and frees, each piece with a copy of the map's ranges
//! as they stood before it ([`super::view`]). Each applied piece is then
//! ready for its audit, which any decoder runs after handing its own piece
//! in; the audits are added up in stream order.
//!
//! A piece handed in early waits; past [`MAX_WAITING`] pieces waiting (for
//! their turn or their audit) or being audited, a decoder whose piece is
//! not due runs an audit, or waits for room when there is none to run, so
//! memory stays bounded when the map falls behind. With a watch (a query), each piece is
//! audited right after it is applied, under the map's lock, so the watch
//! hears of the launches in stream order.

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Condvar, Mutex, MutexGuard};

use crate::archive::memory::map::AllocationMap;
use crate::archive::memory::ops::PieceOps;
use crate::archive::memory::page_cache::ChangeLog;
use crate::archive::memory::view::{Audit, Prepared, View};
use crate::archive::memory::watch::Watch;

/// Pieces waiting for their turn, waiting for their audit or being
/// audited, at most (a piece holds the map's events of one 2 MiB window,
/// about a megabyte).
const MAX_WAITING: usize = 4;
/// Emptied piece buffers kept for reuse at most.
const MAX_SPARE: usize = 2;

/// An applied piece waiting for its audit.
struct Ready {
    number: u64,
    ops: PieceOps,
    prepared: Prepared,
}

struct Queue {
    /// Number of the next piece due.
    next: u64,
    /// Pieces handed in before their turn.
    waiting: BTreeMap<u64, PieceOps>,
    /// Pieces applied, waiting for their audit, oldest first.
    ready: VecDeque<Ready>,
    /// Emptied buffers, for the next decoder that hands a piece in.
    spare: Vec<PieceOps>,
    spare_prepared: Vec<Prepared>,
    views: Vec<View>,
    /// The pages the live changes of the last pieces applied met, for the
    /// views' page caches.
    log: ChangeLog,
    /// Pieces being audited.
    auditing: usize,
    /// A decoder is applying pieces.
    applying: bool,
    /// A decoder failed: nobody waits for room any more.
    abandoned: bool,
    /// The audits of the pieces before `audited`, added up, and those of
    /// later pieces done before their turn.
    audit: Audit,
    audited: u64,
    audits: BTreeMap<u64, Audit>,
}

impl Queue {
    /// Adds piece `n`'s audit, in stream order.
    fn audited(&mut self, n: u64, audit: Audit) {
        self.audits.insert(n, audit);
        while let Some(a) = self.audits.remove(&self.audited) {
            self.audit.extend(a);
            self.audited += 1;
        }
    }
}

/// The map shared by the decoders of one pass.
pub struct OrderedMap {
    queue: Mutex<Queue>,
    /// Signalled when a waiting piece was applied.
    room: Condvar,
    /// Locked only by the one decoder applying pieces.
    map: Mutex<Applier>,
}

/// The map, and with a watch the view its pieces are audited in.
struct Applier {
    map: AllocationMap,
    watch: Option<Watch>,
    view: View,
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
                ready: VecDeque::new(),
                spare: Vec::new(),
                spare_prepared: Vec::new(),
                views: Vec::new(),
                log: ChangeLog::default(),
                auditing: 0,
                applying: false,
                abandoned: false,
                audit: Audit::default(),
                audited: 0,
                audits: BTreeMap::new(),
            }),
            room: Condvar::new(),
            map: Mutex::new(Applier {
                map,
                watch,
                view: View::default(),
            }),
        }
    }

    /// Hands in piece number `n`; applies it, and the pieces due after it,
    /// when it is due and no other decoder is applying; then audits the
    /// pieces ready for it. `ops` is left empty and ready for the
    /// decoder's next piece.
    pub fn submit(&self, n: u64, ops: &mut PieceOps) {
        let mut q = lock(&self.queue);
        while q.waiting.len() + q.ready.len() + q.auditing >= MAX_WAITING
            && n != q.next
            && !q.abandoned
        {
            // Room comes from audits: run one while there is one to run.
            q = match q.ready.pop_front() {
                Some(r) => self.audit_one(q, r),
                None => self.room.wait(q).unwrap_or_else(|e| e.into_inner()),
            };
        }
        let empty = q.spare.pop().unwrap_or_default();
        q.waiting.insert(n, std::mem::replace(ops, empty));
        if !q.applying {
            q.applying = true;
            loop {
                let due = q.next;
                let Some(piece) = q.waiting.remove(&due) else {
                    break;
                };
                let prepared = q.spare_prepared.pop().unwrap_or_default();
                drop(q);
                let (ready, audit) = self.apply(due, piece, prepared);
                q = lock(&self.queue);
                q.next += 1;
                q.log.applied(due, &ready.prepared.changes);
                match audit {
                    Some(audit) => {
                        q.audited(due, audit);
                        Self::recycle(&mut q, ready);
                        self.room.notify_all();
                    }
                    None => q.ready.push_back(ready),
                }
            }
            q.applying = false;
        }
        while let Some(r) = q.ready.pop_front() {
            q = self.audit_one(q, r);
        }
    }

    /// Applies piece `number` to the map; with a watch, audits it too.
    fn apply(&self, number: u64, ops: PieceOps, mut prepared: Prepared) -> (Ready, Option<Audit>) {
        let mut a = lock(&self.map);
        let Applier { map, watch, view } = &mut *a;
        map.apply(&ops, &mut prepared, watch.as_mut());
        let audit = watch
            .as_mut()
            .map(|w| view.audit(number, &ops, &prepared, Some(w)));
        let ready = Ready {
            number,
            ops,
            prepared,
        };
        (ready, audit)
    }

    /// Audits applied piece `r` outside the queue's lock.
    fn audit_one<'a>(&'a self, mut q: MutexGuard<'a, Queue>, r: Ready) -> MutexGuard<'a, Queue> {
        let mut view = q.views.pop().unwrap_or_default();
        view.pages.catch_up(r.number, &q.log);
        q.auditing += 1;
        drop(q);
        let audit = view.audit(r.number, &r.ops, &r.prepared, None);
        q = lock(&self.queue);
        q.auditing -= 1;
        q.audited(r.number, audit);
        q.views.push(view);
        Self::recycle(&mut q, r);
        self.room.notify_all();
        q
    }

    /// Keeps an audited piece's buffers for later pieces, a few: each
    /// keeps the room of the largest piece it held.
    fn recycle(q: &mut Queue, mut r: Ready) {
        if q.spare.len() < MAX_SPARE {
            r.ops.clear();
            q.spare.push(r.ops);
        }
        if q.spare_prepared.len() < MAX_SPARE {
            r.prepared.clear();
            q.spare_prepared.push(r.prepared);
        }
    }

    /// Lets every decoder waiting for room go on: a decoder failed, so the
    /// piece they wait behind may never come (the pass reports the failure).
    pub fn abandon(&self) {
        lock(&self.queue).abandoned = true;
        self.room.notify_all();
    }

    /// The map after every piece (and the region records after the last
    /// event), with its audit and the watch's findings.
    pub fn finish(self) -> (AllocationMap, Option<Watch>) {
        let mut q = lock(&self.queue);
        while let Some(r) = q.ready.pop_front() {
            q = self.audit_one(q, r);
        }
        drop(q);
        let audit = std::mem::take(&mut lock(&self.queue).audit);
        let a = self.map.into_inner().unwrap_or_else(|e| e.into_inner());
        let (mut map, mut watch) = (a.map, a.watch);
        map.finish(watch.as_mut());
        map.totals.audit = audit;
        (map, watch)
    }
}
