//! `hrr archive info` / `hrr archive events` as a user runs them: the text
//! report of the committed examples (insta snapshots), the JSON document,
//! exit codes and the single `error:` line on undecodable archives.

mod common;

use std::path::PathBuf;

use hrr_testkit::archive::ProcessArchive;
use hrr_testkit::events::EventsFile;

fn example(rel: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("examples")
        .join(rel)
}

fn run(args: &[&str], path: &std::path::Path) -> std::process::Output {
    common::Sandbox::new()
        .hrr()
        .args(args)
        .arg(path)
        .output()
        .unwrap()
}

fn snapshot_text(rel: &str) -> String {
    let out = run(&["archive", "info"], &example(rel));
    assert_eq!(out.status.code(), Some(0), "{}", common::stderr(&out));
    common::stdout(&out).replace(env!("CARGO_MANIFEST_DIR"), "[REPO]")
}

#[test]
fn example_root_report() {
    insta::assert_snapshot!(snapshot_text("crash.hrr"));
}

#[test]
fn example_crashed_process_report() {
    insta::assert_snapshot!(snapshot_text("crash.hrr/pid-4243"));
}

#[test]
fn example_clean_process_report() {
    insta::assert_snapshot!(snapshot_text("crash.hrr/pid-4242"));
}

#[test]
fn crashed_example_json_has_the_design_fields() {
    let out = run(
        &["archive", "info", "--json"],
        &example("crash.hrr/pid-4243"),
    );
    assert_eq!(out.status.code(), Some(0));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        [
            "schema_version",
            "kind",
            "path",
            "pid",
            "format_version",
            "flags",
            "api_table",
            "state",
            "complete",
            "trailer",
            "truncated",
            "torn_bytes",
            "records_after_trailer",
            "events",
            "kernel_launches",
            "threads",
            "duration_ns",
            "events_modified",
            "apis",
            "kernels",
            "blobs",
            "code_objects",
            "d2h_checks",
            "regions",
            "memory",
            "manifest",
            "problems",
            "notes"
        ]
    );
    assert_eq!(v["kind"], "process");
    assert_eq!(v["pid"], 4243);
    let events_bin = example("crash.hrr/pid-4243").join("events.bin");
    let mtime = std::fs::metadata(events_bin).unwrap().modified().unwrap();
    assert_eq!(
        v["events_modified"],
        humantime::format_rfc3339_seconds(mtime).to_string(),
        "events.bin's modification time, RFC 3339 UTC"
    );
    assert_eq!(v["state"], "incomplete");
    assert_eq!(v["complete"], false);
    assert_eq!(v["trailer"], serde_json::json!({"present": false}));
    assert_eq!(
        (v["events"].as_u64(), v["kernel_launches"].as_u64()),
        (Some(5), Some(1))
    );
    assert_eq!(v["kernels"][0]["name"], "crash_oob");
    assert_eq!(v["kernels"][0]["launches"], 1);
    assert_eq!(
        v["manifest"]["metadata"]["devices"][0]["properties"]["gcn_arch_name"],
        "gfx942:sramecc+:xnack-"
    );
    assert_eq!(v["problems"][0]["kind"], "no_trailer");
    // Five events 150 µs apart (hrr-synth's crashed process).
    assert_eq!(v["duration_ns"], 600_000);
}

#[test]
fn clean_example_counts_its_d2h_check() {
    let out = run(
        &["archive", "info", "--json"],
        &example("crash.hrr/pid-4242"),
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        (v["complete"].as_bool(), v["d2h_checks"].as_u64()),
        (Some(true), Some(1))
    );
    assert_eq!(
        v["trailer"],
        serde_json::json!({"present": true, "total_events": 9})
    );
    assert_eq!(v["problems"], serde_json::json!([]));
}

#[test]
fn unsupported_version_prints_json_then_one_error_line_and_exits_1() {
    let tmp = tempfile::tempdir().unwrap();
    let mut f = EventsFile::new(9, 0);
    f.malloc(0x1000, 8).trailer();
    let dir = ProcessArchive::new(9, f).write(tmp.path()).unwrap();
    let out = run(&["archive", "info", "--json"], &dir);
    assert_eq!(out.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["format_version"], 9);
    assert_eq!(v["problems"][0]["kind"], "unsupported_version");
    let err = common::stderr(&out);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with("error: ") && err.contains("format version 9"),
        "{err}"
    );

    let out = run(&["archive", "events"], &dir);
    assert_eq!(out.status.code(), Some(1));
    assert!(common::stderr(&out).contains("hrr decodes formats 6, 7 and 8 only"));
}

#[test]
fn bad_magic_exits_1_with_a_plain_error() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("pid-3");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("events.bin"), b"\x7fELF\x02\x01\x01\x00garbage").unwrap();
    let out = run(&["archive", "info"], &dir);
    assert_eq!(out.status.code(), Some(1));
    let err = common::stderr(&out);
    assert!(
        err.starts_with("error: ") && err.contains("not the HRR magic"),
        "{err}"
    );
}

#[test]
fn events_stream_filters_and_limits() {
    let path = example("crash.hrr/pid-4242");
    let out = common::Sandbox::new()
        .hrr()
        .args(["archive", "events", "--json", "--api", "hipMalloc"])
        .arg(&path)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let lines: Vec<serde_json::Value> = common::stdout(&out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2);
    assert!(lines
        .iter()
        .all(|l| l["api"] == "hipMalloc" && l["size"] == 4096));
    assert_eq!(lines[0]["ptr"], "0x7f1000000000");

    let out = common::Sandbox::new()
        .hrr()
        .args(["archive", "events", "--json", "--from", "5", "--limit", "2"])
        .arg(&path)
        .output()
        .unwrap();
    let seqs: Vec<u64> = common::stdout(&out)
        .lines()
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).unwrap()["seq"]
                .as_u64()
                .unwrap()
        })
        .collect();
    assert_eq!(seqs, vec![5, 6]);
    let first: serde_json::Value =
        serde_json::from_str(common::stdout(&out).lines().next().unwrap()).unwrap();
    assert_eq!(
        (first["kind"].as_str(), first["d2h_check"].as_bool()),
        (Some("DeviceToHost"), Some(true))
    );
}

#[test]
fn kernels_flag_limits_text_rows_and_says_how_many_more() {
    let tmp = tempfile::tempdir().unwrap();
    let mut f = EventsFile::v7();
    for i in 0..25 {
        f.launch(
            hrr_testkit::events::api::HIP_MODULE_LAUNCH_KERNEL,
            &hrr_testkit::events::Launch::new(
                &format!("probe_kernel_{i:02}"),
                [1, 1, 1],
                [1, 1, 1],
            ),
        );
    }
    f.trailer();
    let dir = ProcessArchive::new(1, f).write(tmp.path()).unwrap();
    let text = common::stdout(&run(&["archive", "info"], &dir));
    assert!(
        text.contains("Kernels (20 of 25)") && text.contains("5 more"),
        "{text}"
    );
    let text = common::stdout(&run(&["archive", "info", "--kernels", "all"], &dir));
    assert!(
        text.contains("Kernels (25 of 25)") && text.contains("probe_kernel_24"),
        "{text}"
    );
    let out = run(&["archive", "info", "--kernels", "some"], &dir);
    assert_eq!(out.status.code(), Some(1));
}
