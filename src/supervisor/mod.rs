//! Every program `hrr` starts (the player, natively or under docker, and
//! each helper run by [`crate::subprocess`]: `hrr.exec`, the host and docker
//! probes) runs under a small supervisor process on Linux, so that none of
//! it outlives `hrr`, even when `hrr` is killed with SIGKILL.
//!
//! No single kernel mechanism is enough: a parent-death signal reaches only
//! the direct child, `killpg` misses a descendant that called `setsid`, and
//! a pty hangup reaches only the foreground group. The supervisor combines
//! them. It is the `hrr` binary itself, re-executed with a hidden first
//! argument, and it:
//! - makes itself the child subreaper, so every descendant of the program,
//!   whatever group or session it moved to, stays below it when its own
//!   parent dies;
//! - asks for a parent-death signal, then checks that `hrr` (whose pid it
//!   was given) is still its parent, which closes the race where `hrr` died
//!   first;
//! - starts the program with the argv, environment, working directory and
//!   file descriptors it was given, then lets go of its own stdin, stdout
//!   and stderr, so the end of the program's output is seen when the
//!   program's side closes;
//! - when the program ends, kills whatever is left below it, then ends the
//!   same way: the same exit code, or death by the same signal;
//! - while the program's group is being stopped (TERM, INT or HUP: a
//!   timeout, Ctrl-C), kills the descendants outside the group, which the
//!   group's signals miss;
//! - when `hrr` dies, runs the cleanup command it was given (for docker,
//!   `docker kill <container>`), then kills everything below it.
//!
//! When `hrr` starts it in a process group of its own, the program leads a
//! new group (as it would unsupervised) and the supervisor joins it: `hrr`'s
//! TERM-then-KILL of that group still reaches the program, and the group's
//! id stays reserved until `hrr` reaps the supervisor. The supervisor
//! catches TERM, INT and HUP (a handler, which the program does not
//! inherit) and ends only after the program has.
//!
//! Elsewhere programs are started directly, as the supervisor needs the
//! Linux subreaper and parent-death signal.

use std::ffi::OsStr;
use std::process::{Child, Command};

#[cfg(target_os = "linux")]
mod serve;
#[cfg(target_os = "linux")]
mod start;
#[cfg(target_os = "linux")]
pub mod tree;

/// The hidden first argument that turns `hrr` into the supervisor. It is
/// recognised before the command line is parsed, so it is in no command
/// list, help or completion.
#[cfg(target_os = "linux")]
const MODE: &str = "__supervise";

/// Runs the supervisor when `args` (the whole argv) asks for it, returning
/// its exit code. Otherwise records that this executable is `hrr` and so can
/// supervise the programs it starts (a test binary linking the library
/// cannot), and returns `None`.
#[cfg(target_os = "linux")]
pub fn take_over(args: &[std::ffi::OsString]) -> Option<i32> {
    if args.get(1).is_some_and(|a| a == MODE) {
        return Some(serve::main(&args[2..]));
    }
    start::enable();
    None
}

/// A started program.
#[derive(Debug)]
pub struct Spawned {
    /// What to wait for: the supervisor, which ends as the program does, or
    /// the program itself where there is none.
    pub child: Child,
    /// The program's pid; when the setup asked for a new process group, also
    /// that group's id (the one to signal).
    pub pid: u32,
}

/// Starts `program` with `args`; `setup` sets stdio, environment, working
/// directory and process group as for the program itself. On Linux, when
/// this executable is `hrr`, the program runs under the supervisor;
/// `cleanup` is the command it runs if `hrr` dies first (empty: none). A
/// program that cannot be started is an error here, as with
/// [`Command::spawn`].
pub fn spawn<S: AsRef<OsStr>>(
    program: &OsStr,
    args: &[S],
    cleanup: &[String],
    setup: impl FnOnce(&mut Command),
) -> std::io::Result<Spawned> {
    #[cfg(target_os = "linux")]
    if start::enabled() {
        return start::spawn(program, args, cleanup, setup);
    }
    // Only the supervisor runs a cleanup command.
    let _ = cleanup;
    let mut cmd = Command::new(program);
    cmd.args(args);
    setup(&mut cmd);
    let child = cmd.spawn()?;
    Ok(Spawned {
        pid: child.id(),
        child,
    })
}
