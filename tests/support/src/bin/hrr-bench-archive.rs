//! `hrr-bench-archive`: the DESIGN §11 benchmark of `hrr archive info`.
//!
//! ```text
//! cargo run --release -p hrr-testkit --bin hrr-bench-archive [-- --gib N] [--keep]
//!     [--hrr PATH] [--threads N,N,...] [--symbols PERCENT] [--segments]
//! ```
//!
//! Builds `target/release/hrr` (or runs the one `--hrr` names, so the
//! benchmark also runs from a directory holding only release binaries),
//! writes a ≥ 1 GiB realistic `events.bin`
//! (launches with 3–10 args, copies with blobs, mallocs, frees, syncs on
//! four threads) into a temp dir, warms the page cache, then times
//! `cat events.bin > /dev/null`, `hrr archive info --json <dir>` and the
//! same with `--no-memory` (best of five each, taken in alternation on the
//! same file in the same run, after flushing the new file to disk) and
//! reports the throughputs, the ratio to `cat` (target ≥ 0.5), what the
//! allocation map and pointer audit add (target ≤ 15%) and the peak RSS
//! of `hrr` (target ≤ 64 MiB) from `wait4`.
//!
//! `--symbols 20` makes a fifth of the launches pass, as their first
//! pointer, one of 16 addresses in no allocation (a module's globals), to
//! time the audit where such pointers are common. `--segments` makes the
//! allocations segments of 2 to 64 MiB and the launches pass tensors
//! anywhere in them, as behind PyTorch's caching allocator: nearly every
//! pointer then lies in a page of its own.
//!
//! `hrr` runs one decoder per core it may run on (Rust's
//! `available_parallelism`, which follows the CPU affinity), so
//! `--threads 2,4,8` repeats the timings with the benchmark (and so its
//! children) confined to the first 2, 4 and 8 of the CPUs it was given.

#[cfg(unix)]
mod bench {
    use std::fs;
    use std::path::{Path, PathBuf};
    use std::process::{Command, ExitCode, Stdio};
    use std::time::{Duration, Instant};

    use hrr_testkit::synth::{write_big_mix, write_live, Mix};

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
    ) -> Result<Timed, String> {
        let mut best = Timed {
            cat: Duration::MAX,
            info: Duration::MAX,
            bare: Duration::MAX,
            info_rss: 0,
            bare_rss: 0,
        };
        for _ in 0..RUNS {
            best.cat = best.cat.min(measure(cat)?.0);
            let (t, rss) = measure(info)?;
            best.info = best.info.min(t);
            best.info_rss = best.info_rss.max(rss);
            let (t, rss) = measure(bare)?;
            best.bare = best.bare.min(t);
            best.bare_rss = best.bare_rss.max(rss);
        }
        Ok(best)
    }

    /// The best times of `cat`, `archive info` and `--no-memory`, and the
    /// peak RSS (KiB) of the last two.
    struct Timed {
        cat: Duration,
        info: Duration,
        bare: Duration,
        info_rss: u64,
        bare_rss: u64,
    }

    fn gbps(bytes: u64, t: Duration) -> f64 {
        bytes as f64 / t.as_secs_f64() / 1e9
    }

    /// The CPUs this process may run on, in order.
    fn allowed_cpus() -> Result<Vec<usize>, String> {
        // SAFETY: an all-zero cpu_set_t is the empty set; the call fills it.
        let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
        // SAFETY: `set` is a valid cpu_set_t of the size passed.
        let rc = unsafe { libc::sched_getaffinity(0, std::mem::size_of_val(&set), &mut set) };
        if rc != 0 {
            return Err(format!(
                "sched_getaffinity failed: {}",
                std::io::Error::last_os_error()
            ));
        }
        // SAFETY: CPU_ISSET reads the set for an index below CPU_SETSIZE.
        Ok((0..libc::CPU_SETSIZE as usize)
            .filter(|&c| unsafe { libc::CPU_ISSET(c, &set) })
            .collect())
    }

    /// Confines this process, and the children it starts from now on, to
    /// `cpus`.
    fn confine(cpus: &[usize]) -> Result<(), String> {
        // SAFETY: an all-zero cpu_set_t is the empty set.
        let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
        for &c in cpus {
            // SAFETY: every index came from `allowed_cpus`, below CPU_SETSIZE.
            unsafe { libc::CPU_SET(c, &mut set) };
        }
        // SAFETY: `set` is a valid cpu_set_t of the size passed.
        let rc = unsafe { libc::sched_setaffinity(0, std::mem::size_of_val(&set), &set) };
        if rc != 0 {
            return Err(format!(
                "sched_setaffinity failed: {}",
                std::io::Error::last_os_error()
            ));
        }
        Ok(())
    }

    /// What one benchmark run is asked to do.
    struct Options {
        gib: f64,
        keep: bool,
        /// A prebuilt `hrr`; built with cargo when not given.
        hrr: Option<PathBuf>,
        /// CPU counts to time `hrr` under; the CPUs given when empty.
        threads: Vec<usize>,
        /// The allocations and pointers of the stream.
        mix: Mix,
    }

    fn run(o: &Options) -> Result<bool, String> {
        let hrr = match &o.hrr {
            Some(h) if h.is_file() => h.clone(),
            Some(h) => return Err(format!("--hrr {}: no such file", h.display())),
            None => hrr_testkit::bench::build_release_hrr()?,
        };
        let cpus = allowed_cpus()?;
        if let Some(&n) = o.threads.iter().find(|&&n| n == 0 || n > cpus.len()) {
            return Err(format!(
                "--threads {n}: this host lets the benchmark run on {} CPUs",
                cpus.len()
            ));
        }
        let counts = match o.threads.is_empty() {
            true => vec![cpus.len()],
            false => o.threads.clone(),
        };
        let dir = std::env::temp_dir().join(format!("hrr-bench-archive-{}", std::process::id()));
        fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
        eprintln!(
            "[bench] writing {} GiB archive under {}",
            o.gib,
            dir.display()
        );
        let target = (o.gib * (1u64 << 30) as f64) as u64;
        let result = (|| {
            let stats = write_big_mix(&dir, 1, target, o.mix)
                .map_err(|e| format!("cannot write archive: {e}"))?;
            let pid_dir = dir.join("pid-1");
            let events = pid_dir.join("events.bin");
            // Flush the freshly written file first: kernel writeback running
            // during the timed runs takes a core from the decoders and not
            // from `cat`.
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
            println!(
                "events.bin:            {} bytes, {} events ({} launches, {} D2H checks, {} allocations and {} frees after the first 1024 allocations)",
                stats.bytes, stats.events, stats.launches, stats.d2h_checks, stats.allocations, stats.frees
            );
            // Both runs on four CPUs, so both have the same decoders and
            // windows and the difference is the map's.
            confine(&cpus[..cpus.len().min(4)])?;
            let live = live_ranges_rss(&hrr, &dir);
            confine(&cpus)?;
            let mut met = live?;
            for &n in &counts {
                confine(&cpus[..n])?;
                let timed = best_interleaved(&mut cat, &mut info, &mut bare);
                confine(&cpus)?;
                met &= report(stats.bytes, n, timed?);
            }
            Ok(met)
        })();
        if !o.keep {
            let _ = fs::remove_dir_all(&dir);
        }
        result
    }

    /// Live ranges of the archive that measures the allocation map's memory.
    const LIVE_RANGES: u64 = 100_000;

    /// Peak RSS of `archive info` on an archive ending with
    /// [`LIVE_RANGES`] allocations live, with and without the map, and so
    /// the map's cost per live range; whether it stayed within 64 MiB.
    /// Runs on the CPUs it is confined to.
    fn live_ranges_rss(hrr: &Path, dir: &Path) -> Result<bool, String> {
        let pid_dir = write_live(dir, 2, LIVE_RANGES)
            .map_err(|e| format!("cannot write the live-range archive: {e}"))?;
        let rss = |memory: bool| -> Result<u64, String> {
            let mut info = Command::new(hrr);
            info.args(["-q", "archive", "info", "--json"]);
            if !memory {
                info.arg("--no-memory");
            }
            info.arg(&pid_dir);
            let mut peak = 0;
            for _ in 0..3 {
                peak = peak.max(measure(&mut info)?.1);
            }
            Ok(peak)
        };
        let (with, without) = (rss(true)?, rss(false)?);
        let per_range = with.saturating_sub(without) as f64 * 1024.0 / LIVE_RANGES as f64;
        println!(
            "{LIVE_RANGES} live ranges:     peak RSS {:.1} MiB ({:.1} MiB without the map: {per_range:.0} bytes per range; target <= 64 MiB)",
            with as f64 / 1024.0,
            without as f64 / 1024.0
        );
        Ok(with <= 64 << 10)
    }

    /// Prints the figures of one CPU count; whether every target was met.
    fn report(bytes: u64, cpus: usize, timed: Timed) -> bool {
        let (cat_t, hrr_t, bare_t, rss_kib) = (timed.cat, timed.info, timed.bare, timed.info_rss);
        let ratio = cat_t.as_secs_f64() / hrr_t.as_secs_f64();
        let overhead = hrr_t.as_secs_f64() / bare_t.as_secs_f64() - 1.0;
        let rss_mib = rss_kib as f64 / 1024.0;
        println!("-- on {cpus} CPU(s):");
        println!(
            "cat > /dev/null:       {:.3} s  {:.2} GB/s (best of {RUNS})",
            cat_t.as_secs_f64(),
            gbps(bytes, cat_t)
        );
        println!(
            "hrr archive info:      {:.3} s  {:.2} GB/s (best of {RUNS})",
            hrr_t.as_secs_f64(),
            gbps(bytes, hrr_t)
        );
        println!(
            "info --no-memory:      {:.3} s  {:.2} GB/s (best of {RUNS})",
            bare_t.as_secs_f64(),
            gbps(bytes, bare_t)
        );
        println!("throughput ratio:      {ratio:.2} (target >= 0.50)");
        println!(
            "allocation map adds:   {:.1}% (target <= 15%)",
            overhead * 100.0
        );
        println!(
            "hrr peak RSS:          {rss_mib:.1} MiB ({:.1} MiB with --no-memory; target <= 64 MiB)",
            timed.bare_rss as f64 / 1024.0
        );
        ratio >= 0.5 && rss_mib <= 64.0 && overhead <= 0.15
    }

    pub fn main() -> ExitCode {
        let args: Vec<String> = std::env::args().skip(1).collect();
        let usage = "usage: hrr-bench-archive [--gib N] [--keep] [--hrr PATH] [--threads N,N,...] [--symbols PERCENT] [--segments]";
        let mut o = Options {
            gib: 1.0,
            keep: false,
            hrr: None,
            threads: Vec::new(),
            mix: Mix::default(),
        };
        let mut it = args.iter();
        while let Some(a) = it.next() {
            let parsed = match a.as_str() {
                "--keep" => {
                    o.keep = true;
                    Ok(())
                }
                "--segments" => {
                    o.mix.segments = true;
                    Ok(())
                }
                "--gib" => match it.next().map(|v| v.parse()) {
                    Some(Ok(g)) if g > 0.0 => {
                        o.gib = g;
                        Ok(())
                    }
                    _ => Err("--gib expects a positive number of GiB"),
                },
                "--hrr" => match it.next() {
                    Some(v) => {
                        o.hrr = Some(PathBuf::from(v));
                        Ok(())
                    }
                    None => Err("--hrr expects the path of an hrr binary"),
                },
                "--threads" => match it.next().map(|v| {
                    v.split(',')
                        .map(str::parse)
                        .collect::<Result<Vec<usize>, _>>()
                }) {
                    Some(Ok(t)) if !t.is_empty() => {
                        o.threads = t;
                        Ok(())
                    }
                    _ => Err("--threads expects CPU counts separated by commas, such as 2,4,8,16"),
                },
                "--symbols" => match it.next().map(|v| v.parse()) {
                    Some(Ok(p)) if p <= 99 => {
                        o.mix.symbols = p;
                        Ok(())
                    }
                    _ => Err("--symbols expects a percent of launches, 0 to 99"),
                },
                _ => Err("unexpected argument"),
            };
            if let Err(why) = parsed {
                eprintln!("error: {why}: '{a}' ({usage})");
                return ExitCode::from(2);
            }
        }
        match run(&o) {
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
