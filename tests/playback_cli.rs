//! `hrr playback [--build]` end to end: the search order, the error when
//! none is found, and one cmake build (a stand-in cmake on PATH records its
//! argv) that succeeds, fails, or is reused.
#![cfg(unix)]

mod common;

use std::path::{Path, PathBuf};

use common::{script, stderr, stdout, Sandbox};
use serde_json::Value;

/// A stand-in player answering `--version` in the reference's format
/// (playback-output.md §2k) with `revision` as its source revision.
fn player(dir: &Path, revision: &str) -> PathBuf {
    script(
        dir,
        "hrr-playback",
        &format!(
            "#!/bin/sh\nif [ \"$1\" = --version ]; then\n  echo 'hrr-playback (HIP Record & Replay)'\n  echo '  archive format version : 8'\n  echo '  source revision        : {revision}'\n  echo '  source branch          : develop'\n  echo '  build type             : Release'\n  echo '  hip runtime version    : 70051831'\nfi\n"
        ),
    )
}

fn playback(sb: &Sandbox, path_dirs: &[&Path], args: &[&str]) -> std::process::Output {
    let mut path: Vec<String> = path_dirs.iter().map(|d| d.display().to_string()).collect();
    path.push("/usr/bin:/bin".into());
    sb.hrr()
        .env("PATH", path.join(":"))
        .arg("-c")
        .arg(format!("rocm.path={}", sb.path().join("rocm").display()))
        .arg("playback")
        .args(args)
        .output()
        .unwrap()
}

fn json(out: &std::process::Output) -> Value {
    assert_eq!(out.status.code(), Some(0), "stderr:\n{}", stderr(out));
    serde_json::from_str(&stdout(out)).unwrap()
}

#[test]
fn search_order_is_config_then_rocm_then_path() {
    let sb = Sandbox::new();
    let configured = player(&sb.path().join("mine"), "from-config");
    let rocm = player(&sb.path().join("rocm/bin"), "from-rocm");
    let on_path_dir = sb.path().join("pathdir");
    let on_path = player(&on_path_dir, "from-path");

    let out = sb
        .hrr()
        .env("PATH", format!("{}:/usr/bin:/bin", on_path_dir.display()))
        .env("HRR_PLAYBACK", &configured)
        .arg("-c")
        .arg(format!("rocm.path={}", sb.path().join("rocm").display()))
        .args(["playback", "--json"])
        .output()
        .unwrap();
    let j = json(&out);
    assert_eq!(
        (j["how"].as_str(), j["built"].as_bool()),
        (Some("config"), Some(false))
    );
    assert_eq!(j["path"], configured.display().to_string());
    assert_eq!(j["version"]["format_version"], 8);
    assert_eq!(j["version"]["source_revision"], "from-config");

    let j = json(&playback(&sb, &[&on_path_dir], &["--json"]));
    assert_eq!(
        (j["how"].as_str(), j["path"].as_str()),
        (Some("rocm"), rocm.to_str())
    );
    std::fs::remove_file(&rocm).unwrap();
    let j = json(&playback(&sb, &[&on_path_dir], &["--json"]));
    assert_eq!(
        (j["how"].as_str(), j["path"].as_str()),
        (Some("path"), on_path.to_str())
    );

    let out = playback(&sb, &[&on_path_dir], &[]);
    assert_eq!(
        stdout(&out).lines().take(3).collect::<Vec<_>>(),
        [
            on_path.to_str().unwrap(),
            "  found via: PATH",
            "  archive format version: 8"
        ]
    );
}

#[test]
fn none_found_names_the_three_fixes_and_no_replay() {
    let sb = Sandbox::new();
    let out = playback(&sb, &[], &[]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert_eq!(err.lines().count(), 1, "{err}");
    for needle in [
        "error: hrr-playback not found",
        "playback.path (or HRR_PLAYBACK)",
        "rocm/bin/hrr-playback",
        "hrr playback --build",
        "--no-replay",
    ] {
        assert!(err.contains(needle), "missing {needle:?} in {err}");
    }
}

/// A stand-in cmake: records each argv (one line per call); `--build` makes
/// `<build>/playback/hrr-playback`, unless `fail` is set, where it prints 30
/// numbered lines and exits 2.
fn fake_cmake(sb: &Sandbox, fail: bool) -> PathBuf {
    let bin = sb.path().join("cmakebin");
    let log = sb.path().join("cmake.argv");
    let build_step = if fail {
        "i=1; while [ $i -le 30 ]; do echo \"compile line $i\"; i=$((i+1)); done; exit 2"
            .to_string()
    } else {
        format!(
            "mkdir -p \"$2/playback\" && cp '{}' \"$2/playback/hrr-playback\" && echo built",
            player(&sb.path().join("template"), "built-here").display()
        )
    };
    script(
        &bin,
        "cmake",
        &format!(
            "#!/bin/sh\necho \"$*\" >> '{}'\nif [ \"$1\" = --build ]; then {build_step}; else echo configured; fi\n",
            log.display()
        ),
    );
    bin
}

fn source_tree(sb: &Sandbox, rel: &str) -> PathBuf {
    sb.write(&format!("{rel}/CMakeLists.txt"), "project(hrr)\n")
        .parent()
        .unwrap()
        .to_path_buf()
}

#[test]
fn build_runs_cmake_once_then_reuses_the_build() {
    let sb = Sandbox::new();
    let src = source_tree(&sb, "src/projects/hrr");
    let cmake_bin = fake_cmake(&sb, false);
    let checkout = sb.path().join("src");
    let args = [
        "-c",
        &format!("playback.source={}", checkout.display()),
        "playback",
        "--build",
        "--json",
    ];
    let run = || {
        sb.hrr()
            .env("PATH", format!("{}:/usr/bin:/bin", cmake_bin.display()))
            .arg("-c")
            .arg(format!("rocm.path={}", sb.path().join("rocm").display()))
            .args(args)
            .output()
            .unwrap()
    };
    let j = json(&run());
    let build_dir = src.join("build-playback");
    assert_eq!(
        (j["how"].as_str(), j["built"].as_bool()),
        (Some("built"), Some(true))
    );
    assert_eq!(
        j["path"],
        build_dir
            .join("playback/hrr-playback")
            .display()
            .to_string()
    );
    assert_eq!(j["version"]["source_revision"], "built-here");
    let rocm = sb.path().join("rocm").display().to_string();
    let jobs = std::thread::available_parallelism().unwrap().get();
    let calls = std::fs::read_to_string(sb.path().join("cmake.argv")).unwrap();
    assert_eq!(
        calls,
        format!(
            "-S {} -B {b} -DROCM_PATH={rocm} -DCMAKE_PREFIX_PATH={rocm} -DHRR_BUILD_PLAYBACK=ON -DHRR_BUILD_TESTS=OFF -DCMAKE_BUILD_TYPE=Release\n--build {b} --target hrr-playback --config Release -j{jobs}\n",
            src.display(),
            b = build_dir.display()
        )
    );
    let logs: Vec<PathBuf> = std::fs::read_dir(sb.path().join("work"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("hrr-playback-build-")
        })
        .collect();
    assert_eq!(logs.len(), 1);
    let log = std::fs::read_to_string(&logs[0]).unwrap();
    assert!(
        log.contains("configured\n") && log.contains("built\n"),
        "{log}"
    );
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(
        std::fs::metadata(&logs[0]).unwrap().permissions().mode() & 0o777,
        0o600
    );

    // Second run: the existing build is reused, cmake is not called again.
    let j = json(&run());
    assert_eq!(
        (j["how"].as_str(), j["built"].as_bool()),
        (Some("built"), Some(false))
    );
    assert_eq!(
        std::fs::read_to_string(sb.path().join("cmake.argv")).unwrap(),
        calls
    );
}

#[test]
fn a_failed_build_exits_1_with_the_log_tail_and_path() {
    let sb = Sandbox::new();
    let src = source_tree(&sb, "hrr");
    let cmake_bin = fake_cmake(&sb, true);
    let out = sb
        .hrr()
        .env("PATH", format!("{}:/usr/bin:/bin", cmake_bin.display()))
        .args([
            "-c",
            &format!("playback.source={}", src.display()),
            "playback",
            "--build",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(
        err.contains("compile line 11\n") && err.contains("compile line 30\n"),
        "{err}"
    );
    assert!(
        !err.contains("compile line 10\n"),
        "only the last 20 lines: {err}"
    );
    let last = err.lines().last().unwrap();
    assert!(last.starts_with("error: building hrr-playback failed: cmake build exited with status 2; full build log: "), "{last}");
    let log = PathBuf::from(last.rsplit("full build log: ").next().unwrap());
    assert!(log.starts_with(sb.path().join("work")) && log.is_file());
    assert!(stdout(&out).is_empty());
}

#[test]
fn build_without_a_source_or_cmake_says_what_to_set() {
    let sb = Sandbox::new();
    let out = playback(&sb, &[], &["--build"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("playback.source is not set"),
        "{}",
        stderr(&out)
    );
    let src = source_tree(&sb, "hrr");
    let out = sb
        .hrr()
        .env("PATH", sb.path())
        .args([
            "-c",
            &format!("playback.source={}", src.display()),
            "playback",
            "--build",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("cmake is not on PATH"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn lua_locate_returns_a_table_or_nil_and_the_error() {
    let sb = Sandbox::new();
    let lua = sb.write(
        "pb.lua",
        "local pb, err = hrr.playback.locate{build = false}\nif pb then hrr.out(pb.how .. '|' .. tostring(pb.built) .. '|' .. pb.version.format_version .. '\\n') else hrr.out('nil|' .. err .. '\\n') end\n",
    );
    let run = |path: String| {
        sb.hrr()
            .env("PATH", path)
            .arg("-c")
            .arg(format!("rocm.path={}", sb.path().join("rocm").display()))
            .arg("run")
            .arg(&lua)
            .output()
            .unwrap()
    };
    let out = run("/usr/bin:/bin".into());
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stdout(&out).starts_with("nil|hrr-playback not found."),
        "{}",
        stdout(&out)
    );
    player(&sb.path().join("rocm/bin"), "r");
    let out = run("/usr/bin:/bin".into());
    assert_eq!(stdout(&out), "rocm|false|8\n", "{}", stderr(&out));
}

#[test]
fn a_run_never_attempts_a_second_build() {
    let sb = Sandbox::new();
    let src = source_tree(&sb, "hrr");
    let cmake_bin = fake_cmake(&sb, true);
    let lua = sb.write(
        "twice.lua",
        "for i = 1, 2 do\n  local pb, err = hrr.playback.locate{build = true}\n  hrr.out(i .. ': ' .. tostring(pb) .. ' ' .. err .. '\\n')\nend\n",
    );
    let out = sb
        .hrr()
        .env("PATH", format!("{}:/usr/bin:/bin", cmake_bin.display()))
        .args(["-c", &format!("playback.source={}", src.display()), "run"])
        .arg(&lua)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.contains("1: nil building hrr-playback failed: cmake build exited with status 2"),
        "{text}"
    );
    assert!(
        text.contains("2: nil hrr-playback was already built once in this run and that failed"),
        "{text}"
    );
    let calls = std::fs::read_to_string(sb.path().join("cmake.argv")).unwrap();
    assert_eq!(
        calls.lines().filter(|l| l.starts_with("--build")).count(),
        1,
        "{calls}"
    );
}

#[test]
fn version_lines_printed_before_the_runtime_aborts_are_kept() {
    // The player prints and flushes its identity, then loads the HIP
    // runtime for the last line, which can abort (playback-output.md §10.5).
    let sb = Sandbox::new();
    let player = common::test_player();
    let run = |args: &[&str]| {
        sb.hrr()
            .env("HRR_TEST_VERSION_ABORT", "1")
            .env("HRR_TEST_READER_VERSION", "8")
            .arg("-c")
            .arg(format!("playback.path={}", player.display()))
            .arg("playback")
            .args(args)
            .output()
            .unwrap()
    };
    let out = run(&["--json"]);
    let j = json(&out);
    assert_eq!(j["version"]["format_version"], 8, "{j}");
    assert_eq!(j["version"]["source_revision"], "3f2a9c1");
    assert_eq!(j["version"]["build_type"], "Release");
    assert_eq!(j["version"]["hip_runtime_version"], Value::Null);
    assert_eq!(j["version"]["ended"], "killed by signal 6");
    let err = stderr(&out);
    assert!(
        err.contains("printed its build identity, then ended (killed by signal 6)"),
        "{err}"
    );

    let out = run(&[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("  archive format version: 8\n"), "{text}");
    assert!(text.contains("  source revision: 3f2a9c1\n"), "{text}");
    assert!(
        text.contains("  --version ended: killed by signal 6, after printing the lines above\n"),
        "{text}"
    );
}
