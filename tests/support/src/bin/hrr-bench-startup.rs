//! Startup and end-to-end latency of `hrr` (DESIGN §11):
//!
//! cargo run --release -p hrr-testkit --bin hrr-bench-startup
//!
//! Builds `target/release/hrr`, then prints the median wall time of
//! `hrr --version` and `hrr --list` (50 runs each; target ≤ 10 ms) and of
//! `hrr triage --no-replay examples/crash.hrr` (20 runs; target ≤ 100 ms),
//! each in a hermetic environment (no site/user config, a temp workdir).
//! Exits 1 when a target is missed.

use std::process::{Command, ExitCode};
use std::time::Duration;

use hrr_testkit::bench::{build_release_hrr, median, repo_root};

fn main() -> ExitCode {
    match run() {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> Result<bool, String> {
    let hrr = build_release_hrr()?;
    let home = tempfile_dir()?;
    let hermetic = |args: &[&str]| {
        let mut cmd = Command::new(&hrr);
        cmd.args(args)
            .env_clear()
            .env("PATH", "/usr/bin:/bin")
            .env("HOME", &home)
            .env("XDG_CONFIG_HOME", home.join("xdg"))
            .env("HRR_SITE_CONFIG", home.join("no-site.toml"))
            .env("HRR_TRIAGE_WORKDIR", home.join("work"))
            .current_dir(&home);
        cmd
    };
    let example = repo_root().join("examples/crash.hrr");
    let example = example.to_str().ok_or("repository path is not UTF-8")?;
    let cases: [(&str, Command, usize, Duration); 3] = [
        (
            "hrr --version",
            hermetic(&["--version"]),
            50,
            Duration::from_millis(10),
        ),
        (
            "hrr --list",
            hermetic(&["--list"]),
            50,
            Duration::from_millis(10),
        ),
        (
            "hrr triage --no-replay examples/crash.hrr",
            hermetic(&["-q", "triage", "--no-replay", example]),
            20,
            Duration::from_millis(100),
        ),
    ];
    let mut all_met = true;
    for (name, mut cmd, runs, target) in cases {
        let m = median(&mut cmd, runs)?;
        let met = m <= target;
        all_met &= met;
        println!(
            "{name:<45} median {:>7.2} ms of {runs} runs (target ≤ {} ms) {}",
            m.as_secs_f64() * 1e3,
            target.as_millis(),
            if met { "met" } else { "MISSED" }
        );
    }
    let _ = std::fs::remove_dir_all(&home);
    Ok(all_met)
}

fn tempfile_dir() -> Result<std::path::PathBuf, String> {
    let dir = std::env::temp_dir().join(format!("hrr-bench-startup-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    Ok(dir)
}
