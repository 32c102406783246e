//! `hrr bundle verify` reads the bundle under hrr's rule for paths the user
//! names: it ends with one `error:` line on a FIFO nothing writes to or on
//! a directory.
#![cfg(unix)]

mod common;

use std::time::{Duration, Instant};

use common::{stderr, Fixture};

fn refused(fx: &Fixture, path: &str, needle: &str) -> Duration {
    let start = Instant::now();
    let out = fx
        .bundle()
        .args(["verify", path])
        .timeout(Duration::from_secs(60))
        .output()
        .unwrap();
    let took = start.elapsed();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 1, "{err}");
    assert!(lines[0].starts_with("error: bundle "), "{err}");
    assert!(lines[0].contains(needle), "{err}");
    took
}

#[test]
fn verify_of_a_fifo_nothing_writes_to_fails_in_seconds() {
    let fx = Fixture::new();
    let fifo = fx.path().join("b.tar.zst");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
    let took = refused(&fx, "b.tar.zst", "a FIFO that nothing opened for writing");
    assert!(took < Duration::from_secs(20), "took {took:?}");
}

#[test]
fn verify_of_a_directory_is_refused() {
    let fx = Fixture::new();
    std::fs::create_dir(fx.path().join("d.tar.zst")).unwrap();
    refused(&fx, "d.tar.zst", "d.tar.zst: Is a directory, not a file");
}
