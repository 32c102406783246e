//! `hrr-bench-replay [--mb N] [--runs N] [--idle-seconds N]`: how fast
//! `hrr replay` captures player output (DESIGN §11: ≥ 100 MB/s), and how
//! much CPU it uses while the player prints nothing (≤ 2% of one core).
//!
//! Uses the `hrr` and `hrr-test-player` next to this binary:
//! `cargo build --release -p hrr -p hrr-testkit && target/release/hrr-bench-replay`.

#[cfg(unix)]
fn main() {
    if let Err(e) = bench::main() {
        eprintln!("hrr-bench-replay: {e}");
        std::process::exit(1);
    }
}

#[cfg(not(unix))]
fn main() {
    eprintln!("hrr-bench-replay runs on Unix only");
    std::process::exit(1);
}

#[cfg(unix)]
mod bench {
    use std::io::Read;
    use std::path::{Path, PathBuf};
    use std::process::{Command, Stdio};
    use std::time::{Duration, Instant};

    struct Args {
        mb: u64,
        runs: usize,
        idle_seconds: u64,
    }

    fn args() -> Result<Args, String> {
        let mut a = Args {
            mb: 200,
            runs: 3,
            idle_seconds: 5,
        };
        let argv: Vec<String> = std::env::args().skip(1).collect();
        let mut it = argv.iter();
        while let Some(flag) = it.next() {
            let value = it.next().ok_or(format!("{flag} needs a value"))?;
            let n: u64 = value
                .parse()
                .map_err(|_| format!("{flag}: not a number: {value}"))?;
            match flag.as_str() {
                "--mb" => a.mb = n,
                "--runs" => a.runs = n.max(1) as usize,
                "--idle-seconds" => a.idle_seconds = n,
                _ => return Err(format!("unknown option {flag}")),
            }
        }
        Ok(a)
    }

    /// A scratch directory with `cap.hrr/pid-1/events.bin` and a readable
    /// stand-in for /dev/kfd; removed on drop.
    struct Scratch(PathBuf);

    impl Scratch {
        fn new() -> Result<Scratch, String> {
            let dir = std::env::temp_dir().join(format!("hrr-bench-replay-{}", std::process::id()));
            std::fs::create_dir_all(dir.join("cap.hrr/pid-1")).map_err(|e| e.to_string())?;
            std::fs::write(dir.join("cap.hrr/pid-1/events.bin"), b"").map_err(|e| e.to_string())?;
            std::fs::write(dir.join("kfd"), b"").map_err(|e| e.to_string())?;
            Ok(Scratch(dir))
        }
    }

    impl Drop for Scratch {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn sibling(name: &str) -> Result<PathBuf, String> {
        let exe = std::env::current_exe().map_err(|e| e.to_string())?;
        let path = exe.parent().unwrap_or(Path::new(".")).join(name);
        if path.is_file() {
            Ok(path)
        } else {
            Err(format!(
                "{} not found: build it first (cargo build --release -p hrr -p hrr-testkit)",
                path.display()
            ))
        }
    }

    fn lines(bytes: &[u8]) -> usize {
        bytes
            .split(|b| *b == b'\n')
            .filter(|l| l.starts_with(b"[HRR] Event "))
            .count()
    }

    /// The player's flood read straight from a pipe: the ceiling.
    fn baseline(player: &Path, scratch: &Scratch, mb: u64) -> Result<(f64, usize), String> {
        let start = Instant::now();
        let mut child = Command::new(player)
            .arg(scratch.0.join("cap.hrr"))
            .env("HRR_TEST_SCENARIO", "flood")
            .env("HRR_TEST_FLOOD_MB", mb.to_string())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| e.to_string())?;
        let mut out = Vec::new();
        child
            .stderr
            .take()
            .unwrap()
            .read_to_end(&mut out)
            .map_err(|e| e.to_string())?;
        child.wait().map_err(|e| e.to_string())?;
        Ok((start.elapsed().as_secs_f64(), lines(&out)))
    }

    fn hrr_replay(
        hrr: &Path,
        player: &Path,
        scratch: &Scratch,
        scenario: &str,
        extra: &[(&str, String)],
        args: &[&str],
    ) -> Result<(f64, PathBuf), String> {
        let log = scratch.0.join("replay.log");
        let start = Instant::now();
        let status = Command::new(hrr)
            .arg("-q")
            .arg("-c")
            .arg(format!("playback.path={}", player.display()))
            .arg("-c")
            .arg(format!("replay.kfd={}", scratch.0.join("kfd").display()))
            .arg("replay")
            .arg(scratch.0.join("cap.hrr"))
            .arg("--log")
            .arg(&log)
            .args(args)
            .env("HRR_TEST_SCENARIO", scenario)
            .envs(extra.iter().map(|(k, v)| (k, v)))
            .stdout(Stdio::null())
            .status()
            .map_err(|e| e.to_string())?;
        if !status.success() {
            return Err(format!("hrr replay failed: {status}"));
        }
        Ok((start.elapsed().as_secs_f64(), log))
    }

    fn children_cpu() -> Duration {
        use nix::sys::resource::{getrusage, UsageWho};
        let usage = getrusage(UsageWho::RUSAGE_CHILDREN).expect("getrusage");
        let tv = |t: nix::sys::time::TimeVal| {
            Duration::new(t.tv_sec() as u64, t.tv_usec() as u32 * 1000)
        };
        tv(usage.user_time()) + tv(usage.system_time())
    }

    pub fn main() -> Result<(), String> {
        let a = args()?;
        let hrr = sibling("hrr")?;
        let player = sibling("hrr-test-player")?;
        let scratch = Scratch::new()?;
        let mib = a.mb as f64 * 1.048576;

        let (secs, expected) = baseline(&player, &scratch, a.mb)?;
        println!(
            "player -> pipe (ceiling): {:.0} MB/s ({} MiB in {secs:.2} s, {expected} lines)",
            mib / secs,
            a.mb
        );

        let mut rates = Vec::new();
        for run in 1..=a.runs {
            let flood = [("HRR_TEST_FLOOD_MB", a.mb.to_string())];
            let (secs, log) = hrr_replay(&hrr, &player, &scratch, "flood", &flood, &[])?;
            let got = lines(&std::fs::read(&log).map_err(|e| e.to_string())?);
            let complete = if got == expected {
                "complete"
            } else {
                "LINES LOST"
            };
            println!(
                "hrr replay capture, run {run}: {:.0} MB/s ({got} of {expected} lines, {complete})",
                mib / secs
            );
            if got != expected {
                return Err("captured log is missing lines".into());
            }
            rates.push(mib / secs);
        }
        rates.sort_by(f64::total_cmp);
        println!(
            "hrr replay capture, median: {:.0} MB/s",
            rates[rates.len() / 2]
        );

        if a.idle_seconds > 0 {
            let before = children_cpu();
            let timeout = a.idle_seconds.to_string();
            let (secs, _) = hrr_replay(
                &hrr,
                &player,
                &scratch,
                "hang",
                &[],
                &["--timeout", &timeout],
            )?;
            let cpu = children_cpu() - before;
            println!(
                "idle replay (player silent, {secs:.1} s incl. TERM grace): hrr + player used {:.2}% of one core",
                cpu.as_secs_f64() / secs * 100.0
            );
        }
        Ok(())
    }
}
