//! A night's worth of capture roots for the fleet recipes (`hrr triage`
//! over many archives, the Slurm and Kubernetes job arrays): several shapes,
//! roots of the same name in different directories, and one damaged archive.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use crate::archive::{gfx942_metadata, write_root_manifest, ProcessArchive};
use crate::events::{api, Arg, EventsFile, Launch};
use crate::synth::{clean_process, code_object_bytes, crashed_process, crashed_process_in};

/// Kernels the crashed single-process roots died in, in turn: a plain name
/// and a templated one (the characters a report must escape).
const CRASH_KERNELS: [&str; 2] = [
    "crash_oob",
    "void gemm_tile<float, 64>(float const*, float*, int) [clone .kd]",
];
/// Kernel of the roots whose launch passes a freed buffer.
const STALE_KERNEL: &str = "scale_inplace";

/// The shape of one generated root.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Shape {
    /// A clean parent and its crashed child (two processes).
    Pair,
    /// One crashed process, no trailer.
    Crashed,
    /// One clean process.
    Clean,
    /// One clean process whose launch passes a buffer freed before it.
    Stale,
    /// A crashed process whose `events.bin` is cut in the middle of an event.
    Damaged,
}

/// `count` roots' shapes: pairs, crashed, clean and stale roots in turn, the
/// last one damaged.
fn shapes(count: usize) -> Vec<Shape> {
    const TURN: [Shape; 4] = [Shape::Pair, Shape::Crashed, Shape::Clean, Shape::Stale];
    (0..count)
        .map(|i| match i {
            i if i + 1 == count && count > 1 => Shape::Damaged,
            i => TURN[i % TURN.len()],
        })
        .collect()
}

/// Where root `i` of `shape` goes under `dir`: pairs and clean roots are
/// `node-NN/capture.hrr` (one name in many directories, as capture jobs on
/// several nodes leave them), the damaged root `damaged/capture.hrr`, the
/// others `batch/<kind>-NN.hrr`.
fn root_path(dir: &Path, i: usize, shape: Shape) -> PathBuf {
    match shape {
        Shape::Pair | Shape::Clean => dir.join(format!("node-{i:02}")).join("capture.hrr"),
        Shape::Damaged => dir.join("damaged").join("capture.hrr"),
        Shape::Crashed => dir.join("batch").join(format!("run-{i:02}.hrr")),
        Shape::Stale => dir.join("batch").join(format!("stale-{i:02}.hrr")),
    }
}

/// `p` moved to `pid` (its thread too), child of `parent`.
fn renumbered(mut p: ProcessArchive, pid: u64, parent: u64) -> ProcessArchive {
    p.pid = pid;
    p.parent_pid = parent;
    p.events.thread = pid;
    p
}

/// A clean process whose one launch passes a buffer freed just before it
/// (what the capture-time pointer audit reports as a stale pointer).
fn stale_process(pid: u64) -> ProcessArchive {
    let mut p = ProcessArchive::new(pid, EventsFile::v7());
    p.events.thread = pid;
    let co = p.add_code_object(&code_object_bytes(STALE_KERNEL));
    let (freed, live) = (0x7f20_0000_0000, 0x7f20_0010_0000);
    let mut launch = Launch::new(STALE_KERNEL, [1024, 1, 1], [256, 1, 1]);
    launch.code_object = co;
    launch.args = vec![Arg::Pointer(freed), Arg::Pointer(live)];
    p.events
        .module_load(0x5a5a_0000_3000, co)
        .malloc(freed, 4096)
        .malloc(live, 4096)
        .free(freed)
        .launch(api::HIP_MODULE_LAUNCH_KERNEL, &launch)
        .device_synchronize()
        .free(live)
        .trailer();
    p.metadata = Some(gfx942_metadata());
    p
}

/// The processes of root `i` of `shape`; pids are `100 + 10 i` (the child
/// of a pair one more), so no two roots share a pid.
fn processes(i: usize, shape: Shape) -> Vec<ProcessArchive> {
    let pid = 100 + 10 * i as u64;
    match shape {
        Shape::Pair => vec![
            renumbered(clean_process(), pid, 1),
            renumbered(crashed_process(), pid + 1, pid),
        ],
        Shape::Crashed | Shape::Damaged => {
            vec![renumbered(
                crashed_process_in(CRASH_KERNELS[i % CRASH_KERNELS.len()]),
                pid,
                1,
            )]
        }
        Shape::Clean => vec![renumbered(clean_process(), pid, 1)],
        Shape::Stale => vec![stale_process(pid)],
    }
}

/// Writes `count` capture roots under `dir` (see [`root_path`] for where)
/// and returns their paths in the order written. A root already there is
/// replaced.
pub fn write_fleet(dir: &Path, count: usize) -> io::Result<Vec<PathBuf>> {
    let mut roots = Vec::with_capacity(count);
    for (i, shape) in shapes(count).into_iter().enumerate() {
        let root = root_path(dir, i, shape);
        if root.exists() {
            fs::remove_dir_all(&root)?;
        }
        fs::create_dir_all(&root)?;
        let procs = processes(i, shape);
        for p in &procs {
            let pdir = p.write(&root)?;
            if shape == Shape::Damaged {
                // Cut inside the last event, as a process killed mid-write
                // leaves it.
                let events = pdir.join("events.bin");
                let len = fs::metadata(&events)?.len();
                fs::OpenOptions::new()
                    .write(true)
                    .open(&events)?
                    .set_len(len - 7)?;
            }
        }
        let refs: Vec<&ProcessArchive> = procs.iter().collect();
        write_root_manifest(&root, &refs)?;
        roots.push(root);
    }
    Ok(roots)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_mix_and_end_damaged() {
        let s = shapes(12);
        assert_eq!(s[11], Shape::Damaged);
        for want in [Shape::Pair, Shape::Crashed, Shape::Clean, Shape::Stale] {
            assert!(s.contains(&want), "{want:?} missing from {s:?}");
        }
        assert_eq!(shapes(1), vec![Shape::Pair]);
    }

    #[test]
    fn roots_share_names_in_distinct_directories() {
        let dir = Path::new("/f");
        let s = shapes(12);
        let paths: Vec<PathBuf> = s
            .iter()
            .enumerate()
            .map(|(i, &sh)| root_path(dir, i, sh))
            .collect();
        let mut unique = paths.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), paths.len());
        let same_name = paths
            .iter()
            .filter(|p| p.file_name() == Some("capture.hrr".as_ref()))
            .count();
        assert!(same_name >= 3, "{paths:?}");
    }
}
