//! Native replay on Windows, run for real (in CI under Wine, see
//! `.ci/wine/runner`): the player on a pseudo console keeps what it
//! printed before an abort where a pipe loses it, a 5 MiB line and a
//! kernel name that is not UTF-8 come through the console as the player
//! wrote them, crash codes become the finding's `replay_exception`, a hang
//! is stopped with every process of its job, a killed `hrr` takes the
//! player's tree with it, the player is found under `HIP_PATH\bin`, and
//! GPU `auto` takes the most free VRAM `rocm-smi.exe` or `amd-smi.exe`
//! shows, else the lowest GPU it lists. Ctrl-C is not tested: Wine 8 refuses `GenerateConsoleCtrlEvent` here
//! (ERROR_INVALID_ACCESS, even after `AllocConsole`).
//!
//! The test player and the management-tool stand-in must be built for
//! Windows first (`cargo build --target x86_64-pc-windows-gnu -p
//! hrr-testkit --bin hrr-test-player --bin hrr-test-tool`): cargo itself
//! does not run under Wine.
#![cfg(windows)]

mod common;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::{all_gone, gone, stderr, stdout, ReplayArchive, Sandbox};
use serde_json::Value;

/// The Windows test player next to `hrr.exe`.
fn test_player() -> PathBuf {
    common::windows_test_bin("hrr-test-player")
}

/// A sandbox with `cap.hrr/pid-4242` (three launches).
struct Rig {
    sb: Sandbox,
    root: PathBuf,
    archive: ReplayArchive,
}

impl Rig {
    fn new() -> Rig {
        let sb = Sandbox::new();
        let root = sb.path().join("cap.hrr");
        let archive =
            common::write_replay_archive(&root, 4242, &["fill_ones", "vector_add", "saxpy"]);
        Rig { sb, root, archive }
    }

    /// The sandboxed `hrr` with what a Windows process needs from the
    /// environment (`SystemRoot`, the temp dirs) and the test player.
    fn hrr(&self, scenario: &str) -> assert_cmd::Command {
        assert_cmd::Command::from_std(self.hrr_process(scenario))
    }

    /// [`Rig::hrr`] as a plain `std::process::Command`, for tests that
    /// watch or kill the running `hrr`.
    fn hrr_process(&self, scenario: &str) -> std::process::Command {
        let mut cmd = self.sb.hrr_process();
        common::windows_env(&mut cmd);
        cmd.env("HRR_TEST_SCENARIO", scenario)
            .arg("-c")
            .arg(format!("playback.path={}", test_player().display()))
            .args(["-c", "replay.gpu=0"]);
        cmd
    }

    /// The `[HRR] Archive :` start line (stdout, buffered by the player).
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
}

/// `hrr replay --json` of the rig's root: the result and the log.
fn replay(rig: &Rig, scenario: &str, extra: &[&str]) -> (Value, String) {
    replay_with(rig, &mut rig.hrr(scenario), extra)
}

/// [`replay`] with `hrr`, a [`Rig::hrr`] the caller has set up further.
fn replay_with(rig: &Rig, hrr: &mut assert_cmd::Command, extra: &[&str]) -> (Value, String) {
    let out = hrr
        .arg("replay")
        .arg(&rig.root)
        .arg("--json")
        .args(extra)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    let json: Value = serde_json::from_str(&stdout(&out)).expect("json result");
    let log = std::fs::read_to_string(json["log"].as_str().unwrap()).unwrap();
    (json, log)
}

#[test]
fn a_passing_replay_is_logged_whole_without_console_sequences() {
    let rig = Rig::new();
    let dump = rig.sb.path().join("dump.json");
    let (json, log) = replay_with(&rig, rig.hrr("pass").env("HRR_TEST_DUMP_ENV", &dump), &[]);
    assert_eq!(json["exit_code"], 0);
    assert_eq!(json["exception"], Value::Null);
    assert!(log.starts_with(&rig.archive_line()), "{log}");
    assert!(log.contains("\n[HRR] PASS\n"), "{log}");
    for launch in &rig.archive.launches {
        assert!(
            log.contains(&format!("name=\"{}\"\n", launch.name)),
            "{log}"
        );
    }
    assert!(
        !log.contains('\x1b') && !log.contains('\r'),
        "VT sequences or CRs reached the log: {log:?}"
    );
    assert_eq!(log.lines().last(), Some("[hrr] replay exited with code 0"));
    // Same flags and variables as on Linux; the player's directory first
    // on PATH, where Windows looks for its DLLs.
    let dumped: Value = serde_json::from_str(&std::fs::read_to_string(&dump).unwrap()).unwrap();
    assert_eq!(dumped["HIP_VISIBLE_DEVICES"], "0");
    assert_eq!(dumped["HIP_HRR_REPLAY_PROGRESS_SECONDS"], "30");
    let argv: Vec<&str> = dumped["argv"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    assert_eq!(
        argv[1..5],
        [
            "--sync-after-launch",
            "--trace-kernels",
            "--max-wall-seconds",
            "1860"
        ]
    );
    let path = dumped["PATH"].as_str().unwrap();
    // hrr names the player by its resolved path (`Z:\…` under Wine), so
    // the first entry is compared as a directory, not as text.
    let first = path.split(';').next().unwrap();
    let player_dir = test_player().parent().unwrap().to_path_buf();
    assert_eq!(
        dunce::canonicalize(first).unwrap(),
        dunce::canonicalize(&player_dir).unwrap(),
        "{path}"
    );
}

#[test]
fn an_abort_keeps_its_buffered_lines_on_the_console_and_a_pipe_loses_them() {
    let rig = Rig::new();
    let (json, log) = replay(&rig, "fault_abort", &[]);
    assert_eq!(
        json["exception"], "0x00000003",
        "the legacy abort's exit code 3"
    );
    assert_eq!(
        (&json["exit_code"], &json["signal"]),
        (&Value::Null, &Value::Null)
    );
    let last = rig.archive.last_launch();
    // Buffered by the player (stdout and, as the MSVC runtime does for a
    // redirected stream, stderr) and never flushed before the abort:
    assert!(log.contains(&rig.archive_line()), "{log}");
    assert!(
        log.contains(&format!("kernel=3 launch=MOD grid=[192,1,1] block=[256,1,1] shared=0 args=2 snapshots=0 name=\"{}\"\n", last.name)),
        "the [HRR launch] line naming the faulting kernel: {log}"
    );
    assert!(log.contains(&format!("kernel: {}]\n", last.name)), "{log}");
    assert_eq!(
        log.lines().last(),
        Some("[hrr] replay crashed with 0x00000003 (abort)")
    );

    // The same player with both streams on one pipe, as a plain runner
    // would capture it: what it buffered dies with it.
    let out = std::process::Command::new(test_player())
        .arg(&rig.archive.dir)
        .args(["--sync-after-launch", "--trace-kernels"])
        .env("HRR_TEST_SCENARIO", "fault_abort")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3));
    let piped = format!("{}{}", stdout(&out), stderr(&out));
    assert!(!piped.contains("[HRR] Archive :"), "{piped}");
    assert!(!piped.contains("[HRR launch]"), "{piped}");
}

#[test]
fn an_access_violation_is_a_crashed_run_naming_no_kernel() {
    let rig = Rig::new();
    let out = rig
        .hrr("segv")
        .args(["triage", "--format", "json"])
        .arg(&rig.archive.dir)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    let f: Value = serde_json::from_slice(&out.stdout).expect("one JSON finding");
    assert_eq!(
        (f["outcome"].as_str(), f["fault_class"].as_str()),
        (Some("ABORT"), Some("replay_crashed"))
    );
    assert_eq!(f["replay_exception"], "0xC0000005");
    assert_eq!(f["replay_signal"], Value::Null);
    assert_eq!(f["kernel_name"], Value::Null);
    let log = std::fs::read_to_string(f["replay"]["log"].as_str().unwrap()).unwrap();
    assert_eq!(
        log.lines().last(),
        Some("[hrr] replay crashed with 0xC0000005 (access violation)")
    );
}

#[test]
fn a_hang_is_stopped_at_the_timeout_with_the_child_that_outlives_its_parent() {
    let rig = Rig::new();
    let child_file = rig.sb.path().join("child.pid");
    let pid_file = rig.sb.path().join("player.pid");
    let started = Instant::now();
    let out = rig
        .hrr("hang")
        .env("HRR_TEST_CHILD_PID_FILE", &child_file)
        .env("HRR_TEST_PID_FILE", &pid_file)
        .args(["triage", "--format", "json", "--timeout", "3"])
        .arg(&rig.archive.dir)
        .output()
        .unwrap();
    assert!(started.elapsed() < Duration::from_secs(60));
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    let f: Value = serde_json::from_slice(&out.stdout).expect("one JSON finding");
    assert_eq!(f["outcome"], "HANG");
    assert_eq!(f["replay"]["timed_out"], true);
    let log = std::fs::read_to_string(f["replay"]["log"].as_str().unwrap()).unwrap();
    assert_eq!(log.lines().last(), Some("[hrr] replay timed out after 3s"));
    let pid = |p: &Path| -> u32 { std::fs::read_to_string(p).unwrap().trim().parse().unwrap() };
    let (player, child) = (pid(&pid_file), pid(&child_file));
    assert!(gone(player), "the player {player} is still running");
    assert!(gone(child), "the player's child {child} is still running");
}

#[test]
fn the_player_is_found_under_hip_path_bin() {
    let sb = Sandbox::new();
    let bin = sb.path().join("hip").join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let installed = bin.join("hrr-playback.exe");
    std::fs::copy(test_player(), &installed).unwrap();
    let out = sb
        .hrr()
        .env("HIP_PATH", sb.path().join("hip"))
        .env("ROCM_PATH", sb.path().join("elsewhere"))
        .args(["playback", "--json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    let json: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(json["how"], "rocm");
    assert_eq!(
        PathBuf::from(json["path"].as_str().unwrap()),
        installed,
        "{json}"
    );
}

/// The peak memory (pagefile-backed commit) of the process `child` while
/// it ran, sampled until it exits (Wine reads the counters of a live
/// process only).
fn peak_commit(child: &std::process::Child) -> Option<usize> {
    use windows_sys::Win32::Foundation::{CloseHandle, WAIT_OBJECT_0};
    use windows_sys::Win32::System::ProcessStatus::{
        GetProcessMemoryInfo, PROCESS_MEMORY_COUNTERS,
    };
    use windows_sys::Win32::System::Threading::{
        OpenProcess, WaitForSingleObject, PROCESS_QUERY_INFORMATION, PROCESS_SYNCHRONIZE,
        PROCESS_VM_READ,
    };
    // SAFETY: a handle opened here is waited on, queried and closed here;
    // the counters structure is sized for the call.
    unsafe {
        let access = PROCESS_QUERY_INFORMATION | PROCESS_VM_READ | PROCESS_SYNCHRONIZE;
        let handle = OpenProcess(access, 0, child.id());
        if handle.is_null() {
            return None;
        }
        let mut peak = None;
        loop {
            let mut counters = PROCESS_MEMORY_COUNTERS {
                cb: std::mem::size_of::<PROCESS_MEMORY_COUNTERS>() as u32,
                ..Default::default()
            };
            if WaitForSingleObject(handle, 0) == WAIT_OBJECT_0 {
                break;
            }
            if GetProcessMemoryInfo(handle, &mut counters, counters.cb) != 0 {
                peak = peak.max(Some(counters.PeakPagefileUsage));
            }
            if WaitForSingleObject(handle, 20) == WAIT_OBJECT_0 {
                break;
            }
        }
        CloseHandle(handle);
        peak
    }
}

/// `hrr triage --format json` of `rig`'s process dir under `scenario`: the
/// finding, the log's bytes and the peak commit of `hrr.exe`.
fn triage_measured(rig: &Rig, scenario: &str) -> (Value, Vec<u8>, usize) {
    let child = rig
        .hrr_process(scenario)
        .args(["triage", "--format", "json", "--timeout", "60"])
        .arg(&rig.archive.dir)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let peak = peak_commit(&child).expect("hrr.exe's memory counters");
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    let f: Value = serde_json::from_slice(&out.stdout).expect("one JSON finding");
    let log = std::fs::read(f["replay"]["log"].as_str().unwrap()).unwrap();
    (f, log, peak)
}

#[test]
fn a_five_mib_line_and_a_kernel_name_that_is_not_utf8_come_through_the_console() {
    let sb = Sandbox::new();
    let root = sb.path().join("cap.hrr");
    let name: &[u8] = b"saxpy_\xff\xfe<\xc0\xaf>";
    let archive = common::write_replay_archive_bytes(&root, 4242, &[b"fill_ones", name]);
    let rig = Rig { sb, root, archive };
    let (_, _, plain_peak) = triage_measured(&rig, "fault_abort");
    assert!(plain_peak > 0);
    let started = Instant::now();
    let (f, log, peak) = triage_measured(&rig, "long_line_fault");
    assert!(started.elapsed() < Duration::from_secs(60));
    // The recorded name, its bytes that are not UTF-8 read as U+FFFD: not
    // the console code page's reading of them.
    let shown = "saxpy_\u{FFFD}\u{FFFD}<\u{FFFD}\u{FFFD}>";
    assert_eq!(f["kernel_name"], shown, "{f}");
    assert_eq!(f["replay_exception"], "0x00000003");
    // The log has the player's bytes, the 5 MiB line whole (the console
    // wrapped it into rows of 32767), then the lines after it.
    let mut long = b"[HRR] debug: ".to_vec();
    while long.len() < 5 << 20 {
        long.extend_from_slice(b"0123456789abcdef");
    }
    long.truncate(5 << 20);
    let lines: Vec<&[u8]> = log.split(|b| *b == b'\n').collect();
    assert!(
        lines.contains(&long.as_slice()),
        "line lengths: {:?}",
        lines.iter().map(|l| l.len()).collect::<Vec<_>>()
    );
    let launch = [b"args=2 snapshots=0 name=\"".as_slice(), name, b"\""].concat();
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with(b"[HRR launch] seq=") && l.ends_with(&launch)),
        "the [HRR launch] line of the faulting kernel, in its bytes"
    );
    assert_eq!(
        lines.iter().rev().find(|l| !l.is_empty()),
        Some(&b"[hrr] replay crashed with 0x00000003 (abort)".as_slice())
    );
    // Bounded memory: the long line is never held whole.
    assert!(
        peak < plain_peak + (4 << 20),
        "hrr.exe peaked at {peak} bytes with the 5 MiB line, {plain_peak} without"
    );
}

/// Starts `hrr triage` of the hang scenario and waits until the player
/// has started its child; returns hrr, the player's pid and the child's.
fn hanging_triage(rig: &Rig, hrr: &mut std::process::Command) -> (std::process::Child, u32, u32) {
    let child_file = rig.sb.path().join("child.pid");
    let pid_file = rig.sb.path().join("player.pid");
    let mut running = hrr
        .env("HRR_TEST_CHILD_PID_FILE", &child_file)
        .env("HRR_TEST_PID_FILE", &pid_file)
        .args(["triage", "--format", "json", "--timeout", "120"])
        .arg(&rig.archive.dir)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let started = Instant::now();
    while !child_file.is_file() {
        assert!(
            running.try_wait().unwrap().is_none(),
            "hrr ended before the player's child started"
        );
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "no child started"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let pid = |p: &Path| -> u32 { std::fs::read_to_string(p).unwrap().trim().parse().unwrap() };
    (running, pid(&pid_file), pid(&child_file))
}

#[test]
fn a_killed_hrr_takes_the_player_and_its_child_with_it() {
    let rig = Rig::new();
    let (mut hrr, player, child) = hanging_triage(&rig, &mut rig.hrr_process("hang"));
    assert!(!gone(player) && !gone(child));
    // TerminateProcess: hrr runs no code of its own any more; only the
    // Job object's kill-on-close, when Windows closes hrr's handles, can
    // end the tree.
    hrr.kill().unwrap();
    hrr.wait().unwrap();
    assert!(
        all_gone(&[player, child]),
        "the player {player} or its child {child} outlived hrr"
    );
}

/// `hrr replay --json` of the rig with `replay.gpu = auto`, the management
/// tool answering `replies` (see `hrr-test-tool`): the chosen GPU and the
/// `HIP_VISIBLE_DEVICES` the player got.
fn auto_gpu(rig: &Rig, hip_path: &Path, path: &Path, replies: &Value) -> (Value, Value) {
    let replies_file = rig.sb.path().join("replies.json");
    std::fs::write(&replies_file, replies.to_string()).unwrap();
    let dump = rig.sb.path().join("dump.json");
    let (json, _) = replay_with(
        rig,
        rig.hrr("pass")
            .env("HIP_PATH", hip_path)
            .env("PATH", path)
            .env("HRR_TEST_TOOL_REPLIES", &replies_file)
            .env("HRR_TEST_DUMP_ENV", &dump)
            .args(["-c", "replay.gpu=auto"]),
        &[],
    );
    let dumped: Value = serde_json::from_str(&std::fs::read_to_string(&dump).unwrap()).unwrap();
    (json["gpu"].clone(), dumped["HIP_VISIBLE_DEVICES"].clone())
}

#[test]
fn gpu_auto_reads_amd_smi_under_hip_path_bin_then_takes_the_lowest_listed_gpu() {
    let rig = Rig::new();
    let hip = rig.sb.path().join("hip");
    common::windows_tool(&hip.join("bin"), "amd-smi");
    let mb = |n: u64| serde_json::json!({"value": n, "unit": "MB"});
    let usage = |total: u64, used: u64| serde_json::json!({"total_vram": mb(total), "used_vram": mb(used), "free_vram": mb(total - used)});
    // amd-smi's JSON: one object per GPU, its index in `gpu`.
    let replies = serde_json::json!([{
        "args": ["metric", "--mem-usage", "--json"],
        "stdout": serde_json::json!([
            {"gpu": 0, "mem_usage": usage(196_592, 190_000)},
            {"gpu": 1, "mem_usage": usage(196_592, 100_000)},
            {"gpu": 2, "mem_usage": usage(196_592, 283)},
        ]).to_string(),
    }]);
    let nowhere = rig.sb.path().join("empty");
    assert_eq!(
        auto_gpu(&rig, &hip, &nowhere, &replies),
        (Value::from(2), Value::from("2"))
    );
    // GPUs listed without their memory: the lowest listed one.
    let replies = serde_json::json!([{
        "args": ["metric", "--mem-usage", "--json"],
        "stdout": serde_json::json!([
            {"gpu": 3, "mem_usage": {"free_vram": "N/A"}},
            {"gpu": 1, "mem_usage": {"free_vram": "N/A"}},
        ]).to_string(),
    }]);
    assert_eq!(
        auto_gpu(&rig, &hip, &nowhere, &replies),
        (Value::from(1), Value::from("1"))
    );
}

#[test]
fn gpu_auto_prefers_rocm_smi_on_path_with_the_recorded_vram_report() {
    let rig = Rig::new();
    let fixture =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/fixtures/rocm_smi_vram.txt");
    let bin = rig.sb.path().join("bin");
    common::windows_tool(&bin, "rocm-smi");
    // An amd-smi under HIP_PATH that would pick GPU 0: rocm-smi comes first.
    let hip = rig.sb.path().join("hip");
    common::windows_tool(&hip.join("bin"), "amd-smi");
    let replies = serde_json::json!([
        {
            "args": ["--showmeminfo", "vram"],
            "stdout": std::fs::read_to_string(fixture).unwrap(),
        },
        {
            "args": ["metric", "--mem-usage", "--json"],
            "stdout": r#"[{"gpu": 0, "mem_usage": {"free_vram": "100 GB"}}]"#,
        },
    ]);
    // Fixture: GPU[1] has 274877906944 - 1073741824 bytes free, GPU[0] far less.
    assert_eq!(
        auto_gpu(&rig, &hip, &bin, &replies),
        (Value::from(1), Value::from("1"))
    );
}

/// The `wsl.exe` stand-in on `PATH` answering `replies`; `hrr triage
/// --replay docker --image rocm/vllm:latest` of the rig's process dir with
/// `extra` arguments, and the argv lines `wsl.exe` got.
fn triage_through_wsl(
    rig: &Rig,
    replies: &Value,
    extra: &[&str],
) -> (std::process::Output, String) {
    let bin = rig.sb.path().join("wslbin");
    common::windows_tool(&bin, "wsl");
    let replies_file = rig.sb.path().join("replies.json");
    std::fs::write(&replies_file, replies.to_string()).unwrap();
    let calls = rig.sb.path().join("wsl.argv");
    let out = rig
        .hrr("pass")
        .env("PATH", &bin)
        .env("HRR_TEST_TOOL_REPLIES", &replies_file)
        .env("HRR_TEST_TOOL_ARGV", &calls)
        .args([
            "triage",
            "--replay",
            "docker",
            "--image",
            "rocm/vllm:latest",
        ])
        .arg(&rig.archive.dir)
        .args(extra)
        .output()
        .unwrap();
    (out, std::fs::read_to_string(calls).unwrap_or_default())
}

#[test]
fn docker_replay_without_hrr_inside_wsl_is_refused_with_the_wsl2_pointer() {
    let rig = Rig::new();
    let replies = serde_json::json!([
        {"args": ["hrr", "--version"], "stderr": "/bin/bash: line 1: hrr: command not found\n", "exit": 127},
    ]);
    let (out, calls) = triage_through_wsl(&rig, &replies, &["--format", "json"]);
    assert_eq!(calls, "hrr --version\n", "only the probe ran inside WSL");
    assert_eq!(out.status.code(), Some(1), "stderr: {}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("`wsl.exe hrr --version` failed (exit status 127): docker replay through WSL needs hrr installed inside WSL2"),
        "{err}"
    );
    let errors: Vec<&str> = err.lines().filter(|l| l.starts_with("error:")).collect();
    assert_eq!(errors.len(), 1, "{err}");
    assert!(
        errors[0].contains("docker replay is not supported on Windows")
            && errors[0].contains("run hrr inside WSL2"),
        "{err}"
    );
}

/// `C:\x\y` as WSL mounts it, worked out by hand for the test's own path.
fn mnt_path(path: &Path) -> String {
    let real = dunce::canonicalize(path).unwrap().display().to_string();
    let (drive, rest) = real.split_once(":\\").unwrap();
    format!("/mnt/{}/{}", drive.to_lowercase(), rest.replace('\\', "/"))
}

#[test]
fn docker_replay_runs_the_triage_inside_wsl_and_its_output_is_the_finding() {
    let rig = Rig::new();
    let finding = "{\n  \"schema_version\": 1,\n  \"outcome\": \"MAF\",\n  \"fault_class\": \"illegal_memory_access\",\n  \"kernel_name\": \"saxpy\"\n}\n";
    let replies = serde_json::json!([
        {"args": ["hrr", "--version"], "stdout": "hrr 0.1.0\n"},
        {"args": ["hrr"], "stdout": finding, "stderr": "[hrr] replay=docker gpu=0\n", "exit": 0},
    ]);
    let saved = rig.sb.path().join("finding.json");
    let out_arg = saved.display().to_string();
    let (out, calls) = triage_through_wsl(&rig, &replies, &["--format", "json", "-o", &out_arg]);
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    assert_eq!(stdout(&out), finding);
    assert_eq!(std::fs::read_to_string(&saved).unwrap(), finding);
    assert!(
        stderr(&out).contains("[hrr] replay=docker gpu=0\n"),
        "{}",
        stderr(&out)
    );
    assert_eq!(
        calls,
        format!(
            "hrr --version\nhrr -c docker.image=rocm/vllm:latest -c replay.gpu=0 triage {} --replay docker --format json\n",
            mnt_path(&rig.archive.dir)
        )
    );
}

#[test]
fn a_failed_triage_inside_wsl_is_one_error_line_with_its_exit_status() {
    let rig = Rig::new();
    let replies = serde_json::json!([
        {"args": ["hrr", "--version"], "stdout": "hrr 0.1.0\n"},
        {"args": ["hrr"], "stderr": "[hrr] archive=/mnt/c/x\nerror: cannot read events.bin: permission denied\n", "exit": 3},
    ]);
    let (out, _) = triage_through_wsl(&rig, &replies, &[]);
    assert_eq!(out.status.code(), Some(3), "stderr: {}", stderr(&out));
    assert!(stdout(&out).is_empty(), "{}", stdout(&out));
    let err = stderr(&out);
    let errors: Vec<&str> = err.lines().filter(|l| l.starts_with("error:")).collect();
    assert_eq!(
        errors,
        ["error: the triage inside WSL failed: cannot read events.bin: permission denied"],
        "{err}"
    );
}
