//! What `hrr bundle` refuses: each is one `error:` line, exit 1, and
//! nothing written (no bundle, no temp file, archive untouched).
#![cfg(unix)]

mod common;

use common::{names, snapshot, stderr, Fixture};

/// Runs `hrr-bundle args…`, asserts exit 1 with exactly one `error:` line
/// containing `needle`, and returns that line.
fn refused(fx: &Fixture, args: &[&str], needle: &str) -> String {
    let out = fx.bundle().args(args).output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let err = stderr(&out);
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 1, "{err}");
    assert!(lines[0].starts_with("error: "), "{err}");
    assert!(lines[0].contains(needle), "{err}");
    lines[0].to_string()
}

#[test]
fn output_inside_the_archive_is_refused_directly_and_through_a_symlinked_dir() {
    let fx = Fixture::new();
    fx.process_dir("capture.hrr/pid-1", 1);
    std::os::unix::fs::symlink("capture.hrr/pid-1", fx.path().join("via")).unwrap();
    let root = fx.path().join("capture.hrr");
    let before = snapshot(&root);
    refused(
        &fx,
        &["capture.hrr", "-o", "capture.hrr/pid-1/b.tar.zst"],
        "inside the archive",
    );
    refused(
        &fx,
        &["capture.hrr", "-o", "via/b.tar.zst"],
        "inside the archive",
    );
    // The archive given through the symlink, output inside its target.
    refused(
        &fx,
        &["via", "-o", "capture.hrr/pid-1/blobs/b.tar.zst"],
        "inside the archive",
    );
    // The default output in the cwd is inside the archive when run there.
    let out = fx
        .bundle()
        .current_dir(fx.path().join("capture.hrr/pid-1"))
        .arg(".")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("inside the archive"),
        "{}",
        stderr(&out)
    );
    assert_eq!(snapshot(&root), before);
    assert_eq!(fx.hrr_calls(), "", "refused before any work");
}

#[test]
fn packing_one_process_may_not_write_into_its_capture_root() {
    let fx = Fixture::new();
    fx.process_dir("capture.hrr/pid-1", 1);
    common::write(&fx.path().join("capture.hrr/manifest.json"), b"{}");
    let root = fx.path().join("capture.hrr");
    let before = snapshot(&root);
    let line = refused(
        &fx,
        &["capture.hrr/pid-1", "-o", "capture.hrr/b.tar.zst"],
        "inside the archive",
    );
    assert!(
        line.ends_with(&format!(
            "under {}; choose an -o outside it",
            root.display()
        )),
        "{line}"
    );
    assert_eq!(snapshot(&root), before);
    // A lone pid directory (no root manifest beside it) protects only itself.
    fx.process_dir("loose/pid-2", 2);
    let out = fx
        .bundle()
        .args(["loose/pid-2", "-o", "loose/b.tar.zst"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
}

#[test]
fn a_missing_archive_is_refused() {
    let fx = Fixture::new();
    let line = refused(&fx, &["capture.hrr/pid-404", "-o", "b.tar.zst"], "pid-404");
    assert!(line.contains("No such file"), "{line}");
    assert!(!fx.path().join("b.tar.zst").exists());
}

#[test]
fn an_existing_output_is_kept_unless_forced() {
    let fx = Fixture::new();
    fx.process_dir("pid-1", 1);
    common::write(&fx.path().join("b.tar.zst"), b"precious");
    refused(&fx, &["pid-1", "-o", "b.tar.zst"], "--force");
    assert_eq!(
        std::fs::read(fx.path().join("b.tar.zst")).unwrap(),
        b"precious"
    );
    let out = fx
        .bundle()
        .args(["pid-1", "-o", "b.tar.zst", "--force"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let out = fx.bundle().args(["verify", "b.tar.zst"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0));
}

#[test]
fn a_failing_hrr_leaves_no_bundle_and_no_temp_file() {
    let fx = Fixture::new();
    fx.process_dir("pid-1", 1);
    std::fs::create_dir(fx.path().join("out")).unwrap();
    let out = fx
        .bundle()
        .env("FAKE_HRR", "broken")
        .args(["pid-1", "-o", "out/b.tar.zst"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with("error: ")
            && err.contains("archive info --json")
            && err.contains("cannot read archive"),
        "{err}"
    );
    assert!(names(&fx.path().join("out")).is_empty());
}

#[test]
fn a_non_utf8_file_name_in_the_archive_fails_without_partial_output() {
    use std::os::unix::ffi::OsStrExt;
    let fx = Fixture::new();
    let pid = fx.process_dir("pid-1", 1);
    let odd = pid.join(std::ffi::OsStr::from_bytes(b"blob-\xff"));
    common::write(&odd, b"x");
    std::fs::create_dir(fx.path().join("out")).unwrap();
    let line = refused(&fx, &["pid-1", "-o", "out/b.tar.zst"], "not UTF-8");
    assert!(line.contains("blob-"), "{line}");
    assert!(names(&fx.path().join("out")).is_empty());
}

#[test]
fn a_fifo_in_the_archive_is_skipped_with_a_warning_not_read() {
    let fx = Fixture::new();
    let pid = fx.process_dir("pid-1", 1);
    let fifo = pid.join("pipe");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    let out = fx
        .bundle()
        .args(["pid-1", "-o", "b.tar.zst"])
        .timeout(std::time::Duration::from_secs(20))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("pipe") && err.contains("not a regular file"),
        "{err}"
    );
    let packed = common::entries(&fx.path().join("b.tar.zst"));
    assert!(!packed.iter().any(|e| e.0.ends_with("/pipe")));
}

#[test]
fn a_non_directory_archive_and_an_output_naming_no_file_are_refused() {
    let fx = Fixture::new();
    common::write(&fx.path().join("events.bin"), b"x");
    refused(&fx, &["events.bin", "-o", "b.tar.zst"], "not a directory");
    fx.process_dir("pid-1", 1);
    refused(&fx, &["pid-1", "-o", ".."], "does not name a file");
    refused(
        &fx,
        &["pid-1", "-o", "no/such/dir/b.tar.zst"],
        "no/such/dir",
    );
}
