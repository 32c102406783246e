//! Issue 8 item 3: every builtin that takes an archive, and the triage
//! workflow in every mode, leaves the archive tree (contents, modes, mtimes,
//! symlinks) exactly as it was, also when the command fails or is
//! interrupted.
#![cfg(target_os = "linux")]

mod common;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::{stderr, test_player, Sandbox};
use hrr_testkit::archive::{gfx942_metadata, write_root_manifest, Manifest, ProcessArchive};
use hrr_testkit::events::{api, EventsFile, Launch};
use hrr_testkit::tree;

/// A capture root with a complete process (4242) and a crashed one (5000,
/// torn tail, no manifest), blobs, a code object and metadata.
fn capture(dir: &Path) -> PathBuf {
    let root = dir.join("cap.hrr");
    let mut done = ProcessArchive::new(4242, EventsFile::v7());
    let co = done.add_code_object(b"\x7fELF code object");
    let blob = done.add_blob(&[9; 64]);
    let mut launch = Launch::new("_Z10vector_addPfS_S_i", [4096, 1, 1], [256, 1, 1]);
    launch.code_object = co;
    let mut ev = EventsFile::v7();
    ev.module_load(0x10, co)
        .malloc(0x7f00_0000_0000, 1 << 20)
        .launch(api::HIP_MODULE_LAUNCH_KERNEL, &launch)
        .memcpy_dtoh(0x1000, 0x7f00_0000_0000, 64, blob)
        .trailer();
    done.events = ev;
    done.metadata = Some(gfx942_metadata());

    let mut crashed = ProcessArchive::new(5000, EventsFile::v7());
    crashed.parent_pid = 4242;
    crashed.manifest = Manifest::None;
    crashed
        .events
        .malloc(0x7f00_0000_0000, 4096)
        .launch(api::HIP_LAUNCH_KERNEL, &launch)
        .raw(&[0x12, 0x34, 0x56]);
    done.write(&root).unwrap();
    crashed.write(&root).unwrap();
    write_root_manifest(&root, &[&done, &crashed]).unwrap();
    std::fs::write(dir.join("replay.log"), "[HRR] PASS\n").unwrap();
    root
}

/// `hrr` with the test player and a readable stand-in for /dev/kfd.
fn hrr(sb: &Sandbox, scenario: &str) -> assert_cmd::Command {
    let mut cmd = sb.hrr();
    cmd.env("HRR_TEST_SCENARIO", scenario)
        .arg("-c")
        .arg(format!("playback.path={}", test_player().display()))
        .arg("-c")
        .arg(format!("replay.kfd={}", sb.path().join("kfd").display()));
    cmd
}

#[test]
fn every_command_and_triage_mode_leaves_the_archive_untouched() {
    let sb = Sandbox::new();
    sb.write("kfd", "");
    let root = capture(sb.path());
    let pid = root.join("pid-4242");
    let (r, p) = (root.display().to_string(), pid.display().to_string());
    let log = sb.path().join("replay.log").display().to_string();
    let inside = root.join("pid-4242/finding.md").display().to_string();
    // (what, scenario, argv, exit code)
    let runs: Vec<(&str, &str, Vec<&str>, i32)> = vec![
        ("archive info root", "pass", vec!["archive", "info", &r], 0),
        (
            "archive info --json",
            "pass",
            vec!["archive", "info", &p, "--json", "--kernels", "all"],
            0,
        ),
        (
            "archive events",
            "pass",
            vec!["archive", "events", &p, "--json"],
            0,
        ),
        ("preflight", "pass", vec!["preflight", &p, "--json"], 0),
        ("replay (test player)", "pass", vec!["replay", &p], 0),
        (
            "replay of a faulting player",
            "fault_abort",
            vec!["replay", &p],
            0,
        ),
        (
            "classify --archive",
            "pass",
            vec!["classify", "--log", &log, "--archive", &p],
            0,
        ),
        (
            "triage --no-replay",
            "pass",
            vec!["triage", &r, "--no-replay"],
            0,
        ),
        (
            "triage native",
            "fault_abort",
            vec!["triage", &p, "--replay", "native", "--yes"],
            0,
        ),
        (
            "triage --all",
            "pass",
            vec!["triage", &r, "--all", "--no-replay"],
            0,
        ),
        (
            "triage -o inside (refused)",
            "pass",
            vec!["triage", &r, "--no-replay", "-o", &inside],
            1,
        ),
        (
            "replay --log inside (refused)",
            "pass",
            vec!["replay", &p, "--log", &inside],
            1,
        ),
        (
            "replay of a root with two processes (refused)",
            "pass",
            vec!["replay", &r],
            1,
        ),
    ];
    for (what, scenario, argv, code) in runs {
        let before = tree::snapshot(&root);
        let out = hrr(&sb, scenario).args(&argv).output().unwrap();
        assert_eq!(out.status.code(), Some(code), "{what}: {}", stderr(&out));
        assert_eq!(tree::snapshot(&root), before, "{what} changed the archive");
    }
    assert!(!Path::new(&inside).exists());
}

#[test]
fn an_interrupted_replay_leaves_the_archive_untouched() {
    let sb = Sandbox::new();
    sb.write("kfd", "");
    let root = capture(sb.path());
    let before = tree::snapshot(&root);
    let player_file = sb.path().join("player.pid");
    let mut cmd = sb.hrr_process();
    cmd.env("HRR_TEST_SCENARIO", "hang")
        .env("HRR_TEST_PID_FILE", &player_file)
        .arg("-c")
        .arg(format!("playback.path={}", test_player().display()))
        .arg("-c")
        .arg(format!("replay.kfd={}", sb.path().join("kfd").display()))
        .args(["triage", "--replay", "native", "--yes"])
        .arg(root.join("pid-5000"))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped());
    let running = common::default_signals(&mut cmd).spawn().unwrap();
    let until = Instant::now() + Duration::from_secs(30);
    while !player_file.exists() {
        assert!(Instant::now() < until, "the player never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(running.id() as i32),
        nix::sys::signal::Signal::SIGINT,
    )
    .unwrap();
    let out = common::wait_bounded(running, Duration::from_secs(60));
    assert_eq!(out.status.code(), Some(130), "{}", stderr(&out));
    assert_eq!(tree::snapshot(&root), before);
    assert!(tree::leftover_temp_files(sb.path()).is_empty());
}
