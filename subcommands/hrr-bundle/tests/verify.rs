//! `hrr bundle verify`: a good bundle passes; tampering, extra, missing
//! and damaged content fail, naming what is wrong.
#![cfg(unix)]

mod common;

use std::path::PathBuf;

use common::{entries, rewrite, stderr, stdout, Fixture};

/// A fixture with a packed `pid-1234` at `b.tar.zst`.
fn packed() -> (Fixture, PathBuf) {
    let fx = Fixture::new();
    fx.process_dir("pid-1234", 3);
    let out = fx
        .bundle()
        .args(["pid-1234", "-o", "b.tar.zst"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let bundle = fx.path().join("b.tar.zst");
    (fx, bundle)
}

/// The bundle's entries as (path, content).
fn contents(bundle: &std::path::Path) -> Vec<(String, Vec<u8>)> {
    entries(bundle)
        .into_iter()
        .map(|(p, _, d)| (p, d))
        .collect()
}

fn verify(fx: &Fixture) -> std::process::Output {
    fx.bundle().args(["verify", "b.tar.zst"]).output().unwrap()
}

#[test]
fn one_rewritten_byte_in_a_packed_file_fails_naming_that_file() {
    let (fx, bundle) = packed();
    let mut files = contents(&bundle);
    let events = files
        .iter_mut()
        .find(|(p, _)| p == "archive/pid-1234/events.bin")
        .unwrap();
    events.1[1000] ^= 0x01;
    rewrite(&bundle, &files);
    let out = verify(&fx);
    assert_eq!(out.status.code(), Some(1));
    let text = stdout(&out);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 1, "{text}");
    assert!(
        lines[0].starts_with("archive/pid-1234/events.bin: SHA-256 mismatch"),
        "{text}"
    );
    let err = stderr(&out);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with("error: ") && err.contains("1 problem"),
        "{err}"
    );
}

#[test]
fn unlisted_missing_and_resized_files_are_each_reported() {
    let (fx, bundle) = packed();
    let mut files = contents(&bundle);
    files.retain(|(p, _)| p != "archive/pid-1234/manifest.json");
    files
        .iter_mut()
        .find(|(p, _)| p.ends_with("fedcba9876543210fedcba9876543210"))
        .unwrap()
        .1
        .push(b'!');
    let manifest_at = files.len() - 1;
    files.insert(
        manifest_at,
        ("archive/pid-1234/extra.bin".to_string(), b"x".to_vec()),
    );
    rewrite(&bundle, &files);
    let out = verify(&fx);
    assert_eq!(out.status.code(), Some(1));
    let mut lines: Vec<String> = stdout(&out).lines().map(str::to_owned).collect();
    lines.sort();
    assert_eq!(lines.len(), 3, "{lines:?}");
    assert_eq!(
        lines[0],
        "archive/pid-1234/blobs/fedcba9876543210fedcba9876543210: size 11 bytes, BUNDLE.json says 10"
    );
    assert_eq!(
        lines[1],
        "archive/pid-1234/extra.bin: not listed in BUNDLE.json"
    );
    assert_eq!(
        lines[2],
        "archive/pid-1234/manifest.json: listed in BUNDLE.json but missing from the bundle"
    );
}

#[test]
fn a_truncated_bundle_is_reported_as_damaged() {
    let (fx, bundle) = packed();
    let data = std::fs::read(&bundle).unwrap();
    std::fs::write(&bundle, &data[..data.len() / 2]).unwrap();
    let out = verify(&fx);
    assert_eq!(out.status.code(), Some(1));
    let text = stdout(&out);
    assert!(
        text.lines()
            .any(|l| l.starts_with(&format!("{}: damaged", "b.tar.zst"))),
        "{text}"
    );
}

#[test]
fn a_bundle_json_moved_from_the_end_is_not_a_bundle() {
    let (fx, bundle) = packed();
    let mut files = contents(&bundle);
    let last = files.len() - 1;
    files.swap(0, last);
    rewrite(&bundle, &files);
    let out = verify(&fx);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        stdout(&out),
        format!(
            "BUNDLE.json: entry 1 of {}, but layout 2 puts it last: not as hrr-bundle writes it\n",
            files.len()
        )
    );
}

/// A layout-1 bundle, as earlier hrr-bundle versions wrote it: BUNDLE.json
/// first, schema_version 1.
fn as_layout_1(files: &mut Vec<(String, Vec<u8>)>) {
    let (name, json) = files.pop().unwrap();
    assert_eq!(name, "BUNDLE.json");
    let mut m: serde_json::Value = serde_json::from_slice(&json).unwrap();
    m["schema_version"] = 1.into();
    files.insert(0, (name, serde_json::to_vec_pretty(&m).unwrap()));
}

#[test]
fn a_layout_1_bundle_with_bundle_json_first_still_verifies() {
    let (fx, bundle) = packed();
    let mut files = contents(&bundle);
    as_layout_1(&mut files);
    rewrite(&bundle, &files);
    let out = verify(&fx);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    assert!(stdout(&out).starts_with("ok: "), "{}", stdout(&out));

    // Tampering is still caught in the old layout.
    files[1].1.push(b'!');
    rewrite(&bundle, &files);
    let out = verify(&fx);
    assert_eq!(out.status.code(), Some(1));
    assert!(stdout(&out).contains(": size "), "{}", stdout(&out));
}

#[test]
fn a_missing_bundle_is_one_error_line() {
    let fx = Fixture::new();
    let out = fx
        .bundle()
        .args(["verify", "nope.tar.zst"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.starts_with("error: bundle nope.tar.zst"), "{err}");
}

#[test]
fn an_unknown_schema_version_is_named_not_passed() {
    let (fx, bundle) = packed();
    let mut files = contents(&bundle);
    let (_, manifest) = files.iter_mut().find(|(p, _)| p == "BUNDLE.json").unwrap();
    let mut doc: serde_json::Value = serde_json::from_slice(manifest).unwrap();
    doc["schema_version"] = serde_json::json!(3);
    *manifest = serde_json::to_vec(&doc).unwrap();
    rewrite(&bundle, &files);
    let out = verify(&fx);
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    let text = stdout(&out);
    assert_eq!(
        text.lines().collect::<Vec<_>>(),
        ["BUNDLE.json: schema_version 3 is not one this hrr-bundle reads (it reads 1 to 2); verify the bundle with the hrr-bundle that wrote it, or a newer one"],
        "{text}"
    );
    assert_eq!(stderr(&out).lines().count(), 1, "{}", stderr(&out));
}
