//! `hrr bundle verify`: a good bundle passes; tampering, extra, missing
//! and damaged content fail, naming what is wrong.
#![cfg(unix)]

mod common;

use std::path::{Path, PathBuf};

use common::{entries, rewrite, sha256sum, stderr, stdout, Fixture, PIECE};
use serde_json::json;

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

/// Flips the low bit of byte `at` of the packed `pid-1234/events.bin`.
fn flip_events_byte(files: &mut [(String, Vec<u8>)], at: usize) {
    let (_, events) = files
        .iter_mut()
        .find(|(p, _)| p == "archive/pid-1234/events.bin")
        .unwrap();
    events[at] ^= 0x01;
}

/// Writes `entries` as the bundle, verifies it, checks that it fails and
/// returns what verify printed on stdout.
fn failing_verify(fx: &Fixture, bundle: &Path, entries: &[(String, Vec<u8>)]) -> String {
    rewrite(bundle, entries);
    let out = verify(fx);
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    stdout(&out)
}

fn verify(fx: &Fixture) -> std::process::Output {
    fx.bundle().args(["verify", "b.tar.zst"]).output().unwrap()
}

#[test]
fn one_rewritten_byte_in_a_packed_file_fails_naming_that_file() {
    let (fx, bundle) = packed();
    let mut files = contents(&bundle);
    flip_events_byte(&mut files, 1000);
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
            "BUNDLE.json: entry 1 of {}, but layout 3 puts it last: not as hrr-bundle writes it\n",
            files.len()
        )
    );
}

/// `BUNDLE.json` of layout 1 or 2 built from the documented shape of
/// those layouts (not by hrr-bundle): each file with its size, its whole
/// SHA-256 (by `sha256sum`) and role.
fn old_manifest(version: u32, files: &[(String, Vec<u8>)], scratch: &Path) -> Vec<u8> {
    let content = scratch.join("content");
    let records: Vec<serde_json::Value> = files
        .iter()
        .map(|(path, data)| {
            std::fs::write(&content, data).unwrap();
            json!({"path": path, "size": data.len(), "sha256": sha256sum(&content), "role": "archive"})
        })
        .collect();
    let bytes: usize = files.iter().map(|f| f.1.len()).sum();
    serde_json::to_vec_pretty(&json!({
        "schema_version": version,
        "generator": {"name": "hrr-bundle", "version": "0.1.0"},
        "created_utc": "2026-11-30T12:00:00Z",
        "archive": {"source_path": "/data/pid-1234", "bundle_path": "archive/pid-1234", "kind": "process"},
        "files": records,
        "totals": {"files": files.len(), "bytes": bytes},
        "skipped": [],
        "archive_info": {"schema_version": 1, "kind": "process", "events": 23}
    }))
    .unwrap()
}

/// The packed files without their BUNDLE.json.
fn packed_files(bundle: &Path) -> Vec<(String, Vec<u8>)> {
    let mut files = contents(bundle);
    let (name, _) = files.pop().unwrap();
    assert_eq!(name, "BUNDLE.json");
    files
}

#[test]
fn layout_1_and_2_bundles_with_whole_file_digests_still_verify() {
    let (fx, bundle) = packed();
    let files = packed_files(&bundle);
    for version in [1, 2] {
        let manifest = (
            "BUNDLE.json".to_string(),
            old_manifest(version, &files, &fx.path()),
        );
        let mut entries = files.clone();
        // Layout 1 puts BUNDLE.json first, layout 2 last.
        match version {
            1 => entries.insert(0, manifest),
            _ => entries.push(manifest),
        }
        rewrite(&bundle, &entries);
        let out = verify(&fx);
        assert_eq!(
            out.status.code(),
            Some(0),
            "layout {version}: {}",
            stdout(&out)
        );
        assert_eq!(
            stdout(&out),
            format!(
                "ok: {} files, {} bytes\n",
                files.len(),
                files.iter().map(|f| f.1.len()).sum::<usize>()
            )
        );

        // Tampering is still caught, by the whole-file digest.
        flip_events_byte(&mut entries, 7);
        let text = failing_verify(&fx, &bundle, &entries);
        assert!(
            text.starts_with("archive/pid-1234/events.bin: SHA-256 mismatch: content ")
                && text.lines().count() == 1,
            "layout {version}: {text}"
        );
    }
}

#[test]
fn digests_of_another_layout_than_the_manifest_says_are_a_problem() {
    let (fx, bundle) = packed();
    let files = packed_files(&bundle);
    // Whole-file digests under schema_version 3.
    let mut entries = files.clone();
    entries.push((
        "BUNDLE.json".to_string(),
        old_manifest(3, &files, &fx.path()),
    ));
    rewrite(&bundle, &entries);
    let out = verify(&fx);
    assert_eq!(out.status.code(), Some(1));
    let text = stdout(&out);
    // Layout 3 needs its piece size first of all.
    assert_eq!(
        text,
        "BUNDLE.json: no piece_size, which layout 3 requires\n"
    );

    // Piece digests under schema_version 2.
    let mut entries = contents(&bundle_of(&fx));
    let (_, json) = entries.last_mut().unwrap();
    let mut m: serde_json::Value = serde_json::from_slice(json).unwrap();
    m["schema_version"] = 2.into();
    *json = serde_json::to_vec(&m).unwrap();
    let text = failing_verify(&fx, &bundle, &entries);
    assert_eq!(text.lines().count(), files.len(), "{text}");
    assert!(
        text.lines()
            .all(|l| l.ends_with(": its digests in BUNDLE.json are not those of layout 2")),
        "{text}"
    );
}

/// A fresh layout-3 bundle of the fixture's pid-1234 at `b.tar.zst`.
fn bundle_of(fx: &Fixture) -> PathBuf {
    let out = fx
        .bundle()
        .args(["pid-1234", "-o", "b.tar.zst", "--force"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    fx.path().join("b.tar.zst")
}

#[test]
fn a_changed_byte_is_named_with_its_piece_and_a_wrong_tree_digest_is_caught() {
    let fx = Fixture::new();
    let pid = fx.process_dir("pid-1234", 3);
    let events = common::bytes(2 * PIECE as usize + 100, 8);
    common::write(&pid.join("events.bin"), &events);
    let bundle = bundle_of(&fx);
    let mut files = contents(&bundle);
    let (_, json) = files.last().unwrap();
    let m: serde_json::Value = serde_json::from_slice(json).unwrap();
    let record = m["files"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["path"] == "archive/pid-1234/events.bin")
        .unwrap()
        .clone();

    // One byte of the second piece.
    flip_events_byte(&mut files, PIECE as usize + 10);
    let (_, tampered) = files
        .iter()
        .find(|(p, _)| p == "archive/pid-1234/events.bin")
        .unwrap();
    let slice = fx.path().join("piece-2");
    std::fs::write(&slice, &tampered[PIECE as usize..2 * PIECE as usize]).unwrap();
    assert_eq!(
        failing_verify(&fx, &bundle, &files),
        format!(
            "archive/pid-1234/events.bin: SHA-256 mismatch in piece 2 of 3 ({PIECE} bytes from byte {PIECE}): content {}, BUNDLE.json says {}\n",
            sha256sum(&slice),
            record["piece_sha256"][1].as_str().unwrap()
        )
    );

    // The content intact, but the tree digest altered.
    flip_events_byte(&mut files, PIECE as usize + 10);
    let (_, json) = files.last_mut().unwrap();
    let mut m: serde_json::Value = serde_json::from_slice(json).unwrap();
    let record = m["files"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .find(|f| f["path"] == "archive/pid-1234/events.bin")
        .unwrap();
    let right = record["tree_sha256"].as_str().unwrap().to_string();
    let wrong = format!(
        "{}{}",
        if right.starts_with('0') { "1" } else { "0" },
        &right[1..]
    );
    record["tree_sha256"] = wrong.clone().into();
    *json = serde_json::to_vec(&m).unwrap();
    assert_eq!(
        failing_verify(&fx, &bundle, &files),
        format!("archive/pid-1234/events.bin: tree_sha256 mismatch: its pieces give {right}, BUNDLE.json says {wrong}\n")
    );
}

#[test]
fn a_piece_size_other_than_layout_3s_is_named() {
    let (fx, bundle) = packed();
    let mut files = contents(&bundle);
    let (_, json) = files.last_mut().unwrap();
    let mut m: serde_json::Value = serde_json::from_slice(json).unwrap();
    m["piece_size"] = (1u64 << 20).into();
    *json = serde_json::to_vec(&m).unwrap();
    assert_eq!(
        failing_verify(&fx, &bundle, &files),
        format!("BUNDLE.json: piece_size 1048576 is not the {PIECE} of layout 3\n")
    );
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
    doc["schema_version"] = serde_json::json!(4);
    *manifest = serde_json::to_vec(&doc).unwrap();
    rewrite(&bundle, &files);
    let out = verify(&fx);
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    let text = stdout(&out);
    assert_eq!(
        text.lines().collect::<Vec<_>>(),
        ["BUNDLE.json: schema_version 4 is not one this hrr-bundle reads (it reads 1 to 3); verify the bundle with the hrr-bundle that wrote it, or a newer one"],
        "{text}"
    );
    assert_eq!(stderr(&out).lines().count(), 1, "{}", stderr(&out));
}
