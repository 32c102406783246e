//! `-o` and `--log` never replace anything that is not a regular file: a
//! device is written through, a symlink is followed, a pipe with a reader
//! receives the output, and a directory, socket, block device or pipe with
//! no reader is refused with one error line, untouched.
#![cfg(target_os = "linux")]

mod common;

use std::io::Read as _;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use common::{stderr, stdout, test_player, Sandbox};

const LOG: &str = "[HRR] Replay : 3 events\n[HRR] Result: PASS (0 mismatches)\n";

/// `hrr classify --log <a passing log> -o <target>`.
fn classify_to(sb: &Sandbox, target: &Path) -> std::process::Output {
    let log = sb.write("pass.log", LOG);
    sb.hrr()
        .args(["classify", "--log"])
        .arg(log)
        .arg("-o")
        .arg(target)
        .output()
        .unwrap()
}

/// `mknod PATH TYPE MAJOR MINOR` (the tests run as root).
fn mknod(path: &Path, kind: &str, major: u32, minor: u32) {
    let status = Command::new("mknod")
        .arg(path)
        .args([kind, &major.to_string(), &minor.to_string()])
        .status()
        .unwrap();
    assert!(status.success(), "mknod {}", path.display());
}

fn mkfifo(path: &Path) {
    assert!(Command::new("mkfifo").arg(path).status().unwrap().success());
}

fn file_type(path: &Path) -> std::fs::FileType {
    std::fs::symlink_metadata(path).unwrap().file_type()
}

/// Exit code 1 and exactly one `error:` line that contains `needle`.
fn assert_refused(out: &std::process::Output, needle: &str) {
    assert_eq!(out.status.code(), Some(1), "{}", stderr(out));
    let err = stderr(out);
    let errors: Vec<&str> = err.lines().filter(|l| l.starts_with("error:")).collect();
    assert_eq!(errors.len(), 1, "{err}");
    assert!(errors[0].contains(needle), "{err}");
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn a_character_device_is_written_through_and_stays_a_device() {
    // A private node with /dev/null's numbers, so a regression cannot take
    // the machine's /dev/null away.
    let sb = Sandbox::new();
    let null = sb.path().join("null");
    mknod(&null, "c", 1, 3);
    let out = classify_to(&sb, &null);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        file_type(&null).is_char_device(),
        "-o replaced the device node"
    );
    let out = classify_to(&sb, Path::new("/dev/null"));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(file_type(Path::new("/dev/null")).is_char_device());
}

#[test]
fn a_symlink_is_followed_and_kept() {
    let sb = Sandbox::new();
    let real = sb.write("runs/today.md", "yesterday's finding\n");
    let link = sb.path().join("latest.md");
    std::os::unix::fs::symlink("runs/today.md", &link).unwrap();
    let out = classify_to(&sb, &link);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(file_type(&link).is_symlink(), "the symlink was replaced");
    assert_eq!(
        std::fs::read_link(&link).unwrap(),
        Path::new("runs/today.md")
    );
    let text = std::fs::read_to_string(&real).unwrap();
    assert!(text.starts_with("## HRR Triage"), "{text}");
}

/// Opens `fifo` as its reader without waiting for a writer.
fn reader(fifo: &Path) -> std::fs::File {
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(nix::libc::O_NONBLOCK)
        .open(fifo)
        .unwrap()
}

/// What a reader that was already there got, once the writer is done.
fn drained(mut reader: std::fs::File) -> String {
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match reader.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
            Err(e) => panic!("{e}"),
        }
    }
    String::from_utf8(got).unwrap()
}

#[test]
fn a_pipe_with_a_reader_receives_the_finding() {
    let sb = Sandbox::new();
    let fifo = sb.path().join("finding.pipe");
    mkfifo(&fifo);
    let r = reader(&fifo);
    let out = classify_to(&sb, &fifo);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(file_type(&fifo).is_fifo());
    let got = drained(r);
    assert!(got.starts_with("## HRR Triage"), "{got}");
    assert!(got.contains("### Findings"), "{got}");
}

/// Runs `cmd` to its end, failing the test if it takes more than 20 s.
fn finishes(mut cmd: Command) -> std::process::Output {
    let mut child = cmd
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let started = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if started.elapsed() > Duration::from_secs(20) {
            child.kill().unwrap();
            panic!("hrr hung on a pipe with no reader");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

#[test]
fn a_pipe_with_no_reader_is_an_error_not_a_hang() {
    let sb = Sandbox::new();
    let fifo = sb.path().join("nobody.pipe");
    mkfifo(&fifo);
    let log = sb.write("pass.log", LOG);
    let mut cmd = sb.hrr_process();
    cmd.args(["classify", "--log"])
        .arg(log)
        .arg("-o")
        .arg(&fifo);
    let out = finishes(cmd);
    assert_refused(&out, "a pipe (FIFO) with no reader");
    assert!(file_type(&fifo).is_fifo());
}

#[test]
fn a_directory_socket_or_block_device_is_refused_and_left_alone() {
    let sb = Sandbox::new();
    let dir = sb.path().join("findings");
    std::fs::create_dir(&dir).unwrap();
    let out = classify_to(&sb, &dir);
    assert_refused(&out, "it is a directory");
    assert!(file_type(&dir).is_dir());
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0);

    let sock = sb.path().join("daemon.sock");
    let _listener = std::os::unix::net::UnixListener::bind(&sock).unwrap();
    assert_refused(&classify_to(&sb, &sock), "it is a socket");
    assert!(file_type(&sock).is_socket());

    let disk = sb.path().join("loop-disk");
    mknod(&disk, "b", 7, 200);
    assert_refused(&classify_to(&sb, &disk), "it is a block device");
    assert!(file_type(&disk).is_block_device());
    let leftovers: Vec<PathBuf> = std::fs::read_dir(sb.path())
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.to_string_lossy().contains(".hrr-tmp-"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

/// `hrr replay` of a fresh archive with the test player.
fn replay(sb: &Sandbox) -> assert_cmd::Command {
    common::write_replay_archive(&sb.path().join("cap.hrr"), 4242, &["vector_add"]);
    let kfd = sb.write("kfd", "");
    let mut cmd = sb.hrr();
    cmd.env("HRR_TEST_SCENARIO", "pass")
        .arg("-c")
        .arg(format!("playback.path={}", test_player().display()))
        .arg("-c")
        .arg(format!("replay.kfd={}", kfd.display()))
        .args(["replay", "--json"])
        .arg(sb.path().join("cap.hrr/pid-4242"));
    cmd
}

#[test]
fn the_replay_log_follows_a_symlink_and_keeps_it() {
    let sb = Sandbox::new();
    let real = sb.write("logs/run.log", "");
    let link = sb.path().join("replay.log");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    let out = replay(&sb).arg("--log").arg(&link).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let json: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(json["exit_code"], 0, "{json}");
    assert!(file_type(&link).is_symlink());
    let log = std::fs::read_to_string(&real).unwrap();
    assert!(log.contains("[HRR]"), "{log}");
}

/// The replay log is streamed into a file made 0600 and removed when the
/// replay cannot start: on a device or a pipe it is refused before the
/// replay, and the node keeps its type and mode.
#[test]
fn the_replay_log_is_refused_on_a_directory_device_or_pipe_before_the_replay() {
    use std::os::unix::fs::PermissionsExt;
    let sb = Sandbox::new();
    let dir = sb.path().join("logs");
    std::fs::create_dir(&dir).unwrap();
    let null = sb.path().join("null");
    mknod(&null, "c", 1, 3);
    std::fs::set_permissions(&null, std::fs::Permissions::from_mode(0o666)).unwrap();
    let fifo = sb.path().join("log.pipe");
    mkfifo(&fifo);
    let _reader = reader(&fifo);
    for (target, why) in [
        (&dir, "it is a directory"),
        (&null, "it is a device or a pipe"),
        (&fifo, "it is a device or a pipe"),
    ] {
        let out = replay(&sb).arg("--log").arg(target).output().unwrap();
        assert_refused(&out, why);
        assert!(!stderr(&out).contains("replay on GPU"), "{}", stderr(&out));
    }
    assert!(file_type(&null).is_char_device());
    let mode = std::fs::metadata(&null).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o666, "the device was made private");
    assert!(file_type(&fifo).is_fifo());
}

/// A workflow naming a device node as its replay log (`hrr.replay.run`
/// skips the CLI's `--log` check) gets an error, and the node is neither
/// made private nor removed.
#[test]
fn a_workflow_replay_log_on_a_device_node_leaves_the_node_alone() {
    use std::os::unix::fs::PermissionsExt;
    let sb = Sandbox::new();
    let null = sb.path().join("null");
    mknod(&null, "c", 1, 3);
    std::fs::set_permissions(&null, std::fs::Permissions::from_mode(0o666)).unwrap();
    let archive =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/crash.hrr/pid-4243");
    let script = sb.write(
        "w.lua",
        &format!(
            "return hrr.replay.run({{archive = {:?}, player = {:?}, mode = 'native', log = {:?}}}) and 0\n",
            archive.display().to_string(),
            test_player().display().to_string(),
            null.display().to_string()
        ),
    );
    let out = sb
        .hrr()
        .args(["-c", "replay.kfd=", "run"])
        .arg(&script)
        .output()
        .unwrap();
    assert_refused(&out, "the replay log must be a regular file");
    let meta = std::fs::symlink_metadata(&null).unwrap();
    assert!(meta.file_type().is_char_device(), "the node was replaced");
    assert_eq!(
        meta.permissions().mode() & 0o777,
        0o666,
        "the node was made private"
    );
}

/// `-o` onto a device that is full (`/dev/full` is written through, as any
/// character device) is one error line naming the full disk, and exit 1.
#[test]
fn a_finding_written_to_a_full_device_names_the_full_disk() {
    let sb = Sandbox::new();
    let out = classify_to(&sb, Path::new("/dev/full"));
    assert_refused(&out, "the disk it is written to is full");
    assert!(file_type(Path::new("/dev/full")).is_char_device());
}
