//! Running the workers of a run over many archives: each archive in a
//! worker ([`super::worker`]), at most one at a time per slot. A replay
//! slot is one GPU (`--gpus`), so no two replays share a GPU; a run that
//! replays without a GPU list has one slot (the GPU `replay.gpu` names);
//! a metadata-only run has one slot per CPU.
//!
//! Ctrl-C (SIGINT, or SIGTERM/SIGHUP) reaches only the `hrr` that runs the
//! workers, as each leads a process group of its own. On Unix it is passed
//! on to every running worker, whose replay then ends as a single run's
//! does: the player's group stopped and the interrupt marker written to its
//! log, so its archive's finding is UNKNOWN with the worker's "replay
//! interrupted" error. A worker still running after [`WORKER_GRACE`] has
//! its group stopped. Archives not yet started get an UNKNOWN finding that
//! says they were not triaged.

use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::{mpsc, Mutex};
use std::time::Duration;

use super::worker::{Triaged, Worker};

/// How long a worker has, once the interrupt was passed on, to end its
/// replay as a single run does (the replay gives its player a grace of its
/// own, then a docker stop may take a while) before its group is stopped.
pub const WORKER_GRACE: Duration = Duration::from_secs(10);

/// The slots of a run: `Some(gpu)` replays on that visible GPU, `None` on
/// the worker's own choice (or not at all).
pub fn slots(metadata_only: bool, gpus: Option<&[u32]>, archives: usize) -> Vec<Option<u32>> {
    if metadata_only {
        let cpus = std::thread::available_parallelism().map_or(1, usize::from);
        return vec![None; cpus.min(archives).max(1)];
    }
    match gpus {
        Some(list) if !list.is_empty() => list.iter().copied().map(Some).collect(),
        _ => vec![None],
    }
}

/// Triages every archive with `worker`, one at a time per slot of `slots`,
/// calling `done` on this thread as each archive is finished (in the order
/// they finish). Returns the signal that interrupted the run, if one did
/// (see the module doc); every archive still gets its `done`.
pub fn run(
    worker: &Worker,
    archives: Vec<PathBuf>,
    slots: &[Option<u32>],
    done: impl FnMut(Triaged),
) -> anyhow::Result<Option<i32>> {
    #[cfg(unix)]
    let _signals = crate::interrupt::install()?;
    each_in_slots(
        archives,
        slots,
        |archive, gpu| match crate::replay::interrupted() {
            Some(sig) => Triaged::not_started(archive, sig),
            None => worker.run(&archive, gpu),
        },
        done,
    );
    Ok(crate::replay::interrupted())
}

/// Runs `work(job, slot)` for every job, at most one job per slot at a
/// time, a thread per slot; `done` gets each result on this thread as it
/// comes.
fn each_in_slots<J: Send, S: Copy + Send + Sync, R: Send>(
    jobs: Vec<J>,
    slots: &[S],
    work: impl Fn(J, S) -> R + Sync,
    mut done: impl FnMut(R),
) {
    let queue = Mutex::new(VecDeque::from(jobs));
    let (tx, rx) = mpsc::channel::<R>();
    std::thread::scope(|scope| {
        for &slot in slots {
            let (queue, work, tx) = (&queue, &work, tx.clone());
            scope.spawn(move || loop {
                let next = queue.lock().unwrap_or_else(|e| e.into_inner()).pop_front();
                let Some(job) = next else { break };
                if tx.send(work(job, slot)).is_err() {
                    break;
                }
            });
        }
        drop(tx);
        for result in rx {
            done(result);
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    #[test]
    fn every_job_runs_once_and_a_slot_runs_one_at_a_time() {
        let start = Instant::now();
        let mut spans: Vec<(usize, u32, Duration, Duration)> = Vec::new();
        each_in_slots(
            (0..12).collect(),
            &[0u32, 1, 2],
            |job: usize, slot| {
                let from = start.elapsed();
                std::thread::sleep(Duration::from_millis(20));
                (job, slot, from, start.elapsed())
            },
            |r| spans.push(r),
        );
        let mut jobs: Vec<usize> = spans.iter().map(|s| s.0).collect();
        jobs.sort();
        assert_eq!(jobs, (0..12).collect::<Vec<_>>());
        for a in &spans {
            for b in &spans {
                if a.0 != b.0 && a.1 == b.1 {
                    assert!(
                        a.3 <= b.2 || b.3 <= a.2,
                        "jobs {} and {} overlap on slot {}",
                        a.0,
                        b.0,
                        a.1
                    );
                }
            }
        }
    }

    #[test]
    fn slots_follow_the_plan() {
        assert_eq!(
            slots(false, Some(&[0, 2, 3]), 9),
            [Some(0), Some(2), Some(3)]
        );
        assert_eq!(slots(false, None, 9), [None]);
        assert_eq!(slots(true, Some(&[0, 1]), 1), [None]);
        let cpus = std::thread::available_parallelism().map_or(1, usize::from);
        assert_eq!(slots(true, None, 1000).len(), cpus);
    }
}
