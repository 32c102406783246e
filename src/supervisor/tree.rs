//! The processes below this one, read from `/proc` (Linux), and killing
//! them all.

use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::sys::signal::{kill, Signal};
use nix::sys::wait::{waitpid, WaitPidFlag, WaitStatus};
use nix::unistd::Pid;

/// How long [`kill_all`] keeps at it: a process stuck in the kernel (a hung
/// GPU driver call) can take its time to die of SIGKILL.
const KILL_LIMIT: Duration = Duration::from_secs(5);

/// One process, from `/proc/<pid>/stat`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Proc {
    /// Its pid.
    pub pid: i32,
    /// Its parent's pid.
    pub ppid: i32,
    /// Its process group's id.
    pub pgid: i32,
}

/// Every process there is.
pub fn table() -> Vec<Proc> {
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    procs
        .flatten()
        .filter_map(|e| {
            let pid = e.file_name().to_str()?.parse::<i32>().ok()?;
            // `pid (comm) state ppid pgid …`; comm may hold spaces and
            // parentheses.
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            let mut fields = stat.rsplit_once(')')?.1.split_whitespace().skip(1);
            let ppid = fields.next()?.parse().ok()?;
            let pgid = fields.next()?.parse().ok()?;
            Some(Proc { pid, ppid, pgid })
        })
        .collect()
}

/// Every descendant of `root` in `table`.
fn descendants(root: i32, table: &[Proc]) -> Vec<Proc> {
    let mut found: Vec<Proc> = Vec::new();
    let mut parents = vec![root];
    while let Some(parent) = parents.pop() {
        for p in table.iter().filter(|p| p.ppid == parent) {
            found.push(*p);
            parents.push(p.pid);
        }
    }
    found
}

/// SIGKILLs every descendant of this process outside the process group
/// `group`: those a signal to the group misses (they called `setsid` or
/// `setpgid`).
pub fn kill_outside(group: i32) {
    let me = std::process::id() as i32;
    for p in descendants(me, &table()) {
        if p.pgid != group {
            let _ = kill(Pid::from_raw(p.pid), Signal::SIGKILL);
        }
    }
}

/// SIGKILLs every descendant of this process and reaps them, again and
/// again, until `waitpid` reports no child left (or [`KILL_LIMIT`] passed).
/// This process is the child subreaper, so a descendant whose parent died
/// becomes its child: when it has no child, nothing is left below it (and
/// `/proc` is not even read).
pub fn kill_all() {
    let me = std::process::id() as i32;
    let until = Instant::now() + KILL_LIMIT;
    loop {
        loop {
            match waitpid(None::<Pid>, Some(WaitPidFlag::WNOHANG)) {
                Ok(WaitStatus::StillAlive) => break,
                Ok(_) | Err(Errno::EINTR) => {}
                Err(_) => return,
            }
        }
        if Instant::now() >= until {
            return;
        }
        for p in descendants(me, &table()) {
            let _ = kill(Pid::from_raw(p.pid), Signal::SIGKILL);
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn descendants_follow_every_generation_and_nothing_else() {
        let table: Vec<Proc> = [(10, 1), (11, 10), (12, 11), (13, 1), (14, 12), (15, 13)]
            .into_iter()
            .map(|(pid, ppid)| Proc { pid, ppid, pgid: 0 })
            .collect();
        let mut below: Vec<i32> = descendants(10, &table).iter().map(|p| p.pid).collect();
        below.sort();
        assert_eq!(below, [11, 12, 14]);
        assert!(descendants(14, &table).is_empty());
    }
}
