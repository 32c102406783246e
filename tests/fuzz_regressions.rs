//! Replays, on stable `cargo test`, every input the cargo-fuzz targets found
//! to crash, hang or over-allocate (`tests/fuzz_regressions/<target>/`),
//! and the seed corpora (`fuzz/corpus-seeds/<target>/`), through the very
//! harness functions the fuzz targets call (`fuzz/src/lib.rs`, included
//! below). Without cargo-fuzz this still proves every fix.
//!
//! A counting global allocator stands in for libFuzzer's `-malloc_limit_mb`:
//! no single allocation may exceed the limit the fuzz runs used.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

#[path = "../fuzz/src/lib.rs"]
mod harness;

#[global_allocator]
static ALLOCATOR: hrr_testkit::alloc::LargestAllocation = hrr_testkit::alloc::LargestAllocation;

/// `-malloc_limit_mb=128` of the fuzz runs (twice the 64 MiB record cap).
const MALLOC_LIMIT: usize = 128 << 20;

/// Far above what any saved input takes in a debug build: a hang guard.
const TIME_LIMIT: Duration = Duration::from_secs(20);

fn inputs(target: &str) -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    for dir in [
        root.join("tests/fuzz_regressions").join(target),
        root.join("fuzz/corpus-seeds").join(target),
    ] {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        files.extend(entries.map(|e| e.expect("list a corpus directory").path()));
    }
    files.sort();
    files
}

/// Runs every saved input of `target`; returns how many ran.
fn replay(target: &str, harness: fn(&[u8])) -> usize {
    let files = inputs(target);
    for file in &files {
        let data = std::fs::read(file).expect("read a saved fuzz input");
        let start = Instant::now();
        harness(&data);
        let took = start.elapsed();
        assert!(took < TIME_LIMIT, "{} took {took:?}", file.display());
        let largest = hrr_testkit::alloc::largest();
        assert!(
            largest <= MALLOC_LIMIT,
            "{}: an allocation of {largest} bytes",
            file.display()
        );
    }
    files.len()
}

#[test]
fn record_stream_inputs_replay_cleanly() {
    assert!(replay("record_stream", harness::record_stream) > 0);
}

#[test]
fn launch_payload_inputs_replay_cleanly() {
    assert!(replay("launch_payload", harness::launch_payload) > 0);
}

#[test]
fn manifest_inputs_replay_cleanly() {
    assert!(replay("manifest", harness::manifest) > 0);
}

#[test]
fn config_inputs_replay_cleanly() {
    assert!(replay("config", harness::config) > 0);
}

#[test]
fn classifier_lines_inputs_replay_cleanly() {
    assert!(replay("classifier_lines", harness::classifier_lines) > 0);
}
