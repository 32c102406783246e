//! `hrr mcp` driven by an independent client, the official Python MCP SDK
//! (`tests/mcp/client.py`): the five tools are listed with input and output
//! schemas, and `archive_info`, `archive_events`, `triage`, `preflight` and
//! `classify` answer results that validate against those schemas, with
//! progress for triage and a tool error carrying `error:` for a path that is
//! no archive; a call past `--call-timeout` is stopped, its replay with it.

mod common;

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

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

/// `python <script> <args…>` in the sandbox's hermetic environment (plus
/// `env`), which the client hands on to the `hrr mcp` it starts.
fn client(sb: &Sandbox, script: &str, args: &[&OsStr], env: &[(&str, &OsStr)]) -> Output {
    let python = python();
    std::fs::create_dir_all(sb.path().join("home")).unwrap();
    let hermetic = sb.hrr_process();
    let out = Command::new(python)
        .env_clear()
        .envs(hermetic.get_envs().filter_map(|(k, v)| Some((k, v?))))
        .envs(env.iter().copied())
        .current_dir(sb.path())
        .arg(manifest_path("tests/mcp").join(script))
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "the MCP client {script} failed:\n{}\n{}",
        stdout(&out),
        stderr(&out)
    );
    out
}

fn hrr() -> PathBuf {
    assert_cmd::cargo::cargo_bin("hrr")
}

#[test]
fn a_python_mcp_client_lists_the_tools_and_gets_valid_results() {
    let sb = Sandbox::new();
    let not_an_archive = sb.path().join("photos");
    std::fs::create_dir_all(&not_an_archive).unwrap();
    let out = client(
        &sb,
        "client.py",
        &[
            hrr().as_os_str(),
            manifest_path("examples/crash.hrr").as_os_str(),
            not_an_archive.as_os_str(),
            manifest_path("../shared/fixtures/replay_pass.log").as_os_str(),
        ],
        &[],
    );
    assert!(
        stdout(&out).trim_end().ends_with("checks"),
        "the client finished: {}",
        stdout(&out)
    );
}

/// A triage whose replay hangs, served with `--call-timeout 3s`: the client
/// gets the status lines while it hangs, then a tool error soon after the
/// limit; hrr was stopped with SIGTERM, so it stopped the player and closed
/// the replay log with its marker; and the server answers the next call.
#[cfg(unix)]
#[test]
fn a_call_past_the_call_timeout_is_stopped_with_its_replay() {
    let sb = Sandbox::new();
    sb.write("kfd", "");
    sb.write("rocm/lib/libamdhip64.so.7.2.53211", "");
    let bin = sb.path().join("bin");
    common::script(
        &bin,
        "rocm-smi",
        "#!/bin/sh\nprintf 'GPU[0]\\t\\t: Card series: Instinct MI300X\\nGPU[0]\\t\\t: GFX Version: gfx942\\n'\n",
    );
    let set = |kv: String| ["-c".to_string(), kv];
    let mut args: Vec<String> = [
        manifest_path("examples/crash.hrr/pid-4243")
            .display()
            .to_string(),
        "3".into(),
        hrr().display().to_string(),
    ]
    .into();
    args.extend(set(format!(
        "playback.path={}",
        common::test_player().display()
    )));
    args.extend(set(format!(
        "replay.kfd={}",
        sb.path().join("kfd").display()
    )));
    args.extend(set(format!(
        "rocm.path={}",
        sb.path().join("rocm").display()
    )));
    args.extend(set("replay.gpu=0".into()));
    args.extend(["mcp".into(), "--call-timeout".into(), "3s".into()]);
    let path = format!("{}:/usr/bin:/bin", bin.display());
    let args: Vec<&OsStr> = args.iter().map(OsStr::new).collect();
    client(
        &sb,
        "timeout.py",
        &args,
        &[
            ("PATH", OsStr::new(&path)),
            ("HRR_TEST_SCENARIO", OsStr::new("hang")),
        ],
    );
    let logs: Vec<String> = std::fs::read_dir(sb.path().join("work"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "log"))
        .map(|p| std::fs::read_to_string(p).unwrap())
        .collect();
    assert_eq!(logs.len(), 1, "one replay log");
    assert!(
        logs[0].contains("[hrr] replay interrupted: hrr received signal 15"),
        "the log ends with the marker of a SIGTERM: {}",
        logs[0]
    );
}
