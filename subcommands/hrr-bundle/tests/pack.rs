//! `hrr bundle <archive>`: what goes in, what BUNDLE.json says, and that the
//! archive is never touched.
#![cfg(unix)]

mod common;

use common::{entries, manifest, sha256sum, snapshot, stderr, stdout, tree_of, Fixture, PIECE};

#[test]
fn a_file_larger_than_a_piece_is_listed_piece_by_piece() {
    let fx = Fixture::new();
    let pid = fx.process_dir("pid-1", 9);
    // Two whole pieces and a 5-byte tail.
    let events = common::bytes(2 * PIECE as usize + 5, 4);
    common::write(&pid.join("events.bin"), &events);
    let out = fx
        .bundle()
        .args(["pid-1", "-o", "big.tar.zst"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let m = manifest(&fx.path().join("big.tar.zst"));
    let record = m["files"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["path"] == "archive/pid-1/events.bin")
        .unwrap();
    assert_eq!(record["size"], events.len());
    // Each piece's SHA-256 by sha256sum over that slice of the file.
    let pieces: Vec<String> = events
        .chunks(PIECE as usize)
        .enumerate()
        .map(|(i, chunk)| {
            let slice = fx.path().join(format!("piece-{i}"));
            std::fs::write(&slice, chunk).unwrap();
            sha256sum(&slice)
        })
        .collect();
    assert_eq!(pieces.len(), 3);
    assert_eq!(record["piece_sha256"], serde_json::json!(pieces));
    assert_eq!(record["tree_sha256"], tree_of(&pieces));
    let out = fx
        .bundle()
        .args(["verify", "big.tar.zst"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
}

#[test]
fn process_dir_with_finding_and_log_round_trips_through_verify() {
    let fx = Fixture::new();
    let pid = fx.process_dir("capture.hrr/pid-1234", 7);
    common::write(
        &fx.path().join("out/finding.json"),
        b"{\"outcome\":\"PASS\"}\n",
    );
    common::write(
        &fx.path().join("out/replay.log"),
        b"[HRR progress] 3 kernels\n",
    );
    let out = fx
        .bundle()
        .args([
            "bundle",
            "capture.hrr/pid-1234",
            "--finding",
            "out/finding.json",
        ])
        .args(["--log", "out/replay.log", "-o", "b.tar.zst"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let bundle = fx.path().join("b.tar.zst");
    assert_eq!(stdout(&out), format!("{}\n", bundle.display()));
    assert_eq!(
        fx.hrr_calls(),
        format!("archive info --json --no-memory {}\n", pid.display())
    );

    // The archive files in name order, then the finding and the log, then
    // BUNDLE.json; every byte as on disk.
    let sources = [
        (
            "archive/pid-1234/blobs/0123456789abcdef0123456789abcdef",
            pid.join("blobs/0123456789abcdef0123456789abcdef"),
            "archive",
        ),
        (
            "archive/pid-1234/blobs/fedcba9876543210fedcba9876543210",
            pid.join("blobs/fedcba9876543210fedcba9876543210"),
            "archive",
        ),
        (
            "archive/pid-1234/code_objects/00112233445566778899aabbccddeeff",
            pid.join("code_objects/00112233445566778899aabbccddeeff"),
            "archive",
        ),
        (
            "archive/pid-1234/events.bin",
            pid.join("events.bin"),
            "archive",
        ),
        (
            "archive/pid-1234/manifest.json",
            pid.join("manifest.json"),
            "archive",
        ),
        (
            "finding/finding.json",
            fx.path().join("out/finding.json"),
            "finding",
        ),
        ("log/replay.log", fx.path().join("out/replay.log"), "log"),
    ];
    let packed = entries(&bundle);
    let names: Vec<&str> = packed.iter().map(|e| e.0.as_str()).collect();
    let mut expected_names: Vec<&str> = sources.iter().map(|s| s.0).collect();
    expected_names.push("BUNDLE.json");
    assert_eq!(names, expected_names);
    for ((name, source, _), (_, kind, data)) in sources.iter().zip(&packed) {
        assert_eq!(*kind, tar::EntryType::Regular, "{name}");
        assert_eq!(data, &std::fs::read(source).unwrap(), "{name}");
    }

    let m = manifest(&bundle);
    assert_eq!(m["schema_version"], 3);
    assert_eq!(m["piece_size"], PIECE);
    assert_eq!(m["generator"]["name"], "hrr-bundle");
    assert_eq!(m["generator"]["version"], env!("CARGO_PKG_VERSION"));
    let created = m["created_utc"].as_str().unwrap();
    assert!(created.ends_with('Z') && created.len() == 20, "{created}");
    assert_eq!(m["archive"]["kind"], "process");
    assert_eq!(m["archive"]["bundle_path"], "archive/pid-1234");
    // The summary is what `hrr archive info --json --no-memory` printed, kept whole.
    assert_eq!(m["archive_info"]["kind"], "process");
    assert_eq!(m["archive_info"]["events"], 23);
    assert_eq!(m["archive_info"]["path"], pid.display().to_string());
    assert!(
        m["archive_info"]["memory"].is_null(),
        "the summary is taken without the map"
    );
    let files = m["files"].as_array().unwrap();
    assert_eq!(files.len(), sources.len());
    let mut total = 0;
    for ((name, source, role), f) in sources.iter().zip(files) {
        let size = std::fs::metadata(source).unwrap().len();
        total += size;
        assert_eq!(f["path"], *name);
        assert_eq!(f["size"], size, "{name}");
        // Every file here is one piece: its digest is the file's SHA-256.
        assert_eq!(
            f["piece_sha256"],
            serde_json::json!([sha256sum(source)]),
            "{name}"
        );
        assert_eq!(f["tree_sha256"], tree_of(&[sha256sum(source)]), "{name}");
        assert!(f.get("sha256").is_none(), "{name}");
        assert_eq!(f["role"], *role, "{name}");
    }
    assert_eq!(m["totals"]["files"], sources.len());
    assert_eq!(m["totals"]["bytes"], total);

    let out = fx
        .bundle()
        .args(["bundle", "verify", "b.tar.zst"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), format!("ok: 7 files, {total} bytes\n"));
}

#[test]
fn root_is_packed_whole_and_a_symlinked_process_dir_is_skipped_not_followed() {
    let fx = Fixture::new();
    fx.process_dir("capture.hrr/pid-1", 1);
    fx.process_dir("capture.hrr/pid-2", 2);
    let outside = fx.process_dir("elsewhere/pid-3", 3);
    std::os::unix::fs::symlink(&outside, fx.path().join("capture.hrr/pid-3")).unwrap();
    let out = fx
        .bundle()
        .args(["capture.hrr", "-o", "root.tar.zst"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.lines().any(|l| l.starts_with("warning: skipping ")
            && l.contains("capture.hrr/pid-3")
            && l.contains("not followed")),
        "{err}"
    );
    let bundle = fx.path().join("root.tar.zst");
    let names: Vec<String> = entries(&bundle).into_iter().map(|e| e.0).collect();
    assert_eq!(names.len(), 1 + 2 * 5, "{names:?}");
    assert!(names
        .iter()
        .any(|n| n == "archive/capture.hrr/pid-1/events.bin"));
    assert!(names
        .iter()
        .any(|n| n == "archive/capture.hrr/pid-2/events.bin"));
    assert!(!names.iter().any(|n| n.contains("pid-3")), "{names:?}");
    let m = manifest(&bundle);
    assert_eq!(m["archive"]["kind"], "root");
    assert_eq!(m["skipped"][0]["path"], "archive/capture.hrr/pid-3");
    let out = fx
        .bundle()
        .args(["verify", "root.tar.zst"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
}

#[test]
fn packing_leaves_every_archive_file_and_mtime_unchanged() {
    let fx = Fixture::new();
    fx.process_dir("capture.hrr/pid-1", 1);
    fx.process_dir("capture.hrr/pid-2", 2);
    std::os::unix::fs::symlink("pid-1", fx.path().join("capture.hrr/pid-9")).unwrap();
    let root = fx.path().join("capture.hrr");
    let before = snapshot(&root);
    let out = fx
        .bundle()
        .args(["capture.hrr", "-o", "x.tar.zst", "--triage"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(snapshot(&root), before);
}

#[test]
fn triage_flag_asks_hrr_for_a_metadata_only_finding_and_packs_it() {
    let fx = Fixture::new();
    let pid = fx.process_dir("pid-1234", 5);
    let out = fx
        .bundle()
        .args(["pid-1234", "--triage", "-o", "t.tar.zst"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(fx
        .hrr_calls()
        .lines()
        .any(|l| l == format!("triage {} --no-replay --format json", pid.display())));
    let bundle = fx.path().join("t.tar.zst");
    let finding = entries(&bundle)
        .into_iter()
        .find(|e| e.0 == "finding/finding.json")
        .expect("finding packed");
    let finding: serde_json::Value = serde_json::from_slice(&finding.2).unwrap();
    assert_eq!(finding["fault_class"], "metadata_only");
    let m = manifest(&bundle);
    let record = m["files"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["path"] == "finding/finding.json")
        .unwrap();
    assert_eq!(record["role"], "finding");
}

#[test]
fn default_output_is_named_after_the_archive_and_utc_time_in_the_cwd() {
    let fx = Fixture::new();
    fx.process_dir("capture.hrr/pid-1234", 1);
    std::fs::create_dir(fx.path().join("cwd")).unwrap();
    let out = fx
        .bundle()
        .current_dir(fx.path().join("cwd"))
        .args(["../capture.hrr/pid-1234"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let made = common::names(&fx.path().join("cwd"));
    assert_eq!(made.len(), 1, "{made:?}");
    let name = &made[0];
    // pid-1234-YYYYMMDDTHHMMSSZ.hrr-bundle.tar.zst
    let stamp = name
        .strip_prefix("pid-1234-")
        .and_then(|s| s.strip_suffix(".hrr-bundle.tar.zst"))
        .unwrap_or_else(|| panic!("{name}"));
    assert_eq!(stamp.len(), 16, "{stamp}");
    assert!(
        stamp.chars().enumerate().all(|(i, c)| match i {
            8 => c == 'T',
            15 => c == 'Z',
            _ => c.is_ascii_digit(),
        }),
        "{stamp}"
    );
    assert_eq!(
        stdout(&out).trim(),
        fx.path().join("cwd").join(name).display().to_string()
    );
}

#[test]
fn an_archive_report_with_a_failing_exit_is_kept_with_a_warning() {
    let fx = Fixture::new();
    fx.process_dir("pid-1234", 1);
    let out = fx
        .bundle()
        .env("FAKE_HRR", "unsupported")
        .args(["pid-1234", "-o", "u.tar.zst"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("warning:") && err.contains("format version 9 is not supported"),
        "{err}"
    );
    assert_eq!(
        manifest(&fx.path().join("u.tar.zst"))["archive_info"]["kind"],
        "process"
    );
}
