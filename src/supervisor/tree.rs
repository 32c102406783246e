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

/// `(pid, parent pid)` of every process, from `/proc/<pid>/stat`.
pub fn parents() -> Vec<(i32, i32)> {
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    procs
        .flatten()
        .filter_map(|e| {
            let pid = e.file_name().to_str()?.parse::<i32>().ok()?;
            // `pid (comm) state ppid …`; comm may hold spaces and parentheses.
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            let ppid = stat.rsplit_once(')')?.1.split_whitespace().nth(1)?;
            Some((pid, ppid.parse().ok()?))
        })
        .collect()
}

/// Every descendant of `root` in `table` (`(pid, parent pid)` pairs).
fn descendants(root: i32, table: &[(i32, i32)]) -> Vec<i32> {
    let mut found = vec![root];
    let mut next = 0;
    while next < found.len() {
        let parent = found[next];
        found.extend(
            table
                .iter()
                .filter(|(_, pp)| *pp == parent)
                .map(|(p, _)| *p),
        );
        next += 1;
    }
    found.remove(0);
    found
}

/// SIGKILLs every descendant of this process and reaps them, again and
/// again, until `waitpid` reports no child left (or [`KILL_LIMIT`] passed).
/// This process is the child subreaper, so a descendant whose parent died
/// becomes its child: when it has no child, nothing is left below it.
pub fn kill_all() {
    let me = std::process::id() as i32;
    let until = Instant::now() + KILL_LIMIT;
    loop {
        for pid in descendants(me, &parents()) {
            let _ = kill(Pid::from_raw(pid), Signal::SIGKILL);
        }
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
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn descendants_follow_every_generation_and_nothing_else() {
        let table = [(10, 1), (11, 10), (12, 11), (13, 1), (14, 12), (15, 13)];
        let mut below = descendants(10, &table);
        below.sort();
        assert_eq!(below, [11, 12, 14]);
        assert!(descendants(14, &table).is_empty());
    }
}
