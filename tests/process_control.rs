//! Issue 8 item 4: the replay under faults, with the test player. The
//! timeout of a player ignoring SIGTERM and Ctrl-C (SIGINT) are covered in
//! replay_native.rs; here: SIGTERM and SIGHUP to `hrr`, a daemon that
//! escapes the player's process group holding its output, a flood followed
//! by a hang, and a player killed from outside. In each: no process of the
//! player's group (nor the escaped daemon) survives, the log holds what was
//! printed and ends with its marker, and the exit code is the documented one
//! (src/commands/replay.rs: 0 when the replay ran, 128 + signal when `hrr`
//! was interrupted).
#![cfg(target_os = "linux")]

mod common;

use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use common::{stderr, test_player, Sandbox};
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

/// Megabytes of verbose lines the flood scenarios write.
const FLOOD_MB: &str = "20";

struct Rig {
    sb: Sandbox,
    root: PathBuf,
    /// What the player prints before the last launch runs.
    last_launch: String,
}

impl Rig {
    fn new() -> Rig {
        let sb = Sandbox::new();
        let root = sb.path().join("cap.hrr");
        let archive =
            common::write_replay_archive(&root, 4242, &["fill_ones", "vector_add", "saxpy"]);
        sb.write("kfd", "");
        let last = archive.launches.last().unwrap();
        let last_launch = format!(
            "[HRR launch] seq={} kernel={} launch=MOD",
            last.seq,
            archive.launches.len()
        );
        Rig {
            sb,
            root,
            last_launch,
        }
    }

    fn file(&self, name: &str) -> PathBuf {
        self.sb.path().join(name)
    }

    /// `hrr replay` of `scenario` with the log at `replay.log`, started in
    /// the background with the player's and its child's pid files.
    fn spawn(&self, scenario: &str, extra: &[&str]) -> Child {
        let mut cmd = self.sb.hrr_process();
        cmd.env("HRR_TEST_SCENARIO", scenario)
            .env("HRR_TEST_FLOOD_MB", FLOOD_MB)
            .env("HRR_TEST_CHILD_PID_FILE", self.file("child.pid"))
            .env("HRR_TEST_PID_FILE", self.file("player.pid"))
            .arg("-c")
            .arg(format!("playback.path={}", test_player().display()))
            .arg("-c")
            .arg(format!("replay.kfd={}", self.file("kfd").display()))
            .arg("replay")
            .arg(&self.root)
            .arg("--log")
            .arg(self.file("replay.log"))
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        common::default_signals(&mut cmd).spawn().unwrap()
    }

    fn pid(&self, name: &str) -> i32 {
        wait_for_file(&self.file(name), Duration::from_secs(30))
            .trim()
            .parse()
            .unwrap()
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.file("replay.log")).unwrap()
    }
}

fn wait_for_file(path: &Path, limit: Duration) -> String {
    let until = Instant::now() + limit;
    while Instant::now() < until {
        if let Ok(text) = std::fs::read_to_string(path) {
            if !text.is_empty() {
                return text;
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("{} did not appear", path.display());
}

/// `(pid, ppid, pgid, state)` of every process, from /proc.
fn processes() -> Vec<(i32, i32, i32, char)> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| {
            let pid: i32 = e.file_name().to_str()?.parse().ok()?;
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            let mut f = stat.rsplit_once(')')?.1.split_whitespace();
            let state = f.next()?.chars().next()?;
            let ppid = f.next()?.parse().ok()?;
            let pgid = f.next()?.parse().ok()?;
            Some((pid, ppid, pgid, state))
        })
        .collect()
}

/// Live (not zombie) processes of the process group `pgid`, and `pid` when
/// it is alive.
fn survivors(pgid: i32, pid: i32) -> Vec<i32> {
    processes()
        .into_iter()
        .filter(|&(p, _, g, state)| (g == pgid || p == pid) && state != 'Z')
        .map(|(p, ..)| p)
        .collect()
}

fn last_line(text: &str) -> &str {
    text.lines().last().unwrap_or_default()
}

#[test]
fn sigterm_and_sighup_to_hrr_stop_the_group_and_mark_the_log() {
    for (signal, code) in [(Signal::SIGTERM, 143), (Signal::SIGHUP, 129)] {
        let rig = Rig::new();
        let hrr = rig.spawn("hang", &[]);
        let child = rig.pid("child.pid");
        let player = rig.pid("player.pid");
        kill(Pid::from_raw(hrr.id() as i32), signal).unwrap();
        let start = Instant::now();
        let out = common::wait_bounded(hrr, Duration::from_secs(60));
        assert!(start.elapsed() < Duration::from_secs(10), "{signal}");
        assert_eq!(out.status.code(), Some(code), "{}", stderr(&out));
        let sig = signal as i32;
        let errors: Vec<String> = stderr(&out)
            .lines()
            .filter(|l| l.starts_with("error:"))
            .map(String::from)
            .collect();
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert!(
            errors[0].starts_with(&format!("error: replay interrupted by signal {sig}")),
            "{errors:?}"
        );
        let log = rig.log();
        assert!(log.contains(&rig.last_launch), "{log}");
        assert_eq!(
            last_line(&log),
            format!("[hrr] replay interrupted: hrr received signal {sig}")
        );
        assert_eq!(survivors(player, child), Vec::<i32>::new(), "{signal}");
    }
}

#[test]
fn a_daemon_escaping_the_group_with_the_pty_is_killed_and_the_log_closes() {
    let rig = Rig::new();
    let hrr = rig.spawn("hang_grandchild", &[]);
    let daemon = rig.pid("child.pid");
    let player = rig.pid("player.pid");
    let start = Instant::now();
    let out = common::wait_bounded(hrr, Duration::from_secs(60));
    assert!(start.elapsed() < Duration::from_secs(10));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let log = rig.log();
    assert!(log.contains("\n[HRR] PASS\n"), "{log}");
    assert_eq!(last_line(&log), "[hrr] replay exited with code 0");
    // The daemon called setsid: it is in neither the player's group nor its
    // session, and still it must not outlive the replay.
    assert_eq!(survivors(player, daemon), Vec::<i32>::new());
}

#[test]
fn a_flood_then_a_hang_keeps_every_line_and_ends_at_the_timeout() {
    let rig = Rig::new();
    // The lines the flood writes, counted from the player run directly.
    let direct = std::process::Command::new(test_player())
        .arg(rig.root.join("pid-4242"))
        .env("HRR_TEST_SCENARIO", "flood")
        .env("HRR_TEST_FLOOD_MB", FLOOD_MB)
        .stdout(Stdio::null())
        .output()
        .unwrap();
    let count = |text: &[u8]| {
        text.split(|b| *b == b'\n')
            .filter(|l| l.starts_with(b"[HRR] Event "))
            .count()
    };
    let written = count(&direct.stderr);
    assert!(written > 100_000, "{written}");

    let hrr = rig.spawn("flood_hang", &["--timeout", "3"]);
    let child = rig.pid("child.pid");
    let player = rig.pid("player.pid");
    let out = common::wait_bounded(hrr, Duration::from_secs(60));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let log = std::fs::read(rig.file("replay.log")).unwrap();
    assert_eq!(count(&log), written, "every flood line reaches the log");
    let text = String::from_utf8_lossy(&log);
    assert!(text.contains(&rig.last_launch));
    assert_eq!(last_line(&text), "[hrr] replay timed out after 3s");
    assert_eq!(survivors(player, child), Vec::<i32>::new());
}

#[test]
fn a_player_killed_from_outside_is_recorded_and_its_group_cleaned_up() {
    let rig = Rig::new();
    let hrr = rig.spawn("hang", &["--json"]);
    let child = rig.pid("child.pid");
    let player = rig.pid("player.pid");
    kill(Pid::from_raw(player), Signal::SIGKILL).unwrap();
    let start = Instant::now();
    let out = common::wait_bounded(hrr, Duration::from_secs(60));
    assert!(start.elapsed() < Duration::from_secs(10));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["signal"], 9);
    assert_eq!(json["timed_out"], false);
    let log = rig.log();
    assert!(log.contains(&rig.last_launch), "{log}");
    assert_eq!(last_line(&log), "[hrr] replay killed by signal 9");
    // The player's `sleep` child stayed in its group: killed with it.
    assert_eq!(survivors(player, child), Vec::<i32>::new());
}
