//! Shared pieces of the benchmark binaries: building the release `hrr` and
//! timing a child process.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// The repository root (this crate lives in `tests/support`).
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .nth(2)
        .expect("tests/support sits two levels below the repository root")
        .to_path_buf()
}

/// Builds `target/release/hrr` with cargo and returns its path.
pub fn build_release_hrr() -> Result<PathBuf, String> {
    let repo = repo_root();
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let status = Command::new(cargo)
        .args(["build", "--release", "-p", "hrr", "--bin", "hrr"])
        .current_dir(&repo)
        .status()
        .map_err(|e| format!("cannot run cargo: {e}"))?;
    if !status.success() {
        return Err("cargo build --release of hrr failed".into());
    }
    let exe = repo.join("target/release/hrr");
    exe.is_file()
        .then_some(exe)
        .ok_or_else(|| "target/release/hrr not found after the build".into())
}

/// Wall time of one run of `cmd`, which must exit 0.
pub fn time_once(cmd: &mut Command) -> Result<Duration, String> {
    let start = Instant::now();
    let out = cmd
        .output()
        .map_err(|e| format!("cannot run {cmd:?}: {e}"))?;
    let elapsed = start.elapsed();
    if !out.status.success() {
        return Err(format!(
            "{cmd:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(elapsed)
}

/// The median wall time of `runs` runs of `cmd` (after one warm-up run).
pub fn median(cmd: &mut Command, runs: usize) -> Result<Duration, String> {
    time_once(cmd)?;
    let mut times = (0..runs)
        .map(|_| time_once(cmd))
        .collect::<Result<Vec<_>, _>>()?;
    times.sort();
    Ok(times[times.len() / 2])
}
