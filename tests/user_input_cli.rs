//! Every read of a path the user names ends: a FIFO nothing writes to, an
//! endless device, a directory or a socket where a file is expected each
//! give one `error:` line, while pipes (`--log /dev/stdin`) still work.
#![cfg(unix)]

mod common;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use std::time::{Duration, Instant};

use common::{stderr, stdout, test_player, write_replay_archive, Sandbox};

const PASS_LOG: &str = "[HRR] Archive : 23 events, 3 kernels, 4 blobs, 1 code objects\n[HRR]   Kernels launched: 3\n[HRR] PASS\n";

fn fifo(sb: &Sandbox, name: &str) -> PathBuf {
    let path = sb.path().join(name);
    nix::unistd::mkfifo(&path, nix::sys::stat::Mode::S_IRWXU).unwrap();
    path
}

/// Runs `cmd` with a generous bound, so a regression fails instead of hanging.
fn run(mut cmd: assert_cmd::Command) -> (Output, Duration) {
    let start = Instant::now();
    let out = cmd.timeout(Duration::from_secs(60)).output().unwrap();
    (out, start.elapsed())
}

/// Exit 1 with one `error:` line containing every piece of `want`.
fn one_error(out: &Output, want: &[&str]) {
    let err = stderr(out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    let lines: Vec<&str> = err.lines().filter(|l| l.starts_with("error:")).collect();
    assert_eq!(lines.len(), 1, "{err}");
    for w in want {
        assert!(lines[0].contains(w), "{w:?} missing from {err}");
    }
    assert!(!err.contains("panicked"), "{err}");
}

fn p(path: &Path) -> String {
    path.display().to_string()
}

#[test]
fn classify_log_on_a_fifo_nothing_writes_to_fails_in_seconds() {
    let sb = Sandbox::new();
    let f = fifo(&sb, "replay.log");
    let mut cmd = sb.hrr();
    cmd.args(["classify", "--log", &p(&f)]);
    let (out, took) = run(cmd);
    one_error(
        &out,
        &[
            "cannot read replay log",
            "a FIFO that nothing opened for writing",
        ],
    );
    assert!(took < Duration::from_secs(20), "took {took:?}");
}

#[test]
fn classify_log_on_a_fifo_with_a_writer_reads_it() {
    let sb = Sandbox::new();
    let f = fifo(&sb, "replay.log");
    let writer = {
        let f = f.clone();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(500));
            std::fs::write(f, PASS_LOG).unwrap();
        })
    };
    let mut cmd = sb.hrr();
    cmd.args(["classify", "--log", &p(&f), "--format", "json"]);
    let (out, _) = run(cmd);
    writer.join().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("\"outcome\": \"PASS\""),
        "{}",
        stdout(&out)
    );
}

#[test]
fn classify_log_dev_stdin_from_a_pipe_still_works() {
    let sb = Sandbox::new();
    let mut child = sb
        .hrr_process()
        .args(["classify", "--log", "/dev/stdin", "--format", "json"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(PASS_LOG.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("\"outcome\": \"PASS\""),
        "{}",
        stdout(&out)
    );
}

#[test]
fn classify_log_dev_zero_stops_at_the_device_cap() {
    let sb = Sandbox::new();
    let mut cmd = sb.hrr();
    cmd.args(["classify", "--log", "/dev/zero"]);
    let (out, _) = run(cmd);
    one_error(
        &out,
        &["/dev/zero", "a character device that gives more than 1 GiB"],
    );
    assert!(stdout(&out).is_empty(), "nothing half-written");
}

#[test]
fn a_socket_or_directory_as_log_is_refused() {
    let sb = Sandbox::new();
    let sock = sb.path().join("log.sock");
    let _listener = std::os::unix::net::UnixListener::bind(&sock).unwrap();
    let mut cmd = sb.hrr();
    cmd.args(["classify", "--log", &p(&sock)]);
    one_error(&run(cmd).0, &["log.sock: a socket, not a file"]);
    let mut cmd = sb.hrr();
    cmd.args([
        "classify",
        "--archive-info",
        &p(sb.path()),
        "--log",
        "/dev/null",
    ]);
    one_error(&run(cmd).0, &["Is a directory, not a file"]);
}

#[test]
fn fs_read_of_a_fifo_fails_in_seconds() {
    let sb = Sandbox::new();
    let f = fifo(&sb, "in.txt");
    let script = sb.write("r.lua", &format!("hrr.out(hrr.fs.read({:?}))\n", p(&f)));
    let mut cmd = sb.hrr();
    cmd.arg("run").arg(&script);
    let (out, took) = run(cmd);
    one_error(
        &out,
        &["r.lua:1: hrr.fs.read:", "a FIFO that nothing opened"],
    );
    assert!(took < Duration::from_secs(20), "took {took:?}");
}

/// `hrr replay` of a fresh archive with the test player, `replay.kfd` set.
fn replay(sb: &Sandbox, kfd: &Path, extra: &[&str]) -> (Output, Duration) {
    let root = sb.path().join("cap.hrr");
    let archive = write_replay_archive(&root, 4242, &["k0", "k1"]);
    let mut cmd = sb.hrr();
    cmd.env("HRR_TEST_SCENARIO", "pass")
        .args(["-c", &format!("playback.path={}", p(&test_player()))])
        .args(["-c", &format!("replay.kfd={}", p(kfd))])
        .args(["replay", "--replay", "native", &p(&archive.dir)])
        .args(extra);
    run(cmd)
}

#[test]
fn replay_kfd_set_to_a_fifo_is_refused_at_once() {
    let sb = Sandbox::new();
    let kfd = fifo(&sb, "kfd");
    let (out, took) = replay(&sb, &kfd, &[]);
    one_error(&out, &["kfd", "a FIFO, not the GPU device node"]);
    assert!(took < Duration::from_secs(20), "took {took:?}");
}

#[test]
fn replay_log_on_a_fifo_nothing_reads_fails_in_seconds() {
    let sb = Sandbox::new();
    let kfd = sb.write("kfd", "");
    let log = fifo(&sb, "replay.log");
    let (out, took) = replay(&sb, &kfd, &["--log", &p(&log)]);
    one_error(&out, &["replay.log", "a pipe (FIFO) with no reader"]);
    assert!(took < Duration::from_secs(20), "took {took:?}");
}
