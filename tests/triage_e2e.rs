//! `hrr triage` end to end on real-shaped synthetic archives, with the test
//! player standing in for `hrr-playback`: one test per outcome, each
//! checking the finding, the exit code, and that the archive is untouched.
#![cfg(unix)]

mod common;

use std::path::{Path, PathBuf};

use common::{script, stderr, test_player, tree_snapshot, Sandbox};
use hrr_testkit::archive::{write_root_manifest, Manifest};
use hrr_testkit::synth::{clean_process, crashed_process};
use serde_json::Value;

/// A sandbox holding a capture root (clean pid-4242 + crashed pid-4243),
/// a readable stand-in for /dev/kfd, and a ROCm tree whose HIP runtime
/// matches the capture's (7.2.53211).
struct World {
    sb: Sandbox,
    root: PathBuf,
}

impl World {
    fn new() -> World {
        let sb = Sandbox::new();
        let root = sb.path().join("capture.hrr");
        let (clean, crashed) = (clean_process(), crashed_process());
        clean.write(&root).unwrap();
        crashed.write(&root).unwrap();
        write_root_manifest(&root, &[&clean, &crashed]).unwrap();
        sb.write("kfd", "");
        sb.write("rocm/lib/libamdhip64.so.7.2.53211", "");
        World { sb, root }
    }

    fn crashed(&self) -> PathBuf {
        self.root.join("pid-4243")
    }

    fn clean(&self) -> PathBuf {
        self.root.join("pid-4242")
    }

    /// `hrr triage <archive> --format json` replaying with the test player
    /// in `scenario`, on a host with one gfx942 GPU (a fake rocm-smi).
    fn triage(&self, scenario: &str, archive: &Path, extra: &[&str]) -> std::process::Output {
        // `-c KEY=VALUE` pairs of `extra` go before the subcommand with the
        // others: clap keeps only the subcommand's occurrences of a global
        // option when it appears on both sides.
        let (mut sets, mut rest) = (Vec::new(), Vec::new());
        let mut it = extra.iter();
        while let Some(a) = it.next() {
            match (*a, it.clone().next()) {
                ("-c", Some(kv)) => {
                    sets.extend(["-c", kv]);
                    it.next();
                }
                _ => rest.push(*a),
            }
        }
        let bin = self.sb.path().join("bin");
        script(
            &bin,
            "rocm-smi",
            "#!/bin/sh\nprintf 'GPU[0]\\t\\t: Card series: Instinct MI300X\\nGPU[0]\\t\\t: GFX Version: gfx942\\n'\n",
        );
        self.sb
            .hrr()
            .env("PATH", format!("{}:/usr/bin:/bin", bin.display()))
            .env("HRR_TEST_SCENARIO", scenario)
            .args(["-c", &format!("playback.path={}", test_player().display())])
            .args([
                "-c",
                &format!("replay.kfd={}", self.sb.path().join("kfd").display()),
            ])
            .args([
                "-c",
                &format!("rocm.path={}", self.sb.path().join("rocm").display()),
            ])
            .args(["-c", "replay.gpu=0"])
            .args(sets)
            .args(["triage", "--format", "json"])
            .arg(archive)
            .args(rest)
            .output()
            .unwrap()
    }
}

/// The only kernel the archive at `dir` launches, read with hrr's decoder.
fn only_kernel(dir: &Path) -> String {
    let s = hrr::archive::summarize(dir).unwrap();
    assert_eq!(s.kernels.len(), 1, "the test archive launches one kernel");
    s.kernels[0].name.clone()
}

fn finding(out: &std::process::Output) -> Value {
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("stdout is one JSON finding ({e}); stderr: {}", stderr(out)))
}

fn labels(f: &Value) -> Vec<String> {
    f["labels"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["label"].as_str().unwrap().to_string())
        .collect()
}

/// Runs `scenario` on `archive` and checks the archive did not change.
fn run(w: &World, scenario: &str, archive: &Path, extra: &[&str]) -> (std::process::Output, Value) {
    let before = tree_snapshot(&w.root);
    let out = w.triage(scenario, archive, extra);
    assert_eq!(
        tree_snapshot(&w.root),
        before,
        "the archive changed during triage"
    );
    let f = if out.stdout.is_empty() {
        Value::Null
    } else {
        finding(&out)
    };
    (out, f)
}

#[test]
fn pass_names_no_kernel_and_is_clean() {
    let w = World::new();
    let (out, f) = run(&w, "pass", &w.clean(), &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(
        (f["outcome"].as_str(), f["fault_class"].as_str()),
        (Some("PASS"), Some("replay_pass"))
    );
    assert!(
        f["kernel_name"].is_null()
            && f["failing_event_seq"].is_null()
            && f["failing_api"].is_null()
    );
    assert_eq!(labels(&f), ["CLEAN"]);
    assert_eq!(f["replay"]["exit_code"], 0);
    let log = f["replay"]["log"].as_str().unwrap();
    assert!(
        log.starts_with(&w.sb.path().join("work").display().to_string()),
        "{log}"
    );
}

#[test]
fn d2h_fail_is_fail_with_the_label() {
    let w = World::new();
    let (out, f) = run(&w, "d2h_fail", &w.clean(), &[]);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(f["outcome"], "FAIL");
    assert!(
        labels(&f).contains(&"D2H-FAIL".to_string()),
        "{:?}",
        labels(&f)
    );
    assert!(f["d2h_fail"].as_u64().unwrap() > 0);
}

#[test]
fn memory_fault_names_the_archive_kernel_from_the_replay() {
    let w = World::new();
    let (out, f) = run(&w, "fault_abort", &w.crashed(), &[]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "a finding was produced: exit 0 whatever the outcome"
    );
    assert_eq!(
        (f["outcome"].as_str(), f["fault_class"].as_str()),
        (Some("MAF"), Some("illegal_memory_access"))
    );
    assert_eq!(
        f["kernel_name"].as_str().unwrap(),
        only_kernel(&w.crashed())
    );
    // Both the runtime's fault line and the last `[HRR launch]` name it;
    // the fault line comes first in the fallback order (DESIGN §6).
    assert_eq!(f["kernel_source"], "fault_line");
    assert_eq!(f["replay"]["signal"], 6, "the player aborted");
    assert!(labels(&f).contains(&"CRASH-TRUNCATED".to_string()));
}

#[test]
fn memory_fault_without_trace_kernels_takes_the_kernel_from_the_runtime_fault_line() {
    // With --trace-kernels off there is no `[HRR launch]` line; the ROCm
    // runtime's `Memory Fault Error [… kernel: <name>]` line still names the
    // faulting kernel, and that is the source recorded. (Inference from a
    // single-kernel archive, when no line names one, is covered on the
    // recorded fixtures in classify_fixtures.rs.)
    let w = World::new();
    let (out, f) = run(
        &w,
        "fault_abort",
        &w.crashed(),
        &["-c", "replay.trace_kernels=false"],
    );
    assert_eq!(f["outcome"], "MAF");
    assert_eq!(
        f["kernel_name"].as_str().unwrap(),
        only_kernel(&w.crashed())
    );
    assert_eq!(f["kernel_source"], "fault_line");
    let log = std::fs::read_to_string(f["replay"]["log"].as_str().unwrap()).unwrap();
    assert!(
        !log.contains("[HRR launch]"),
        "trace_kernels=false reached the player: {}",
        stderr(&out)
    );
}

#[test]
fn queue_abort_is_not_a_hang() {
    let w = World::new();
    let (_, f) = run(&w, "queue_abort", &w.crashed(), &[]);
    assert_ne!(f["outcome"], "HANG");
    assert_ne!(f["fault_class"], "hang");
    assert!(
        ["MAF", "ABORT"].contains(&f["outcome"].as_str().unwrap()),
        "{}",
        f["outcome"]
    );
}

#[test]
fn fatal_api_is_replay_fatal_api() {
    let w = World::new();
    let (_, f) = run(&w, "fatal_api", &w.clean(), &[]);
    assert_eq!(f["fault_class"], "replay_fatal_api");
    assert_eq!(f["outcome"], "ABORT");
}

#[test]
fn timeout_is_a_hang_and_the_log_has_the_marker() {
    let w = World::new();
    let start = std::time::Instant::now();
    let (_, f) = run(&w, "hang", &w.clean(), &["--timeout", "2"]);
    assert!(start.elapsed() < std::time::Duration::from_secs(30));
    assert_eq!(
        (f["outcome"].as_str(), f["fault_class"].as_str()),
        (Some("HANG"), Some("hang"))
    );
    assert_eq!(f["replay"]["timed_out"], true);
    let log = std::fs::read_to_string(f["replay"]["log"].as_str().unwrap()).unwrap();
    assert!(log.contains("[hrr] replay timed out after 2s"), "{log}");
}

#[test]
fn segv_is_a_replay_crash_that_names_no_kernel() {
    let w = World::new();
    let (_, f) = run(&w, "segv", &w.crashed(), &[]);
    assert_eq!(
        (f["outcome"].as_str(), f["fault_class"].as_str()),
        (Some("ABORT"), Some("replay_crashed"))
    );
    assert!(
        f["kernel_name"].is_null(),
        "a crash of the player implicates no kernel, even in a single-kernel archive"
    );
    assert_eq!(f["replay"]["signal"], 11);
}

#[test]
fn version_mismatch_is_reported_with_both_versions() {
    let w = World::new();
    let (_, f) = run(&w, "version_mismatch", &w.crashed(), &[]);
    assert_eq!(
        (f["outcome"].as_str(), f["fault_class"].as_str()),
        (Some("ABORT"), Some("version_mismatch"))
    );
    assert!(f["kernel_name"].is_null());
    assert!(
        f["reader_format_version"].is_u64(),
        "{}",
        f["reader_format_version"]
    );
}

#[test]
fn preflight_block_stops_the_replay_with_a_finding_and_exit_1() {
    let w = World::new();
    let (out, f) = run(&w, "pass", &w.crashed(), &["--gpu", "3"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(f["fault_class"], "preflight_blocked");
    assert_eq!(f["preflight"]["status"], "blocked");
    assert!(
        f["replay"].is_null() || f["replay"]["log"].is_null(),
        "no replay ran"
    );
    let err = stderr(&out);
    assert_eq!(
        err.lines().filter(|l| l.starts_with("error:")).count(),
        1,
        "{err}"
    );
}

#[test]
fn version_confirmation_without_a_tty_exits_2_and_yes_proceeds() {
    let w = World::new();
    std::fs::remove_file(w.sb.path().join("rocm/lib/libamdhip64.so.7.2.53211")).unwrap();
    w.sb.write("rocm/lib/libamdhip64.so.6.4.43482", "");
    let (out, _) = run(&w, "pass", &w.clean(), &[]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("--yes"), "{}", stderr(&out));
    let (out, f) = run(&w, "pass", &w.clean(), &["--yes"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(f["outcome"], "PASS");
}

#[test]
fn metadata_only_finding_describes_the_archive_and_says_what_to_run() {
    let w = World::new();
    let (out, f) = run(&w, "pass", &w.root, &["--no-replay", "--exit-code"]);
    assert_eq!(
        out.status.code(),
        Some(15),
        "metadata-only maps to 15 with --exit-code"
    );
    assert_eq!(f["fault_class"], "metadata_only");
    assert!(f["replay"].is_null() || f["replay"]["log"].is_null());
    assert_eq!(f["archive_health"]["complete"], false);
    let l = labels(&f);
    assert!(
        l.contains(&"CRASH-TRUNCATED".to_string()) && l.contains(&"MULTI-PROCESS".to_string()),
        "{l:?}"
    );
    let steps = f["next_steps"].to_string();
    assert!(steps.contains("hrr triage"), "{steps}");
    assert!(
        f["archive"].as_str().unwrap().ends_with("pid-4243"),
        "the process that died is chosen"
    );
}

#[test]
fn exit_code_maps_outcomes_for_ci() {
    let w = World::new();
    for (scenario, archive, code) in [
        ("pass", w.clean(), 0),
        ("fault_abort", w.crashed(), 11),
        ("segv", w.crashed(), 12),
    ] {
        let (out, _) = run(&w, scenario, &archive, &["--exit-code"]);
        assert_eq!(
            out.status.code(),
            Some(code),
            "{scenario}: {}",
            stderr(&out)
        );
    }
}

#[test]
fn all_triages_every_process_into_one_json_array_and_files() {
    let w = World::new();
    let killed = hrr_testkit::archive::ProcessArchive {
        manifest: Manifest::None,
        ..clean_process()
    };
    let killed = hrr_testkit::archive::ProcessArchive {
        pid: 4244,
        ..killed
    };
    killed.write(&w.root).unwrap();
    let (out, f) = run(&w, "pass", &w.root, &["--all", "--no-replay"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let list = f
        .as_array()
        .expect("--all --format json prints one JSON array");
    let mut archives: Vec<&str> = list
        .iter()
        .map(|f| f["archive"].as_str().unwrap())
        .collect();
    archives.sort();
    assert_eq!(archives.len(), 3);
    assert!(
        archives[0].ends_with("pid-4242") && archives[2].ends_with("pid-4244"),
        "{archives:?}"
    );
    let written: Vec<_> = std::fs::read_dir(w.sb.path().join("work"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".finding.json"))
        .collect();
    assert_eq!(written.len(), 3, "{written:?}");
}

#[test]
fn a_user_triage_lua_overrides_the_embedded_workflow() {
    let w = World::new();
    w.sb.write(
        "xdg/hrr/scripts/triage.lua",
        "hrr.out('site triage for ' .. hrr.opts.archive .. '\\n')\nreturn 0\n",
    );
    let out =
        w.sb.hrr()
            .args(["triage", "--no-replay"])
            .arg(&w.root)
            .output()
            .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.starts_with("site triage for "), "{text}");
}

#[test]
fn a_site_triage_lua_replacing_one_step_keeps_the_rest_of_the_preset() {
    let w = World::new();
    // The site's triage.lua of docs/lua-api.md "Overriding triage.lua":
    // the embedded preset with one step replaced.
    w.sb.write(
        "xdg/hrr/scripts/triage.lua",
        r#"local triage = hrr.workflow.embedded("triage")
function triage.render(f)
  return "site: " .. f.outcome .. " " .. (f.kernel_name or "n/a") .. "\n"
end
return triage
"#,
    );
    let before = tree_snapshot(&w.root);
    let out = w.triage("fault_abort", &w.crashed(), &["--exit-code"]);
    assert_eq!(tree_snapshot(&w.root), before, "the archive changed");
    let kernel = only_kernel(&w.crashed());
    // The replaced step renders; plan, preflight, replay and classify of
    // the preset found the fault, and its exit_code maps MAF to 11.
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        format!("site: MAF {kernel}\n"),
        "{}",
        stderr(&out)
    );
    assert_eq!(out.status.code(), Some(11), "{}", stderr(&out));
    // triage_one saves what the site's render step wrote.
    let saved: Vec<String> = std::fs::read_dir(w.sb.path().join("work"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(".finding.json"))
        .map(|p| std::fs::read_to_string(p).unwrap())
        .collect();
    assert_eq!(saved, [format!("site: MAF {kernel}\n")]);
}

#[test]
fn a_site_step_that_errors_is_reported_at_its_line() {
    let w = World::new();
    w.sb.write(
        "xdg/hrr/scripts/triage.lua",
        "local triage = hrr.workflow.embedded('triage')\nfunction triage.plan(opts)\n  error('site plan refused')\nend\nreturn triage\n",
    );
    let out =
        w.sb.hrr()
            .args(["triage", "--no-replay"])
            .arg(w.crashed())
            .output()
            .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(stderr(&out), "error: triage.lua:3: site plan refused\n");
    assert!(out.stdout.is_empty());
}

#[test]
fn print_workflow_prints_the_embedded_preset_even_when_a_site_one_wins() {
    let sb = Sandbox::new();
    sb.write("xdg/hrr/scripts/triage.lua", "return 0\n");
    let out = sb
        .hrr()
        .args(["triage", "--print-workflow"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let source =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/triage.lua"))
            .unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), source);
    // Without the flag an archive is still required.
    let out = sb.hrr().arg("triage").output().unwrap();
    assert!(!out.status.success());
    assert!(stderr(&out).contains("<ARCHIVE>"), "{}", stderr(&out));
}

#[test]
fn outputs_inside_the_archive_are_refused_before_any_work() {
    let w = World::new();
    let before = tree_snapshot(&w.root);
    let out =
        w.sb.hrr()
            .args(["triage", "--no-replay", "--workdir"])
            .arg(w.root.join("wd"))
            .arg(w.crashed())
            .output()
            .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("never writes into an archive"),
        "{}",
        stderr(&out)
    );
    let out =
        w.sb.hrr()
            .args(["triage", "--no-replay", "-o"])
            .arg(w.clean().join("f.md"))
            .arg(w.crashed())
            .output()
            .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(tree_snapshot(&w.root), before);
}

#[test]
fn o_writes_the_finding_0600_and_markdown_is_printed_once() {
    let w = World::new();
    let target = w.sb.path().join("out/finding.md");
    std::fs::create_dir_all(target.parent().unwrap()).unwrap();
    let out =
        w.sb.hrr()
            .args(["triage", "--no-replay", "-o"])
            .arg(&target)
            .arg(&w.root)
            .output()
            .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(text.matches("## HRR Triage").count(), 1, "printed once");
    assert_eq!(std::fs::read_to_string(&target).unwrap(), text);
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(
        std::fs::metadata(&target).unwrap().permissions().mode() & 0o777,
        0o600
    );
}
