//! `hrr`'s side: starting a program through the supervisor and learning
//! whether the program itself could be started.
//!
//! The supervisor reports on a pipe whose write end it inherits (its number
//! is on its command line): four bytes, the program's pid once it started,
//! else the negated errno of the failed start, which becomes the same error
//! a direct [`Command::spawn`] gives.

use std::ffi::OsStr;
use std::io::Read;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};

use nix::fcntl::{fcntl, FcntlArg, FdFlag};

use super::{Spawned, MODE};

/// The running executable, also when its file was replaced or removed
/// since it started (an upgrade while `hrr` runs).
const SELF: &str = "/proc/self/exe";

/// Set once this executable is known to be `hrr` (see
/// [`super::take_over`]).
static ENABLED: AtomicBool = AtomicBool::new(false);

/// Marks this executable as `hrr`, able to run the supervisor, where
/// `/proc` is mounted (the supervisor is found, and finds descendants,
/// there).
pub(super) fn enable() {
    ENABLED.store(std::path::Path::new(SELF).exists(), Ordering::SeqCst);
}

/// Whether programs are started through the supervisor.
pub(super) fn enabled() -> bool {
    ENABLED.load(Ordering::SeqCst)
}

/// Starts the supervisor for `program` (see [`super::spawn`]).
pub(super) fn spawn<S: AsRef<OsStr>>(
    program: &OsStr,
    args: &[S],
    cleanup: &[String],
    setup: impl FnOnce(&mut Command),
) -> std::io::Result<Spawned> {
    let (reader, writer) = std::io::pipe()?;
    let writer = above_stdio(writer.into())?;
    let fd = writer.as_raw_fd();
    let mut cmd = Command::new(SELF);
    cmd.arg0("hrr")
        .arg(MODE)
        .arg(std::process::id().to_string())
        .arg(fd.to_string())
        .arg(cleanup.len().to_string())
        .args(cleanup)
        .arg(program)
        .args(args);
    setup(&mut cmd);
    // SAFETY: between fork and exec only fcntl(2), which is
    // async-signal-safe, runs on a descriptor this process keeps open until
    // the spawn returns; nothing is allocated.
    unsafe {
        cmd.pre_exec(move || {
            let fd = BorrowedFd::borrow_raw(fd);
            fcntl(fd, FcntlArg::F_SETFD(FdFlag::empty()))?;
            Ok(())
        });
    }
    let mut child = cmd.spawn()?;
    // This process's copies of what the child got (a pty slave, a pipe's
    // write end) must be closed, or the end of the output is never seen.
    drop(cmd);
    drop(writer);
    match started(reader) {
        Ok(pid) => Ok(Spawned { child, pid }),
        Err(e) => {
            let _ = child.wait();
            Err(e)
        }
    }
}

/// `fd` moved to a number above 2 (close-on-exec), so setting up the
/// child's stdin, stdout and stderr cannot overwrite it even when `hrr` was
/// started with one of them closed.
fn above_stdio(fd: OwnedFd) -> std::io::Result<OwnedFd> {
    let moved = fcntl(&fd, FcntlArg::F_DUPFD_CLOEXEC(3))?;
    // SAFETY: F_DUPFD_CLOEXEC returned a new descriptor nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(moved) })
}

/// The supervisor's report: the program's pid when it started.
fn started(mut reader: std::io::PipeReader) -> std::io::Result<u32> {
    let mut report = [0u8; 4];
    match reader.read_exact(&mut report) {
        Ok(()) => {
            let n = i32::from_le_bytes(report);
            u32::try_from(n).map_err(|_| std::io::Error::from_raw_os_error(n.saturating_neg()))
        }
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => Err(std::io::Error::other(
            "the process supervisor ended before starting the program",
        )),
        Err(e) => Err(e),
    }
}
