//! `hrr mcp` driven by an independent client, the official Python MCP SDK
//! (`tests/mcp/client.py`): the five tools are listed with input and output
//! schemas, and `archive_info`, `archive_events`, `triage`, `preflight` and
//! `classify` answer results that validate against those schemas, with
//! progress for triage and a tool error carrying `error:` for a path that is
//! no archive.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{stderr, stdout, Sandbox};

const INSTALL: &str = "python3 -m pip install mcp jsonschema";

fn manifest_path(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(rel)
}

/// The Python interpreter itself (not a version-manager shim, which would
/// need the environment the sandbox clears), with `mcp` and `jsonschema`
/// importable. A missing one fails the test: CI installs them.
fn python() -> PathBuf {
    let out = Command::new("python3")
        .args(["-c", "import sys, mcp, jsonschema; print(sys.executable)"])
        .output()
        .unwrap_or_else(|e| {
            panic!("python3 is needed for the MCP client test ({e}); then {INSTALL}")
        });
    assert!(
        out.status.success(),
        "the MCP client test needs Python's mcp and jsonschema packages: {INSTALL}\n{}",
        stderr(&out)
    );
    PathBuf::from(stdout(&out).trim())
}

#[test]
fn a_python_mcp_client_lists_the_tools_and_gets_valid_results() {
    let python = python();
    let sb = Sandbox::new();
    std::fs::create_dir_all(sb.path().join("home")).unwrap();
    let not_an_archive = sb.path().join("photos");
    std::fs::create_dir_all(&not_an_archive).unwrap();
    // The client runs `hrr mcp` in its own environment: the sandbox's.
    let hermetic = sb.hrr_process();
    let mut cmd = Command::new(python);
    cmd.env_clear()
        .envs(hermetic.get_envs().filter_map(|(k, v)| Some((k, v?))));
    let out = cmd
        .current_dir(sb.path())
        .arg(manifest_path("tests/mcp/client.py"))
        .arg(hermetic.get_program())
        .arg(manifest_path("examples/crash.hrr"))
        .arg(&not_an_archive)
        .arg(manifest_path("../shared/fixtures/replay_pass.log"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "the MCP client failed:\n{}\n{}",
        stdout(&out),
        stderr(&out)
    );
    assert!(
        stdout(&out).trim_end().ends_with("checks"),
        "the client finished: {}",
        stdout(&out)
    );
}
