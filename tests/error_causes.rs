//! Errors name the real cause: an events.bin that is not a file, a
//! directory hrr may not read, a config path that is a directory, a docker
//! daemon that is down.
#![cfg(unix)]

mod common;

use std::path::{Path, PathBuf};
use std::process::Output;

use common::{script, stderr, Sandbox};

/// Exit 1 and exactly one `error:` line, which is returned.
fn the_error(out: &Output) -> String {
    let err = stderr(out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    let lines: Vec<&str> = err.lines().filter(|l| l.starts_with("error:")).collect();
    assert_eq!(lines.len(), 1, "{err}");
    lines[0].to_string()
}

/// Makes the `events.bin` at the given path.
type MakeEvents = fn(&Path);

/// `cap.hrr/pid-7/` whose events.bin is made by `make`.
fn root_with_events(sb: &Sandbox, make: impl Fn(&Path)) -> PathBuf {
    let root = sb.path().join("cap.hrr");
    std::fs::create_dir_all(root.join("pid-7")).unwrap();
    make(&root.join("pid-7/events.bin"));
    root
}

#[test]
fn an_events_bin_that_is_not_a_file_is_named_as_what_it_is() {
    let cases: [(&str, MakeEvents); 3] = [
        ("a directory", |p| std::fs::create_dir(p).unwrap()),
        ("a FIFO", |p| {
            nix::unistd::mkfifo(p, nix::sys::stat::Mode::S_IRWXU).unwrap()
        }),
        ("a character device", |p| {
            std::os::unix::fs::symlink("/dev/zero", p).unwrap()
        }),
    ];
    for (kind, make) in cases {
        let sb = Sandbox::new();
        let root = root_with_events(&sb, make);
        let out = sb
            .hrr()
            .arg("archive")
            .arg("info")
            .arg(&root)
            .output()
            .unwrap();
        let line = the_error(&out);
        assert!(
            line.contains(&format!("pid-7/events.bin is {kind}, not a file")),
            "{line}"
        );
        assert!(!line.contains("nothing recorded"), "{line}");
        let out = sb
            .hrr()
            .arg("archive")
            .arg("info")
            .arg(root.join("pid-7"))
            .output()
            .unwrap();
        let line = the_error(&out);
        assert!(
            line.ends_with(&format!("pid-7/events.bin is {kind}, not a file")),
            "{line}"
        );
    }
}

#[test]
fn a_process_directory_hrr_may_not_read_says_permission_denied() {
    use std::os::unix::fs::PermissionsExt;
    let sb = Sandbox::new();
    let root = root_with_events(&sb, |p| std::fs::write(p, b"EHRR\x07\x00\x01\x00").unwrap());
    let open = std::fs::Permissions::from_mode(0o755);
    std::fs::set_permissions(sb.path(), open.clone()).unwrap();
    std::fs::set_permissions(&root, open).unwrap();
    std::fs::set_permissions(root.join("pid-7"), std::fs::Permissions::from_mode(0o700)).unwrap();
    // Root reads everything, so as root the check runs as nobody.
    let hrr = assert_cmd::cargo::cargo_bin("hrr");
    let mut cmd = if nix::unistd::geteuid().is_root() {
        let mut c = std::process::Command::new("setpriv");
        c.args(["--reuid=65534", "--regid=65534", "--clear-groups"])
            .arg(hrr);
        c
    } else {
        std::fs::set_permissions(root.join("pid-7"), std::fs::Permissions::from_mode(0o000))
            .unwrap();
        std::process::Command::new(hrr)
    };
    cmd.env("HRR_SITE_CONFIG", sb.site_file())
        .env("XDG_CONFIG_HOME", sb.path().join("xdg"))
        .current_dir("/");
    let out = cmd.arg("archive").arg("info").arg(&root).output().unwrap();
    let line = the_error(&out);
    assert!(
        line.contains("pid-7/events.bin: Permission denied"),
        "{line}"
    );
}

#[test]
fn hrr_config_naming_a_directory_says_so() {
    let sb = Sandbox::new();
    let out = sb
        .hrr()
        .env("HRR_CONFIG", sb.path())
        .args(["config", "show"])
        .output()
        .unwrap();
    assert_eq!(
        the_error(&out),
        format!(
            "error: config file {} is a directory, not a file (named by HRR_CONFIG)",
            sb.path().display()
        )
    );
}

#[test]
fn a_docker_daemon_that_is_down_is_not_a_missing_player() {
    let sb = Sandbox::new();
    let bin = sb.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    script(
        &bin,
        "docker",
        "#!/bin/sh\necho 'Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?' >&2\nexit 1\n",
    );
    let archive = common::write_replay_archive(&sb.path().join("cap.hrr"), 4242, &["k0"]);
    let out = sb
        .hrr()
        .env("PATH", format!("{}:/usr/bin:/bin", bin.display()))
        .args([
            "-c",
            "docker.image=rocm/hrr:test",
            "replay",
            "--replay",
            "docker",
        ])
        .arg(&archive.dir)
        .output()
        .unwrap();
    let line = the_error(&out);
    assert!(
        line.contains("docker is not running: Cannot connect to the Docker daemon"),
        "{line}"
    );
    assert!(!line.contains("hrr-playback not found"), "{line}");
}

#[test]
fn an_archive_path_that_is_not_utf8_is_read_and_shown_lossily() {
    use std::os::unix::ffi::OsStrExt;
    let sb = Sandbox::new();
    let root = sb
        .path()
        .join(std::ffi::OsStr::from_bytes(b"capture-\xff.hrr"));
    std::fs::create_dir_all(root.join("pid-7")).unwrap();
    std::fs::write(root.join("pid-7/events.bin"), b"EHRR\x07\x00\x01\x00").unwrap();
    let shown = format!("{}/pid-7", root.display());
    assert!(shown.contains('\u{fffd}'), "{shown}");
    let out = sb
        .hrr()
        .arg("archive")
        .arg("info")
        .arg(&root)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        common::stdout(&out).starts_with(&format!("HRR archive: {shown}\n")),
        "{}",
        common::stdout(&out)
    );
    let out = sb
        .hrr()
        .arg("archive")
        .arg("events")
        .arg(&root)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let log = sb.write("replay.log", "[HRR] PASS\n");
    let out = sb
        .hrr()
        .args(["classify", "--format", "json", "--archive"])
        .arg(&root)
        .arg("--log")
        .arg(&log)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(common::stdout(&out).contains(&format!("\"archive\": \"{shown}\"")));
}

#[test]
fn triage_of_a_root_whose_name_is_not_utf8_reaches_every_process() {
    use std::os::unix::ffi::OsStrExt;
    let sb = Sandbox::new();
    let root = sb
        .path()
        .join(std::ffi::OsStr::from_bytes(b"capture-\xff.hrr"));
    common::copy_example(&root);
    let workdir = sb.path().join("work");
    let out = sb
        .hrr()
        .args([
            "triage",
            "--no-replay",
            "--all",
            "--format",
            "json",
            "--workdir",
        ])
        .arg(&workdir)
        .arg(&root)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let findings: serde_json::Value = serde_json::from_str(&common::stdout(&out)).unwrap();
    let archives: Vec<&str> = findings
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["archive"].as_str().unwrap())
        .collect();
    let shown = root.display().to_string();
    assert_eq!(
        archives,
        [format!("{shown}/pid-4242"), format!("{shown}/pid-4243")],
        "each process is decoded, and shown lossily"
    );
    // The saved findings are named after the real directories.
    let mut saved: Vec<String> = std::fs::read_dir(&workdir)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".finding.json"))
        .collect();
    saved.sort();
    assert_eq!(saved.len(), 2, "{saved:?}");
    assert!(saved[0].starts_with("pid-4242-"), "{saved:?}");
}

#[test]
fn a_workflow_gets_the_exact_bytes_of_a_path_that_is_not_utf8() {
    use std::os::unix::ffi::OsStrExt;
    let sb = Sandbox::new();
    let root = sb
        .path()
        .join(std::ffi::OsStr::from_bytes(b"capture-\xff.hrr"));
    common::copy_example(&root);
    let probe = sb.write(
        "probe.lua",
        r#"local a = hrr.archive.resolve(hrr.args[1])
assert(a.path:find("\xff", 1, true), "path lost its byte: " .. a.path)
assert(hrr.fs.exists(a.path .. "/events.bin"), "resolved path does not open")
assert(hrr.fs.exists(a.root .. "/manifest.json"), "root does not open")
for _, p in ipairs(a.processes) do
  assert(hrr.fs.exists(p.path .. "/events.bin"), p.path .. " does not open")
end
hrr.out(#a.processes .. " processes\n")
"#,
    );
    let out = sb.hrr().arg("run").arg(&probe).arg(&root).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(common::stdout(&out), "2 processes\n");
}
