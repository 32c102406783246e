//! Shared helpers for the `hrr-bundle` tests: a synthetic archive, a fake
//! `hrr` that prints recorded-shape `archive info --json` documents, and
//! tar.zst readers/writers for inspecting and tampering with bundles.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// A temp directory holding the archive, the fake `hrr` and the outputs.
pub struct Fixture {
    /// Removed on drop.
    pub dir: tempfile::TempDir,
}

impl Fixture {
    /// A fresh fixture with the fake `hrr` in `bin/`.
    pub fn new() -> Fixture {
        let fx = Fixture {
            dir: tempfile::tempdir().expect("tempdir"),
        };
        write_exec(&fx.path().join("bin/hrr"), FAKE_HRR);
        fx
    }

    /// The fixture root (already canonical on Linux temp dirs, resolved
    /// anyway so paths compare with what the tool prints).
    pub fn path(&self) -> PathBuf {
        dunce::canonicalize(self.dir.path()).unwrap()
    }

    /// The fake `hrr` binary.
    pub fn hrr(&self) -> PathBuf {
        self.path().join("bin/hrr")
    }

    /// Every command line the fake `hrr` was run with, one per line.
    pub fn hrr_calls(&self) -> String {
        std::fs::read_to_string(self.path().join("bin/calls.log")).unwrap_or_default()
    }

    /// Writes a process directory `rel` (e.g. `capture.hrr/pid-1234`) with
    /// events.bin, manifest.json, two blobs and a code object of arbitrary
    /// bytes; `seed` varies the content. Returns its path.
    pub fn process_dir(&self, rel: &str, seed: u8) -> PathBuf {
        let dir = self.path().join(rel);
        write(&dir.join("events.bin"), &bytes(70_000, seed));
        write(
            &dir.join("manifest.json"),
            format!("{{\"pid\": {seed}, \"complete\": true}}\n").as_bytes(),
        );
        write(
            &dir.join("blobs/0123456789abcdef0123456789abcdef"),
            &bytes(4096, seed.wrapping_add(1)),
        );
        write(
            &dir.join("blobs/fedcba9876543210fedcba9876543210"),
            &bytes(10, seed.wrapping_add(2)),
        );
        write(
            &dir.join("code_objects/00112233445566778899aabbccddeeff"),
            &bytes(2000, seed.wrapping_add(3)),
        );
        dir
    }

    /// `hrr-bundle` with a clean environment: `HRR` = the fake, system
    /// PATH, cwd = the fixture.
    pub fn bundle(&self) -> assert_cmd::Command {
        let mut cmd = assert_cmd::Command::cargo_bin("hrr-bundle").expect("hrr-bundle binary");
        cmd.env_clear()
            .env("PATH", "/usr/bin:/bin")
            .env("HRR", self.hrr())
            .current_dir(self.path());
        cmd
    }
}

/// Stands in for `hrr`: records its argv, prints an `archive info --json`
/// document shaped like DESIGN §3.2 (or a finding for `triage`).
/// `FAKE_HRR=broken` makes it fail like an `hrr` that cannot read the
/// archive; `FAKE_HRR=unsupported` prints a report and exits 1.
const FAKE_HRR: &str = r#"#!/bin/sh
echo "$*" >> "$(dirname "$0")/calls.log"
if [ "$FAKE_HRR" = broken ]; then
  echo "error: cannot read archive" >&2
  exit 1
fi
case "$1" in
archive)
  for dir; do :; done
  case "$(basename "$dir")" in
  pid-*)
    printf '{"schema_version":1,"kind":"process","path":"%s","pid":1234,"format_version":7,"state":"complete","complete":true,"events":23,"kernel_launches":3,"problems":[]}\n' "$dir"
    ;;
  *)
    printf '{"schema_version":1,"kind":"root","path":"%s","processes":[],"chosen":1,"reason":"only process"}\n' "$dir"
    ;;
  esac
  if [ "$FAKE_HRR" = unsupported ]; then
    echo "error: format version 9 is not supported" >&2
    exit 1
  fi
  ;;
triage)
  printf '{"schema_version":1,"archive":"%s","outcome":"UNKNOWN","fault_class":"metadata_only"}\n' "$2"
  ;;
*)
  echo "fake hrr: unexpected $*" >&2
  exit 64
  ;;
esac
"#;

/// Deterministic arbitrary bytes (including zeros and 0xff).
pub fn bytes(len: usize, seed: u8) -> Vec<u8> {
    let mut x = u32::from(seed).wrapping_mul(2_654_435_761) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            (x >> 11) as u8
        })
        .collect()
}

/// Writes `data` to `path`, creating parent directories.
pub fn write(path: &Path, data: &[u8]) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, data).unwrap();
}

/// Writes an executable script.
pub fn write_exec(path: &Path, body: &str) {
    use std::os::unix::fs::PermissionsExt;
    write(path, body.as_bytes());
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// SHA-256 of a file by the system's `sha256sum`, an implementation
/// independent of the one under test.
pub fn sha256sum(path: &Path) -> String {
    let out = std::process::Command::new("sha256sum")
        .arg(path)
        .output()
        .expect("sha256sum");
    assert!(out.status.success());
    String::from_utf8(out.stdout).unwrap()[..64].to_string()
}

/// The piece size of layout 3, as its documentation states it.
pub const PIECE: u64 = 4 * 1024 * 1024;

/// Layout 3's `tree_sha256` of the pieces with these hex digests: the
/// SHA-256 (by `sha256sum`) of their 32-byte forms concatenated.
pub fn tree_of(pieces: &[String]) -> String {
    let bytes: Vec<u8> = pieces
        .iter()
        .flat_map(|hex| {
            (0..hex.len())
                .step_by(2)
                .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
                .collect::<Vec<_>>()
        })
        .collect();
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(file.path(), bytes).unwrap();
    sha256sum(file.path())
}

/// Every entry of a bundle in tar order: (path, type, content).
pub fn entries(bundle: &Path) -> Vec<(String, tar::EntryType, Vec<u8>)> {
    let file = std::fs::File::open(bundle).unwrap();
    let mut archive = tar::Archive::new(zstd::Decoder::new(file).unwrap());
    archive
        .entries()
        .unwrap()
        .map(|e| {
            let mut e = e.unwrap();
            let path = String::from_utf8(e.path_bytes().into_owned()).unwrap();
            let kind = e.header().entry_type();
            let mut data = Vec::new();
            e.read_to_end(&mut data).unwrap();
            (path, kind, data)
        })
        .collect()
}

/// The bundle's `BUNDLE.json` (its last entry, layout 3).
pub fn manifest(bundle: &Path) -> serde_json::Value {
    let all = entries(bundle);
    let last = all.last().expect("a bundle has entries");
    assert_eq!(last.0, "BUNDLE.json", "BUNDLE.json must be the last entry");
    serde_json::from_slice(&last.2).unwrap()
}

/// Rewrites `bundle` with `entries` as plain regular files (a tampered
/// copy made the way an attacker or a broken transfer tool would).
pub fn rewrite(bundle: &Path, entries: &[(String, Vec<u8>)]) {
    let mut builder = tar::Builder::new(Vec::new());
    for (path, data) in entries {
        let mut header = tar::Header::new_gnu();
        header.set_size(data.len() as u64);
        header.set_mode(0o644);
        builder.append_data(&mut header, path, &data[..]).unwrap();
    }
    let tar = builder.into_inner().unwrap();
    std::fs::write(bundle, zstd::encode_all(&tar[..], 3).unwrap()).unwrap();
}

/// Every file and directory under `dir` (symlinks not followed) with its
/// content and mtime, to prove a run left the archive untouched.
pub fn snapshot(dir: &Path) -> BTreeMap<PathBuf, (Vec<u8>, SystemTime)> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let meta = std::fs::symlink_metadata(&d).unwrap();
        let content = if meta.is_file() {
            std::fs::read(&d).unwrap()
        } else if meta.file_type().is_symlink() {
            std::fs::read_link(&d)
                .unwrap()
                .into_os_string()
                .into_encoded_bytes()
        } else {
            for e in std::fs::read_dir(&d).unwrap() {
                stack.push(e.unwrap().path());
            }
            Vec::new()
        };
        out.insert(d, (content, meta.modified().unwrap()));
    }
    out
}

/// stdout of a finished command.
pub fn stdout(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// stderr of a finished command.
pub fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Names of the entries directly in `dir`.
pub fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}
