//! `hrr classify` and `hrr render` as a user runs them.

mod common;

use common::{stderr, stdout, Sandbox};
use hrr::finding::{FaultClass, Finding, Outcome};
use std::path::PathBuf;

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/fixtures")).join(name)
}

#[test]
fn classify_prints_the_markdown_finding() {
    let sb = Sandbox::new();
    let out = sb
        .hrr()
        .args(["classify", "--log"])
        .arg(fixture("replay_pass.log"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let md = stdout(&out);
    assert!(md.starts_with("## HRR Triage — n/a\n"), "{md}");
    for part in [
        "### Archive health",
        "### Replay result",
        "### Findings",
        "### Recommended next steps",
        "### Details",
    ] {
        assert!(md.contains(part), "missing {part}");
    }
    assert!(md.contains("| D2H fail | 0 |"), "zero is printed as 0");
    assert!(md.contains("| Kernels launched | 13233 |"));
    assert!(md.contains("| Signal | n/a |"), "unknown is n/a");
    assert!(md.contains("- **F1** PASS — "));
    assert!(stderr(&out).is_empty());
}

#[test]
fn several_logs_in_any_order_and_json() {
    let sb = Sandbox::new();
    let out = sb
        .hrr()
        .args(["classify", "--format", "json", "--log"])
        .arg(fixture("info_crash.txt"))
        .arg(fixture("replay_memory_fault.log"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let f = Finding::from_json(&stdout(&out)).unwrap();
    assert_eq!(
        (f.outcome, f.fault_class),
        (Outcome::Maf, FaultClass::IllegalMemoryAccess)
    );
    assert_eq!(f.kernel_name.as_deref(), Some("crash_oob"));
}

#[test]
fn config_output_format_applies() {
    let sb = Sandbox::new();
    let out = sb
        .hrr()
        .args(["-c", "output.format=json", "classify", "--log"])
        .arg(fixture("version_mismatch.log"))
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["fault_class"], "version_mismatch");
}

#[test]
fn output_file_is_private_and_render_reproduces_it() {
    let sb = Sandbox::new();
    let json = sb.path().join("f.json");
    let out = sb
        .hrr()
        .args(["classify", "--format", "json", "-o"])
        .arg(&json)
        .arg("--log")
        .arg(fixture("replay_hang_timeout.log"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(out.stdout.is_empty());
    assert!(stderr(&out).contains("wrote finding to"));
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(
            std::fs::metadata(&json).unwrap().permissions().mode() & 0o777,
            0o600
        );
    }
    let direct = sb
        .hrr()
        .args(["classify", "--log"])
        .arg(fixture("replay_hang_timeout.log"))
        .output()
        .unwrap();
    let rendered = sb.hrr().arg("render").arg(&json).output().unwrap();
    assert!(rendered.status.success(), "{}", stderr(&rendered));
    assert_eq!(stdout(&rendered), stdout(&direct));
    let as_json = sb
        .hrr()
        .args(["render", "--format", "json"])
        .arg(&json)
        .output()
        .unwrap();
    assert_eq!(stdout(&as_json), std::fs::read_to_string(&json).unwrap());
}

#[test]
fn unreadable_inputs_fail_with_one_error_line() {
    let sb = Sandbox::new();
    let out = sb
        .hrr()
        .args(["classify", "--log", "missing.log"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with("error: cannot read replay log missing.log"),
        "{err}"
    );
    assert!(out.stdout.is_empty());
    let bad = sb.write("bad.json", "{\"schema_version\": 7}");
    let out = sb.hrr().arg("render").arg(&bad).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("is not an hrr finding") && stderr(&out).contains("schema_version 7")
    );
}

#[test]
fn archive_summary_document_feeds_the_finding() {
    let sb = Sandbox::new();
    let archive = sb.path().join("cap.hrr").join("pid-79");
    std::fs::create_dir_all(&archive).unwrap();
    let doc = serde_json::json!({
        "schema_version": 1, "kind": "process", "path": archive, "pid": 79, "format_version": 7,
        "complete": false, "trailer": {"present": false}, "truncated": false, "events": 5,
        "kernel_launches": 1, "threads": 1, "kernels": [{"name": "crash_oob", "launches": 1, "code_object": null}],
        "blobs": {"files": 1, "referenced": 1, "missing": []}, "code_objects": {"files": 2, "referenced": 2, "missing": []},
        "manifest": {"pid": 79, "complete": false, "metadata": {"runtime": {"hip_runtime_version": "7.2.53211", "comgr_version": "3.0"}, "device_count": 1, "devices": [{"ordinal": 0, "properties": {"gcn_arch_name": "gfx950:sramecc+:xnack-"}}]}},
        "problems": []
    });
    let info = sb.write("info.json", &doc.to_string());
    let out = sb
        .hrr()
        .args(["classify", "--format", "json", "--archive-info"])
        .arg(&info)
        .arg("--log")
        .arg(fixture("replay_memory_fault.log"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let f = Finding::from_json(&stdout(&out)).unwrap();
    assert_eq!(f.kernel_name.as_deref(), Some("crash_oob"));
    assert_eq!(
        f.capture.gcn_arch.as_deref(),
        Some("gfx950:sramecc+:xnack-")
    );
    assert_eq!(f.archive_format_version, Some(7));
    assert_eq!(f.archive_health.processes, [79]);
    // an output file inside the archive is refused before anything is written
    let inside = archive.join("finding.md");
    let out = sb
        .hrr()
        .args(["classify", "--archive-info"])
        .arg(&info)
        .arg("-o")
        .arg(&inside)
        .arg("--log")
        .arg(fixture("replay_memory_fault.log"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("inside the archive"),
        "{}",
        stderr(&out)
    );
    assert!(!inside.exists());
}

#[test]
fn archive_directory_is_decoded_into_the_finding() {
    let sb = Sandbox::new();
    let examples = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/examples/crash.hrr"));
    let pid = examples.join("pid-4243");
    let out = sb
        .hrr()
        .args(["classify", "--format", "json", "--archive"])
        .arg(&pid)
        .arg("--log")
        .arg(fixture("replay_memory_fault.log"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let f = Finding::from_json(&stdout(&out)).unwrap();
    assert_eq!(
        (f.outcome, f.kernel_name.as_deref()),
        (Outcome::Maf, Some("crash_oob"))
    );
    assert_eq!(
        (
            f.archive_health.complete,
            f.archive_health.processes.clone()
        ),
        (Some(false), vec![4243])
    );
    let meta = sb
        .hrr()
        .args(["classify", "--format", "json", "--archive"])
        .arg(&pid)
        .output()
        .unwrap();
    let m = Finding::from_json(&stdout(&meta)).unwrap();
    assert_eq!(
        (m.outcome, m.fault_class),
        (Outcome::Unknown, FaultClass::MetadataOnly)
    );
    let root = sb
        .hrr()
        .args(["classify", "--archive"])
        .arg(&examples)
        .arg("--log")
        .arg(fixture("replay_memory_fault.log"))
        .output()
        .unwrap();
    assert_eq!(root.status.code(), Some(1));
    assert!(
        stderr(&root).contains("capture root with 2 processes"),
        "{}",
        stderr(&root)
    );
    let inside = sb
        .hrr()
        .args(["classify", "--archive"])
        .arg(&pid)
        .arg("-o")
        .arg(pid.join("f.md"))
        .output()
        .unwrap();
    assert_eq!(inside.status.code(), Some(1));
    assert!(!pid.join("f.md").exists());
}
