//! Running the player in its own process group with its stdout on a
//! pseudo-terminal, capturing every line (Unix).
//!
//! Why a pty: glibc line-buffers stdout only when it is a terminal. Through
//! a pipe the player's stdout is block-buffered, and when the ROCm runtime
//! calls `abort()` on a GPU fault the buffered lines (start lines, summary)
//! are thrown away. On the pty each line leaves the process when printed.
//!
//! stderr goes to a pipe: C stderr is unbuffered whatever it is attached to,
//! so nothing on it can be lost, and it carries the bulk (`--verbose`
//! per-event lines, progress, runtime fault lines). A pty moves about 4 KiB
//! per read through the kernel's tty layer, too slow for that bulk, where a
//! pipe moves up to 64 KiB (the figures are in docs/performance.md). Lines
//! of the two streams are merged in arrival order.
//!
//! One loop does everything: poll both streams, append lines to the log,
//! watch `hrr`'s child (without reaping it, so the group's id stays
//! reserved), enforce the timeout (TERM to the group, KILL after a grace
//! period) and react to SIGINT/SIGTERM/SIGHUP sent to `hrr`. On Linux that
//! child is the supervisor ([`crate::supervisor`]), a member of the
//! player's group that ends as the player does once it has killed
//! everything below it, and that also cleans up when `hrr` itself is
//! killed; elsewhere it is the player. When it is gone, whatever is left of
//! the group is killed and reaped: no orphan and no zombie survives a
//! replay.
//!
//! A descendant that leaves the player's group (`setsid`, `setpgid`: a
//! daemon the player starts) escapes `killpg`, and by holding the pty or the
//! pipe it would keep the log open. It is still below the supervisor, which
//! kills it when the player ends. When the supervisor dies too (the KILL
//! after the grace period reaches the whole group), such escapees are
//! re-parented to `hrr`, the child subreaper while a replay runs, which
//! kills and reaps them too (Linux; a grandchild of an escapee follows when
//! its parent dies). The log keeps everything printed until then and ends
//! with the marker as usual.

use std::os::fd::{AsFd, OwnedFd};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use anyhow::Context as _;
use nix::errno::Errno;
use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;

use super::sink::LineSink;
use super::Launch;
use crate::interrupt;

/// Time between TERM and KILL when stopping the player's group.
const TERM_GRACE: Duration = Duration::from_secs(2);
/// How long output is still read after the leader exited.
const DRAIN: Duration = Duration::from_secs(2);
/// The loop's longest sleep: how quickly a timeout or a signal is noticed.
const TICK: Duration = Duration::from_millis(100);
/// Bound on the stop command (`docker kill`).
const STOP_COMMAND_TIMEOUT: Duration = Duration::from_secs(30);

/// How the player's process ended.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stopped {
    /// Exit status when it exited.
    pub exit_code: Option<i32>,
    /// The signal that killed it.
    pub signal: Option<i32>,
    /// The timeout stopped it.
    pub timed_out: bool,
    /// `hrr` received this signal and stopped it.
    pub interrupted: Option<i32>,
}

/// Runs `launch` on a pty, feeding its output to `sink`, bounded by
/// `timeout`.
pub fn run(
    launch: &Launch,
    sink: &mut LineSink,
    timeout: Option<Duration>,
) -> anyhow::Result<Stopped> {
    let (master, slave) = open_pty()?;
    let (err_reader, err_writer) =
        std::io::pipe().context("cannot create a pipe for the player's stderr")?;
    let Some((program, args)) = launch.argv.split_first() else {
        anyhow::bail!("empty replay command line");
    };
    let _signals = interrupt::install()?;
    let _reaper = Subreaper::enable();
    let cleanup = launch.stop_command.as_deref().unwrap_or_default();
    // The command is dropped with the spawn, closing this process's copies
    // of the pty slave and the pipe's write end: else the end of the output
    // is never seen.
    let spawned = crate::supervisor::spawn(program, args, cleanup, |cmd| {
        cmd.stdin(Stdio::null())
            .stdout(Stdio::from(slave))
            .stderr(Stdio::from(err_writer));
        std::os::unix::process::CommandExt::process_group(cmd, 0);
        for (key, value) in &launch.env {
            match value {
                Some(v) => cmd.env(key, v),
                None => cmd.env_remove(key),
            };
        }
    })
    .with_context(|| format!("cannot start {}", program.to_string_lossy()))?;
    let mut child = spawned.child;
    let pgid = Pid::from_raw(spawned.pid as i32);
    let streams = [master, OwnedFd::from(err_reader)];
    let outcome = watch(&mut child, pgid, &streams, launch, sink, timeout);
    if outcome.is_err() {
        let _ = killpg(pgid, Signal::SIGKILL);
    }
    let status = child.wait().context("cannot wait for the player")?;
    reap_group(pgid);
    reap_escapees();
    let (timed_out, interrupted) = outcome?;
    Ok(Stopped {
        exit_code: status.code(),
        signal: std::os::unix::process::ExitStatusExt::signal(&status),
        timed_out,
        interrupted,
    })
}

/// Why the runner stopped the player.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Stop {
    Timeout,
    Interrupt(i32),
}

/// The capture loop; returns (timed out, interrupted by) once the leader
/// has exited (it is not reaped here) and its output is drained.
fn watch(
    child: &mut Child,
    pgid: Pid,
    streams: &[OwnedFd; 2],
    launch: &Launch,
    sink: &mut LineSink,
    timeout: Option<Duration>,
) -> anyhow::Result<(bool, Option<i32>)> {
    let deadline = timeout.map(|t| Instant::now() + t);
    let mut stop: Option<(Stop, Instant)> = None;
    let mut killed = false;
    let mut exited_at: Option<Instant> = None;
    let mut open = [true, true];
    let mut buf = vec![0u8; 2 << 16];
    loop {
        if exited_at.is_none() && leader_exited(child)? {
            exited_at = Some(Instant::now());
            let _ = killpg(pgid, Signal::SIGKILL);
        }
        if exited_at.is_some() {
            kill_escapees(Pid::from_raw(child.id() as i32));
        }
        let mut wait = TICK;
        let eof = open == [false, false];
        match exited_at {
            Some(t) if eof || t.elapsed() >= DRAIN => break,
            Some(_) => {}
            None => {
                if stop.is_none() {
                    let now = Instant::now();
                    if let Some(sig) = interrupt::pending() {
                        stop = Some((Stop::Interrupt(sig), now));
                    } else if deadline.is_some_and(|d| now >= d) {
                        stop = Some((Stop::Timeout, now));
                    }
                    if stop.is_some() {
                        begin_stop(launch, pgid);
                    }
                }
                if let Some((_, at)) = stop {
                    let grace_left = TERM_GRACE.saturating_sub(at.elapsed());
                    if grace_left.is_zero() && !killed {
                        let _ = killpg(pgid, Signal::SIGKILL);
                        killed = true;
                    }
                    wait = wait.min(grace_left.max(Duration::from_millis(10)));
                } else if let Some(d) = deadline {
                    wait = wait.min(d.saturating_duration_since(Instant::now()));
                }
            }
        }
        if eof {
            std::thread::sleep(wait.max(Duration::from_millis(10)));
            continue;
        }
        for (stream, got) in read_some(streams, &mut open, wait, &mut buf)? {
            sink.feed(stream, &buf[got])
                .context("cannot write the replay log")?;
        }
    }
    let interrupted = match stop {
        Some((Stop::Interrupt(sig), _)) => Some(sig),
        _ => interrupt::pending(),
    };
    Ok((matches!(stop, Some((Stop::Timeout, _))), interrupted))
}

/// Asks the player's group to stop: the launch's stop command first (e.g.
/// `docker kill`), then SIGTERM to the group.
fn begin_stop(launch: &Launch, pgid: Pid) {
    if let Some(argv) = &launch.stop_command {
        let opts = crate::subprocess::ExecOptions {
            timeout: Some(STOP_COMMAND_TIMEOUT),
            ..Default::default()
        };
        let _ = crate::subprocess::run(argv, &opts);
    }
    let _ = killpg(pgid, Signal::SIGTERM);
}

/// Waits up to `wait` for output on the open `streams` (0 = the pty
/// master, 1 = the stderr pipe) and reads what is there into `buf`: one
/// `(stream, range of buf)` per stream read. A stream at its end is marked
/// closed in `open`.
fn read_some(
    streams: &[OwnedFd; 2],
    open: &mut [bool; 2],
    wait: Duration,
    buf: &mut [u8],
) -> anyhow::Result<Vec<(usize, std::ops::Range<usize>)>> {
    use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
    let ms = u16::try_from(wait.as_millis()).unwrap_or(u16::MAX);
    let watched: Vec<usize> = (0..2).filter(|&i| open[i]).collect();
    let mut fds: Vec<PollFd> = watched
        .iter()
        .map(|&i| PollFd::new(streams[i].as_fd(), PollFlags::POLLIN))
        .collect();
    match poll(&mut fds, PollTimeout::from(ms)) {
        Ok(0) | Err(Errno::EINTR) => return Ok(Vec::new()),
        Ok(_) => {}
        Err(e) => return Err(anyhow::anyhow!("cannot poll the player's output: {e}")),
    }
    let ready: Vec<usize> = watched
        .iter()
        .zip(&fds)
        .filter(|(_, fd)| fd.revents().is_some_and(|r| !r.is_empty()))
        .map(|(&i, _)| i)
        .collect();
    let half = buf.len() / 2;
    let mut got = Vec::new();
    for i in ready {
        let range = if i == 0 { 0..half } else { half..buf.len() };
        match nix::unistd::read(streams[i].as_fd(), &mut buf[range.clone()]) {
            // Linux reports a pty whose slave side is closed as EIO.
            Ok(0) | Err(Errno::EIO) => open[i] = false,
            Ok(n) => got.push((i, range.start..range.start + n)),
            Err(Errno::EINTR | Errno::EAGAIN) => {}
            Err(e) => return Err(anyhow::anyhow!("cannot read the player's output: {e}")),
        }
    }
    Ok(got)
}

/// A pty pair, both ends close-on-exec, the slave in raw mode (no `\r\n`
/// translation, no signal characters).
fn open_pty() -> anyhow::Result<(OwnedFd, OwnedFd)> {
    use nix::fcntl::{fcntl, FcntlArg, FdFlag};
    use nix::pty::{openpty, Winsize};
    use nix::sys::termios::{cfmakeraw, tcgetattr, tcsetattr, SetArg};
    let size = Winsize {
        ws_row: 50,
        ws_col: 200,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    let pty = openpty(Some(&size), None).context("cannot open a pseudo-terminal for the replay")?;
    for fd in [&pty.master, &pty.slave] {
        fcntl(fd, FcntlArg::F_SETFD(FdFlag::FD_CLOEXEC)).context("cannot set FD_CLOEXEC")?;
    }
    let mut mode = tcgetattr(&pty.slave).context("cannot read the pty mode")?;
    cfmakeraw(&mut mode);
    tcsetattr(&pty.slave, SetArg::TCSANOW, &mode).context("cannot set the pty mode")?;
    Ok((pty.master, pty.slave))
}

/// Whether `hrr`'s child (the supervisor) has exited, leaving it unreaped
/// (Linux: `waitid` with `WNOWAIT`) so, as a member of the player's group,
/// it keeps the group's id from being reused before the group is killed.
#[cfg(target_os = "linux")]
fn leader_exited(child: &mut Child) -> anyhow::Result<bool> {
    use nix::sys::wait::{waitid, Id, WaitPidFlag, WaitStatus};
    let pid = Pid::from_raw(child.id() as i32);
    let flags = WaitPidFlag::WEXITED | WaitPidFlag::WNOHANG | WaitPidFlag::WNOWAIT;
    match waitid(Id::Pid(pid), flags) {
        Ok(WaitStatus::StillAlive) | Err(Errno::EINTR) => Ok(false),
        Ok(_) => Ok(true),
        Err(e) => Err(anyhow::anyhow!("cannot watch the player: {e}")),
    }
}

/// Whether the leader has exited (reaped; std keeps its status).
#[cfg(not(target_os = "linux"))]
fn leader_exited(child: &mut Child) -> anyhow::Result<bool> {
    Ok(child
        .try_wait()
        .context("cannot watch the player")?
        .is_some())
}

/// Reaps members of the player's group that were re-parented to `hrr` (the
/// child subreaper) after the leader died; bounded: they were SIGKILLed
/// when the leader exited.
fn reap_group(pgid: Pid) {
    use nix::sys::wait::{waitpid, WaitPidFlag, WaitStatus};
    let group = Pid::from_raw(-pgid.as_raw());
    let until = Instant::now() + Duration::from_secs(2);
    while Instant::now() < until {
        match waitpid(group, Some(WaitPidFlag::WNOHANG)) {
            Ok(WaitStatus::StillAlive) => std::thread::sleep(Duration::from_millis(10)),
            Ok(_) | Err(Errno::EINTR) => {}
            Err(_) => return,
        }
    }
}

/// `hrr`'s children other than `leader` (its child for the replay):
/// descendants of the player that left its process group and were
/// re-parented to `hrr` (the subreaper) when their parent died.
#[cfg(target_os = "linux")]
fn escapees(leader: Pid) -> Vec<Pid> {
    let me = std::process::id() as i32;
    crate::supervisor::tree::table()
        .into_iter()
        .filter(|p| p.ppid == me && p.pid != leader.as_raw())
        .map(|p| Pid::from_raw(p.pid))
        .collect()
}

/// SIGKILLs every child of `hrr` but `leader` (see [`escapees`]).
fn kill_escapees(leader: Pid) {
    #[cfg(target_os = "linux")]
    for pid in escapees(leader) {
        let _ = nix::sys::signal::kill(pid, Signal::SIGKILL);
    }
    #[cfg(not(target_os = "linux"))]
    let _ = leader;
}

/// After the player is reaped: kills and reaps every remaining child of
/// `hrr` (escapees, and their children as each is re-parented), bounded.
/// A replay is the only thing that starts children while it runs (the CLI
/// does one thing at a time), so every such child is the player's.
fn reap_escapees() {
    #[cfg(target_os = "linux")]
    {
        use nix::sys::wait::{waitpid, WaitPidFlag, WaitStatus};
        let until = Instant::now() + Duration::from_secs(2);
        while Instant::now() < until {
            let left = escapees(Pid::from_raw(0));
            if left.is_empty() {
                return;
            }
            for pid in left {
                let _ = nix::sys::signal::kill(pid, Signal::SIGKILL);
                if let Ok(WaitStatus::StillAlive) = waitpid(pid, Some(WaitPidFlag::WNOHANG)) {
                    std::thread::sleep(Duration::from_millis(10));
                }
            }
        }
    }
}

/// While a replay runs, `hrr` is the child subreaper (Linux), so the
/// player's orphaned children become `hrr`'s and are reaped by it rather
/// than left as zombies.
struct Subreaper {
    #[cfg(target_os = "linux")]
    was: bool,
}

impl Subreaper {
    fn enable() -> Subreaper {
        #[cfg(target_os = "linux")]
        {
            use nix::sys::prctl;
            let was = prctl::get_child_subreaper().unwrap_or(false);
            let _ = prctl::set_child_subreaper(true);
            Subreaper { was }
        }
        #[cfg(not(target_os = "linux"))]
        Subreaper {}
    }
}

impl Drop for Subreaper {
    fn drop(&mut self) {
        #[cfg(target_os = "linux")]
        if !self.was {
            let _ = nix::sys::prctl::set_child_subreaper(false);
        }
    }
}
