//! `hrr playback --build` on Windows, run for real (in CI under Wine, see
//! `.ci/wine/runner`): cmake is configured with the documented flags and
//! the first ROCm root of the Windows search (`HIP_PATH` before
//! `ROCM_PATH`), the `hrr-playback` target is built in its Release
//! configuration, the player a multi-config generator puts in
//! `playback\Release\` is found and reused by a second `--build`, a
//! failing cmake ends in one `error:` line and exit 1, and a killed `hrr`
//! takes the cmake it started with it.
//!
//! cmake is `hrr-test-tool.exe` copied as `cmake.exe`; it and the test
//! player must be built for Windows first (`cargo build --target
//! x86_64-pc-windows-gnu -p hrr-testkit --bin hrr-test-player --bin
//! hrr-test-tool`): cargo itself does not run under Wine.
#![cfg(windows)]

mod common;

use std::path::{Path, PathBuf};

use common::{stderr, stdout, Sandbox};
use serde_json::Value;

/// A sandbox with a `projects\hrr` tree in a rocm-systems checkout and the
/// cmake stand-in in a directory of its own.
struct Rig {
    sb: Sandbox,
    checkout: PathBuf,
    cmake_dir: PathBuf,
}

impl Rig {
    fn new() -> Rig {
        let sb = Sandbox::new();
        sb.write("src/projects/hrr/CMakeLists.txt", "project(hrr)\n");
        let checkout = sb.path().join("src");
        let cmake_dir = sb.path().join("cmakebin");
        common::windows_tool(&cmake_dir, "cmake");
        Rig {
            sb,
            checkout,
            cmake_dir,
        }
    }

    fn tree(&self) -> PathBuf {
        self.checkout.join("projects").join("hrr")
    }

    fn calls_file(&self) -> PathBuf {
        self.sb.path().join("cmake.argv")
    }

    /// `hrr playback --build --json` with cmake alone on `PATH`, the HIP
    /// SDK's two variables set, and `extra` variables.
    fn build(&self, extra: &[(&str, &str)]) -> std::process::Output {
        self.build_command(extra).output().unwrap()
    }

    /// The command of [`Rig::build`].
    fn build_command(&self, extra: &[(&str, &str)]) -> std::process::Command {
        let mut cmd = self.sb.hrr_process();
        common::windows_env(&mut cmd)
            .env("PATH", &self.cmake_dir)
            .env("HIP_PATH", self.sb.path().join("hip"))
            .env("ROCM_PATH", self.sb.path().join("rocm"))
            .env("HRR_TEST_TOOL_ARGV", self.calls_file())
            .env(
                "HRR_TEST_TOOL_PLAYER",
                common::windows_test_bin("hrr-test-player"),
            )
            .envs(extra.iter().copied())
            .arg("-c")
            .arg(format!("playback.source={}", self.checkout.display()))
            .args(["playback", "--build", "--json"]);
        cmd
    }
}

fn json(out: &std::process::Output) -> Value {
    assert_eq!(out.status.code(), Some(0), "stderr:\n{}", stderr(out));
    serde_json::from_str(&stdout(out)).unwrap()
}

#[test]
fn build_configures_and_builds_release_then_reuses_the_player() {
    let rig = Rig::new();
    let j = json(&rig.build(&[]));
    let build_dir = rig.tree().join("build-playback");
    let built = build_dir
        .join("playback")
        .join("Release")
        .join("hrr-playback.exe");
    assert_eq!(
        (j["how"].as_str(), j["built"].as_bool()),
        (Some("built"), Some(true)),
        "{j}"
    );
    assert_eq!(Path::new(j["path"].as_str().unwrap()), built);
    assert!(
        j["version"]["format_version"].is_u64(),
        "the built player answered --version: {j}"
    );
    let hip = rig.sb.path().join("hip").display().to_string();
    let jobs = std::thread::available_parallelism().unwrap().get();
    let calls = std::fs::read_to_string(rig.calls_file()).unwrap();
    assert_eq!(
        calls,
        format!(
            "-S {} -B {b} -DROCM_PATH={hip} -DCMAKE_PREFIX_PATH={hip} -DHRR_BUILD_PLAYBACK=ON -DHRR_BUILD_TESTS=OFF -DCMAKE_BUILD_TYPE=Release\n\
             --build {b} --target hrr-playback --config Release -j{jobs}\n",
            rig.tree().display(),
            b = build_dir.display()
        )
    );
    // A second --build finds the first one's player and runs no cmake.
    let j = json(&rig.build(&[]));
    assert_eq!(
        (j["how"].as_str(), j["built"].as_bool()),
        (Some("built"), Some(false))
    );
    assert_eq!(Path::new(j["path"].as_str().unwrap()), built);
    assert_eq!(std::fs::read_to_string(rig.calls_file()).unwrap(), calls);
}

#[test]
fn the_prefix_path_is_passed_as_a_cmake_list() {
    let rig = Rig::new();
    json(&rig.build(&[("CMAKE_PREFIX_PATH", r"D:\deps;E:\more")]));
    let calls = std::fs::read_to_string(rig.calls_file()).unwrap();
    let configure = calls.lines().next().unwrap();
    assert!(
        configure.contains(r" -DCMAKE_PREFIX_PATH=D:\deps;E:\more "),
        "{configure}"
    );
}

#[test]
fn a_failing_cmake_is_one_error_line_and_exit_1() {
    let rig = Rig::new();
    let out = rig.build(&[("HRR_TEST_TOOL_FAIL", "1")]);
    assert_eq!(out.status.code(), Some(1), "stderr:\n{}", stderr(&out));
    assert!(stdout(&out).is_empty(), "{}", stdout(&out));
    let err = stderr(&out);
    let errors: Vec<&str> = err.lines().filter(|l| l.starts_with("error:")).collect();
    assert_eq!(errors.len(), 1, "{err}");
    assert!(
        errors[0].starts_with(
            "error: building hrr-playback failed: cmake build exited with status 2; full build log: "
        ),
        "{err}"
    );
    assert!(err.contains("compile line 30"), "the log's tail: {err}");
    let log = PathBuf::from(errors[0].rsplit("full build log: ").next().unwrap());
    assert!(log.is_file(), "{}", log.display());
    assert!(!rig.tree().join("build-playback").join("playback").exists());
}

#[test]
fn a_killed_hrr_takes_its_cmake_with_it() {
    let rig = Rig::new();
    let pid_file = rig.sb.path().join("cmake.pid");
    let pid_text = pid_file.display().to_string();
    let mut hrr = rig
        .build_command(&[
            ("HRR_TEST_TOOL_HANG", "1"),
            ("HRR_TEST_TOOL_PID_FILE", &pid_text),
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let started = std::time::Instant::now();
    let cmake = loop {
        if let Some(pid) = std::fs::read_to_string(&pid_file)
            .ok()
            .and_then(|t| t.trim().parse::<u32>().ok())
        {
            break pid;
        }
        assert!(
            hrr.try_wait().unwrap().is_none(),
            "hrr ended before cmake started"
        );
        assert!(
            started.elapsed() < std::time::Duration::from_secs(60),
            "no cmake started"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    assert!(!common::gone(cmake));
    // TerminateProcess: only the Job object's kill-on-close can end cmake.
    hrr.kill().unwrap();
    hrr.wait().unwrap();
    assert!(common::all_gone(&[cmake]), "cmake {cmake} outlived hrr");
}
