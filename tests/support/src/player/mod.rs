//! The test player: a stand-in for `hrr-playback` with the command line of
//! reference playback-output.md §1 and, per scenario (`HRR_TEST_SCENARIO`),
//! the real line shapes on the real streams and the real way of ending.
//!
//! Control variables (all optional):
//! * `HRR_TEST_SCENARIO` — pass (default), d2h_fail, fault_abort,
//!   fault_error, queue_abort, fatal_api, hang, segv, version_mismatch,
//!   watchdog, divergence, flood, flood_hang (flood, then hang),
//!   long_line_fault (one 5 MiB stdout line, then fault_abort),
//!   hang_grandchild (passes, but leaves a `setsid` daemon holding its
//!   stdout and stderr);
//! * `HRR_TEST_FLOOD_MB` — megabytes of verbose lines for `flood` (default 1);
//! * `HRR_TEST_CHILD_PID_FILE` — `hang` and `hang_grandchild` write their
//!   child's pid here;
//! * `HRR_TEST_PID_FILE` — every replay writes the player's own pid here;
//! * `HRR_TEST_DUMP_ENV` — every replay writes its argv, the replay
//!   environment (`env`: every variable but `PATH` and `HRR_TEST_*`;
//!   `PATH` on its own) and
//!   whether its streams are terminals here (JSON);
//! * `HRR_TEST_READER_VERSION` — the format version `--version` reports;
//! * `HRR_TEST_VERSION_ABORT` — `--version` aborts (SIGABRT) after its
//!   flushed identity lines, as when the HIP runtime fails to load.
//!
//! Everything the player says about the archive (counts, kernel names,
//! sequence ids, grids, API names, event indices) is decoded from the
//! process directory it is given with hrr's own reader (`model.rs`); an
//! archive the reader cannot load fails the way the real loader does.
//!
//! Invoked as `docker` or `sudo` (a symlink), it is the fake docker of
//! `fake_docker` (Unix).
//!
//! On Windows it is built as `hrr-test-player.exe` with the MSVC runtime's
//! buffering (see `output.rs`); an abort ends with exit code 3, a crash
//! with a real access violation, and the `hang` child is another copy of
//! the player sleeping (`HRR_TEST_SLEEP` seconds).

#[cfg(unix)]
pub mod fake_docker;
mod info;
mod model;
mod output;
mod scenario;

use std::path::{Path, PathBuf};

use output::{err, exit, CStdout};

/// The parsed command line (unknown options are ignored, like the real one).
#[derive(Debug, Default)]
pub struct Options {
    /// The last argument that does not start with `-`.
    pub archive: Option<PathBuf>,
    /// `--info`.
    pub info: bool,
    /// `--version`.
    pub version: bool,
    /// `--help`.
    pub help: bool,
    /// `--verbose`.
    pub verbose: bool,
    /// `--sync-after-launch`.
    pub sync_launch: bool,
    /// `--sync-after-event`.
    pub sync_event: bool,
    /// `--trace-kernels` or `HIP_HRR_REPLAY_TRACE_KERNELS=1`.
    pub trace_kernels: bool,
    /// `--progress-seconds` or `HIP_HRR_REPLAY_PROGRESS_SECONDS`.
    pub progress_seconds: f64,
    /// `--sync-watchdog-ms` or `HIP_HRR_REPLAY_SYNC_WATCHDOG_MS`.
    pub watchdog_ms: u64,
    /// `--max-wall-seconds` (default 3600, `0` = no limit): a replay still
    /// running after this long ends with exit 124.
    pub max_wall_s: u64,
}

/// Options that take a value; the value is never the archive path.
const VALUED: &[&str] = &[
    "--sync-watchdog-ms",
    "--kernel-filter",
    "--replace-kernel",
    "--progress-kernels",
    "--progress-seconds",
    "--guard-min-bytes",
    "--guard-max-bytes",
    "--guard-budget-mb",
    "--max-seq-waits",
    "--max-query-attempts",
    "--max-file-bytes",
    "--max-threads",
    "--max-events",
    "--max-host-bytes",
    "--max-wall-seconds",
];

/// Parses `args` (without argv[0]); `Err` is the message for exit 1.
pub fn parse(args: &[String]) -> Result<Options, String> {
    let env = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
    let mut o = Options {
        trace_kernels: env("HIP_HRR_REPLAY_TRACE_KERNELS").is_some_and(|v| v == "1"),
        progress_seconds: env("HIP_HRR_REPLAY_PROGRESS_SECONDS")
            .and_then(|v| v.parse().ok())
            .unwrap_or(0.0),
        watchdog_ms: env("HIP_HRR_REPLAY_SYNC_WATCHDOG_MS")
            .and_then(|v| v.parse().ok())
            .unwrap_or(0),
        max_wall_s: 3600,
        ..Options::default()
    };
    let mut i = 0;
    while i < args.len() {
        let a = args[i].as_str();
        if VALUED.contains(&a) {
            let Some(value) = args.get(i + 1) else { break };
            match a {
                "--progress-seconds" => {
                    o.progress_seconds = value
                        .parse()
                        .map_err(|_| "[HRR] --progress-seconds expects a number".to_string())?;
                }
                "--max-wall-seconds" => {
                    o.max_wall_s = value.parse().map_err(|_| {
                        "[HRR] --max-wall-seconds expects an integer (seconds)".to_string()
                    })?;
                }
                "--sync-watchdog-ms" => {
                    o.watchdog_ms = value.parse().map_err(|_| {
                        "[HRR] --sync-watchdog-ms expects an integer (milliseconds)".to_string()
                    })?;
                }
                _ => {}
            }
            i += 2;
            continue;
        }
        match a {
            "--info" => o.info = true,
            "--version" => o.version = true,
            "--help" => o.help = true,
            "--verbose" => o.verbose = true,
            "--sync-after-launch" => o.sync_launch = true,
            "--sync-after-event" => o.sync_event = true,
            "--trace-kernels" => o.trace_kernels = true,
            s if s.starts_with('-') => {}
            s => o.archive = Some(PathBuf::from(s)),
        }
        i += 1;
    }
    Ok(o)
}

fn usage() {
    err("Usage: hrr-playback <archive> [--info] [--verbose] [--sync-after-launch] [--trace-kernels] [--progress-seconds S] [--version] [--help]");
}

/// The player's `main`: returns only through `std::process::exit` or a signal.
pub fn main() -> ! {
    let argv: Vec<String> = std::env::args().collect();
    let invoked_as = argv
        .first()
        .and_then(|a| Path::new(a).file_name())
        .and_then(|n| n.to_str())
        .unwrap_or("");
    #[cfg(unix)]
    match invoked_as {
        "docker" => fake_docker::docker(&argv[1..]),
        "sudo" => fake_docker::sudo(&argv[1..]),
        _ => {}
    }
    #[cfg(not(unix))]
    let _ = invoked_as;
    if let Some(secs) = std::env::var("HRR_TEST_SLEEP")
        .ok()
        .and_then(|s| s.parse().ok())
    {
        std::thread::sleep(std::time::Duration::from_secs(secs));
        std::process::exit(0);
    }
    let mut out = CStdout::new();
    if argv.len() < 2 {
        usage();
        exit(&mut out, 1);
    }
    let opts = match parse(&argv[1..]) {
        Ok(o) => o,
        Err(msg) => {
            err(&msg);
            exit(&mut out, 1);
        }
    };
    if opts.version {
        info::version(&mut out);
        exit(&mut out, 0);
    }
    if opts.help {
        usage();
        exit(&mut out, 0);
    }
    let Some(archive) = opts.archive.clone() else {
        err("[HRR] No archive path specified");
        usage();
        exit(&mut out, 1);
    };
    let scenario = std::env::var("HRR_TEST_SCENARIO").unwrap_or_else(|_| "pass".into());
    let pid_dir = match resolve(&archive, opts.info) {
        Resolved::Process(p) => p,
        Resolved::Root(pids) => {
            let refs: Vec<(u64, &Path)> = pids.iter().map(|(p, d)| (*p, d.as_path())).collect();
            info::root(&mut out, &archive, &refs);
            out.flush();
            exit(&mut out, 0);
        }
        Resolved::Refused(lines) => refuse(&lines),
    };
    if scenario == "version_mismatch" {
        let header = model::header(&pid_dir).unwrap_or_else(|e| refuse(&e.0));
        let reader = match model::reader_version() {
            r if r == header.version => r.wrapping_add(1),
            r => r,
        };
        refuse(&[model::version_mismatch(&pid_dir, header.version, reader)]);
    }
    let decoded = model::load(&pid_dir).unwrap_or_else(|e| refuse(&e.0));
    if opts.info {
        info::process(&mut out, &decoded);
        out.flush();
        exit(&mut out, 0);
    }
    write_side_files(&argv);
    scenario::run(&scenario, &opts, &decoded, &mut out)
}

/// Prints the loader's lines on stderr and exits 1, as the real player does
/// when it cannot open the archive.
fn refuse(lines: &[String]) -> ! {
    for l in lines {
        err(l);
    }
    exit(&mut CStdout::new(), 1)
}

enum Resolved {
    Process(PathBuf),
    Root(Vec<(u64, PathBuf)>),
    Refused(Vec<String>),
}

/// `<archive>` as the real player resolves it (§1.1): a process dir, or a
/// root whose one `pid-*` is used for replay; `--info` on a root prints the
/// process table.
fn resolve(archive: &Path, info: bool) -> Resolved {
    if archive.join("events.bin").is_file() {
        return Resolved::Process(archive.to_path_buf());
    }
    let mut pids: Vec<(u64, PathBuf)> = std::fs::read_dir(archive)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            let pid = name.strip_prefix("pid-")?.parse().ok()?;
            e.path()
                .join("events.bin")
                .is_file()
                .then(|| (pid, e.path()))
        })
        .collect();
    pids.sort();
    match (pids.len(), info) {
        (0, _) => Resolved::Refused(vec![format!(
            "[HRR] Cannot open {}",
            archive.join("events.bin").display()
        )]),
        (_, true) => Resolved::Root(pids),
        (1, false) => Resolved::Process(pids.remove(0).1),
        (_, false) => {
            let mut lines = vec![format!(
                "[HRR] Archive root {} contains multiple process captures; point hrr-playback at a specific pid directory:",
                archive.display()
            )];
            lines.extend(pids.iter().map(|(_, d)| format!("[HRR]   {}", d.display())));
            Resolved::Refused(lines)
        }
    }
}

/// Writes `HRR_TEST_PID_FILE` and `HRR_TEST_DUMP_ENV` when asked for.
fn write_side_files(argv: &[String]) {
    use std::io::IsTerminal;
    if let Ok(path) = std::env::var("HRR_TEST_PID_FILE") {
        write_atomically(Path::new(&path), &std::process::id().to_string());
    }
    if let Ok(path) = std::env::var("HRR_TEST_DUMP_ENV") {
        let var = |k: &str| std::env::var(k).ok();
        let dump = serde_json::json!({
            "argv": argv,
            "HIP_VISIBLE_DEVICES": var("HIP_VISIBLE_DEVICES"),
            "HIP_HRR_REPLAY_PROGRESS_SECONDS": var("HIP_HRR_REPLAY_PROGRESS_SECONDS"),
            "LD_LIBRARY_PATH": var("LD_LIBRARY_PATH"),
            "PATH": var("PATH"),
            "stdout_tty": std::io::stdout().is_terminal(),
            "stderr_tty": std::io::stderr().is_terminal(),
            "own_process_group": own_process_group(),
            "env": std::env::vars()
                .filter(|(k, _)| k != "PATH" && !k.starts_with("HRR_TEST_"))
                .collect::<std::collections::BTreeMap<_, _>>(),
        });
        write_atomically(Path::new(&path), &dump.to_string());
    }
}

/// Whether the player leads its own process group (Unix; Windows has none).
fn own_process_group() -> bool {
    #[cfg(unix)]
    {
        nix::unistd::getpgid(None).ok() == Some(nix::unistd::getpid())
    }
    #[cfg(not(unix))]
    {
        false
    }
}

/// Writes `text` to `path` through a rename, so a polling test never reads
/// half a file.
pub fn write_atomically(path: &Path, text: &str) {
    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
    if std::fs::write(&tmp, text).is_ok() {
        let _ = std::fs::rename(&tmp, path);
    }
}
