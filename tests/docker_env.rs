//! The docker preflight probes the container the docker replay runs
//! (DESIGN §7): with the fake `docker` and `sudo` of the test player on
//! PATH, `hrr preflight --mode docker` and `hrr replay --replay docker` of
//! one capture, under one config, call docker the same way and start their
//! containers from the same image, overlay mounts, variables and library
//! path. A configuration the replay refuses, the preflight refuses too.
#![cfg(unix)]

mod common;

use std::collections::BTreeSet;
use std::path::PathBuf;

use common::{stderr, test_player, Sandbox};
use serde_json::Value;

const IMAGE: &str = "rocm/hrr-test:7.0";

/// Options of `docker run` that take no value (the ones hrr writes).
const FLAGS: [&str; 3] = ["--rm", "--init", "-t"];

/// A capture root with one process whose manifest carries the capture's
/// metadata (reference upstream-triage.md §4.2), and a fake docker and
/// sudo on PATH.
struct Rig {
    sb: Sandbox,
    root: PathBuf,
    bin: PathBuf,
}

impl Rig {
    fn new() -> Rig {
        let sb = Sandbox::new();
        let root = sb.path().join("cap.hrr");
        let archive = common::write_replay_archive(&root, 4242, &["fill_ones", "saxpy"]);
        let manifest_path = archive.dir.join("manifest.json");
        let mut manifest: Value =
            serde_json::from_str(&std::fs::read_to_string(&manifest_path).unwrap()).unwrap();
        manifest["metadata"] = serde_json::json!({
            "schema_version": 1,
            "runtime": {"hip_runtime_version": "7.2.53211", "comgr_version": "2.8"},
            "device_count": 1, "captured_device_count": 1,
            "devices": [{"ordinal": 0, "properties": {"name": "Instinct MI300X", "gcn_arch_name": "gfx942:sramecc+:xnack-"}}]
        });
        std::fs::write(&manifest_path, manifest.to_string()).unwrap();
        let bin = sb.path().join("bin");
        std::fs::create_dir_all(&bin).unwrap();
        for name in ["docker", "sudo"] {
            std::os::unix::fs::symlink(test_player(), bin.join(name)).unwrap();
        }
        std::fs::create_dir_all(sb.path().join("state")).unwrap();
        Rig { sb, root, bin }
    }

    /// `hrr -c docker.image=IMAGE -c sets… <args…>` with the fake docker
    /// first on PATH, recording its calls in `log`.
    fn hrr(&self, log: &str, sets: &[String], args: &[&str]) -> std::process::Output {
        let mut cmd = self.sb.hrr();
        cmd.env("PATH", format!("{}:/usr/bin:/bin", self.bin.display()))
            .env("HRR_TEST_SCENARIO", "pass")
            .env("HRR_TEST_DOCKER_LOG", self.sb.path().join(log))
            .env("HRR_TEST_DOCKER_STATE", self.sb.path().join("state"))
            .env("HRR_TEST_DOCKER_NEEDS_SUDO", "1")
            .env("HSA_XNACK", "1")
            .env("MY_SETTING", "site value")
            .env("UNRELATED_SETTING", "x")
            .args(["-c", &format!("docker.image={IMAGE}")]);
        for set in sets {
            cmd.args(["-c", set]);
        }
        cmd.args(args).arg(&self.root);
        cmd.output().unwrap()
    }

    /// Every call the fake recorded in `log`, oldest first.
    fn calls(&self, log: &str) -> Vec<Vec<String>> {
        std::fs::read_to_string(self.sb.path().join(log))
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }
}

/// One `docker run` as hrr called it: the client before `run`, and the
/// container's image, `-v` and `-e` values.
#[derive(Debug)]
struct Run {
    client: Vec<String>,
    image: String,
    mounts: BTreeSet<String>,
    env: BTreeSet<String>,
    command: Vec<String>,
}

/// The `docker run` calls hrr made: as the fake sudo received them (the
/// client hrr chose; the fake docker then records the same run again).
fn runs(calls: &[Vec<String>]) -> Vec<Run> {
    calls
        .iter()
        .filter(|c| c[0] == "sudo" || !calls.iter().any(|c| c[0] == "sudo"))
        .filter_map(|c| {
            let at = c.iter().position(|a| a == "run")?;
            let mut run = Run {
                client: c[..at].to_vec(),
                image: String::new(),
                mounts: BTreeSet::new(),
                env: BTreeSet::new(),
                command: Vec::new(),
            };
            let mut args = c[at + 1..].iter();
            while let Some(a) = args.next() {
                match a.as_str() {
                    "-v" => run.mounts.extend(args.next().cloned()),
                    "-e" => run.env.extend(args.next().cloned()),
                    "--name" => {
                        args.next();
                    }
                    f if FLAGS.contains(&f) || f.starts_with("--device=") => {}
                    image => {
                        run.image = image.to_string();
                        run.command = args.cloned().collect();
                        break;
                    }
                }
            }
            Some(run)
        })
        .collect()
}

#[test]
fn the_preflight_probes_the_container_the_replay_runs() {
    let rig = Rig::new();
    let opt = rig.sb.path().join("opt");
    std::fs::create_dir_all(opt.join("bin")).unwrap();
    std::fs::create_dir_all(opt.join("lib")).unwrap();
    std::fs::create_dir_all(opt.join("rocr")).unwrap();
    let player = opt.join("bin/hrr-playback");
    std::os::unix::fs::symlink(test_player(), &player).unwrap();
    std::fs::write(opt.join("lib/libamdhip64.so.7.2.53211"), b"").unwrap();
    std::fs::write(opt.join("rocr/libhsa-runtime64.so.1"), b"").unwrap();
    // No docker.clr_build: the CLR overlay is lib/ beside the player's bin/.
    let sets = [
        "docker.mount_clr=true".to_string(),
        format!("playback.path={}", player.display()),
        format!("playback.rocr_lib={}", opt.join("rocr").display()),
        "docker.extra_ld=/opt/extra/lib".to_string(),
        "docker.env=[\"MY_SETTING\"]".to_string(),
    ];

    let out = rig.hrr(
        "preflight.jsonl",
        &sets,
        &["preflight", "--mode", "docker", "--json"],
    );
    assert!(
        serde_json::from_slice::<Value>(&out.stdout).is_ok(),
        "preflight printed no report: {}",
        stderr(&out)
    );
    let out = rig.hrr(
        "replay.jsonl",
        &sets,
        &["replay", "--replay", "docker", "--json"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));

    let probes = runs(&rig.calls("preflight.jsonl"));
    let replays = runs(&rig.calls("replay.jsonl"));
    assert_eq!(replays.len(), 1, "{replays:?}");
    let replay = &replays[0];
    let probe = probes
        .iter()
        .find(|r| r.command.first().is_some_and(|c| c == "bash"))
        .expect("the GPU probe container");

    let docker = rig.bin.join("docker").display().to_string();
    assert_eq!(replay.client, ["sudo", "-n", docker.as_str()]);
    assert_eq!(
        probe.client, replay.client,
        "same client, same sudo decision"
    );
    assert_eq!(
        (probe.image.as_str(), replay.image.as_str()),
        (IMAGE, IMAGE)
    );

    let overlay: BTreeSet<String> = [
        format!("{}:/opt/hrr/lib:ro", opt.join("bin/../lib").display()),
        format!("{}:/opt/hrr/rocr:ro", opt.join("rocr").display()),
    ]
    .into();
    assert_eq!(probe.mounts, overlay);
    let root = std::fs::canonicalize(&rig.root).unwrap();
    let replay_only: BTreeSet<String> = [
        format!("{}:/arch:ro", root.display()),
        format!("{}:/opt/hrr/bin/hrr-playback:ro", player.display()),
    ]
    .into();
    assert_eq!(
        replay
            .mounts
            .difference(&replay_only)
            .cloned()
            .collect::<BTreeSet<_>>(),
        overlay
    );

    let ld = "/opt/hrr/lib:/opt/hrr/rocr:/opt/extra/lib:/opt/rocm/lib";
    let shared: BTreeSet<String> = [
        "HSA_XNACK=1".to_string(),
        "MY_SETTING=site value".to_string(),
        format!("LD_LIBRARY_PATH={ld}"),
    ]
    .into();
    let probe_env: BTreeSet<String> = probe
        .env
        .iter()
        .filter(|e| !e.starts_with("HRR_PROBE_LD="))
        .cloned()
        .collect();
    let replay_env: BTreeSet<String> = replay
        .env
        .iter()
        .filter(|e| {
            !e.starts_with("HIP_VISIBLE_DEVICES=")
                && !e.starts_with("HIP_HRR_REPLAY_PROGRESS_SECONDS=")
        })
        .cloned()
        .collect();
    assert_eq!(probe_env, shared);
    assert_eq!(replay_env, shared);
    assert!(probe.env.contains(&format!("HRR_PROBE_LD={ld}")));
    for other in &probes {
        assert_eq!(other.client, replay.client);
        assert_eq!(other.mounts, overlay, "every probe container: {other:?}");
    }
}

#[test]
fn a_clr_overlay_the_replay_cannot_mount_fails_the_preflight_too() {
    let rig = Rig::new();
    let build = rig.sb.path().join("clr-build");
    std::fs::create_dir_all(build.join("hipamd/lib")).unwrap();
    // The replay looks for the host player first; beside its bin/ there is
    // no lib/ either.
    let sets = [
        "docker.mount_clr=true".to_string(),
        format!("docker.clr_build={}", build.display()),
        format!("playback.path={}", test_player().display()),
    ];
    let want = format!(
        "error: docker.mount_clr is set but no CLR lib dir with libamdhip64.so* was found (tried {}, ",
        build.join("hipamd").join("lib").display()
    );
    for (log, args) in [
        ("preflight.jsonl", &["preflight", "--mode", "docker"][..]),
        ("replay.jsonl", &["replay", "--replay", "docker"][..]),
    ] {
        let out = rig.hrr(log, &sets, args);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {}", stderr(&out));
        let err = stderr(&out);
        let errors: Vec<&str> = err.lines().filter(|l| l.starts_with("error:")).collect();
        assert_eq!(errors.len(), 1, "{args:?}: {err}");
        assert!(errors[0].starts_with(&want), "{args:?}: {err}");
        assert!(
            !rig.calls(log)
                .iter()
                .any(|c| c.contains(&"run".to_string())),
            "{args:?}: no container was started"
        );
    }
}
