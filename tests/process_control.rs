//! Issue 8 item 4: the replay under faults, with the test player. The
//! timeout of a player ignoring SIGTERM and Ctrl-C (SIGINT) are covered in
//! replay_native.rs; here: SIGTERM and SIGHUP to `hrr`, a daemon that
//! escapes the player's process group holding its output, a flood followed
//! by a hang, and a player killed from outside. In each: no process of the
//! player's group (nor the escaped daemon) survives, the log holds what was
//! printed and ends with its marker, and the exit code is the documented one
//! (src/commands/replay.rs: 0 when the replay ran, 128 + signal when `hrr`
//! was interrupted).
//!
//! Issue 17 item 7: nothing `hrr` starts outlives it, even when `hrr` is
//! killed with SIGKILL. A stand-in program (player, docker client, probe,
//! `hrr.exec` program) starts descendants that leave its process group and
//! session and ignore TERM and HUP; once they run, `hrr` is killed, and
//! within seconds none of them may be alive.
#![cfg(target_os = "linux")]

mod common;

use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use common::{script, stderr, test_player, Sandbox};
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
        self.spawn_with(&test_player(), scenario, extra)
    }

    /// [`Rig::spawn`] with `player` as `playback.path`.
    fn spawn_with(&self, player: &Path, scenario: &str, extra: &[&str]) -> Child {
        let mut cmd = self.sb.hrr_process();
        cmd.env("HRR_TEST_SCENARIO", scenario)
            .env("HRR_TEST_FLOOD_MB", FLOOD_MB)
            .env("HRR_TEST_CHILD_PID_FILE", self.file("child.pid"))
            .env("HRR_TEST_PID_FILE", self.file("player.pid"))
            .arg("-c")
            .arg(format!("playback.path={}", player.display()))
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

/// Live (not zombie) processes of the process group `pgid`, and `pid` when
/// it is alive.
fn survivors(pgid: i32, pid: i32) -> Vec<i32> {
    common::processes()
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

/// How many processes a [`hostile`] program is, itself included.
const HOSTILE: usize = 5;

/// A program at `dir/name` that starts, below itself, one child in its own
/// group and two that `setsid` (one with a child of its own), all ignoring
/// TERM and HUP and sleeping; it appends every pid, its own included, to
/// `pids` and waits.
fn hostile(dir: &Path, name: &str, pids: &Path) -> PathBuf {
    let body = format!(
        r#"#!/bin/sh
trap '' TERM HUP
pids='{}'
setsid sh -c 'sleep 300 & echo $! >> "$0"; echo $$ >> "$0"; wait' "$pids" &
setsid sh -c 'echo $$ >> "$0"; exec sleep 300' "$pids" &
sh -c 'echo $$ >> "$0"; exec sleep 300' "$pids" &
echo $$ >> "$pids"
echo started
wait
"#,
        pids.display()
    );
    script(dir, name, &body)
}

/// The pids a [`hostile`] program wrote to `path`, once all are there.
fn hostile_pids(path: &Path) -> Vec<i32> {
    let until = Instant::now() + Duration::from_secs(30);
    while Instant::now() < until {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        let pids: Vec<i32> = text.lines().filter_map(|l| l.trim().parse().ok()).collect();
        if pids.len() == HOSTILE {
            return pids;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("the {HOSTILE} pids did not appear in {}", path.display());
}

/// Those of `pids` still alive (not gone, not a zombie).
fn alive(pids: &[i32]) -> Vec<i32> {
    let table = common::processes();
    pids.iter()
        .copied()
        .filter(|p| table.iter().any(|&(q, .., state)| q == *p && state != 'Z'))
        .collect()
}

/// Waits up to five seconds for every one of `pids` to end.
fn assert_all_end(pids: &[i32], what: &str) {
    let until = Instant::now() + Duration::from_secs(5);
    while !alive(pids).is_empty() && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(20));
    }
    let left = alive(pids);
    for &pid in &left {
        let _ = kill(Pid::from_raw(pid), Signal::SIGKILL);
    }
    assert_eq!(left, Vec::<i32>::new(), "{what}: these outlived hrr");
}

/// Sends `signal` to `hrr` and checks it died of it (its usual ending for
/// SIGINT outside a replay, and for SIGKILL).
fn kill_hrr(mut hrr: Child, signal: Signal) {
    use std::os::unix::process::ExitStatusExt;
    kill(Pid::from_raw(hrr.id() as i32), signal).unwrap();
    let status = hrr.wait().unwrap();
    assert_eq!(status.signal(), Some(signal as i32), "{status:?}");
}

#[test]
fn sigkill_of_hrr_during_a_replay_leaves_nothing_of_the_player_alive() {
    let rig = Rig::new();
    let pids = rig.file("pids");
    let player = hostile(rig.sb.path(), "player", &pids);
    let hrr = rig.spawn_with(&player, "hang", &[]);
    let started = hostile_pids(&pids);
    kill_hrr(hrr, Signal::SIGKILL);
    assert_all_end(&started, "the player's tree");
}

#[test]
fn sigkill_of_hrr_during_a_docker_replay_kills_the_container_and_the_client() {
    let rig = Rig::new();
    let pids = rig.file("pids");
    let kills = rig.file("kills");
    let bin = rig.file("bin");
    let client = hostile(&bin, "client", &pids);
    // `info` and the player probe succeed; the replay's `docker run` (the
    // one naming its container) is the hostile client.
    script(
        &bin,
        "docker",
        &format!(
            "#!/bin/sh\ncase \"$1 $*\" in\nkill*) echo \"$*\" >> '{}' ;;\nrun*--name*) exec '{}' ;;\nesac\nexit 0\n",
            kills.display(),
            client.display()
        ),
    );
    let mut cmd = rig.sb.hrr_process();
    cmd.env("PATH", format!("{}:/usr/bin:/bin", bin.display()))
        .args([
            "-c",
            "docker.image=rocm/hrr-test:7.0",
            "-c",
            "docker.sudo=false",
        ])
        .arg("replay")
        .arg(&rig.root)
        .args(["--replay", "docker", "--log"])
        .arg(rig.file("replay.log"))
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let hrr = common::default_signals(&mut cmd).spawn().unwrap();
    let hrr_pid = hrr.id();
    let started = hostile_pids(&pids);
    kill_hrr(hrr, Signal::SIGKILL);
    assert_all_end(&started, "the docker client's tree");
    let recorded = std::fs::read_to_string(&kills).unwrap_or_default();
    assert!(
        recorded.starts_with(&format!("kill hrr-replay-{hrr_pid}-"))
            && recorded.lines().count() == 1,
        "{recorded:?}"
    );
}

/// `hrr run x.lua` in the background with `workflow` as its text, its
/// stdout and stderr made by `stdio`.
fn spawn_workflow(sb: &Sandbox, workflow: &str, stdio: fn() -> Stdio) -> Child {
    let lua = sb.write("x.lua", workflow);
    let mut cmd = sb.hrr_process();
    cmd.arg("run").arg(&lua).stdout(stdio()).stderr(stdio());
    common::default_signals(&mut cmd).spawn().unwrap()
}

#[test]
fn an_hrr_exec_program_tree_ends_with_hrr_on_ctrl_c_and_on_sigkill() {
    for signal in [Signal::SIGINT, Signal::SIGKILL] {
        let sb = Sandbox::new();
        let pids = sb.path().join("pids");
        let program = hostile(sb.path(), "program", &pids);
        let hrr = spawn_workflow(
            &sb,
            &format!(
                "hrr.exec({{'{}'}}, {{timeout = '300s'}})\n",
                program.display()
            ),
            Stdio::null,
        );
        let started = hostile_pids(&pids);
        kill_hrr(hrr, signal);
        assert_all_end(&started, &format!("hrr.exec after {signal}"));
    }
}

#[test]
fn a_hanging_preflight_probe_ends_with_hrr_on_ctrl_c_and_on_sigkill() {
    for signal in [Signal::SIGINT, Signal::SIGKILL] {
        let sb = Sandbox::new();
        let pids = sb.path().join("pids");
        hostile(&sb.path().join("bin"), "rocm-smi", &pids);
        sb.write(
            "cap/pid-42/manifest.json",
            r#"{"pid": 42, "parent_pid": 1, "complete": true, "event_count": 3, "blob_count": 0, "metadata": {"schema_version": 1, "runtime": {"hip_runtime_version": "7.2.53211", "comgr_version": "2.8"}, "captured_device_count": 1, "devices": [{"ordinal": 0, "properties": {"name": "Instinct MI300X", "gcn_arch_name": "gfx942"}}]}}"#,
        );
        sb.write("cap/pid-42/events.bin", "");
        let mut cmd = sb.hrr_process();
        cmd.env(
            "PATH",
            format!("{}:/usr/bin:/bin", sb.path().join("bin").display()),
        )
        .arg("preflight")
        .arg(sb.path().join("cap"))
        .stdout(Stdio::null())
        .stderr(Stdio::null());
        let hrr = common::default_signals(&mut cmd).spawn().unwrap();
        let started = hostile_pids(&pids);
        kill_hrr(hrr, signal);
        assert_all_end(&started, &format!("rocm-smi after {signal}"));
    }
}

#[test]
fn a_daemon_an_hrr_exec_program_leaves_behind_ends_with_it_and_its_output_is_kept() {
    let sb = Sandbox::new();
    let pids = sb.path().join("pids");
    let program = script(
        sb.path(),
        "program",
        &format!(
            "#!/bin/sh\npids='{}'\nsetsid sh -c 'trap \"\" TERM HUP; echo $$ >> \"$0\"; exec sleep 300' \"$pids\" &\nwhile [ ! -s \"$pids\" ]; do sleep 0.05; done\necho printed before the end\n",
            pids.display()
        ),
    );
    let hrr = spawn_workflow(
        &sb,
        &format!("local r = hrr.exec({{'{}'}}, {{timeout = '60s'}})\nhrr.out(r.stdout .. 'status ' .. r.status)\n", program.display()),
        Stdio::piped,
    );
    let out = common::wait_bounded(hrr, Duration::from_secs(60));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim_end(),
        "printed before the end\nstatus 0"
    );
    let daemon: Vec<i32> = std::fs::read_to_string(&pids)
        .unwrap()
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .collect();
    // Already gone when hrr.exec returned.
    assert_eq!(alive(&daemon), Vec::<i32>::new());
}

#[test]
fn hrr_exec_still_reports_the_programs_own_exit_code_signal_and_start_failure() {
    let sb = Sandbox::new();
    let lua = sb.write(
        "x.lua",
        "local a = hrr.exec({'sh', '-c', 'exit 7'})\n\
         local b = hrr.exec({'sh', '-c', 'kill -SEGV $$'})\n\
         local ok, err = pcall(hrr.exec, {'/nonexistent/rocm-smi'})\n\
         hrr.out(a.status .. ' ' .. tostring(a.signal) .. ' ' .. tostring(b.status) .. ' ' .. b.signal .. '\\n' .. tostring(err))\n",
    );
    let out = sb.hrr().arg("run").arg(&lua).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    let (codes, err) = text.split_once('\n').unwrap();
    assert_eq!(codes, "7 nil nil 11");
    assert!(
        err.contains("cannot run '/nonexistent/rocm-smi'")
            && err.contains("No such file or directory"),
        "{err}"
    );
}

#[test]
fn a_supervised_program_gets_the_signal_mask_hrr_had_so_int_and_term_reach_it() {
    let sb = Sandbox::new();
    let lua = sb.write(
        "x.lua",
        "local r = hrr.exec({'grep', '^SigBlk', '/proc/self/status'})\nhrr.out(r.stdout)\n",
    );
    let mut cmd = sb.hrr_process();
    let out = common::default_signals(&mut cmd)
        .arg("run")
        .arg(&lua)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    // The supervisor blocks INT, TERM, HUP and CHLD for itself only.
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim_end(),
        "SigBlk:\t0000000000000000"
    );
}

#[test]
fn a_playback_build_ends_with_hrr_on_ctrl_c_and_on_sigkill() {
    for signal in [Signal::SIGINT, Signal::SIGKILL] {
        let sb = Sandbox::new();
        let pids = sb.path().join("pids");
        hostile(&sb.path().join("bin"), "cmake", &pids);
        sb.write("src/projects/hrr/CMakeLists.txt", "project(hrr)\n");
        let mut cmd = sb.hrr_process();
        cmd.env(
            "PATH",
            format!("{}:/usr/bin:/bin", sb.path().join("bin").display()),
        )
        .arg("-c")
        .arg(format!(
            "playback.source={}",
            sb.path().join("src").display()
        ))
        .arg("-c")
        .arg(format!("rocm.path={}", sb.path().join("rocm").display()))
        .args(["playback", "--build"])
        .stdout(Stdio::null())
        .stderr(Stdio::null());
        let hrr = common::default_signals(&mut cmd).spawn().unwrap();
        let started = hostile_pids(&pids);
        kill_hrr(hrr, signal);
        assert_all_end(&started, &format!("cmake after {signal}"));
    }
}

#[test]
fn an_hrr_exec_timeout_stops_the_descendants_that_left_the_programs_group() {
    let sb = Sandbox::new();
    let pids = sb.path().join("pids");
    let program = hostile(sb.path(), "program", &pids);
    let hrr = spawn_workflow(
        &sb,
        &format!("local r = hrr.exec({{'{}'}}, {{timeout = '2s'}})\nhrr.out(tostring(r.timed_out) .. ' ' .. r.signal)\n", program.display()),
        Stdio::piped,
    );
    let started = hostile_pids(&pids);
    let out = common::wait_bounded(hrr, Duration::from_secs(60));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim_end(), "true 9");
    assert_all_end(&started, "hrr.exec after its timeout");
}

#[test]
fn the_hidden_supervisor_mode_refuses_a_hand_made_command_line_and_is_listed_nowhere() {
    let sb = Sandbox::new();
    for args in [
        &["__supervise"][..],
        &["__supervise", "1", "2", "x", "true"],
    ] {
        let out = sb.hrr().args(args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert_eq!(stderr(&out), "error: __supervise is internal to hrr\n");
    }
    let list = sb.hrr().args(["--list", "-v"]).output().unwrap();
    assert!(!common::stdout(&list).contains("supervise"));
}
