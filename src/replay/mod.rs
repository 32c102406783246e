//! Replay: run `hrr-playback` on one process capture, natively or in docker,
//! bounded by a timeout, and record everything it printed and how it ended
//! (DESIGN §7, §8).
//!
//! On Unix the player runs in its own process group on a pseudo-terminal,
//! so the C runtime line-buffers its stdout and nothing is lost when the
//! ROCm runtime calls `abort()` on a GPU fault (a pipe makes stdout
//! block-buffered and the buffered lines die with the process). On Windows
//! it runs on a pseudo console in a kill-on-close Job object ([`windows`]).
//! Every line goes to the log as it arrives; the log ends with the runner's
//! stop markers: `[hrr] replay timed out after <N>s`,
//! `[hrr] replay killed by signal <N>`, `[hrr] replay crashed with <code>
//! (<meaning>)` (Windows), `[hrr] replay exited with code <N>`, or
//! `[hrr] replay interrupted: hrr received signal <N>`.

#[cfg(unix)]
mod capture;
mod command;
#[cfg(not(windows))]
pub mod docker;
mod ending;
pub mod gpu;
mod logfile;
pub mod native;
pub mod overrides;
mod progress;
mod sink;
mod target;
pub mod visible;
#[cfg(windows)]
pub(crate) mod windows;
pub mod wsl;

pub use command::PROGRESS_ENV;

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{bail, Context as _};
use serde::Serialize;

use crate::config::Config;
use crate::context::Context;
pub use ending::{exception_meaning, PlayerEnd, StatusSource, StoppedBy};
pub use overrides::Overrides;

/// Where the player runs: the one spelling of `replay.mode`, of the
/// `--replay` flags and of the MCP `replay` parameter, and the `mode` of a
/// [`ReplayResult`] (never `auto` there).
#[derive(
    Clone,
    Copy,
    Debug,
    PartialEq,
    Eq,
    Serialize,
    serde::Deserialize,
    schemars::JsonSchema,
    clap::ValueEnum,
)]
#[serde(rename_all = "lowercase")]
pub enum ReplayMode {
    /// Docker if `docker.image` is set, else native if the GPU device is
    /// readable and a player is found, else metadata-only.
    Auto,
    /// `hrr-playback` on this host.
    Native,
    /// `hrr-playback` inside `docker.image`.
    Docker,
}

impl ReplayMode {
    /// The config value (`replay.mode`) and flag word of this mode.
    pub fn name(self) -> &'static str {
        match self {
            ReplayMode::Auto => "auto",
            ReplayMode::Native => "native",
            ReplayMode::Docker => "docker",
        }
    }

    /// This mode with `auto` settled for `config`: docker when
    /// `docker.image` is set, else native. Never `auto`.
    pub fn settled(self, config: &Config) -> ReplayMode {
        match self {
            ReplayMode::Auto if config.str("docker.image").is_some_and(|i| !i.is_empty()) => {
                ReplayMode::Docker
            }
            ReplayMode::Auto => ReplayMode::Native,
            placed => placed,
        }
    }

    /// The mode `config` asks for (`replay.mode`, `auto` when unset),
    /// [settled](ReplayMode::settled).
    pub fn configured(config: &Config) -> ReplayMode {
        let asked = match config.str("replay.mode") {
            Some("docker") => ReplayMode::Docker,
            Some("native") => ReplayMode::Native,
            _ => ReplayMode::Auto,
        };
        asked.settled(config)
    }
}

/// Which synchronisation flag the player gets (`replay.sync`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SyncMode {
    /// `--sync-after-launch`: a fault is attributed to the launch that made it.
    Launch,
    /// `--sync-after-event`: slowest, attributes errors to any event.
    Event,
    /// No flag.
    None,
}

impl SyncMode {
    /// The player flag for this mode, if any.
    pub fn flag(self) -> Option<&'static str> {
        match self {
            SyncMode::Launch => Some("--sync-after-launch"),
            SyncMode::Event => Some("--sync-after-event"),
            SyncMode::None => None,
        }
    }

    /// The `replay.sync` value of this mode.
    pub fn name(self) -> &'static str {
        match self {
            SyncMode::Launch => "launch",
            SyncMode::Event => "event",
            SyncMode::None => "none",
        }
    }

    /// Parses a `replay.sync` value.
    pub fn parse(s: &str) -> anyhow::Result<SyncMode> {
        Ok(match s {
            "launch" => SyncMode::Launch,
            "event" => SyncMode::Event,
            "none" => SyncMode::None,
            other => bail!("sync: expected launch, event or none, found \"{other}\""),
        })
    }
}

/// Which GPU the replay uses: an index among the GPUs the device masks
/// leave visible (see [`visible`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GpuChoice {
    /// The visible device with the most free VRAM per `rocm-smi` or
    /// `amd-smi`, else the lowest one they list, else the first (see
    /// [`gpu`]).
    Auto,
    /// This index among the visible devices.
    Ordinal(u32),
}

/// Everything one replay needs; [`ReplayRequest::from_config`] fills it from
/// the effective config, callers override fields.
#[derive(Clone, Debug)]
pub struct ReplayRequest {
    /// A `pid-*` directory, or a capture root holding exactly one.
    pub archive: PathBuf,
    /// The host `hrr-playback` (native; docker with `docker.mount_clr`).
    pub player: Option<PathBuf>,
    /// Native or docker ([`ReplayRequest::from_config`] settles `auto`).
    pub mode: ReplayMode,
    /// The GPU.
    pub gpu: GpuChoice,
    /// Stop the player after this long; `None` = no limit.
    pub timeout: Option<Duration>,
    /// Synchronisation flag.
    pub sync: SyncMode,
    /// Pass `--trace-kernels`.
    pub trace_kernels: bool,
    /// `HIP_HRR_REPLAY_PROGRESS_SECONDS`.
    pub progress_seconds: u32,
    /// Given to the player after hrr's flags, before the archive.
    pub extra_args: Vec<String>,
    /// The log file; `None` = `<workdir>/hrr-replay-<pid-dir>-<UTC ts>-<pid>.log`.
    pub log: Option<PathBuf>,
}

impl ReplayRequest {
    /// A request for `archive` from the `replay.*` keys of `config`. Mode
    /// `auto` is docker when `docker.image` is set, else native. On a host
    /// where this build cannot replay in that mode it is an error here,
    /// before any player or docker is looked for.
    pub fn from_config(config: &Config, archive: impl Into<PathBuf>) -> anyhow::Result<Self> {
        let mode = ReplayMode::configured(config);
        let gpu = match config.int("replay.gpu") {
            Some(n) => GpuChoice::Ordinal(u32::try_from(n).context("replay.gpu is out of range")?),
            None => GpuChoice::Auto,
        };
        ensure_supported(mode)?;
        Ok(ReplayRequest {
            archive: archive.into(),
            player: config.str("playback.path").map(PathBuf::from),
            mode,
            gpu,
            timeout: config.duration("replay.timeout"),
            sync: SyncMode::parse(config.str("replay.sync").unwrap_or("launch"))?,
            trace_kernels: config.bool("replay.trace_kernels"),
            progress_seconds: config
                .int("replay.progress_seconds")
                .and_then(|n| u32::try_from(n).ok())
                .unwrap_or(30),
            extra_args: config.strings("replay.extra_args"),
            log: None,
        })
    }

    /// Finds the host player where this request needs one: a native replay,
    /// or docker with `docker.mount_clr` (the container runs the host's
    /// player). It is never built here.
    pub fn locate_player(&mut self, ctx: &Context) -> anyhow::Result<()> {
        if self.mode == ReplayMode::Native || ctx.config.bool("docker.mount_clr") {
            self.player = Some(native::configured_player(ctx)?);
        }
        Ok(())
    }
}

/// How a replay ended and where its output is; the Lua table of
/// `hrr.replay.run` and the JSON of `hrr replay --json`.
#[derive(Clone, Debug, Serialize)]
pub struct ReplayResult {
    /// The log file: every player line, then the stop markers.
    pub log: PathBuf,
    /// The player's exit status, when it exited (not killed).
    pub exit_code: Option<i32>,
    /// The signal that killed the player (in docker mode also read from
    /// the client's exit 128 + N).
    pub signal: Option<i32>,
    /// The Windows exception code the player crashed with (`0xC0000005`;
    /// an abort is `0xC0000409` or the legacy `0x00000003`).
    pub exception: Option<String>,
    /// The runner's timeout stopped it.
    pub timed_out: bool,
    /// Wall time of the replay in seconds.
    pub duration_s: f64,
    /// The command line that was run.
    pub command: Vec<String>,
    /// Native or docker, as settled for the run.
    pub mode: ReplayMode,
    /// The `HIP_VISIBLE_DEVICES` value the player got: the chosen GPU's
    /// index in ROCr's list (see [`visible`]).
    pub gpu: u32,
}

/// A prepared command: argv, environment changes, and the command that stops
/// it from outside (docker kill) on a timeout or interruption.
#[derive(Clone, Debug, Default)]
pub struct Launch {
    /// Program and arguments.
    pub argv: Vec<OsString>,
    /// Variables to set (`Some`) or remove (`None`); the rest is inherited.
    pub env: Vec<(OsString, Option<OsString>)>,
    /// Run (captured, bounded) before signalling the process group on a
    /// timeout or interruption, and by the supervisor when `hrr` dies.
    pub stop_command: Option<Vec<String>>,
    /// Whose exit status the process reports: the player's, or the docker
    /// client's (a signal N as exit 128 + N).
    pub status_source: StatusSource,
}

impl Launch {
    /// The argv as text for logs and results.
    pub fn display(&self) -> Vec<String> {
        self.argv
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect()
    }
}

/// Runs one replay and returns how it ended. Errors (nothing spawned, no
/// log left behind): an archive that is not a process capture, an
/// unreadable `/dev/kfd`, a GPU index outside the visible GPUs, a missing
/// player or docker, a log path inside the
/// archive. When `hrr` itself gets SIGINT/SIGTERM/SIGHUP during the replay,
/// the player's group is stopped, the log gets its marker, and the error is
/// a [`crate::error::Failure`] with exit code 128 + signal.
pub fn run(ctx: &Context, req: &ReplayRequest) -> anyhow::Result<ReplayResult> {
    let target = target::resolve(&req.archive)?;
    let log_path = match &req.log {
        Some(p) => p.clone(),
        None => crate::workdir::ensure(&ctx.config, &|m| ctx.ui.warn(m))?
            .join(logfile::default_name(&target.pid_dir)),
    };
    crate::safety::ensure_outside(&log_path, &target.archive)?;
    let selected = gpu::select(ctx, req.gpu)?;
    let gpu = selected.hip_visible_devices;
    let mode = req.mode.settled(&ctx.config);
    let launch = match mode {
        // `settled` never returns `Auto`.
        ReplayMode::Native | ReplayMode::Auto => native::launch(ctx, req, &target.pid_dir, gpu)?,
        #[cfg(not(windows))]
        ReplayMode::Docker => docker::launch(ctx, req, &target.capture_root, &target.pid_dir, gpu)?,
        #[cfg(windows)]
        ReplayMode::Docker => bail!(DOCKER_ON_WINDOWS),
    };
    let command = launch.display();
    ctx.ui.status(&format!(
        "{} replay on GPU {} ({}; HIP_VISIBLE_DEVICES={gpu}): {}",
        mode.name(),
        selected.index,
        selected.how,
        command.join(" ")
    ));
    ctx.ui
        .status(&format!("replay log: {}", log_path.display()));
    let started = Instant::now();
    let ending = spawn_and_capture(ctx, &launch, &log_path, req.timeout)?;
    let result = ReplayResult {
        log: log_path,
        exit_code: ending.end.exit_code(),
        signal: ending.end.signal(),
        exception: ending.end.exception(),
        timed_out: ending.timed_out,
        duration_s: started.elapsed().as_secs_f64(),
        command,
        mode,
        gpu,
    };
    for marker in &ending.markers {
        ctx.ui.status(marker.trim_start_matches("[hrr] "));
    }
    if let Some(sig) = ending.interrupted {
        return Err(crate::error::Failure::new(
            128 + sig,
            format!(
                "replay interrupted by signal {sig}: the player's process group was stopped; partial log: {}",
                result.log.display()
            ),
        )
        .into());
    }
    Ok(result)
}

/// The signal (SIGINT/SIGTERM/SIGHUP; on Windows the console event as
/// one of those numbers, see [`crate::interrupt`]) that interrupted the
/// last replay of this process, if one did. A workflow that fails after an interrupted
/// replay exits 128 + signal, like `hrr replay`, even though the error
/// crossed Lua as text.
pub fn interrupted() -> Option<i32> {
    crate::interrupt::pending()
}

/// How the capture ended, with the marker lines written to the log.
struct Ending {
    end: PlayerEnd,
    timed_out: bool,
    interrupted: Option<i32>,
    markers: Vec<String>,
}

/// What a platform's capture reports when the player is gone.
struct Stopped {
    /// How the player ended.
    end: PlayerEnd,
    /// The timeout stopped it.
    timed_out: bool,
    /// `hrr` was interrupted (this signal; on Windows the console event's
    /// counterpart) and stopped it.
    interrupted: Option<i32>,
    /// Notes for the log's end: how the output was captured, when it may
    /// be incomplete.
    notes: Vec<String>,
}

/// Creates the log, runs `launch` through this platform's capture and ends
/// the log with the stop markers.
fn spawn_and_capture(
    ctx: &Context,
    launch: &Launch,
    log_path: &Path,
    timeout: Option<Duration>,
) -> anyhow::Result<Ending> {
    let file = sink::create(log_path)?;
    let progress = (ctx.ui.stderr_is_tty() && !ctx.ui.quiet()).then(progress::Display::new);
    let mut sink = sink::LineSink::new(file, ctx.ui.verbose() && !ctx.ui.quiet(), progress);
    let stopped = match capture(launch, &mut sink, timeout) {
        Ok(s) => s,
        Err(e) => {
            sink.abandon();
            let _ = std::fs::remove_file(log_path);
            return Err(e);
        }
    };
    for note in &stopped.notes {
        ctx.ui.warn(note);
    }
    let mut markers = stopped.notes.clone();
    let end = stopped.end;
    if let Some(sig) = stopped.interrupted {
        markers.push(format!(
            "[hrr] replay interrupted: hrr received signal {sig}"
        ));
    } else if stopped.timed_out {
        let secs = timeout.map_or(0.0, |t| t.as_secs_f64());
        markers.push(format!(
            "[hrr] replay timed out after {}s",
            sink::seconds(secs)
        ));
    } else if let Some(sig) = end.signal() {
        markers.push(format!("[hrr] replay killed by signal {sig}"));
    } else if let Some(marker) = end.crash_marker() {
        markers.push(marker);
    }
    if let Some(code) = end.exit_code() {
        markers.push(format!("[hrr] replay exited with code {code}"));
    }
    sink.finish(&markers)
        .with_context(|| format!("cannot write the replay log {}", log_path.display()))?;
    Ok(Ending {
        end,
        timed_out: stopped.timed_out,
        interrupted: stopped.interrupted,
        markers,
    })
}

/// The Unix capture: a pty for stdout, a process group, the supervisor.
#[cfg(unix)]
fn capture(
    launch: &Launch,
    sink: &mut sink::LineSink,
    timeout: Option<Duration>,
) -> anyhow::Result<Stopped> {
    let s = capture::run(launch, sink, timeout)?;
    Ok(Stopped {
        end: PlayerEnd::from_status(launch.status_source, s.exit_code, s.signal),
        timed_out: s.timed_out,
        interrupted: s.interrupted,
        notes: Vec::new(),
    })
}

/// The Windows capture: a pseudo console and a kill-on-close Job object.
#[cfg(windows)]
fn capture(
    launch: &Launch,
    sink: &mut sink::LineSink,
    timeout: Option<Duration>,
) -> anyhow::Result<Stopped> {
    windows::run(launch, sink, timeout)
}

/// Why docker replay cannot run on Windows.
const DOCKER_ON_WINDOWS: &str = "docker replay is not supported on Windows: the GPU devices (/dev/kfd, /dev/dri) exist only on Linux; run hrr inside WSL2 on a host with ROCm for WSL (`hrr triage --replay docker` does that itself where `wsl.exe hrr --version` works), or replay on the Linux GPU host";

/// Refuses a replay in `mode` where this build cannot run one, so that is
/// the first error, not a missing player.
fn ensure_supported(mode: ReplayMode) -> anyhow::Result<()> {
    if cfg!(windows) && mode == ReplayMode::Docker {
        bail!(DOCKER_ON_WINDOWS);
    }
    Ok(())
}
