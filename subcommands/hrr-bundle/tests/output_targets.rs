//! `hrr bundle -o … --force` never replaces anything that is not a regular
//! file: a device is written through, a symlink is followed and kept, a
//! pipe with a reader receives the bundle, and the rest is refused.
#![cfg(target_os = "linux")]

mod common;

use std::io::Read as _;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;
use std::process::Command;

use common::{stderr, Fixture};

fn file_type(path: &Path) -> std::fs::FileType {
    std::fs::symlink_metadata(path).unwrap().file_type()
}

/// `hrr bundle pid-1 -o <target> --force`.
fn bundle_to(fx: &Fixture, target: &Path) -> std::process::Output {
    fx.bundle()
        .arg("pid-1")
        .arg("-o")
        .arg(target)
        .arg("--force")
        .output()
        .unwrap()
}

/// Exit 1 with one `error:` line containing `needle`.
fn assert_refused(out: &std::process::Output, needle: &str) {
    assert_eq!(out.status.code(), Some(1), "{}", stderr(out));
    let err = stderr(out);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.starts_with("error: ") && err.contains(needle), "{err}");
}

#[test]
fn a_device_is_written_through_and_a_symlink_is_followed() {
    let fx = Fixture::new();
    fx.process_dir("pid-1", 1);
    // A private node with /dev/null's numbers (the tests run as root).
    let null = fx.path().join("null");
    assert!(Command::new("mknod")
        .arg(&null)
        .args(["c", "1", "3"])
        .status()
        .unwrap()
        .success());
    let out = bundle_to(&fx, &null);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(file_type(&null).is_char_device(), "the device was replaced");

    common::write(&fx.path().join("kept/old.tar.zst"), b"old");
    let link = fx.path().join("latest.tar.zst");
    std::os::unix::fs::symlink("kept/old.tar.zst", &link).unwrap();
    let out = bundle_to(&fx, &link);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(file_type(&link).is_symlink(), "the symlink was replaced");
    let out = fx
        .bundle()
        .args(["verify", "kept/old.tar.zst"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}

#[test]
fn a_pipe_gets_the_bundle_only_when_it_has_a_reader() {
    let fx = Fixture::new();
    fx.process_dir("pid-1", 1);
    let fifo = fx.path().join("bundle.pipe");
    assert!(Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    assert_refused(&bundle_to(&fx, &fifo), "a pipe (FIFO) with no reader");

    // A reader that drains the pipe while the bundle is written.
    let mut reader = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(&fifo)
        .unwrap();
    let drain = std::thread::spawn(move || {
        let mut got = Vec::new();
        let mut buf = [0u8; 65536];
        let mut writer_seen = false;
        loop {
            match reader.read(&mut buf) {
                Ok(0) if writer_seen => return got,
                Ok(0) => std::thread::sleep(std::time::Duration::from_millis(5)),
                Ok(n) => {
                    writer_seen = true;
                    got.extend_from_slice(&buf[..n]);
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    writer_seen = true;
                    std::thread::sleep(std::time::Duration::from_millis(5));
                }
                Err(e) => panic!("{e}"),
            }
        }
    });
    let out = bundle_to(&fx, &fifo);
    assert!(out.status.success(), "{}", stderr(&out));
    let got = drain.join().unwrap();
    assert!(file_type(&fifo).is_fifo());
    common::write(&fx.path().join("piped.tar.zst"), &got);
    let out = fx
        .bundle()
        .args(["verify", "piped.tar.zst"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}

#[test]
fn a_socket_or_block_device_is_refused_and_left_alone() {
    let fx = Fixture::new();
    fx.process_dir("pid-1", 1);
    let sock = fx.path().join("daemon.sock");
    let _listener = std::os::unix::net::UnixListener::bind(&sock).unwrap();
    assert_refused(&bundle_to(&fx, &sock), "is a socket");
    assert!(file_type(&sock).is_socket());
    let disk = fx.path().join("disk");
    assert!(Command::new("mknod")
        .arg(&disk)
        .args(["b", "7", "200"])
        .status()
        .unwrap()
        .success());
    assert_refused(&bundle_to(&fx, &disk), "is a block device");
    assert!(file_type(&disk).is_block_device());
}
