//! `hrr bundle …` reaches the shipped external `hrr-bundle` on PATH
//! (DESIGN §9): verify and help go through the dispatcher, and the
//! external's exit status is `hrr`'s.
#![cfg(unix)]

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{script, stderr, stdout, Sandbox};

/// The built `hrr-bundle`, next to the `hrr` under test; built once with
/// `cargo build -p hrr-bundle` when a filtered test run did not build it.
fn hrr_bundle() -> PathBuf {
    let hrr = assert_cmd::cargo::cargo_bin("hrr");
    let path = hrr.with_file_name(format!("hrr-bundle{}", std::env::consts::EXE_SUFFIX));
    if !path.exists() {
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let status = Command::new(cargo)
            .args(["build", "-p", "hrr-bundle"])
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .status()
            .expect("cargo build -p hrr-bundle");
        assert!(status.success(), "cargo build -p hrr-bundle failed");
    }
    path
}

/// Packs `sb/pid-1234` into `sb/b.tar.zst` by running `hrr-bundle`
/// directly with a fake `hrr` for `archive info` (the real builtin is not
/// what this test is about); returns the bundle and the packed byte count.
fn pack(sb: &Sandbox, exe: &Path) -> (PathBuf, usize) {
    let events = "events of pid 1234\n".repeat(100);
    let manifest = "{\"pid\": 1234, \"complete\": true}\n";
    sb.write("pid-1234/events.bin", &events);
    sb.write("pid-1234/manifest.json", manifest);
    let fake = script(
        &sb.path().join("fake"),
        "hrr",
        "#!/bin/sh\nprintf '{\"schema_version\":1,\"kind\":\"process\",\"path\":\"%s\"}\\n' \"$4\"\n",
    );
    let out = Command::new(exe)
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("HRR", fake)
        .current_dir(sb.path())
        .args(["pid-1234", "-o", "b.tar.zst"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    (sb.path().join("b.tar.zst"), events.len() + manifest.len())
}

#[test]
fn hrr_bundle_verify_dispatches_to_the_external_on_path() {
    let sb = Sandbox::new();
    let exe = hrr_bundle();
    let bin = sb.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::os::unix::fs::symlink(&exe, bin.join("hrr-bundle")).unwrap();
    let path = format!("{}:/usr/bin:/bin", bin.display());
    let (bundle, bytes) = pack(&sb, &exe);

    let out = sb
        .hrr()
        .env("PATH", &path)
        .args(["bundle", "verify"])
        .arg(&bundle)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), format!("ok: 2 files, {bytes} bytes\n"));

    let out = sb
        .hrr()
        .env("PATH", &path)
        .args(["help", "bundle"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("Usage: hrr bundle [OPTIONS] <ARCHIVE>"),
        "{}",
        stdout(&out)
    );

    // A damaged bundle: the external's exit 1 is hrr's.
    std::fs::write(&bundle, b"not a bundle").unwrap();
    let out = sb
        .hrr()
        .env("PATH", &path)
        .args(["bundle", "verify"])
        .arg(&bundle)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(stdout(&out).contains("damaged"), "{}", stdout(&out));
}
