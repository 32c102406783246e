//! Per-piece allocations and frees applied to the allocation map in
//! stream order, each piece then audited by its own decoder.
//!
//! Decoders take pieces from the cutter in file order, each numbered as it
//! is settled, and take each piece's allocations and frees out of it
//! before tallying it. A decoder hands them in under a short lock; the
//! pieces are applied to the map in stream order, each with a copy of the
//! map's ranges as they stand after it ([`super::view`]). With many
//! decoders a thread of the map's own applies them as they come due
//! ([`OrderedMap::apply_on_own_thread`]), so the map's B-tree nodes stay in
//! one core's cache and one allocator arena; with few, the decoder that
//! hands in the piece due, when no other is applying, applies it and every
//! later piece handed in meanwhile, outside that lock. Each decoder waits
//! for its own piece to be applied (the pieces before it were taken out
//! first, so the wait is short) and then audits it as it tallies it; the
//! audits are added up in stream order. A piece waiting holds only its
//! allocations and frees, one per decoder at most. With a watch (a query),
//! each piece is audited right after it is applied, by whoever applied it,
//! so the watch hears of the launches in stream order.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard};

use crate::archive::memory::map::AllocationMap;
use crate::archive::memory::ops::{Launches, PieceOps};
use crate::archive::memory::page_cache::ChangeLog;
use crate::archive::memory::view::{Audit, Prepared, View};
use crate::archive::memory::watch::Watch;
use crate::archive::summary::waiters::Waiters;

/// A piece applied, for its decoder to take back.
struct Applied {
    ops: PieceOps,
    prepared: Prepared,
    /// Audited already (with a watch).
    audited: bool,
}

struct Queue {
    /// Number of the next piece due.
    next: u64,
    /// Pieces handed in before their turn, with the buffer each is
    /// prepared into.
    waiting: BTreeMap<u64, (PieceOps, Prepared)>,
    /// Pieces applied, for their decoders.
    applied: BTreeMap<u64, Applied>,
    /// Decoders waiting for their piece to be applied, by piece.
    waiters: Waiters,
    /// A thread of the map's own applies the pieces
    /// ([`OrderedMap::apply_on_own_thread`]).
    threaded: bool,
    /// Without it, a decoder is applying pieces.
    applying: bool,
    /// Every decoder is done: no piece will be handed in any more.
    closed: bool,
    /// The pages the changes of the last pieces applied met, for the views'
    /// page caches.
    log: ChangeLog,
    /// A decoder failed: nobody waits for a piece any more.
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

/// What a decoder is to do with its piece once the map has applied it.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Turn {
    /// Audit it from the ranges it was prepared ([`super::view::PieceAudit`]).
    Audit,
    /// Nothing: it was audited as it was applied (with a watch).
    Audited,
    /// Stop: a decoder failed, so the pieces before may never come.
    Abandoned,
}

/// The map shared by the decoders of one pass.
pub struct OrderedMap {
    queue: Mutex<Queue>,
    /// Signalled when the piece due was handed in, or the pass ends.
    due: Condvar,
    /// Locked by whoever applies pieces (the map's thread, or one decoder
    /// at a time).
    map: Mutex<Applier>,
    /// Region records are left to merge, or a watch listens: the pieces'
    /// launches are taken too.
    launches: AtomicBool,
    /// A watch listens.
    watching: bool,
}

/// Lets every decoder waiting for its piece go on if the map's thread
/// panics (the pass reports the failure).
struct AbandonOnPanic<'a>(&'a OrderedMap);

impl Drop for AbandonOnPanic<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.abandon();
        }
    }
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
        let launches = AtomicBool::new(map.regions_left());
        OrderedMap {
            queue: Mutex::new(Queue {
                next: 0,
                waiting: BTreeMap::new(),
                applied: BTreeMap::new(),
                waiters: Waiters::default(),
                threaded: false,
                applying: false,
                closed: false,
                log: ChangeLog::default(),
                abandoned: false,
                audit: Audit::default(),
                audited: 0,
                audits: BTreeMap::new(),
            }),
            due: Condvar::new(),
            launches,
            watching: watch.is_some(),
            map: Mutex::new(Applier {
                map,
                watch,
                view: View::default(),
            }),
        }
    }

    /// What a piece handed in now must hold of its launches. Region
    /// records only run out, so a piece taken out as [`Launches::Skip`]
    /// never meets one.
    pub(crate) fn launches(&self) -> Launches {
        match (self.watching, self.launches.load(Ordering::Relaxed)) {
            (true, _) => Launches::Full,
            (false, true) => Launches::Stamps,
            (false, false) => Launches::Skip,
        }
    }

    /// Hands in piece number `n` (its events `ops`, and `prepared` to
    /// prepare it into); without the map's thread, applies it and the
    /// pieces due after it when it is due and no other decoder is applying;
    /// then waits until it is applied, and gives `ops` and `prepared` back
    /// with `view` caught up to it.
    pub(crate) fn prepare(
        &self,
        n: u64,
        ops: &mut PieceOps,
        prepared: &mut Prepared,
        view: &mut View,
    ) -> Turn {
        let mut q = lock(&self.queue);
        let handed = (std::mem::take(ops), std::mem::take(prepared));
        q.waiting.insert(n, handed);
        if q.threaded {
            if n == q.next {
                self.due.notify_one();
            }
        } else if !q.applying {
            q.applying = true;
            q = self.apply_due(q);
            q.applying = false;
        }
        loop {
            if let Some(a) = q.applied.remove(&n) {
                *ops = a.ops;
                *prepared = a.prepared;
                if a.audited {
                    return Turn::Audited;
                }
                view.pages.catch_up(n, &q.log);
                return Turn::Audit;
            }
            if q.abandoned {
                return Turn::Abandoned;
            }
            q = Waiters::sleep(q, n, |q| &mut q.waiters, || lock(&self.queue));
        }
    }

    /// Has the pieces applied by a thread of the map's own, which must
    /// then run [`apply_all`](Self::apply_all) until the decoders are
    /// done. Past a few decoders this is faster, and its peak RSS lower,
    /// than a map applied by whichever decoder hands in the piece due: the
    /// map's B-tree nodes stay in one core's cache and one allocator arena
    /// (docs/performance.md). With few decoders, the thread's wake-ups cost
    /// more than they save.
    pub fn apply_on_own_thread(&self) {
        lock(&self.queue).threaded = true;
    }

    /// The map's thread ([`apply_on_own_thread`](Self::apply_on_own_thread)):
    /// applies each piece as it comes due, in stream order, until the
    /// decoders are done ([`close`](Self::close)) or one failed
    /// ([`abandon`](Self::abandon)).
    pub fn apply_all(&self) {
        let _abandon = AbandonOnPanic(self);
        let mut q = lock(&self.queue);
        loop {
            q = self.apply_due(q);
            if q.closed || q.abandoned {
                return;
            }
            q = self.due.wait(q).unwrap_or_else(|e| e.into_inner());
        }
    }

    /// Applies the piece due and each handed in after it, in order, outside
    /// the lock `q` of the queue, and lets their decoders know.
    fn apply_due<'q>(&'q self, mut q: MutexGuard<'q, Queue>) -> MutexGuard<'q, Queue> {
        loop {
            let due = q.next;
            let Some((piece, prepared)) = q.waiting.remove(&due) else {
                return q;
            };
            drop(q);
            let applied = self.apply(due, piece, prepared);
            q = lock(&self.queue);
            q.next += 1;
            q.log.applied(due, &applied.0.prepared.changes);
            if let Some(audit) = applied.1 {
                q.audited(due, audit);
            }
            q.applied.insert(due, applied.0);
            q.waiters.wake(due);
        }
    }

    /// Tells the map's thread that every decoder is done, so it stops once
    /// no piece is left to apply.
    pub fn close(&self) {
        lock(&self.queue).closed = true;
        self.due.notify_one();
    }

    /// Adds the audit of piece `n`.
    pub(crate) fn audited(&self, n: u64, audit: Audit) {
        lock(&self.queue).audited(n, audit);
    }

    /// Applies piece `number` to the map; with a watch, audits it too.
    fn apply(
        &self,
        number: u64,
        ops: PieceOps,
        mut prepared: Prepared,
    ) -> (Applied, Option<Audit>) {
        let mut a = lock(&self.map);
        let Applier { map, watch, view } = &mut *a;
        map.apply(&ops, &mut prepared, watch.as_mut());
        if !map.regions_left() {
            self.launches.store(false, Ordering::Relaxed);
        }
        let audit = watch
            .as_mut()
            .map(|w| view.audit(number, &ops, &prepared, Some(w)));
        let applied = Applied {
            ops,
            prepared,
            audited: audit.is_some(),
        };
        (applied, audit)
    }

    /// Lets every decoder waiting for its piece go on: a decoder failed,
    /// so a piece before theirs may never come (the pass reports the
    /// failure).
    pub fn abandon(&self) {
        let mut q = lock(&self.queue);
        q.abandoned = true;
        q.waiters.wake_all();
        drop(q);
        self.due.notify_one();
    }

    /// The map after every piece (and the region records after the last
    /// event), with its audit and the watch's findings.
    pub fn finish(self) -> (AllocationMap, Option<Watch>) {
        let audit = std::mem::take(&mut lock(&self.queue).audit);
        let a = self.map.into_inner().unwrap_or_else(|e| e.into_inner());
        let (mut map, mut watch) = (a.map, a.watch);
        map.finish(watch.as_mut());
        map.totals.audit = audit;
        (map, watch)
    }
}
