//! One run of `hrr` itself for one tool call: stdin null, stdout read into
//! memory up to a cap, stderr read line by line (its `[hrr]` status lines
//! become progress, its `error:` lines the tool error), the whole run
//! bounded by a time limit and stopped when the client cancels the call.
//!
//! A child process keeps what the command writes on stdout off the MCP
//! channel, and keeps a hostile archive or a hang from taking the server
//! down: the child dies, the server answers.

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, BufReader};
use tokio::process::{Child, Command};

use super::progress::Progress;

/// The most stdout a call keeps: more is an error, not a truncated result.
pub const MAX_STDOUT: u64 = 64 << 20;

/// A stderr line longer than this is cut into pieces.
const MAX_LINE: u64 = 64 << 10;

/// `error:` lines (and the last other lines) a failed call reports.
const KEPT_LINES: usize = 20;

/// How long a stopped `hrr` gets between SIGTERM (which stops a replay's
/// player group cleanly) and being killed.
#[cfg(unix)]
const STOP_GRACE: Duration = Duration::from_secs(5);

/// How `hrr` is run for every call: its path, the global flags the server
/// was started with, and the time limit of one call.
#[derive(Debug, Clone)]
pub struct Runner {
    /// The `hrr` binary (the running one).
    pub exe: PathBuf,
    /// Flags put before every command (`--config`, `--profile`, `-c`, `--color`).
    pub global: Vec<OsString>,
    /// The longest one call may take; `None` = no limit.
    pub limit: Option<Duration>,
}

/// What a finished run left.
#[derive(Debug)]
pub struct Finished {
    /// The exit code (`None`: ended by a signal).
    pub code: Option<i32>,
    /// stdout, or `None` when it passed [`MAX_STDOUT`].
    pub stdout: Option<Vec<u8>>,
    /// The `error:` lines of stderr, in order.
    pub errors: Vec<String>,
    /// The last lines of stderr, for a failure that printed no `error:`.
    pub tail: Vec<String>,
}

/// Why a run gave no [`Finished`].
#[derive(Debug)]
pub enum Stopped {
    /// `hrr` could not be started.
    Spawn(std::io::Error),
    /// Reading its output or waiting for it failed.
    Io(std::io::Error),
    /// It ran past the limit and was stopped.
    TimedOut(Duration),
    /// The client cancelled the call and it was stopped.
    Cancelled,
}

impl std::fmt::Display for Stopped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Stopped::Spawn(e) => write!(f, "error: could not run hrr: {e}"),
            Stopped::Io(e) => write!(f, "error: reading hrr's output failed: {e}"),
            Stopped::TimedOut(d) => write!(
                f,
                "error: the call ran longer than {} and was stopped (hrr mcp --call-timeout raises the limit)",
                humantime::format_duration(*d)
            ),
            Stopped::Cancelled => write!(f, "error: the call was cancelled"),
        }
    }
}

impl Runner {
    /// Runs `hrr <global flags> <args>`, reporting `[hrr]` lines to `progress`.
    pub async fn run(
        &self,
        args: Vec<OsString>,
        progress: &Progress,
        cancelled: impl std::future::Future<Output = ()>,
    ) -> Result<Finished, Stopped> {
        let mut cmd = Command::new(&self.exe);
        cmd.args(&self.global);
        if !progress.wanted() {
            cmd.arg("--quiet");
        }
        cmd.args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        let mut child = cmd.spawn().map_err(Stopped::Spawn)?;
        let (Some(stdout), Some(stderr)) = (child.stdout.take(), child.stderr.take()) else {
            return Err(Stopped::Io(std::io::Error::other("no pipes to hrr")));
        };
        let limit = async {
            match self.limit {
                Some(d) => tokio::time::sleep(d).await,
                None => std::future::pending().await,
            }
        };
        let work = async {
            let (out, err) = tokio::join!(read_capped(stdout), read_lines(stderr, progress));
            let status = child.wait().await.map_err(Stopped::Io)?;
            let (errors, tail) = err.map_err(Stopped::Io)?;
            Ok(Finished {
                code: status.code(),
                stdout: out.map_err(Stopped::Io)?,
                errors,
                tail,
            })
        };
        let end = tokio::select! {
            done = work => done,
            () = limit => Err(Stopped::TimedOut(self.limit.unwrap_or_default())),
            () = cancelled => Err(Stopped::Cancelled),
        };
        if matches!(end, Err(Stopped::TimedOut(_) | Stopped::Cancelled)) {
            stop(&mut child).await;
        }
        end
    }
}

/// All of `r`, or `None` when it is longer than [`MAX_STDOUT`]; the rest is
/// still read (and dropped) so the child is never blocked on a full pipe.
async fn read_capped(r: impl AsyncRead + Unpin) -> std::io::Result<Option<Vec<u8>>> {
    let mut capped = r.take(MAX_STDOUT + 1);
    let mut buf = Vec::new();
    capped.read_to_end(&mut buf).await?;
    if buf.len() as u64 <= MAX_STDOUT {
        return Ok(Some(buf));
    }
    tokio::io::copy(&mut capped.into_inner(), &mut tokio::io::sink()).await?;
    Ok(None)
}

/// The `error:` lines and the last lines of stderr; each `[hrr]` line goes
/// to `progress` as it arrives.
async fn read_lines(
    r: impl AsyncRead + Unpin,
    progress: &Progress,
) -> std::io::Result<(Vec<String>, Vec<String>)> {
    let mut reader = BufReader::new(r);
    let mut errors = Vec::new();
    let mut tail = std::collections::VecDeque::new();
    let mut buf = Vec::new();
    loop {
        buf.clear();
        if (&mut reader)
            .take(MAX_LINE)
            .read_until(b'\n', &mut buf)
            .await?
            == 0
        {
            break;
        }
        let line = String::from_utf8_lossy(&buf).trim_end().to_string();
        if line.starts_with("[hrr]") {
            progress.report(&line).await;
        }
        if line.starts_with("error:") {
            if errors.len() < KEPT_LINES {
                errors.push(line);
            }
        } else if !line.is_empty() {
            if tail.len() == KEPT_LINES {
                tail.pop_front();
            }
            tail.push_back(line);
        }
    }
    Ok((errors, tail.into()))
}

/// Stops `hrr`: SIGTERM first on Unix, so a running replay's player group is
/// stopped and its log closed, then a kill after a grace period.
async fn stop(child: &mut Child) {
    #[cfg(unix)]
    if let Some(pid) = child.id().and_then(|p| i32::try_from(p).ok()) {
        use nix::sys::signal::{kill, Signal};
        let _ = kill(nix::unistd::Pid::from_raw(pid), Signal::SIGTERM);
        if tokio::time::timeout(STOP_GRACE, child.wait()).await.is_ok() {
            return;
        }
    }
    let _ = child.kill().await;
}
