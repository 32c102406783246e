//! `hrr preflight` end to end, with stand-ins on PATH for rocm-smi,
//! amd-smi and docker (each records its argv), a temp ROCm tree holding
//! `lib/libamdhip64.so.7.2.53211` and a real tiny `libamd_comgr.so`
//! compiled here from C.
#![cfg(unix)]

mod common;

use std::path::PathBuf;

use common::{script, stderr, stdout, Sandbox};
use serde_json::Value;

/// `rocm-smi --showid --showproductname` in the shape of the recorded
/// fixture (`GPU[n]`, two TABs, `: `) with the labels the reference's parser
/// keys on (`Card series`, `GFX Version`).
fn rocm_smi_output(archs: &[&str]) -> String {
    let mut s = String::from(
        "====================== ROCm System Management Interface ======================\n",
    );
    for (i, a) in archs.iter().enumerate() {
        s += &format!(
            "GPU[{i}]\t\t: Card series: Instinct MI300X\nGPU[{i}]\t\t: GFX Version: {a}\n"
        );
    }
    s + "============================== End of ROCm SMI Log ===========================\n"
}

/// A manifest with the reference's metadata schema (§4.2).
fn manifest(hip: &str, comgr: &str, count: Option<u64>, archs: &[&str]) -> String {
    let devices: Vec<Value> = archs
        .iter()
        .enumerate()
        .map(|(i, a)| serde_json::json!({"ordinal": i, "properties": {"name": "Instinct MI300X", "gcn_arch_name": a}}))
        .collect();
    let mut meta = serde_json::json!({
        "schema_version": 1,
        "runtime": {"hip_runtime_version": hip, "comgr_version": comgr},
        "captured_device_count": archs.len(),
        "devices": devices,
    });
    if let Some(n) = count {
        meta["device_count"] = n.into();
    }
    serde_json::json!({"pid": 42, "parent_pid": 1, "complete": true, "event_count": 3, "blob_count": 0, "metadata": meta})
        .to_string()
}

/// A test world: sandbox, fake-tool dir, ROCm tree with comgr 2.8 and HIP
/// 7.2.53211, a capture root with one process.
struct World {
    sb: Sandbox,
}

impl World {
    fn new(manifest_text: &str) -> World {
        let sb = Sandbox::new();
        sb.write("cap/pid-42/manifest.json", manifest_text);
        sb.write("cap/pid-42/events.bin", "");
        let lib = sb.path().join("rocm/lib");
        std::fs::create_dir_all(&lib).unwrap();
        std::fs::write(lib.join("libamdhip64.so.7.2.53211"), b"").unwrap();
        std::fs::create_dir_all(sb.path().join("bin")).unwrap();
        World { sb }
    }

    /// Compiles `libamd_comgr.so` reporting 2.8 into the ROCm tree; false
    /// (and a message) when there is no C compiler.
    fn with_comgr(self) -> Option<World> {
        let src = self.sb.write(
            "comgr.c",
            "#include <stddef.h>\nvoid amd_comgr_get_version(size_t *major, size_t *minor) { *major = 2; *minor = 8; }\n",
        );
        let out = self.sb.path().join("rocm/lib/libamd_comgr.so");
        match std::process::Command::new("cc")
            .args(["-shared", "-fPIC", "-o"])
            .arg(&out)
            .arg(&src)
            .status()
        {
            Ok(s) if s.success() => Some(self),
            _ => {
                eprintln!(
                    "SKIPPED: no working C compiler (cc) to build the stand-in libamd_comgr.so"
                );
                None
            }
        }
    }

    fn bin(&self) -> PathBuf {
        self.sb.path().join("bin")
    }

    fn argv_log(&self, tool: &str) -> String {
        std::fs::read_to_string(self.sb.path().join(format!("{tool}.argv"))).unwrap_or_default()
    }

    /// A stand-in `tool` that records its argv and prints `output`.
    fn tool(&self, tool: &str, output: &str) {
        let out = self.sb.write(&format!("{tool}.out"), output);
        let log = self.sb.path().join(format!("{tool}.argv"));
        script(
            &self.bin(),
            tool,
            &format!(
                "#!/bin/sh\necho \"$*\" >> '{}'\ncat '{}'\n",
                log.display(),
                out.display()
            ),
        );
    }

    fn preflight(&self, args: &[&str]) -> assert_cmd::Command {
        let mut cmd = self.sb.hrr();
        cmd.env("PATH", format!("{}:/usr/bin:/bin", self.bin().display()))
            .arg("-c")
            .arg(format!(
                "rocm.path={}",
                self.sb.path().join("rocm").display()
            ))
            .arg("preflight")
            .arg(self.sb.path().join("cap"))
            .args(args);
        cmd
    }

    fn json(&self, args: &[&str], code: i32) -> Value {
        let mut all = args.to_vec();
        all.push("--json");
        let out = self.preflight(&all).output().unwrap();
        assert_eq!(
            out.status.code(),
            Some(code),
            "stdout:\n{}\nstderr:\n{}",
            stdout(&out),
            stderr(&out)
        );
        serde_json::from_str(&stdout(&out)).unwrap()
    }
}

fn matching() -> String {
    manifest("7.2.53211", "2.8", Some(1), &["gfx942:sramecc+:xnack-"])
}

#[test]
fn a_matching_host_is_ok_with_every_value_probed() {
    let Some(w) = World::new(&matching()).with_comgr() else {
        return;
    };
    w.tool("rocm-smi", &rocm_smi_output(&["gfx942"]));
    let out = w.preflight(&["--gpu", "0"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.starts_with("# HRR replay compatibility\n\n## Capture metadata\n"),
        "{text}"
    );
    assert!(
        text.contains("- gcn_arch_name: gfx942:sramecc+:xnack-\n"),
        "{text}"
    );
    assert!(
        text.contains(
            "- visible_gpus: 1\n- hip_runtime_version: 7.2.53211\n- comgr_version: 2.8\n"
        ),
        "{text}"
    );
    assert!(text.ends_with("Replay preflight: OK\n"), "{text}");
    assert_eq!(w.argv_log("rocm-smi"), "--showid --showproductname\n");

    let j = w.json(&["--gpu", "0"], 0);
    assert_eq!(j["status"], "ok");
    assert_eq!(j["host"]["gpu_tool"], "rocm-smi");
    assert_eq!(j["host"]["comgr_version"], "2.8");
    assert!(j["host"]["comgr_from"]
        .as_str()
        .unwrap()
        .ends_with("rocm/lib/libamd_comgr.so"));
    let keys: Vec<&str> = j.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        ["status", "capture", "host", "blocks", "confirms", "warnings", "notes"]
    );
}

#[test]
fn more_capture_gpus_than_the_host_has_blocks() {
    let w = World::new(&manifest(
        "7.2.53211",
        "2.8",
        Some(2),
        &["gfx942", "gfx942"],
    ));
    w.tool("rocm-smi", &rocm_smi_output(&["gfx942"]));
    let out = w.preflight(&["--gpu", "0"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(stdout(&out).contains(
        "## Blocking issues\n- capture saw 2 GPU(s) but replay environment only exposes 1\n"
    ));
    assert!(
        stderr(&out).contains("error: replay preflight blocked: capture saw 2 GPU(s)"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn the_requested_gpu_is_checked_even_without_a_capture_device_count() {
    let w = World::new(&manifest("7.2.53211", "2.8", None, &["gfx942"]));
    w.tool("rocm-smi", &rocm_smi_output(&["gfx942", "gfx942"]));
    let j = w.json(&["--gpu", "2"], 1);
    assert_eq!(
        j["blocks"][0],
        "requested replay GPU 2 but replay environment only has 2 GPU(s) (0..1)"
    );
    // Without --gpu, config's replay.gpu is the ordinal checked.
    let j = w.json(&["-c", "replay.gpu=1"], 0);
    assert_eq!(j["status"], "ok", "{j}");
    let j = w.json(&["-c", "replay.gpu=5"], 1);
    assert_eq!(
        j["blocks"][0],
        "requested replay GPU 5 but replay environment only has 2 GPU(s) (0..1)"
    );
}

#[test]
fn an_arch_mismatch_warns_and_blocks_with_strict_arch() {
    let w = World::new(&manifest("7.2.53211", "2.8", Some(1), &["gfx90a:xnack+"]));
    w.tool("rocm-smi", &rocm_smi_output(&["gfx942"]));
    let msg = "GPU architecture mismatch: capture GPU 0 is gfx90a, replay GPU 0 looks like gfx942";
    let j = w.json(&["--gpu", "0"], 0);
    assert_eq!(j["warnings"][0], msg);
    assert!(j["blocks"].as_array().unwrap().is_empty());
    let j = w.json(&["--gpu", "0", "--strict-arch"], 1);
    assert_eq!(j["blocks"][0], msg);
    assert_eq!(j["status"], "blocked");
}

#[test]
fn version_mismatches_need_confirmation_or_block_with_strict_version() {
    let Some(w) = World::new(&manifest("7.13.0", "3.0", Some(1), &["gfx942"])).with_comgr() else {
        return;
    };
    w.tool("rocm-smi", &rocm_smi_output(&["gfx942"]));
    let out = w.preflight(&["--gpu", "0"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let text = stdout(&out);
    assert!(text.contains(
        "## Confirmation required\n- HIP runtime version mismatch: capture 7.13.0 vs replay 7.2.53211\n- comgr version mismatch: capture 3.0 vs replay 2.8\nReplay stack versions differ from capture. Do you want to continue?\n"
    ), "{text}");
    assert!(!text.contains("Replay preflight: OK"));
    let j = w.json(&["--gpu", "0", "--strict-version"], 1);
    assert_eq!(j["blocks"].as_array().unwrap().len(), 2);
    assert!(j["confirms"].as_array().unwrap().is_empty());
    // The legacy environment name works as well as the flag.
    let out = w
        .preflight(&["--gpu", "0"])
        .env("HRR_STRICT_VERSION", "1")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
}

#[test]
fn a_legacy_capture_passes_with_a_note_and_probes_nothing() {
    let w = World::new(
        r#"{"pid": 42, "parent_pid": 1, "complete": true, "event_count": 3, "blob_count": 0}"#,
    );
    w.tool("rocm-smi", &rocm_smi_output(&["gfx942"]));
    let out = w.preflight(&[]).output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let text = stdout(&out);
    assert!(text.contains("- none: the manifest has no metadata object (legacy capture, or rewritten by --repair)"), "{text}");
    assert!(text.contains("skipping preflight"), "{text}");
    assert!(text.ends_with("Replay preflight: OK\n"));
    assert_eq!(
        w.argv_log("rocm-smi"),
        "",
        "nothing to compare, so nothing probed"
    );
    let j = w.json(&[], 0);
    assert_eq!(
        (j["status"].as_str(), j["host"].is_null()),
        (Some("ok"), true)
    );
}

#[test]
fn unknown_host_values_warn_but_never_fail() {
    let w = World::new(&matching());
    std::fs::remove_file(w.sb.path().join("rocm/lib/libamdhip64.so.7.2.53211")).unwrap();
    let j = w.json(&["--gpu", "0"], 0);
    assert_eq!(j["status"], "warn");
    let h = &j["host"];
    assert!(
        h["visible_gpus"].is_null()
            && h["hip_runtime_version"].is_null()
            && h["comgr_version"].is_null()
    );
    let problems = h["problems"].to_string();
    assert!(
        problems.contains("neither rocm-smi nor amd-smi was found"),
        "{problems}"
    );
    assert_eq!(
        j["warnings"][0],
        "could not determine replay GPU count (host); continuing with warnings"
    );
}

#[test]
fn amd_smi_is_asked_in_its_own_terms() {
    let w = World::new(&manifest(
        "7.2.53211",
        "2.8",
        Some(2),
        &["gfx942", "gfx942"],
    ));
    w.tool(
        "amd-smi",
        r#"[{"gpu": 0, "asic": {"market_name": "MI300X", "target_graphics_version": "gfx942"}},
            {"gpu": 1, "asic": {"market_name": "MI300X", "target_graphics_version": "gfx942"}}]"#,
    );
    let j = w.json(&["--gpu", "1"], 0);
    assert_eq!(w.argv_log("amd-smi"), "static --asic --json\n");
    assert_eq!(j["host"]["gpu_tool"], "amd-smi");
    assert_eq!(j["host"]["visible_gpus"], 2);
    assert!(
        j["blocks"].as_array().unwrap().is_empty() && j["warnings"].as_array().unwrap().is_empty()
    );
}

/// A stand-in docker: records argv; the comgr probe (python3) prints 2.8,
/// the GPU probe prints the probe script's sections.
fn fake_docker(w: &World, gpu_output: &str) {
    let out = w.sb.write("docker-gpu.out", gpu_output);
    let log = w.sb.path().join("docker.argv");
    script(
        &w.bin(),
        "docker",
        &format!(
            "#!/bin/sh\nfor a in \"$@\"; do printf '%s\\n' \"$a\"; done >> '{}'\necho ---- >> '{}'\ncase \"$*\" in *python3*) echo 2.8 ;; *) cat '{}' ;; esac\n",
            log.display(),
            log.display(),
            out.display()
        ),
    );
}

#[test]
fn docker_mode_probes_the_image_with_argv_only() {
    let w = World::new(&matching());
    let sections = format!(
        "hrr-probe: rocm-smi\n{}hrr-probe: hip-version\nHIP_VERSION_MAJOR=7\nHIP_VERSION_MINOR=1\nHIP_VERSION_PATCH=25424\n",
        rocm_smi_output(&["gfx942"])
    );
    fake_docker(&w, &sections);
    let j = w.json(
        &["--mode", "docker", "--image", "rocm/dev:7.1", "--gpu", "0"],
        2,
    );
    assert_eq!(j["host"]["source"], "docker:rocm/dev:7.1");
    assert_eq!(j["host"]["comgr_version"], "2.8");
    assert_eq!(
        j["confirms"][0],
        "HIP runtime version mismatch: capture 7.2.53211 vs replay 7.1.25424"
    );
    let argv = w.argv_log("docker");
    let runs: Vec<Vec<&str>> = argv
        .split("----\n")
        .filter(|r| !r.is_empty())
        .map(|r| r.lines().collect())
        .collect();
    // docker.sudo = auto: `docker info` decides the client before any
    // container starts, as for the replay.
    assert_eq!(runs.len(), 3, "{argv}");
    assert_eq!(runs[0], ["info"]);
    assert_eq!(
        &runs[1][..4],
        ["run", "--rm", "--device=/dev/kfd", "--device=/dev/dri"]
    );
    assert!(runs[1].contains(&"-e") && runs[1].contains(&"HRR_PROBE_LD=/opt/rocm/lib"));
    assert_eq!(runs[2][..2], ["run", "--rm"]);
    assert!(runs[2].contains(&"LD_LIBRARY_PATH=/opt/rocm/lib") && runs[2].contains(&"python3"));
    assert!(
        !argv.contains("cap/pid-42"),
        "nothing from the archive reaches docker"
    );
}

#[test]
fn docker_unavailable_and_permission_denied_are_clear_outcomes() {
    let w = World::new(&matching());
    // No docker on PATH at all (the fake dir only).
    let out = w
        .preflight(&["--image", "img", "--json"])
        .env("PATH", w.bin())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let j: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(j["host"]["source"], "docker:unavailable");
    assert_eq!(
        j["warnings"][0],
        "could not determine replay GPU count (docker:unavailable); continuing with warnings"
    );

    script(
        &w.bin(),
        "docker",
        "#!/bin/sh\necho 'docker: permission denied while trying to connect to the docker API' >&2\nexit 1\n",
    );
    let j = w.json(&["--image", "img", "-c", "docker.sudo=false"], 0);
    assert_eq!(j["host"]["source"], "docker:permission-denied");
    // auto: `docker info` is refused too, and there is no sudo → denied.
    let j = w.json(&["--image", "img"], 0);
    assert_eq!(j["host"]["source"], "docker:permission-denied");
}

#[test]
fn a_root_with_several_processes_asks_for_one() {
    let w = World::new(&matching());
    w.sb.write("cap/pid-43/manifest.json", &matching());
    w.sb.write("cap/pid-43/events.bin", "");
    let out = w.preflight(&[]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(
        err.contains(
            "is a capture root with 2 processes (pid-42, pid-43); pass one pid-* directory"
        ),
        "{err}"
    );
    let out =
        w.sb.hrr()
            .arg("preflight")
            .arg(w.sb.path().join("nope"))
            .output()
            .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).starts_with("error: cannot open archive"));
}

#[test]
fn lua_preflight_check_returns_the_report_table() {
    let w = World::new(&manifest(
        "7.2.53211",
        "2.8",
        Some(2),
        &["gfx942", "gfx942"],
    ));
    w.tool("rocm-smi", &rocm_smi_output(&["gfx942"]));
    let cap = w.sb.path().join("cap/pid-42");
    let lua = w.sb.write(
        "check.lua",
        &format!(
            "local pf = hrr.preflight.check({:?}, {{mode = \"host\", gpu = 0}})\nhrr.out(pf.status .. \"|\" .. pf.blocks[1] .. \"|\" .. pf.host.source .. \"\\n\")\nlocal ok, err = pcall(hrr.preflight.check, {:?}, {{mode = \"vm\"}})\nhrr.out(tostring(ok) .. \"|\" .. tostring(err) .. \"\\n\")\n",
            cap.display().to_string(),
            cap.display().to_string()
        ),
    );
    let out =
        w.sb.hrr()
            .env("PATH", format!("{}:/usr/bin:/bin", w.bin().display()))
            .arg("-c")
            .arg(format!("rocm.path={}", w.sb.path().join("rocm").display()))
            .arg("run")
            .arg(&lua)
            .output()
            .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.starts_with(
            "blocked|capture saw 2 GPU(s) but replay environment only exposes 1|host\n"
        ),
        "{text}"
    );
    assert!(
        text.contains("false|") && text.contains("mode must be \"host\" or \"docker\""),
        "{text}"
    );
}

#[test]
fn gpu_counts_ordinals_and_archs_are_those_within_the_device_masks() {
    // A job given host GPUs 2 and 3 of four; only host GPU 2 has the
    // capture's arch. GPU 0 of the job is host GPU 2.
    let w = World::new(&manifest("7.2.53211", "2.8", Some(1), &["gfx942"]));
    w.tool(
        "rocm-smi",
        &rocm_smi_output(&["gfx90a", "gfx90a", "gfx942", "gfx90a"]),
    );
    let masked = |vars: &[(&str, &str)], args: &[&str]| {
        let mut cmd = w.preflight(args);
        for (k, v) in vars {
            cmd.env(k, v);
        }
        cmd.arg("--json").output().unwrap()
    };
    let hip = [("HIP_VISIBLE_DEVICES", "2,3")];
    let j: Value = serde_json::from_slice(&masked(&hip, &["--gpu", "0"]).stdout).unwrap();
    assert_eq!(j["status"], "ok", "{j}");
    assert_eq!(j["host"]["visible_gpus"], 2);
    assert_eq!(j["host"]["device_masks"][0], "HIP_VISIBLE_DEVICES=2,3");
    let j: Value = serde_json::from_slice(&masked(&hip, &["--gpu", "1"]).stdout).unwrap();
    assert_eq!(
        j["warnings"][0],
        "GPU architecture mismatch: capture GPU 0 is gfx942, replay GPU 1 looks like gfx90a",
        "{j}"
    );
    let out = masked(&hip, &["--gpu", "2"]);
    assert_eq!(out.status.code(), Some(1));
    let j: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        j["blocks"][0],
        "requested replay GPU 2 but replay environment only has 2 GPU(s) within HIP_VISIBLE_DEVICES=2,3 (0..1)"
    );

    // ROCR_VISIBLE_DEVICES re-indexes first: ROCr keeps host 3 and 2, so
    // HIP_VISIBLE_DEVICES=1 is host GPU 2.
    let both = [
        ("ROCR_VISIBLE_DEVICES", "3,2"),
        ("HIP_VISIBLE_DEVICES", "1"),
    ];
    let j: Value = serde_json::from_slice(&masked(&both, &["--gpu", "0"]).stdout).unwrap();
    assert_eq!(j["status"], "ok", "{j}");
    assert_eq!(j["host"]["visible_gpus"], 1);
    // CUDA_VISIBLE_DEVICES counts when HIP_VISIBLE_DEVICES is unset.
    let cuda = [("CUDA_VISIBLE_DEVICES", "0")];
    let j: Value = serde_json::from_slice(&masked(&cuda, &["--gpu", "0"]).stdout).unwrap();
    assert_eq!(
        j["warnings"][0],
        "GPU architecture mismatch: capture GPU 0 is gfx942, replay GPU 0 looks like gfx90a",
        "{j}"
    );

    let mut cmd = w.preflight(&["--gpu", "0"]);
    let text = stdout(&cmd.env("HIP_VISIBLE_DEVICES", "2,3").output().unwrap());
    assert!(
        text.contains("- visible_gpus: 2\n- device_masks: HIP_VISIBLE_DEVICES=2,3\n"),
        "{text}"
    );
}
