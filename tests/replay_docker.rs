//! `hrr replay --replay docker` with a fake `docker` (and `sudo`) on PATH:
//! the test player reached through symlinks, recording every argv and
//! running the "container" command itself.
#![cfg(unix)]

mod common;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::{stderr, test_player, ReplayArchive, Sandbox};
use serde_json::Value;

const IMAGE: &str = "rocm/hrr-test:7.0";

struct Rig {
    sb: Sandbox,
    root: PathBuf,
    bin: PathBuf,
    archive: ReplayArchive,
}

impl Rig {
    fn new() -> Rig {
        let sb = Sandbox::new();
        let root = sb.path().join("cap.hrr");
        let archive = common::write_replay_archive(&root, 4242, &["fill_ones", "saxpy"]);
        let bin = sb.path().join("bin");
        std::fs::create_dir_all(&bin).unwrap();
        std::fs::create_dir_all(sb.path().join("state")).unwrap();
        for name in ["docker", "sudo"] {
            std::os::unix::fs::symlink(test_player(), bin.join(name)).unwrap();
        }
        Rig {
            sb,
            root,
            bin,
            archive,
        }
    }

    fn file(&self, name: &str) -> PathBuf {
        self.sb.path().join(name)
    }

    /// `hrr -c docker.image=IMAGE [-c sets…] replay --replay docker --json`
    /// with the fake docker first on PATH.
    fn replay(&self, scenario: &str, sets: &[&str]) -> assert_cmd::Command {
        let mut cmd = self.sb.hrr();
        cmd.env("HRR_TEST_SCENARIO", scenario)
            .env("PATH", format!("{}:/usr/bin:/bin", self.bin.display()))
            .env("HRR_TEST_DOCKER_LOG", self.file("docker.jsonl"))
            .env("HRR_TEST_DOCKER_STATE", self.file("state"))
            .args(["-c", &format!("docker.image={IMAGE}")]);
        for set in sets {
            cmd.args(["-c", set]);
        }
        cmd.arg("replay")
            .arg(&self.root)
            .args(["--replay", "docker", "--json"]);
        cmd
    }

    /// Every recorded argv, oldest first.
    fn calls(&self) -> Vec<Vec<String>> {
        std::fs::read_to_string(self.file("docker.jsonl"))
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    /// The replay's `docker run` (the one with a container name).
    fn replay_call(&self) -> Vec<String> {
        self.calls()
            .into_iter()
            .find(|c| c.iter().any(|a| a == "--name"))
            .expect("a named docker run")
    }
}

fn result(out: &std::process::Output) -> (Value, String) {
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(out));
    let json: Value = serde_json::from_slice(&out.stdout).unwrap();
    let log = std::fs::read_to_string(json["log"].as_str().unwrap()).unwrap();
    (json, log)
}

#[test]
fn the_docker_command_mounts_read_only_names_the_container_and_uses_no_shell() {
    let rig = Rig::new();
    let out = rig.replay("pass", &[]).output().unwrap();
    let (json, log) = result(&out);
    assert_eq!(json["mode"], "docker");
    assert_eq!(json["exit_code"], 0);
    let events = format!("[HRR] Archive : {} events", rig.archive.events);
    assert!(log.contains(&events), "{log}");
    assert!(log.contains("\n[HRR] PASS\n"), "{log}");

    let calls = rig.calls();
    // docker info (sudo auto), the probe of each in-image player, the replay.
    let docker = rig.bin.join("docker").display().to_string();
    assert_eq!(calls[0], ["docker", "info"]);
    assert_eq!(
        calls[1],
        [
            "docker",
            "run",
            "--rm",
            "-e",
            "LD_LIBRARY_PATH=/opt/rocm/lib",
            IMAGE,
            "hrr-playback",
            "--version"
        ]
    );
    assert_eq!(calls[2][6], "/opt/rocm/bin/hrr-playback");
    let run = rig.replay_call();
    let name = run[6].clone();
    assert!(name.starts_with("hrr-replay-"), "{run:?}");
    let root = std::fs::canonicalize(&rig.root).unwrap();
    let want: Vec<String> = [
        "docker",
        "run",
        "--rm",
        "--init",
        "-t",
        "--name",
        &name,
        "--device=/dev/kfd",
        "--device=/dev/dri",
        "-v",
        &format!("{}:/arch:ro", root.display()),
        "-e",
        "HIP_VISIBLE_DEVICES=0",
        "-e",
        "HIP_HRR_REPLAY_PROGRESS_SECONDS=30",
        "-e",
        "LD_LIBRARY_PATH=/opt/rocm/lib",
        IMAGE,
        "/opt/rocm/bin/hrr-playback",
        "--sync-after-launch",
        "--trace-kernels",
        "--max-wall-seconds",
        "1860",
        "/arch/pid-4242",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    assert_eq!(run, want);
    let command: Vec<&str> = json["command"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert_eq!(command[0], docker, "hrr runs the docker it found on PATH");
    assert!(!calls
        .iter()
        .flatten()
        .any(|a| a == "sh" || a == "bash" || a == "-c" || a == "-lc"));
}

#[test]
fn a_docker_timeout_kills_the_named_container_and_the_client_group() {
    let rig = Rig::new();
    let child_file = rig.file("child.pid");
    let start = Instant::now();
    let out = rig
        .replay("hang", &[])
        .env("HRR_TEST_CHILD_PID_FILE", &child_file)
        .args(["--timeout", "2"])
        .output()
        .unwrap();
    assert!(
        start.elapsed() < Duration::from_secs(10),
        "{:?}",
        start.elapsed()
    );
    let (json, log) = result(&out);
    assert_eq!(json["timed_out"], true);
    assert_eq!(log.lines().last(), Some("[hrr] replay timed out after 2s"));
    let name = rig.replay_call()[6].clone();
    assert!(rig
        .calls()
        .contains(&vec!["docker".to_string(), "kill".into(), name]));
    let child: i32 = std::fs::read_to_string(&child_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(
        !Path::new(&format!("/proc/{child}")).exists()
            || std::fs::read_to_string(format!("/proc/{child}/stat"))
                .unwrap()
                .contains(") Z")
    );
}

#[test]
fn sudo_is_used_only_when_docker_needs_it() {
    let rig = Rig::new();
    let out = rig
        .replay("pass", &[])
        .env("HRR_TEST_DOCKER_NEEDS_SUDO", "1")
        .output()
        .unwrap();
    result(&out);
    let calls = rig.calls();
    assert_eq!(calls[0], ["docker", "info"]);
    let docker = rig.bin.join("docker").display().to_string();
    assert_eq!(calls[1], ["sudo", "-n", &docker, "info"]);
    let named: Vec<&Vec<String>> = calls
        .iter()
        .filter(|c| c.iter().any(|a| a == "--name"))
        .collect();
    assert_eq!(named[0][..3], ["sudo", "-n", docker.as_str()]);

    let rig = Rig::new();
    result(&rig.replay("pass", &["docker.sudo=false"]).output().unwrap());
    assert!(rig.calls().iter().all(|c| c[0] == "docker"));
}

#[test]
fn mount_clr_mounts_the_host_player_and_libraries_read_only() {
    let rig = Rig::new();
    let clr = rig.sb.path().join("clr-build");
    std::fs::create_dir_all(clr.join("hipamd/lib")).unwrap();
    std::fs::write(clr.join("hipamd/lib/libamdhip64.so.7.2.53211"), b"").unwrap();
    let player = test_player();
    let out = rig
        .replay(
            "pass",
            &[
                "docker.mount_clr=true",
                &format!("docker.clr_build={}", clr.display()),
                &format!("playback.path={}", player.display()),
            ],
        )
        .output()
        .unwrap();
    let (json, log) = result(&out);
    assert_eq!(json["exit_code"], 0);
    assert!(log.contains("[HRR] PASS"));
    let run = rig.replay_call();
    let joined = run.join(" ");
    assert!(
        joined.contains(&format!(
            "-v {}:/opt/hrr/bin/hrr-playback:ro",
            player.display()
        )),
        "{joined}"
    );
    assert!(
        joined.contains(&format!(
            "-v {}:/opt/hrr/lib:ro",
            clr.join("hipamd/lib").display()
        )),
        "{joined}"
    );
    assert!(
        joined.contains("-e LD_LIBRARY_PATH=/opt/hrr/lib:/opt/rocm/lib"),
        "{joined}"
    );
    assert!(
        joined.contains(&format!(
            "{IMAGE} /opt/hrr/bin/hrr-playback --sync-after-launch"
        )),
        "{joined}"
    );
    assert_eq!(run.last().map(String::as_str), Some("/arch/pid-4242"));
    assert!(
        !rig.calls()
            .iter()
            .any(|c| c.contains(&"--version".to_string())),
        "no probe with mount_clr"
    );
}

#[test]
fn an_image_without_a_player_is_an_error_with_the_way_out() {
    let rig = Rig::new();
    let out = rig
        .replay("pass", &[])
        .env("HRR_TEST_IMAGE_PLAYER", "/nowhere/hrr-playback")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(
        err.contains(&format!("error: hrr-playback not found in image {IMAGE}")),
        "{err}"
    );
    assert!(err.contains("docker.mount_clr"), "{err}");
    assert!(!rig.calls().iter().any(|c| c.iter().any(|a| a == "--name")));
}

#[test]
fn the_container_gets_the_replay_environment_a_native_replay_inherits() {
    let rig = Rig::new();
    let dump = rig.file("env.json");
    let out = rig
        .replay("pass", &["docker.env=[\"MIOPEN_USER_DB_PATH\"]"])
        .env("HRR_TEST_DUMP_ENV", &dump)
        .env("HSA_XNACK", "1")
        .env("HIP_HRR_REPLAY_SYNC_WATCHDOG_MS", "5000")
        .env("AMD_LOG_LEVEL", "4")
        .env("MIOPEN_USER_DB_PATH", "/tmp/miopen db")
        .env("UNRELATED_SETTING", "x")
        .args(["--", "--progress-seconds", "7"])
        .output()
        .unwrap();
    let (json, log) = result(&out);
    assert_eq!(json["exit_code"], 0, "{log}");
    let run = rig.replay_call();
    let joined = run.join(" ");
    for e in [
        "-e AMD_LOG_LEVEL=4",
        "-e HIP_HRR_REPLAY_SYNC_WATCHDOG_MS=5000",
        "-e HSA_XNACK=1",
        "-e MIOPEN_USER_DB_PATH=/tmp/miopen db",
        "-e HIP_HRR_REPLAY_PROGRESS_SECONDS=7",
    ] {
        assert!(joined.contains(e), "{e} missing: {joined}");
    }
    assert!(!joined.contains("UNRELATED_SETTING"), "{joined}");
    let progress: Vec<&String> = run
        .iter()
        .filter(|a| a.starts_with("HIP_HRR_REPLAY_PROGRESS_SECONDS="))
        .collect();
    assert_eq!(progress.len(), 1, "set once: {run:?}");
    // What the player inside the "container" saw.
    let env: Value = serde_json::from_str(&std::fs::read_to_string(&dump).unwrap()).unwrap();
    assert_eq!(env["env"]["HSA_XNACK"], "1");
    assert_eq!(env["env"]["AMD_LOG_LEVEL"], "4");
    assert_eq!(env["env"]["MIOPEN_USER_DB_PATH"], "/tmp/miopen db");
    assert_eq!(env["HIP_HRR_REPLAY_PROGRESS_SECONDS"], "7");
    assert!(env["env"].get("UNRELATED_SETTING").is_none(), "{env}");
}

#[test]
fn a_player_killed_in_the_container_is_recorded_and_classified_as_a_native_death_by_that_signal() {
    // `docker run` exits 128 + N for a player killed by signal N (reference
    // playback-output.md §10.3): 134 for the runtime's abort(), 139 for
    // SIGSEGV. Natively both are ABORT/replay_crashed naming no kernel.
    for (scenario, signal) in [("queue_abort", 6), ("segv", 11)] {
        let rig = Rig::new();
        let (json, log) = result(&rig.replay(scenario, &[]).output().unwrap());
        assert_eq!(json["signal"], signal, "{scenario}: {json}");
        assert_eq!(json["exit_code"], Value::Null, "{scenario}: {json}");
        assert_eq!(
            log.lines().last(),
            Some(format!("[hrr] replay killed by signal {signal}").as_str()),
            "{scenario}: {log}"
        );
        let out = rig
            .sb
            .hrr()
            .args(["classify", "--format", "json", "--log"])
            .arg(json["log"].as_str().unwrap())
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        let finding: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(finding["outcome"], "ABORT", "{scenario}: {finding}");
        assert_eq!(finding["replay_signal"], signal, "{scenario}");
        if scenario == "segv" {
            assert_eq!(finding["fault_class"], "replay_crashed", "{finding}");
            assert_eq!(finding["kernel_name"], Value::Null, "{finding}");
        }
    }
}
