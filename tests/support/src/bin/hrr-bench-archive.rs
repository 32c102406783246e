//! `hrr-bench-archive`: the DESIGN §11 benchmark of `hrr archive info`.
//!
//! ```text
//! cargo run --release -p hrr-testkit --bin hrr-bench-archive [-- --gib N] [--keep]
//! ```
//!
//! Builds `target/release/hrr`, writes a ≥ 1 GiB realistic `events.bin`
//! (launches with 3–10 args, copies with blobs, mallocs, frees, syncs on
//! four threads) into a temp dir, warms the page cache, then times
//! `cat events.bin > /dev/null`, `hrr archive info --json <dir>` and the
//! same with `--no-memory` (best of five each, taken in alternation on the
//! same file in the same run, after flushing the new file to disk) and
//! reports the throughputs, the ratio to `cat` (target ≥ 0.5), what the
//! allocation map and pointer audit add (target ≤ 15%) and the peak RSS
//! of `hrr` (target ≤ 64 MiB) from `wait4`.

#[cfg(unix)]
mod bench {
    use std::fs;
    use std::process::{Command, ExitCode, Stdio};
    use std::time::{Duration, Instant};

    use hrr_testkit::synth::write_big;

    const RUNS: usize = 5;

    /// Runs `cmd` with stdout to /dev/null; returns wall time and the child's
    /// own peak RSS in KiB (Linux `ru_maxrss`).
    fn measure(cmd: &mut Command) -> Result<(Duration, u64), String> {
        let devnull = fs::File::create("/dev/null").map_err(|e| e.to_string())?;
        let start = Instant::now();
        let child = cmd
            .stdout(devnull)
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| format!("cannot run {cmd:?}: {e}"))?;
        let mut status: libc::c_int = 0;
        // SAFETY: an all-zero rusage is a valid value; wait4 fills it.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: the pid is our own unreaped child; both pointers are valid.
        let rc = unsafe { libc::wait4(child.id() as libc::pid_t, &mut status, 0, &mut usage) };
        let elapsed = start.elapsed();
        if rc < 0 {
            return Err(format!("wait4 failed: {}", std::io::Error::last_os_error()));
        }
        if !libc::WIFEXITED(status) || libc::WEXITSTATUS(status) != 0 {
            return Err(format!("{cmd:?} failed (wait status {status})"));
        }
        Ok((elapsed, usage.ru_maxrss as u64))
    }

    /// Best wall time of each of `cat`, `info` and `bare` (info without
    /// the allocation map) over [`RUNS`] rounds that run one after the
    /// other, so a slow spell of a shared host hits all alike; with the
    /// peak RSS of `info`.
    fn best_interleaved(
        cat: &mut Command,
        info: &mut Command,
        bare: &mut Command,
    ) -> Result<(Duration, Duration, Duration, u64), String> {
        let (mut cat_t, mut info_t, mut bare_t, mut peak) =
            (Duration::MAX, Duration::MAX, Duration::MAX, 0);
        for _ in 0..RUNS {
            cat_t = cat_t.min(measure(cat)?.0);
            let (t, rss) = measure(info)?;
            info_t = info_t.min(t);
            peak = peak.max(rss);
            bare_t = bare_t.min(measure(bare)?.0);
        }
        Ok((cat_t, info_t, bare_t, peak))
    }

    fn gbps(bytes: u64, t: Duration) -> f64 {
        bytes as f64 / t.as_secs_f64() / 1e9
    }

    fn run(gib: f64, keep: bool) -> Result<bool, String> {
        let hrr = hrr_testkit::bench::build_release_hrr()?;
        let dir = std::env::temp_dir().join(format!("hrr-bench-archive-{}", std::process::id()));
        fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
        eprintln!("[bench] writing {gib} GiB archive under {}", dir.display());
        let target = (gib * (1u64 << 30) as f64) as u64;
        let stats = write_big(&dir, 1, target).map_err(|e| format!("cannot write archive: {e}"))?;
        let pid_dir = dir.join("pid-1");
        let events = pid_dir.join("events.bin");
        let result = (|| {
            // Flush the freshly written GiB first: kernel writeback running
            // during the timed runs takes a core from the two-threaded
            // decoder and not from `cat`.
            fs::File::open(&events)
                .and_then(|f| f.sync_all())
                .map_err(|e| format!("cannot sync {}: {e}", events.display()))?;
            let mut cat = Command::new("cat");
            cat.arg(&events);
            measure(&mut cat)?; // warm the page cache
            let mut info = Command::new(&hrr);
            info.args(["-q", "archive", "info", "--json"]).arg(&pid_dir);
            measure(&mut info)?; // warm hrr's own pages too
            let mut bare = Command::new(&hrr);
            bare.args(["-q", "archive", "info", "--json", "--no-memory"])
                .arg(&pid_dir);
            best_interleaved(&mut cat, &mut info, &mut bare)
        })();
        if !keep {
            let _ = fs::remove_dir_all(&dir);
        }
        let (cat_t, hrr_t, bare_t, rss_kib) = result?;
        let ratio = cat_t.as_secs_f64() / hrr_t.as_secs_f64();
        let overhead = hrr_t.as_secs_f64() / bare_t.as_secs_f64() - 1.0;
        let rss_mib = rss_kib as f64 / 1024.0;
        println!(
            "events.bin:            {} bytes, {} events ({} launches, {} D2H checks, {} allocations and {} frees after the first 1024 allocations)",
            stats.bytes, stats.events, stats.launches, stats.d2h_checks, stats.allocations, stats.frees
        );
        println!(
            "cat > /dev/null:       {:.3} s  {:.2} GB/s (best of {RUNS})",
            cat_t.as_secs_f64(),
            gbps(stats.bytes, cat_t)
        );
        println!(
            "hrr archive info:      {:.3} s  {:.2} GB/s (best of {RUNS})",
            hrr_t.as_secs_f64(),
            gbps(stats.bytes, hrr_t)
        );
        println!(
            "info --no-memory:      {:.3} s  {:.2} GB/s (best of {RUNS})",
            bare_t.as_secs_f64(),
            gbps(stats.bytes, bare_t)
        );
        println!("throughput ratio:      {ratio:.2} (target >= 0.50)");
        println!(
            "allocation map adds:   {:.1}% (target <= 15%)",
            overhead * 100.0
        );
        println!("hrr peak RSS:          {rss_mib:.1} MiB (target <= 64 MiB)");
        Ok(ratio >= 0.5 && rss_mib <= 64.0 && overhead <= 0.15)
    }

    pub fn main() -> ExitCode {
        let args: Vec<String> = std::env::args().skip(1).collect();
        let mut gib = 1.0;
        let mut keep = false;
        let mut i = 0;
        while i < args.len() {
            match args[i].as_str() {
                "--gib" if i + 1 < args.len() => match args[i + 1].parse() {
                    Ok(g) => {
                        gib = g;
                        i += 1;
                    }
                    Err(_) => {
                        eprintln!("error: --gib expects a number");
                        return ExitCode::from(2);
                    }
                },
                "--keep" => keep = true,
                other => {
                    eprintln!("error: unknown argument '{other}' (usage: hrr-bench-archive [--gib N] [--keep])");
                    return ExitCode::from(2);
                }
            }
            i += 1;
        }
        match run(gib, keep) {
            Ok(true) => ExitCode::SUCCESS,
            Ok(false) => {
                eprintln!("[bench] a target was missed");
                ExitCode::FAILURE
            }
            Err(e) => {
                eprintln!("error: {e}");
                ExitCode::FAILURE
            }
        }
    }
}

#[cfg(unix)]
fn main() -> std::process::ExitCode {
    bench::main()
}

#[cfg(not(unix))]
fn main() -> std::process::ExitCode {
    eprintln!("error: hrr-bench-archive measures with wait4 and needs a Unix host");
    std::process::ExitCode::FAILURE
}
