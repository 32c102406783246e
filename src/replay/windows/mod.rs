//! Native replay on Windows: the player on a pseudo console ([`conpty`]),
//! inside a kill-on-close Job object ([`job`]), its rendering stripped of
//! VT sequences ([`vt`]) and turned back into the player's bytes
//! ([`codepage`]) line by line into the log, bounded by the timeout and
//! stopped by Ctrl-C ([`crate::interrupt`]).
//!
//! One loop does everything: it takes the output the reader threads hand
//! over, watches the player, enforces the timeout and reacts to console
//! events. A timeout or an interruption terminates the whole job at once
//! (Windows has no SIGTERM for a console program to act on); when the
//! player exits on its own, whatever it left running in the job is
//! terminated too. If `hrr` itself dies, Windows closes its handles, the
//! job's last handle with them, and kill-on-close ends the tree.
//!
//! Where this Windows has no pseudo console, stdout and stderr are pipes,
//! and the log and the warning say that what the player buffered when it
//! crashed may be missing.

mod codepage;
mod conpty;
pub(crate) mod job;
mod spawn;
mod vt;

use std::fs::File;
use std::io::Read;
use std::os::windows::io::{AsRawHandle, OwnedHandle};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use windows_sys::Win32::Foundation::{SetHandleInformation, HANDLE_FLAG_INHERIT, WAIT_OBJECT_0};
use windows_sys::Win32::System::Threading::{GetExitCodeProcess, WaitForSingleObject};

use super::sink::LineSink;
use super::{Launch, PlayerEnd, Stopped};

/// How long output is still read after the player exited.
const DRAIN: Duration = Duration::from_secs(5);
/// After the player exited, this long without output means the console
/// has rendered everything, and it is closed. The console renders at its
/// own pace: on a loaded host (two busy cores besides, under Wine) a
/// quarter of a second lost the lines after a 5 MiB one.
const QUIET: Duration = Duration::from_secs(1);
/// The loop's longest wait: how quickly a timeout or Ctrl-C is noticed.
const TICK: Duration = Duration::from_millis(100);

/// The log note of a replay without a pseudo console.
pub const PIPES_NOTE: &str = "[hrr] note: no pseudo console on this Windows (ConPTY needs Windows 10 1809 or later); the player's stdout and stderr were pipes, so lines it had buffered when it crashed or aborted may be missing from this log";

/// What a reader thread hands to the loop.
enum Chunk {
    /// Bytes of stream 0 (stdout, or the whole console) or 1 (stderr).
    Data(usize, Vec<u8>),
    /// A stream reached its end.
    End,
}

/// Runs `launch` and feeds its output to `sink`, bounded by `timeout`.
pub(super) fn run(
    launch: &Launch,
    sink: &mut LineSink,
    timeout: Option<Duration>,
) -> anyhow::Result<Stopped> {
    let _interrupt = crate::interrupt::install()?;
    let job = job::Job::new()?;
    let (tx, rx) = mpsc::channel();
    let mut notes = Vec::new();
    let (process, console, streams) = match conpty::PseudoConsole::open()? {
        Some((console, output)) => {
            let stdio = spawn::Stdio::Console(console.handle());
            let process = spawn::spawn(&launch.argv, &launch.env, stdio, &job)?;
            read_in_background(0, output, tx.clone());
            (process, Some(console), 1)
        }
        None => {
            let (out_read, out_write) = conpty::pipe()?;
            let (err_read, err_write) = conpty::pipe()?;
            inheritable(&out_write)?;
            inheritable(&err_write)?;
            let stdio = spawn::Stdio::Pipes {
                stdout: &out_write,
                stderr: &err_write,
            };
            let process = spawn::spawn(&launch.argv, &launch.env, stdio, &job)?;
            drop((out_write, err_write));
            read_in_background(0, File::from(out_read), tx.clone());
            read_in_background(1, File::from(err_read), tx.clone());
            notes.push(PIPES_NOTE.to_string());
            (process, None, 2)
        }
    };
    drop(tx);
    let filtered = console.is_some();
    let watched = watch(
        &process, console, streams, &job, &rx, sink, filtered, timeout,
    )?;
    Ok(Stopped {
        end: watched.end,
        timed_out: watched.stop == Some(Stop::Timeout),
        interrupted: match watched.stop {
            Some(Stop::Interrupt(sig)) => Some(sig),
            _ => crate::interrupt::pending(),
        },
        notes,
    })
}

/// Why the runner stopped the player.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stop {
    Timeout,
    Interrupt(i32),
}

/// How the loop ended.
struct Watched {
    end: PlayerEnd,
    stop: Option<Stop>,
}

/// The capture loop; returns once the player has exited (or was
/// terminated) and its output is drained.
#[allow(clippy::too_many_arguments)]
fn watch(
    process: &OwnedHandle,
    mut console: Option<conpty::PseudoConsole>,
    mut open: usize,
    job: &job::Job,
    rx: &mpsc::Receiver<Chunk>,
    sink: &mut LineSink,
    filtered: bool,
    timeout: Option<Duration>,
) -> anyhow::Result<Watched> {
    use anyhow::Context as _;
    let deadline = timeout.map(|t| Instant::now() + t);
    let mut filter = vt::VtFilter::new(conpty::COLUMNS.unsigned_abs().into());
    let mut console_bytes = codepage::ConsoleBytes::oem();
    let (mut text, mut bytes) = (Vec::new(), Vec::new());
    let mut stop = None;
    let mut end = None;
    let mut exited_at: Option<Instant> = None;
    let mut last_output = Instant::now();
    loop {
        if exited_at.is_none() {
            if let Some(code) = exit_code(process) {
                // The player is gone: nothing it started may outlive it.
                job.terminate();
                exited_at = Some(Instant::now());
                end = Some(match stop {
                    Some(_) => PlayerEnd::Unknown,
                    None => PlayerEnd::from_windows_exit(code),
                });
            } else if stop.is_none() {
                if let Some(sig) = crate::interrupt::pending() {
                    stop = Some(Stop::Interrupt(sig));
                } else if deadline.is_some_and(|d| Instant::now() >= d) {
                    stop = Some(Stop::Timeout);
                }
                if stop.is_some() {
                    job.terminate();
                }
            }
        }
        if let Some(at) = exited_at {
            if open == 0 || at.elapsed() >= DRAIN {
                break;
            }
            if console.is_some() && at.elapsed() >= QUIET && last_output.elapsed() >= QUIET {
                // Everything is rendered; closing the console ends its pipe.
                console = None;
            }
        }
        let wait = match deadline {
            Some(d) if stop.is_none() => TICK.min(d.saturating_duration_since(Instant::now())),
            _ => TICK,
        };
        match rx.recv_timeout(wait.max(Duration::from_millis(10))) {
            Ok(Chunk::Data(stream, data)) => {
                last_output = Instant::now();
                let data = if filtered {
                    text.clear();
                    filter.feed(&data, &mut text);
                    bytes.clear();
                    console_bytes.feed(&text, &mut bytes);
                    &bytes
                } else {
                    &data
                };
                sink.feed(stream, data)
                    .context("cannot write the replay log")?;
            }
            Ok(Chunk::End) => open = open.saturating_sub(1),
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => open = 0,
        }
    }
    Ok(Watched {
        end: end.unwrap_or(PlayerEnd::Unknown),
        stop,
    })
}

/// The player's exit code, once it has exited.
fn exit_code(process: &OwnedHandle) -> Option<u32> {
    // SAFETY: the process handle is open.
    if unsafe { WaitForSingleObject(process.as_raw_handle(), 0) } != WAIT_OBJECT_0 {
        return None;
    }
    let mut code = 0u32;
    // SAFETY: as above; `code` is a valid out-pointer.
    (unsafe { GetExitCodeProcess(process.as_raw_handle(), &mut code) } != 0).then_some(code)
}

/// Lets the player inherit `handle` (only the handles named in its start
/// attributes are inherited).
fn inheritable(handle: &OwnedHandle) -> anyhow::Result<()> {
    // SAFETY: the handle is open.
    let ok = unsafe {
        SetHandleInformation(
            handle.as_raw_handle(),
            HANDLE_FLAG_INHERIT,
            HANDLE_FLAG_INHERIT,
        )
    };
    if ok == 0 {
        anyhow::bail!(
            "cannot pass a pipe to the player: {}",
            std::io::Error::last_os_error()
        );
    }
    Ok(())
}

/// Reads `stream` until its end on a thread of its own, handing each read
/// to the loop. The thread ends at the pipe's end, which comes once every
/// writer is gone: the job's processes are terminated and the console
/// closed before the loop returns.
fn read_in_background(stream: usize, mut pipe: File, tx: mpsc::Sender<Chunk>) {
    std::thread::spawn(move || {
        let mut buf = vec![0u8; 1 << 16];
        loop {
            match pipe.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    if tx.send(Chunk::Data(stream, buf[..n].to_vec())).is_err() {
                        return;
                    }
                }
            }
        }
        let _ = tx.send(Chunk::End);
    });
}
