//! `hrr replay` (native) end to end with the test player standing in for
//! `hrr-playback`: every way a replay ends, the pty, timeouts, Ctrl-C, the
//! player's command line and environment, and the safety refusals.
#![cfg(unix)]

mod common;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::{stderr, stdout, test_player, ReplayArchive, Sandbox};
use serde_json::Value;

/// A sandbox with a capture root `cap.hrr/pid-4242` (three launches, see
/// [`common::write_replay_archive`]) and a readable stand-in for /dev/kfd.
struct Rig {
    sb: Sandbox,
    root: PathBuf,
    pid_dir: PathBuf,
    archive: ReplayArchive,
}

impl Rig {
    fn new() -> Rig {
        let sb = Sandbox::new();
        let root = sb.path().join("cap.hrr");
        let archive =
            common::write_replay_archive(&root, 4242, &["fill_ones", "vector_add", "saxpy"]);
        sb.write("kfd", "");
        Rig {
            sb,
            root,
            pid_dir: archive.dir.clone(),
            archive,
        }
    }

    /// The `[HRR] Archive :` start line the player prints for the archive.
    fn archive_line(&self) -> String {
        let a = &self.archive;
        format!(
            "[HRR] Archive : {} events, {} kernels, {} blobs, {} code objects\n",
            a.events,
            a.launches.len(),
            a.blobs,
            a.code_objects
        )
    }

    fn file(&self, name: &str) -> PathBuf {
        self.sb.path().join(name)
    }

    /// `hrr -c playback.path=<test player> -c replay.kfd=<temp file> replay`.
    fn replay(&self, scenario: &str) -> assert_cmd::Command {
        self.replay_with(scenario, &[])
    }

    /// [`Rig::replay`] with more `-c KEY=VALUE` settings (all `-c` go before
    /// the subcommand: clap keeps only the subcommand's occurrences of a
    /// global option when it appears on both sides).
    fn replay_with(&self, scenario: &str, sets: &[&str]) -> assert_cmd::Command {
        let mut cmd = self.sb.hrr();
        cmd.env("HRR_TEST_SCENARIO", scenario)
            .arg("-c")
            .arg(format!("playback.path={}", test_player().display()))
            .arg("-c")
            .arg(format!("replay.kfd={}", self.file("kfd").display()));
        for set in sets {
            cmd.args(["-c", set]);
        }
        cmd.arg("replay");
        cmd
    }
}

/// Runs to completion and returns the `--json` result, the log text and
/// the process output.
fn run_json(
    cmd: &mut assert_cmd::Command,
    archive: &Path,
) -> (Value, String, std::process::Output) {
    let out = cmd.arg(archive).arg("--json").output().unwrap();
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    let json: Value = serde_json::from_str(&stdout(&out)).expect("json result");
    let log = std::fs::read_to_string(json["log"].as_str().unwrap()).unwrap();
    (json, log, out)
}

fn last_line(text: &str) -> &str {
    text.lines().last().unwrap_or_default()
}

/// A process is gone when /proc has no entry for it, or only a zombie's.
fn gone(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit(')')
            .next()
            .is_some_and(|rest| rest.trim_start().starts_with('Z')),
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

#[test]
fn a_passing_replay_is_logged_whole_with_its_exit_code() {
    let rig = Rig::new();
    let (json, log, out) = run_json(&mut rig.replay("pass"), &rig.root);
    assert_eq!(json["exit_code"], 0);
    assert_eq!(json["signal"], Value::Null);
    assert_eq!(json["timed_out"], false);
    assert_eq!(json["mode"], "native");
    assert_eq!(json["gpu"], 0, "no rocm-smi on PATH: GPU 0");
    let command: Vec<&str> = json["command"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    let pid_dir = std::fs::canonicalize(&rig.pid_dir).unwrap();
    assert_eq!(
        command,
        [
            test_player().to_str().unwrap(),
            "--sync-after-launch",
            "--trace-kernels",
            "--max-wall-seconds",
            "1860",
            pid_dir.to_str().unwrap(),
        ]
    );
    assert!(log.starts_with(&rig.archive_line()), "{log}");
    assert!(log.contains("\n[HRR] PASS\n"), "{log}");
    assert_eq!(last_line(&log), "[hrr] replay exited with code 0");

    let path = PathBuf::from(json["log"].as_str().unwrap());
    assert_eq!(path.parent().unwrap(), rig.sb.path().join("work"));
    let name = path.file_name().unwrap().to_str().unwrap();
    let re = regex::Regex::new(r"^hrr-replay-pid-4242-\d{8}T\d{6}Z-\d+\.log$").unwrap();
    assert!(re.is_match(name), "{name}");
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(
        std::fs::metadata(&path).unwrap().permissions().mode() & 0o777,
        0o600
    );
    assert!(stderr(&out).contains("[hrr] replay exited with code 0"));
}

/// (scenario, exit code, signal, a line the player printed, last log line).
type Ending = (&'static str, Option<i64>, Option<i64>, String, &'static str);

#[test]
fn every_ending_is_recorded_with_its_exit_code_or_signal() {
    let rig = Rig::new();
    let a = &rig.archive;
    let last = a.last_launch();
    let (d2h_seq, d2h_bytes) = *a.d2h.last().unwrap();
    // From reference playback-output.md §1.4, §2e–§2j; SIGABRT = 6, SIGSEGV
    // = 11. Faults, crashes and the watchdog happen at the archive's last
    // launch; its event index is its sequence id (one thread, from 0).
    let cases: Vec<Ending> = vec![
        ("d2h_fail", Some(1), None, format!("[HRR] kernarg D2H FAIL seq={d2h_seq}: {d2h_bytes} bytes"), "[hrr] replay exited with code 1"),
        ("fault_error", Some(1), None, format!("[HRR] Fatal: T{} Event {} (hipModuleLaunchKernel) returned 700 (an illegal memory access was encountered) — aborting replay", a.thread, last.seq), "[hrr] replay exited with code 1"),
        ("fatal_api", Some(1), None, "[HRR] Replay aborted due to fatal HIP error — exiting".into(), "[hrr] replay exited with code 1"),
        ("version_mismatch", Some(1), None, "[HRR] Version mismatch in ".into(), "[hrr] replay exited with code 1"),
        ("watchdog", Some(124), None, format!("[HRR][WATCHDOG] GPU sync did not complete within 60000 ms at: kernel #{} \"{}\" (seq={}, grid=[{},1,1] block=[{},1,1])", a.launches.len(), last.name, last.seq, last.grid[0], last.block[0]), "[hrr] replay exited with code 124"),
        ("divergence", Some(2), None, "[HRR] Replay stopped: data divergence exceeded threshold".into(), "[hrr] replay exited with code 2"),
        ("queue_abort", None, Some(6), "aborting with error : HSA_STATUS_ERROR_EXCEPTION".into(), "[hrr] replay killed by signal 6"),
        ("segv", None, Some(11), format!("[HRR launch] seq={} kernel={} launch=MOD", last.seq, a.launches.len()), "[hrr] replay killed by signal 11"),
    ];
    for (scenario, code, signal, printed, marker) in &cases {
        let (json, log, _) = run_json(&mut rig.replay(scenario), &rig.root);
        assert_eq!(json["exit_code"].as_i64(), *code, "{scenario}");
        assert_eq!(json["signal"].as_i64(), *signal, "{scenario}");
        assert_eq!(json["timed_out"], false, "{scenario}");
        assert!(log.contains(printed.as_str()), "{scenario}: {log}");
        assert_eq!(last_line(&log), *marker, "{scenario}");
    }
}

#[test]
fn an_aborting_player_keeps_its_buffered_stdout_on_the_pty_but_not_through_a_pipe() {
    let rig = Rig::new();
    let (json, log, _) = run_json(&mut rig.replay("fault_abort"), &rig.root);
    assert_eq!(json["signal"], 6);
    assert_eq!(json["exit_code"], Value::Null);
    // stdout start lines, printed before the fault and never flushed by the player:
    assert!(log.contains(&rig.archive_line()), "{log}");
    // the runtime names the kernel that faulted: the archive's last launch
    assert!(
        log.contains(&format!(
            "Memory Fault Error [host: node01, GPU index: 0, faulting addr: 0x7f3a2c600000, kernel: {}]\n",
            rig.archive.last_launch().name
        )),
        "{log}"
    );
    assert!(
        log.contains("[HRR] All code objects pre-loaded OK.\n"),
        "{log}"
    );
    assert!(log.contains("Memory access fault by GPU node-2 (Agent handle: 0x55d5c2a1e6b0) on address 0x7f3a2c600000. Reason: Page not present or supervisor privilege.\n"));
    assert_eq!(last_line(&log), "[hrr] replay killed by signal 6");

    // The same player as upstream triage runs it (`2>&1 | tee log`): both
    // streams into one pipe. stdout is block-buffered there and abort()
    // discards it: only the stderr lines survive.
    let (mut reader, writer) = std::io::pipe().unwrap();
    let mut child = std::process::Command::new(test_player())
        .arg(&rig.pid_dir)
        .arg("--sync-after-launch")
        .env("HRR_TEST_SCENARIO", "fault_abort")
        .stdout(writer.try_clone().unwrap())
        .stderr(writer)
        .spawn()
        .unwrap();
    let mut piped = String::new();
    std::io::Read::read_to_string(&mut reader, &mut piped).unwrap();
    let status = child.wait().unwrap();
    assert_eq!(
        std::os::unix::process::ExitStatusExt::signal(&status),
        Some(6)
    );
    assert!(
        piped.contains("Memory access fault by GPU node-2"),
        "{piped}"
    );
    assert!(!piped.contains("[HRR] Archive :"), "{piped}");
    assert!(
        !piped.contains("[HRR] All code objects pre-loaded OK."),
        "{piped}"
    );
}

#[test]
fn a_hung_player_ignoring_sigterm_is_killed_with_its_child_at_the_timeout() {
    let rig = Rig::new();
    let child_file = rig.file("child.pid");
    let player_file = rig.file("player.pid");
    let start = Instant::now();
    let (json, log, _) = run_json(
        rig.replay("hang")
            .env("HRR_TEST_CHILD_PID_FILE", &child_file)
            .env("HRR_TEST_PID_FILE", &player_file)
            .args(["--timeout", "2"]),
        &rig.root,
    );
    let took = start.elapsed();
    assert!(took < Duration::from_secs(10), "took {took:?}");
    assert!(took >= Duration::from_secs(2), "took {took:?}");
    assert_eq!(json["timed_out"], true);
    assert_eq!(json["signal"], 9, "SIGTERM is ignored, so KILL ends it");
    let last = rig.archive.last_launch();
    let hung = format!(
        "[HRR launch] seq={} kernel={} launch=MOD",
        last.seq,
        rig.archive.launches.len()
    );
    assert!(log.contains(&hung), "{log}");
    assert_eq!(last_line(&log), "[hrr] replay timed out after 2s");
    let child: i32 = std::fs::read_to_string(&child_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let player: i32 = std::fs::read_to_string(&player_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(gone(child), "the player's child {child} survived");
    assert!(gone(player), "the player {player} survived");
}

#[test]
fn ctrl_c_on_hrr_stops_the_players_group_and_marks_the_log() {
    let rig = Rig::new();
    let child_file = rig.file("child.pid");
    let player_file = rig.file("player.pid");
    let log_path = rig.file("interrupted.log");
    let mut hrr = rig.sb.hrr_process();
    hrr.env("HRR_TEST_SCENARIO", "hang")
        .env("HRR_TEST_CHILD_PID_FILE", &child_file)
        .env("HRR_TEST_PID_FILE", &player_file)
        .arg("-c")
        .arg(format!("playback.path={}", test_player().display()))
        .arg("-c")
        .arg(format!("replay.kfd={}", rig.file("kfd").display()))
        .arg("replay")
        .arg(&rig.root)
        .arg("--log")
        .arg(&log_path)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let running = common::default_signals(&mut hrr).spawn().unwrap();
    let child: i32 = wait_for_file(&child_file, Duration::from_secs(30))
        .trim()
        .parse()
        .unwrap();
    let player: i32 = wait_for_file(&player_file, Duration::from_secs(5))
        .trim()
        .parse()
        .unwrap();
    let start = Instant::now();
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(running.id() as i32),
        nix::sys::signal::Signal::SIGINT,
    )
    .unwrap();
    let out = common::wait_bounded(running, Duration::from_secs(60));
    assert!(start.elapsed() < Duration::from_secs(10));
    assert_eq!(out.status.code(), Some(130), "stderr: {}", stderr(&out));
    assert!(
        stderr(&out).contains("error: replay interrupted by signal 2"),
        "{}",
        stderr(&out)
    );
    let log = std::fs::read_to_string(&log_path).unwrap();
    assert_eq!(
        last_line(&log),
        "[hrr] replay interrupted: hrr received signal 2"
    );
    assert!(gone(child), "the player's child {child} survived");
    assert!(gone(player), "the player {player} survived");
}

#[test]
fn the_player_gets_its_flags_gpu_and_environment_on_a_terminal() {
    let rig = Rig::new();
    let dump = rig.file("env.json");
    rig.replay_with(
        "pass",
        &[
            "rocm.path=/opt/rocm-x",
            "replay.progress_seconds=5",
            "replay.sync=event",
        ],
    )
    .env("HRR_TEST_DUMP_ENV", &dump)
    .env("LD_LIBRARY_PATH", "::")
    .arg(&rig.pid_dir)
    .args(["--gpu", "3", "--", "--verbose", "--timing"])
    .assert()
    .success();
    let env: Value = serde_json::from_str(&std::fs::read_to_string(&dump).unwrap()).unwrap();
    let argv: Vec<&str> = env["argv"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    // The archive goes last: the player takes its last non-dash argument
    // as the archive. --max-wall-seconds is the 30m default timeout + 60 s.
    let pid_dir = rig.pid_dir.display().to_string();
    assert_eq!(
        &argv[1..],
        [
            "--sync-after-event",
            "--trace-kernels",
            "--max-wall-seconds",
            "1860",
            "--verbose",
            "--timing",
            pid_dir.as_str(),
        ]
    );
    assert_eq!(env["HIP_VISIBLE_DEVICES"], "3");
    assert_eq!(env["HIP_HRR_REPLAY_PROGRESS_SECONDS"], "5");
    assert_eq!(
        env["LD_LIBRARY_PATH"], "/opt/rocm-x/lib",
        "'::' from the caller adds nothing"
    );
    assert_eq!(
        env["stdout_tty"], true,
        "stdout must be a terminal so it is line-buffered"
    );
    assert_eq!(env["own_process_group"], true);

    rig.replay_with("pass", &["replay.trace_kernels=false"])
        .env("HRR_TEST_DUMP_ENV", &dump)
        .arg(&rig.root)
        .arg("--no-sync")
        .assert()
        .success();
    let env: Value = serde_json::from_str(&std::fs::read_to_string(&dump).unwrap()).unwrap();
    let pid_dir = rig.pid_dir.display().to_string();
    assert_eq!(
        env["argv"].as_array().unwrap()[1..],
        ["--max-wall-seconds", "1860", pid_dir.as_str()],
        "{env}"
    );
    assert_eq!(env["LD_LIBRARY_PATH"], "/opt/rocm/lib");
}

#[test]
fn an_option_value_in_extra_args_cannot_replace_the_archive() {
    // An option this player does not know, with a value: the player ignores
    // the option, so its value would be the archive if it came last
    // (reference playback-output.md §10.1).
    let rig = Rig::new();
    let out = rig
        .replay("pass")
        .arg(&rig.root)
        .args(["--json", "--", "--newer-option", "7"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    let json: Value = serde_json::from_str(&stdout(&out)).expect("json result");
    let log = std::fs::read_to_string(json["log"].as_str().unwrap()).unwrap();
    assert_eq!(json["exit_code"], 0, "{log}");
    assert!(log.contains(&rig.archive_line()), "{log}");
    assert!(log.contains("\n[HRR] PASS\n"), "{log}");
}

#[test]
fn the_wall_limit_follows_the_timeout_and_the_users_own_limits_are_kept() {
    let rig = Rig::new();
    let dump = rig.file("env.json");
    let argv_and_env = |cmd: &mut assert_cmd::Command| {
        cmd.env("HRR_TEST_DUMP_ENV", &dump)
            .env("HIP_HRR_REPLAY_PROGRESS_SECONDS", "40")
            .assert()
            .success();
        let env: Value = serde_json::from_str(&std::fs::read_to_string(&dump).unwrap()).unwrap();
        let argv: Vec<String> = env["argv"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap().to_string())
            .collect();
        (argv, env["HIP_HRR_REPLAY_PROGRESS_SECONDS"].clone())
    };
    let (argv, _) = argv_and_env(rig.replay("pass").arg(&rig.root).args(["--timeout", "90s"]));
    assert_eq!(argv[3..5], ["--max-wall-seconds", "150"], "{argv:?}");
    let (argv, _) = argv_and_env(rig.replay("pass").arg(&rig.root).args(["--timeout", "0"]));
    assert_eq!(
        argv[3..5],
        ["--max-wall-seconds", "0"],
        "0 = no limit: {argv:?}"
    );

    // The user's own --max-wall-seconds and --progress-seconds stand: no
    // second limit, and the variable (which overrides the flag) carries
    // the user's value, not replay.progress_seconds or hrr's environment.
    let (argv, progress) = argv_and_env(rig.replay("pass").arg(&rig.root).args([
        "--timeout",
        "90s",
        "--",
        "--max-wall-seconds",
        "7200",
        "--progress-seconds",
        "5",
    ]));
    let pid_dir = rig.pid_dir.display().to_string();
    assert_eq!(
        argv[1..],
        [
            "--sync-after-launch",
            "--trace-kernels",
            "--max-wall-seconds",
            "7200",
            "--progress-seconds",
            "5",
            pid_dir.as_str()
        ]
    );
    assert_eq!(progress, "5");
}

#[test]
fn gpu_auto_takes_the_device_with_most_free_vram_from_rocm_smi() {
    let rig = Rig::new();
    let fixture =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/fixtures/rocm_smi_vram.txt");
    let bin = rig.sb.path().join("bin");
    common::script(
        &bin,
        "rocm-smi",
        &format!("#!/bin/sh\nexec cat '{}'\n", fixture.display()),
    );
    let dump = rig.file("env.json");
    let (json, _, _) = run_json(
        rig.replay("pass")
            .env("PATH", format!("{}:/usr/bin:/bin", bin.display()))
            .env("HRR_TEST_DUMP_ENV", &dump),
        &rig.root,
    );
    // Fixture: GPU[1] has 274877906944 - 1073741824 bytes free, GPU[0] far less.
    assert_eq!(json["gpu"], 1);
    let env: Value = serde_json::from_str(&std::fs::read_to_string(&dump).unwrap()).unwrap();
    assert_eq!(env["HIP_VISIBLE_DEVICES"], "1");
}

#[test]
fn a_flood_of_verbose_output_is_captured_completely_and_fast() {
    const MB: u64 = 200;
    let rig = Rig::new();
    // What the player writes, straight into a file.
    let direct = rig.file("direct.txt");
    let status = std::process::Command::new(test_player())
        .arg(&rig.pid_dir)
        .env("HRR_TEST_SCENARIO", "flood")
        .env("HRR_TEST_FLOOD_MB", MB.to_string())
        .stdout(std::process::Stdio::null())
        .stderr(std::fs::File::create(&direct).unwrap())
        .status()
        .unwrap();
    assert!(status.success());
    let count = |text: &[u8]| {
        text.split(|b| *b == b'\n')
            .filter(|l| l.starts_with(b"[HRR] Event "))
            .count()
    };
    let written = count(&std::fs::read(&direct).unwrap());
    std::fs::remove_file(&direct).unwrap();

    let start = Instant::now();
    let (json, _, _) = run_json(
        rig.replay("flood").env("HRR_TEST_FLOOD_MB", MB.to_string()),
        &rig.root,
    );
    let secs = start.elapsed().as_secs_f64();
    let log = std::fs::read(json["log"].as_str().unwrap()).unwrap();
    assert_eq!(count(&log), written, "every verbose line reaches the log");
    // stdout (pty) and stderr (pipe) are merged in arrival order, so the
    // summary may land before the last pipe-full of verbose lines.
    assert!(log.windows(11).any(|w| w == b"[HRR] PASS\n"));
    assert!(log.ends_with(b"\n[hrr] replay exited with code 0\n"));
    let rate = MB as f64 * 1.048576 / secs;
    eprintln!("flood: {MB} MiB captured in {secs:.2} s = {rate:.0} MB/s (debug build; see hrr-bench-replay)");
    // Generous for a loaded 2-core machine and a debug build; the release
    // number comes from the benchmark.
    assert!(rate > 20.0, "{rate:.0} MB/s");
}

#[test]
fn an_unreadable_kfd_stops_before_anything_runs_or_is_written() {
    let rig = Rig::new();
    let pid_file = rig.file("player.pid");
    let out = rig
        .replay_with("pass", &["replay.kfd=/nonexistent/kfd"])
        .env("HRR_TEST_PID_FILE", &pid_file)
        .arg(&rig.root)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(
        err.contains("error: cannot replay natively: /nonexistent/kfd is not readable"),
        "{err}"
    );
    assert!(!pid_file.exists(), "the player must not run");
    assert!(
        !rig.sb.path().join("work").exists()
            || std::fs::read_dir(rig.sb.path().join("work"))
                .unwrap()
                .next()
                .is_none()
    );
}

#[test]
fn logs_inside_the_archive_and_repair_are_refused() {
    let rig = Rig::new();
    let pid_file = rig.file("player.pid");
    let inside = rig.root.join("replay.log");
    let out = rig
        .replay("pass")
        .env("HRR_TEST_PID_FILE", &pid_file)
        .arg(&rig.pid_dir)
        .arg("--log")
        .arg(&inside)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("never writes into an archive"),
        "{}",
        stderr(&out)
    );
    assert!(!inside.exists());
    assert!(!pid_file.exists());

    let out = rig
        .replay("pass")
        .arg(&rig.root)
        .args(["--", "--repair"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("refusing to pass --repair"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_root_with_several_processes_names_them() {
    let rig = Rig::new();
    rig.sb.write("cap.hrr/pid-5000/events.bin", "");
    let out = rig.replay("pass").arg(&rig.root).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(
        err.contains(
            "is a capture root with 2 processes (pid-4242, pid-5000); pass one pid-* directory"
        ),
        "{err}"
    );
}

#[test]
fn verbose_echoes_the_player_live_on_stderr_and_quiet_prints_nothing() {
    let rig = Rig::new();
    let out = rig
        .sb
        .hrr()
        .env("HRR_TEST_SCENARIO", "d2h_fail")
        .arg("-v")
        .arg("-c")
        .arg(format!("playback.path={}", test_player().display()))
        .arg("-c")
        .arg(format!("replay.kfd={}", rig.file("kfd").display()))
        .arg("replay")
        .arg(&rig.root)
        .output()
        .unwrap();
    let err = stderr(&out);
    let (seq, bytes) = *rig.archive.d2h.last().unwrap();
    assert!(
        err.contains(&format!(
            "\n[HRR] kernarg D2H FAIL seq={seq}: {bytes} bytes"
        )),
        "{err}"
    );
    assert!(err.contains("\n[HRR] FAIL\n"), "{err}");
    let out = rig
        .replay("d2h_fail")
        .arg("-q")
        .arg(&rig.root)
        .output()
        .unwrap();
    assert_eq!(stderr(&out), "");
}

#[test]
fn markdown_output_and_a_chosen_log_file() {
    let rig = Rig::new();
    let log = rig.file("mine.log");
    let out = rig
        .replay("segv")
        .arg(&rig.root)
        .arg("--log")
        .arg(&log)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let text = stdout(&out);
    assert!(text.starts_with("## HRR replay — "), "{text}");
    assert!(
        text.contains("| exit code | n/a |\n| signal | 11 |\n| timed out | no |"),
        "{text}"
    );
    assert!(
        text.contains(&format!("| log | {} |", log.display())),
        "{text}"
    );
    assert_eq!(
        last_line(&std::fs::read_to_string(&log).unwrap()),
        "[hrr] replay killed by signal 11"
    );
}

#[test]
fn lua_replay_run_returns_the_result_table() {
    let rig = Rig::new();
    let script = rig.sb.write(
        "r.lua",
        r#"
local r = hrr.replay.run{archive = hrr.args[1], timeout = "2s", gpu = 2, extra_args = {"--verbose"}}
hrr.out(string.format("exit=%s signal=%s timed_out=%s gpu=%d mode=%s argc=%d\n",
  tostring(r.exit_code), tostring(r.signal), tostring(r.timed_out), r.gpu, r.mode, #r.command))
local ok, err = pcall(hrr.replay.run, {archive = hrr.args[1], gpus = 1})
hrr.out(tostring(err):match("unknown option 'gpus'") and "typo caught\n" or tostring(err))
hrr.out("pick_gpu=" .. hrr.replay.pick_gpu() .. "\n")
"#,
    );
    let mut cmd = rig.sb.hrr();
    cmd.env("HRR_TEST_SCENARIO", "queue_abort")
        .arg("-c")
        .arg(format!("playback.path={}", test_player().display()))
        .arg("-c")
        .arg(format!("replay.kfd={}", rig.file("kfd").display()))
        .arg("run")
        .arg(&script)
        .arg(&rig.root);
    let out = cmd.output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(
        stdout(&out),
        "exit=nil signal=6 timed_out=false gpu=2 mode=native argc=7\ntypo caught\npick_gpu=0\n"
    );
}

#[test]
fn without_playback_path_the_player_is_located_on_path() {
    let rig = Rig::new();
    let bin = rig.sb.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::os::unix::fs::symlink(test_player(), bin.join("hrr-playback")).unwrap();
    let mut cmd = rig.sb.hrr();
    cmd.env("HRR_TEST_SCENARIO", "pass")
        .env("PATH", format!("{}:/usr/bin:/bin", bin.display()))
        .arg("-c")
        .arg(format!("replay.kfd={}", rig.file("kfd").display()))
        .args(["-c", "rocm.path=/nonexistent"])
        .arg("replay");
    let (json, log, _) = run_json(&mut cmd, &rig.root);
    assert_eq!(
        json["command"][0],
        bin.join("hrr-playback").display().to_string()
    );
    assert!(log.contains("[HRR] PASS"));

    let out = rig
        .sb
        .hrr()
        .arg("-c")
        .arg(format!("replay.kfd={}", rig.file("kfd").display()))
        .args(["-c", "rocm.path=/nonexistent", "replay"])
        .arg(&rig.root)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("hrr-playback"), "{}", stderr(&out));
}

#[test]
fn the_finding_says_which_limit_ended_the_replay() {
    // (scenario, hrr timeout, extra player args, stopped_by, last log line).
    let cases = [
        (
            "hang",
            "2s",
            "",
            "hrr_timeout",
            "[hrr] replay timed out after 2s",
        ),
        (
            "hang",
            "30s",
            "\"--max-wall-seconds\", \"1\"",
            "player_wall_limit",
            "[hrr] replay exited with code 124",
        ),
        (
            "watchdog",
            "30s",
            "",
            "player_watchdog",
            "[hrr] replay exited with code 124",
        ),
        ("pass", "30s", "", "nil", "[hrr] replay exited with code 0"),
    ];
    let rig = Rig::new();
    let script = rig.sb.write(
        "stopped.lua",
        r#"
local extra = load("return {" .. hrr.args[3] .. "}")()
local r = hrr.replay.run{archive = hrr.args[1], timeout = hrr.args[2], extra_args = extra}
local f = hrr.classify{logs = {r.log}, replay = r}
hrr.out(tostring(f.replay.stopped_by) .. "|" .. f.outcome .. "|" .. r.log .. "\n")
"#,
    );
    for (scenario, timeout, extra, stopped_by, last) in cases {
        let out = rig
            .sb
            .hrr()
            .env("HRR_TEST_SCENARIO", scenario)
            .arg("-c")
            .arg(format!("playback.path={}", test_player().display()))
            .arg("-c")
            .arg(format!("replay.kfd={}", rig.file("kfd").display()))
            .arg("run")
            .arg(&script)
            .args([rig.root.to_str().unwrap(), timeout, extra])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{scenario}: {}", stderr(&out));
        let text = stdout(&out);
        let fields: Vec<&str> = text.trim_end().split('|').collect();
        let log = std::fs::read_to_string(fields[2]).unwrap();
        assert_eq!(fields[0], stopped_by, "{scenario} {extra}: {log}");
        let outcome = if scenario == "pass" { "PASS" } else { "HANG" };
        assert_eq!(fields[1], outcome, "{scenario} {extra}");
        assert_eq!(last_line(&log), last, "{scenario} {extra}");
    }
}

#[test]
fn gpu_indices_count_within_the_device_masks_hrr_was_given() {
    let rig = Rig::new();
    let dump = rig.file("env.json");
    // A job given GPUs 2 and 3: --gpu 1 is the second, selected as 3.
    let (json, _, _) = run_json(
        rig.replay("pass")
            .env("HIP_VISIBLE_DEVICES", "2,3")
            .env("HRR_TEST_DUMP_ENV", &dump)
            .args(["--gpu", "1"]),
        &rig.root,
    );
    assert_eq!(json["gpu"], 3);
    let env: Value = serde_json::from_str(&std::fs::read_to_string(&dump).unwrap()).unwrap();
    assert_eq!(env["HIP_VISIBLE_DEVICES"], "3");

    // Past the visible GPUs: an error, and nothing runs or is written.
    let log = rig.file("never.log");
    let out = rig
        .replay("pass")
        .env("HIP_VISIBLE_DEVICES", "2,3")
        .arg(&rig.root)
        .args(["--gpu", "2", "--log"])
        .arg(&log)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        stderr(&out).lines().last(),
        Some("error: GPU 2 is not visible to the replay: it sees 2 GPU(s) with HIP_VISIBLE_DEVICES=2,3, and GPU indices count within them (0..1)")
    );
    assert!(!log.exists());

    // auto only considers visible GPUs: the fixture's GPU 1 has the most
    // free VRAM, but ROCR_VISIBLE_DEVICES leaves only GPU 0.
    let fixture =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/fixtures/rocm_smi_vram.txt");
    let bin = rig.sb.path().join("bin");
    common::script(
        &bin,
        "rocm-smi",
        &format!("#!/bin/sh\nexec cat '{}'\n", fixture.display()),
    );
    let (json, _, _) = run_json(
        rig.replay("pass")
            .env("PATH", format!("{}:/usr/bin:/bin", bin.display()))
            .env("ROCR_VISIBLE_DEVICES", "0")
            .env("HRR_TEST_DUMP_ENV", &dump),
        &rig.root,
    );
    assert_eq!(json["gpu"], 0);
    let env: Value = serde_json::from_str(&std::fs::read_to_string(&dump).unwrap()).unwrap();
    assert_eq!(env["HIP_VISIBLE_DEVICES"], "0");
    assert_eq!(
        env["env"]["ROCR_VISIBLE_DEVICES"], "0",
        "the mask is inherited"
    );
}
