//! The embedded example workflow `hrr flaky` (DESIGN §5): three native
//! replays of one archive with the test player standing in for
//! `hrr-playback`, and the verdict on whether they agree.
#![cfg(unix)]

mod common;

use std::path::PathBuf;

use common::{script, stderr, stdout, test_player, Sandbox};

/// A sandbox with `cap.hrr/pid-4242` launching the one kernel `vector_add`
/// and a readable stand-in for /dev/kfd.
struct Rig {
    sb: Sandbox,
    pid_dir: PathBuf,
}

impl Rig {
    fn new() -> Rig {
        let sb = Sandbox::new();
        let archive =
            common::write_replay_archive(&sb.path().join("cap.hrr"), 4242, &["vector_add"]);
        sb.write("kfd", "");
        Rig {
            pid_dir: archive.dir,
            sb,
        }
    }

    /// `hrr flaky <pid-dir>` replaying with `player` in `scenario`.
    fn flaky(&self, player: &std::path::Path, scenario: &str) -> std::process::Output {
        self.sb
            .hrr()
            .env("HRR_TEST_SCENARIO", scenario)
            .args(["-c", &format!("playback.path={}", player.display())])
            .args([
                "-c",
                &format!("replay.kfd={}", self.sb.path().join("kfd").display()),
            ])
            .arg("flaky")
            .arg(&self.pid_dir)
            .output()
            .unwrap()
    }
}

#[test]
fn three_replays_that_fault_alike_are_stable() {
    let rig = Rig::new();
    let out = rig.flaky(&test_player(), "fault_abort");
    let run = "MAF illegal_memory_access in vector_add";
    assert_eq!(
        stdout(&out),
        format!("stable: {run}; {run}; {run}\n"),
        "{}",
        stderr(&out)
    );
    assert_eq!(out.status.code(), Some(0));
    for i in 1..=3 {
        assert!(
            stderr(&out).contains(&format!("run {i}: {run}")),
            "{}",
            stderr(&out)
        );
    }
}

#[test]
fn a_replay_that_ends_differently_is_flaky_and_exits_1() {
    let rig = Rig::new();
    // A player that faults on its second replay only; its identity checks
    // (--version, --info) go straight to the test player.
    let counter = rig.sb.path().join("replays");
    let player = script(
        &rig.sb.path().join("bin"),
        "playback",
        &format!(
            "#!/bin/sh\nfor a in \"$@\"; do case \"$a\" in --version|--info) exec '{player}' \"$@\";; esac; done\n\
             n=$(cat '{counter}' 2>/dev/null || echo 0); n=$((n + 1)); echo \"$n\" > '{counter}'\n\
             if [ \"$n\" = 2 ]; then HRR_TEST_SCENARIO=fault_abort; export HRR_TEST_SCENARIO; fi\n\
             exec '{player}' \"$@\"\n",
            player = test_player().display(),
            counter = counter.display()
        ),
    );
    let out = rig.flaky(&player, "pass");
    assert_eq!(
        stdout(&out),
        "FLAKY: PASS replay_pass; MAF illegal_memory_access in vector_add; PASS replay_pass\n",
        "{}",
        stderr(&out)
    );
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(std::fs::read_to_string(counter).unwrap(), "3\n");
}

#[test]
fn flaky_is_listed_as_embedded_and_needs_an_archive() {
    let sb = Sandbox::new();
    let listed = stdout(&sb.hrr().args(["-v", "--list"]).output().unwrap());
    assert!(
        listed.contains("flaky          embedded in hrr"),
        "{listed}"
    );
    let help = stdout(&sb.hrr().args(["help", "flaky"]).output().unwrap());
    assert!(help.contains("Usage: hrr flaky <pid-dir>"), "{help}");
    let out = sb.hrr().arg("flaky").output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        stderr(&out),
        "error: flaky.lua:7: usage: hrr flaky <pid-dir>\n"
    );
}
