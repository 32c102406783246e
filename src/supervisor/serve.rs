//! The supervisor process itself: `hrr __supervise <hrr pid> <report fd>
//! <n> <cleanup argv: n words> <program> <args…>` (see the module above for
//! what it guarantees).

use std::ffi::OsString;
use std::io::Write;
use std::os::fd::{BorrowedFd, FromRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::fcntl::{fcntl, FcntlArg, FdFlag};
use nix::sys::prctl;
use nix::sys::signal::{
    raise, sigaction, sigprocmask, SaFlags, SigAction, SigHandler, SigSet, SigmaskHow, Signal,
};
use nix::sys::time::TimeSpec;
use nix::sys::wait::{waitpid, WaitPidFlag, WaitStatus};
use nix::unistd::{getpgrp, getpid, getppid, setpgid, Pid};

use super::tree;

/// Signals that wake the supervisor: its program or a descendant ended
/// (CHLD), `hrr` died (TERM, the parent-death signal), or `hrr` is stopping
/// the program's group (TERM, INT, HUP reach the program too).
const WAKE: [Signal; 4] = [
    Signal::SIGCHLD,
    Signal::SIGTERM,
    Signal::SIGINT,
    Signal::SIGHUP,
];
/// The longest wait between two checks that `hrr` is still the parent; the
/// parent-death signal usually says so at once.
const TICK: Duration = Duration::from_millis(500);
/// The same while the group is being stopped, to catch a descendant that
/// leaves it late.
const STOP_TICK: Duration = Duration::from_millis(50);
/// Bound on the cleanup command (`docker kill`) once `hrr` is gone.
const CLEANUP_LIMIT: Duration = Duration::from_secs(20);

/// What the supervisor was asked to run.
struct Call {
    parent: Pid,
    report: OwnedFd,
    cleanup: Vec<OsString>,
    program: OsString,
    args: Vec<OsString>,
}

/// How the program ended.
enum Ending {
    Exited(i32),
    Killed(Signal),
}

/// Runs the supervisor on `args` (the argv after the mode word) and returns
/// the exit code; the program's death by a signal is re-raised instead.
pub(super) fn main(args: &[OsString]) -> i32 {
    let Some(call) = parse(args) else {
        let _ = writeln!(
            std::io::stderr(),
            "error: {} is internal to hrr",
            super::MODE
        );
        return 2;
    };
    let Some(given_mask) = prepare(call.parent) else {
        return 1;
    };
    // A group made for the program (the supervisor leads it) goes to the
    // program, which leads a group of its own as it would unsupervised.
    let own_group = getpgrp() == getpid();
    let mut program = Command::new(&call.program);
    program.args(&call.args);
    if own_group {
        program.process_group(0);
    }
    // The spawn keeps this process's signal mask, in which the wake-up
    // signals are blocked: the program gets the mask `hrr` gave it, else
    // it could not be interrupted, or stopped by TERM (only by KILL).
    // SAFETY: between fork and exec only sigprocmask(2) is called, which is
    // async-signal-safe, and nothing is allocated.
    unsafe {
        program.pre_exec(move || {
            sigprocmask(SigmaskHow::SIG_SETMASK, Some(&given_mask), None)
                .map_err(std::io::Error::from)
        });
    }
    let mut report = std::fs::File::from(call.report);
    let pid = match program.spawn() {
        Ok(child) => Pid::from_raw(child.id() as i32),
        Err(e) => {
            let errno = e.raw_os_error().unwrap_or(Errno::EIO as i32);
            let _ = report.write_all(&(-errno).to_le_bytes());
            return 127;
        }
    };
    if own_group {
        // Joining it keeps `hrr`'s TERM and KILL of the group reaching both,
        // and its id reserved until `hrr` reaps the supervisor.
        let _ = setpgid(Pid::from_raw(0), pid);
    }
    let _ = report.write_all(&pid.as_raw().to_le_bytes());
    drop(report);
    let_go_of_stdio();
    let group = if own_group { pid } else { getpgrp() };
    match wait_for(pid, group, call.parent) {
        Some(ending) => {
            tree::kill_all();
            relay(ending)
        }
        None => {
            if let Some((program, args)) = call.cleanup.split_first() {
                run_bounded(program, args);
            }
            tree::kill_all();
            1
        }
    }
}

/// Parses the command line `hrr` built; `None` when it is not one.
fn parse(args: &[OsString]) -> Option<Call> {
    let number = |i: usize| args.get(i)?.to_str()?.parse::<i32>().ok();
    let parent = Pid::from_raw(number(0).filter(|&p| p > 1)?);
    let fd = number(1).filter(|&fd| fd > 2)?;
    let n = usize::try_from(number(2)?).ok()?;
    let cleanup = args.get(3..3 + n)?.to_vec();
    let (program, rest) = args.get(3 + n..)?.split_first()?;
    // SAFETY: the descriptor is only looked at here; ownership is taken
    // below only once fcntl(2) confirmed it is open.
    let open = unsafe {
        fcntl(
            BorrowedFd::borrow_raw(fd),
            FcntlArg::F_SETFD(FdFlag::FD_CLOEXEC),
        )
    };
    open.ok()?;
    Some(Call {
        parent,
        // SAFETY: an open descriptor handed over by `hrr` for this process
        // alone; nothing else here owns it.
        report: unsafe { OwnedFd::from_raw_fd(fd) },
        cleanup,
        program: program.clone(),
        args: rest.to_vec(),
    })
}

/// Signal handling, subreaper and parent-death signal, each as far as the
/// system allows; returns the signal mask `hrr` gave this process (the
/// program's), or `None` when `parent` is already gone (it died before the
/// parent-death signal was armed).
fn prepare(parent: Pid) -> Option<SigSet> {
    let wake = SigAction::new(
        SigHandler::Handler(woken),
        SaFlags::empty(),
        SigSet::empty(),
    );
    for sig in WAKE {
        // SAFETY: `woken` only stores to an atomic, which is
        // async-signal-safe.
        let Ok(old) = (unsafe { sigaction(sig, &wake) }) else {
            continue;
        };
        if old.handler() == SigHandler::SigIgn && sig != Signal::SIGCHLD {
            // Ignored when `hrr` started (`nohup`): the program inherits
            // that, as it would without a supervisor.
            // SAFETY: puts back SIG_IGN, which runs no code.
            let _ = unsafe { sigaction(sig, &old) };
        }
    }
    // A report or cleanup write to a closed pipe must not end the
    // supervisor; the program gets the default action back from the spawn.
    // SAFETY: SIG_IGN runs no code.
    let _ = unsafe { nix::sys::signal::signal(Signal::SIGPIPE, SigHandler::SigIgn) };
    // Blocked except while waiting (see `wait_for`), so none is missed
    // between a check and the wait; the program's spawn unblocks them.
    let given = SigSet::thread_get_mask().unwrap_or_else(|_| SigSet::empty());
    let _ = wake_set().thread_block();
    let _ = prctl::set_child_subreaper(true);
    let _ = prctl::set_pdeathsig(Signal::SIGTERM);
    (getppid() == parent).then_some(given)
}

/// Set by TERM, INT or HUP: the program's group is being stopped.
static STOPPING: AtomicBool = AtomicBool::new(false);

extern "C" fn woken(sig: nix::libc::c_int) {
    if sig != Signal::SIGCHLD as nix::libc::c_int {
        STOPPING.store(true, Ordering::SeqCst);
    }
}

fn wake_set() -> SigSet {
    let mut set = SigSet::empty();
    for sig in WAKE {
        set.add(sig);
    }
    set
}

/// Points stdin, stdout and stderr at /dev/null, so only the program holds
/// the output it was given.
fn let_go_of_stdio() {
    let Ok(null) = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/null")
    else {
        return;
    };
    let _ = nix::unistd::dup2_stdin(&null);
    let _ = nix::unistd::dup2_stdout(&null);
    let _ = nix::unistd::dup2_stderr(&null);
}

/// Reaps children until `program` ends and returns how; `None` when `hrr`
/// (`parent`) died first. Descendants re-parented here are reaped as they
/// end. Once the program's process group (`group`) is being stopped, the
/// descendants outside it are killed, as the group's signals miss them:
/// else they would outlive a supervisor that the group's KILL ends too.
fn wait_for(program: Pid, group: Pid, parent: Pid) -> Option<Ending> {
    loop {
        if getppid() != parent {
            return None;
        }
        let stopping = STOPPING.load(Ordering::SeqCst);
        if stopping {
            tree::kill_outside(group.as_raw());
        }
        let tick = TimeSpec::from_duration(if stopping { STOP_TICK } else { TICK });
        match waitpid(None::<Pid>, Some(WaitPidFlag::WNOHANG)) {
            Ok(WaitStatus::Exited(pid, code)) if pid == program => {
                return Some(Ending::Exited(code))
            }
            Ok(WaitStatus::Signaled(pid, sig, _)) if pid == program => {
                return Some(Ending::Killed(sig))
            }
            Ok(WaitStatus::StillAlive) => {
                // The wake-up signals are delivered only here.
                let _ = nix::poll::ppoll(&mut [], Some(tick), Some(SigSet::empty()));
            }
            Ok(_) | Err(Errno::EINTR) => {}
            // No child at all: the program is gone and its status lost.
            Err(_) => return Some(Ending::Exited(1)),
        }
    }
}

/// Ends this process as the program ended: its exit code, or death by its
/// signal (with no core file of the supervisor's own).
fn relay(ending: Ending) -> i32 {
    let sig = match ending {
        Ending::Exited(code) => return code,
        Ending::Killed(sig) => sig,
    };
    let _ = nix::sys::resource::setrlimit(nix::sys::resource::Resource::RLIMIT_CORE, 0, 0);
    // SAFETY: SIG_DFL runs no code.
    let _ = unsafe { nix::sys::signal::signal(sig, SigHandler::SigDfl) };
    let mut only = SigSet::empty();
    only.add(sig);
    let _ = only.thread_unblock();
    let _ = raise(sig);
    // A signal whose default action does not end a process.
    128 + sig as i32
}

/// Runs the cleanup command with no input or output, for at most
/// [`CLEANUP_LIMIT`].
fn run_bounded(program: &OsString, args: &[OsString]) {
    let Ok(mut child) = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
    else {
        return;
    };
    let until = Instant::now() + CLEANUP_LIMIT;
    while Instant::now() < until {
        if !matches!(child.try_wait(), Ok(None)) {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    let _ = child.wait();
}
