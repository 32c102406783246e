//! `hrr-bench-bundle`: the DESIGN §11 benchmark of `hrr bundle` against
//! `tar -I 'zstd -T0 -3' -cf` on the same archive, in the same run.
//!
//! ```text
//! cargo run --release -p hrr-testkit --bin hrr-bench-bundle [-- --mib N]
//!     [--hrr PATH --hrr-bundle PATH] [--zstd PATH]
//! ```
//!
//! Builds the release `hrr` and `hrr-bundle` (or takes the given ones, for
//! a machine without cargo), writes a 512 MiB realistic archive, warms the
//! page cache, then times both packers (best of five each, taken in
//! alternation) and prints both times, the ratio tar / hrr (target ≥ 1.0)
//! and both output sizes (hrr's must not be larger). `zstd` is `--zstd`
//! (for a machine that has none installed) or the one on PATH.

#[cfg(unix)]
mod bench {
    use std::fs;
    use std::path::{Path, PathBuf};
    use std::process::{Command, ExitCode};

    use hrr_testkit::bench::{repo_root, time_once};
    use hrr_testkit::synth::write_big;

    const RUNS: usize = 5;

    fn build_release() -> Result<(PathBuf, PathBuf), String> {
        let repo = repo_root();
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let status = Command::new(cargo)
            .args(["build", "--release", "-p", "hrr", "-p", "hrr-bundle"])
            .current_dir(&repo)
            .status()
            .map_err(|e| format!("cannot run cargo: {e}"))?;
        if !status.success() {
            return Err("cargo build --release of hrr and hrr-bundle failed".into());
        }
        let release = repo.join("target/release");
        Ok((release.join("hrr"), release.join("hrr-bundle")))
    }

    fn size(p: &Path) -> Result<u64, String> {
        fs::metadata(p)
            .map(|m| m.len())
            .map_err(|e| format!("{}: {e}", p.display()))
    }

    /// The `tar -I` program for `zstd`: `given`, else `zstd` on PATH;
    /// checked to run, so a missing one is one error, not five failed tars.
    fn zstd_program(given: Option<PathBuf>) -> Result<String, String> {
        let program = match given {
            Some(p) => fs::canonicalize(&p)
                .map_err(|e| format!("--zstd {}: {e}", p.display()))?
                .into_os_string()
                .into_string()
                .map_err(|p| format!("--zstd {}: not a UTF-8 path", p.display()))?,
            None => "zstd".to_string(),
        };
        // tar -I splits its argument at blanks.
        if program.contains(char::is_whitespace) {
            return Err(format!(
                "--zstd {program}: a path without blanks is needed (tar -I splits at them)"
            ));
        }
        let ok = Command::new(&program)
            .arg("--version")
            .output()
            .map(|o| o.status.success())
            .unwrap_or(false);
        if !ok {
            return Err(format!(
                "cannot run `{program} --version`; install zstd or pass --zstd PATH"
            ));
        }
        Ok(program)
    }

    fn run(
        mib: u64,
        binaries: Option<(PathBuf, PathBuf)>,
        zstd: Option<PathBuf>,
    ) -> Result<bool, String> {
        let zstd = zstd_program(zstd)?;
        let (hrr, bundle) = match binaries {
            Some(b) => b,
            None => build_release()?,
        };
        let dir = std::env::temp_dir().join(format!("hrr-bench-bundle-{}", std::process::id()));
        fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
        let result = (|| {
            eprintln!(
                "[bench] writing a {mib} MiB archive under {}",
                dir.display()
            );
            let stats =
                write_big(&dir, 1, mib << 20).map_err(|e| format!("cannot write archive: {e}"))?;
            let tar_out = dir.join("tar.tar.zst");
            let hrr_out = dir.join("hrr.tar.zst");
            let mut tar = Command::new("tar");
            tar.args(["-I", &format!("{zstd} -T0 -3 -q"), "-cf"])
                .arg(&tar_out)
                .arg("-C")
                .arg(&dir)
                .arg("pid-1");
            let mut ours = Command::new(&bundle);
            ours.args(["bundle", "-q", "--force", "-o"])
                .arg(&hrr_out)
                .arg(dir.join("pid-1"))
                .env("HRR", &hrr);
            time_once(&mut tar)?; // warm the page cache
            time_once(&mut ours)?;
            let (mut tar_t, mut hrr_t) = (Vec::new(), Vec::new());
            for _ in 0..RUNS {
                tar_t.push(time_once(&mut tar)?);
                hrr_t.push(time_once(&mut ours)?);
            }
            tar_t.sort();
            hrr_t.sort();
            Ok::<_, String>((stats.bytes, tar_t, hrr_t, size(&tar_out)?, size(&hrr_out)?))
        })();
        let _ = fs::remove_dir_all(&dir);
        let (events, tar_t, hrr_t, tar_size, hrr_size) = result?;
        let ratio = tar_t[0].as_secs_f64() / hrr_t[0].as_secs_f64();
        let median = RUNS / 2;
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        println!("archive:               events.bin of {events} bytes, blobs, code objects; {cores} cores");
        println!(
            "tar -I 'zstd -T0 -3':  {:.3} s  {tar_size} bytes (best of {RUNS}; median {:.3} s)",
            tar_t[0].as_secs_f64(),
            tar_t[median].as_secs_f64()
        );
        println!(
            "hrr bundle:            {:.3} s  {hrr_size} bytes (best of {RUNS}; median {:.3} s; SHA-256 manifest included)",
            hrr_t[0].as_secs_f64(),
            hrr_t[median].as_secs_f64()
        );
        println!(
            "speed ratio tar / hrr: {ratio:.2} (target >= 1.00; medians {:.2})",
            tar_t[median].as_secs_f64() / hrr_t[median].as_secs_f64()
        );
        println!(
            "size ratio hrr / tar:  {:.3} (target <= 1.000)",
            hrr_size as f64 / tar_size as f64
        );
        Ok(ratio >= 1.0 && hrr_size <= tar_size)
    }

    pub fn main() -> ExitCode {
        let args: Vec<String> = std::env::args().skip(1).collect();
        let usage =
            "usage: hrr-bench-bundle [--mib N] [--hrr PATH --hrr-bundle PATH] [--zstd PATH]";
        let (mut mib, mut hrr, mut bundle, mut zstd) = (512u64, None, None, None);
        let mut it = args.iter();
        while let Some(a) = it.next() {
            let value = it.next();
            match (a.as_str(), value) {
                ("--mib", Some(v)) => match v.parse() {
                    Ok(n) => mib = n,
                    Err(_) => {
                        eprintln!("error: --mib expects a number of MiB");
                        return ExitCode::from(2);
                    }
                },
                ("--hrr", Some(v)) => hrr = Some(PathBuf::from(v)),
                ("--hrr-bundle", Some(v)) => bundle = Some(PathBuf::from(v)),
                ("--zstd", Some(v)) => zstd = Some(PathBuf::from(v)),
                _ => {
                    eprintln!("error: unexpected argument '{a}' ({usage})");
                    return ExitCode::from(2);
                }
            }
        }
        let binaries = match (hrr, bundle) {
            (Some(h), Some(b)) => Some((h, b)),
            (None, None) => None,
            _ => {
                eprintln!("error: --hrr and --hrr-bundle go together ({usage})");
                return ExitCode::from(2);
            }
        };
        match run(mib, binaries, zstd) {
            Ok(true) => ExitCode::SUCCESS,
            Ok(false) => ExitCode::from(1),
            Err(e) => {
                eprintln!("error: {e}");
                ExitCode::from(2)
            }
        }
    }
}

#[cfg(unix)]
fn main() -> std::process::ExitCode {
    bench::main()
}

/// The benchmark drives Unix tools (`tar`, `zstd`).
#[cfg(not(unix))]
fn main() -> std::process::ExitCode {
    eprintln!("error: hrr-bench-bundle runs on Unix only");
    std::process::ExitCode::from(2)
}
