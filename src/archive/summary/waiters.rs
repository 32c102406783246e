//! Decoders waiting each for its own numbered turn (its piece settled, its
//! piece applied to the allocation map), woken alone when that turn comes.
//!
//! A condition variable shared by every decoder wakes them all at each
//! turn, each to take the lock and find it is not its turn yet: on many
//! cores a visible share of what the allocation map costs
//! (docs/performance.md). Each waiter instead leaves its thread under its
//! number, and whoever makes that turn come unparks just it.

use std::collections::BTreeMap;
use std::sync::MutexGuard;
use std::thread::{self, Thread};

/// Threads waiting, by the number of the turn each waits for.
#[derive(Default)]
pub(in crate::archive) struct Waiters(BTreeMap<u64, Thread>);

impl Waiters {
    /// Has the calling thread wait for turn `n`: it is registered in the
    /// waiters `of` the state `guard` holds, the lock is let go while it
    /// sleeps, and `relock` takes it again. It may come back before turn
    /// `n` (a wake-up meant for an earlier wait), so the caller checks
    /// again.
    pub(in crate::archive) fn sleep<'a, T>(
        mut guard: MutexGuard<'a, T>,
        n: u64,
        of: impl FnOnce(&mut T) -> &mut Waiters,
        relock: impl FnOnce() -> MutexGuard<'a, T>,
    ) -> MutexGuard<'a, T> {
        of(&mut guard).0.insert(n, thread::current());
        drop(guard);
        thread::park();
        relock()
    }

    /// Wakes the thread waiting for turn `n`, if one is.
    pub(in crate::archive) fn wake(&mut self, n: u64) {
        if let Some(t) = self.0.remove(&n) {
            t.unpark();
        }
    }

    /// Wakes every waiting thread (the pass failed, or ends).
    pub(in crate::archive) fn wake_all(&mut self) {
        for t in std::mem::take(&mut self.0).into_values() {
            t.unpark();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{mpsc, Mutex};
    use std::time::Duration;

    /// The turns taken, and whether they stopped (no turn comes any more).
    #[derive(Default)]
    struct State {
        turn: u64,
        stopped: bool,
        order: Vec<u64>,
        waiters: Waiters,
    }

    /// Runs `body` on a thread of its own and gives back what it returns,
    /// or fails the test when it has not returned in ten seconds (a waiter
    /// that was never woken), rather than hang the suite.
    fn within_ten_seconds<R: Send + 'static>(body: impl FnOnce() -> R + Send + 'static) -> R {
        let (tx, rx) = mpsc::channel();
        thread::spawn(move || tx.send(body()));
        rx.recv_timeout(Duration::from_secs(10))
            .expect("a waiting thread was never woken")
    }

    /// Turns taken in order by threads that each wait for their own, most
    /// started before the turns ahead of them: each is woken for its turn.
    #[test]
    fn each_thread_is_woken_for_its_own_turn() {
        let order = within_ten_seconds(|| {
            let state = Mutex::new(State::default());
            let lock = || state.lock().unwrap();
            thread::scope(|s| {
                for n in (0..16).rev() {
                    s.spawn(move || {
                        let mut g = lock();
                        while g.turn < n {
                            g = Waiters::sleep(g, n, |st| &mut st.waiters, lock);
                        }
                        g.order.push(n);
                        g.turn += 1;
                        let next = g.turn;
                        g.waiters.wake(next);
                    });
                }
            });
            state.into_inner().unwrap().order
        });
        assert_eq!(order, (0..16).collect::<Vec<_>>());
    }

    /// Threads waiting for turns that never come are all woken when the
    /// turns stop, and none takes its turn.
    #[test]
    fn waking_all_lets_every_waiter_go() {
        let order = within_ten_seconds(|| {
            let state = Mutex::new(State::default());
            let lock = || state.lock().unwrap();
            thread::scope(|s| {
                for n in 1..9 {
                    s.spawn(move || {
                        let mut g = lock();
                        while g.turn < n && !g.stopped {
                            g = Waiters::sleep(g, n, |st| &mut st.waiters, lock);
                        }
                        if !g.stopped {
                            g.order.push(n);
                        }
                    });
                }
                // Stop once every thread waits (none can take a turn: turn
                // 0 is never taken).
                while lock().waiters.0.len() < 8 {
                    thread::yield_now();
                }
                let mut g = lock();
                g.stopped = true;
                g.waiters.wake_all();
            });
            state.into_inner().unwrap().order
        });
        assert_eq!(order, Vec::<u64>::new());
    }
}
