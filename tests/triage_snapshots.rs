//! The markdown `hrr triage` prints for three findings, end to end through
//! the embedded triage.lua: metadata-only on the committed example capture,
//! a memory fault and a hang replayed with the test player. Paths,
//! timestamps (events.bin's modification time among them) and durations
//! are filtered; everything else is reviewed text.
#![cfg(unix)]

mod common;

use std::path::{Path, PathBuf};

use common::{stderr, test_player, Sandbox};

fn example() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/crash.hrr")
}

/// Runs `hrr triage` on the example capture and returns stdout with the
/// machine-specific parts replaced.
fn triage(sb: &Sandbox, scenario: Option<&str>, extra: &[&str]) -> String {
    sb.write("kfd", "");
    let mut cmd = sb.hrr();
    if let Some(s) = scenario {
        cmd.env("HRR_TEST_SCENARIO", s)
            .args(["-c", &format!("playback.path={}", test_player().display())])
            .args([
                "-c",
                &format!("replay.kfd={}", sb.path().join("kfd").display()),
            ]);
    }
    let out = cmd
        .args(["-c", "replay.gpu=0", "triage"])
        .arg(example())
        .args(extra)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = String::from_utf8(out.stdout).unwrap();
    text.replace(&example().display().to_string(), "[EXAMPLES]/crash.hrr")
        .replace(&sb.path().display().to_string(), "[SANDBOX]")
        .replace(&test_player().display().to_string(), "[PLAYER]")
}

fn settings() -> insta::Settings {
    let mut s = insta::Settings::clone_current();
    s.add_filter(r"\d{8}T\d{6}Z-\d+", "[STAMP]");
    s.add_filter(r"\*\*Duration\*\*: [0-9.]+ s", "**Duration**: [D] s");
    s.add_filter(
        r"\| events\.bin modified \| \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ \|",
        "| events.bin modified | [MTIME] |",
    );
    s
}

#[test]
fn metadata_only_on_the_example_capture() {
    let sb = Sandbox::new();
    let text = triage(&sb, None, &["--no-replay"]);
    settings().bind(|| insta::assert_snapshot!("triage_metadata_only", text));
}

#[test]
fn memory_fault_on_the_crashed_example_process() {
    let sb = Sandbox::new();
    let text = triage(&sb, Some("fault_abort"), &[]);
    settings().bind(|| insta::assert_snapshot!("triage_maf", text));
}

#[test]
fn hang_stopped_by_the_timeout() {
    let sb = Sandbox::new();
    let text = triage(&sb, Some("hang"), &["--timeout", "1"]);
    settings().bind(|| insta::assert_snapshot!("triage_hang", text));
}
