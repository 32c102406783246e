//! The record stream: every row of the torn-tail recovery table (reference
//! §9), trailer rules (§8), sentinels and unknown ids, and the format
//! versions hrr decodes (6, 7, 8) or refuses (5, 9, bad magic, short file).
//! Archives are built by the independent writer in hrr-testkit.

use hrr::archive::{summarize, ArchiveSummary};
use hrr_testkit::archive::{Manifest, ProcessArchive};
use hrr_testkit::events::{api, EventsFile, Launch, Snapshot};

fn summary_of(events: EventsFile, manifest: Manifest) -> ArchiveSummary {
    let tmp = tempfile::tempdir().unwrap();
    let mut p = ProcessArchive::new(100, events);
    p.manifest = manifest;
    let dir = p.write(tmp.path()).unwrap();
    summarize(&dir).unwrap()
}

fn three_mallocs() -> EventsFile {
    let mut f = EventsFile::v7();
    for i in 1..=3 {
        f.malloc(0x7f00_0000_0000 + i * 0x1000, 64);
    }
    f
}

fn kinds(s: &ArchiveSummary) -> Vec<&str> {
    s.problems.iter().map(|p| p.kind.as_str()).collect()
}

#[test]
fn records_plus_valid_trailer_is_complete() {
    let mut f = three_mallocs();
    f.trailer();
    let s = summary_of(f, Manifest::Complete);
    assert_eq!((s.events, s.complete, s.truncated), (3, true, false));
    assert_eq!(s.trailer.total_events, Some(3));
    assert_eq!(s.state.as_str(), "complete");
    assert!(s.problems.is_empty(), "{:?}", s.problems);
}

#[test]
fn half_a_header_is_a_torn_tail() {
    let mut f = three_mallocs();
    f.raw(&[0xd7, 0, 9, 9, 9, 9, 9, 9, 9, 9, 1, 2, 3, 4, 5, 6]);
    let s = summary_of(f, Manifest::Incomplete);
    assert_eq!(
        (s.events, s.complete, s.truncated, s.torn_bytes),
        (3, false, true, 16)
    );
    assert!(kinds(&s).contains(&"torn_tail"));
}

#[test]
fn header_claiming_an_absent_payload_is_torn() {
    let mut f = three_mallocs();
    f.bare_header(api::HIP_MALLOC, 52);
    let s = summary_of(f, Manifest::Incomplete);
    assert_eq!(
        (s.events, s.complete, s.truncated, s.torn_bytes),
        (3, false, true, 32)
    );
}

#[test]
fn huge_payload_length_is_torn_not_allocated() {
    let mut f = three_mallocs();
    f.bare_header(api::HIP_MODULE_LAUNCH_KERNEL, 0xFFFF_FFF0);
    let s = summary_of(f, Manifest::Incomplete);
    assert_eq!((s.events, s.complete, s.truncated), (3, false, true));
    assert!(
        s.problems[0].detail.contains("64 MiB"),
        "{}",
        s.problems[0].detail
    );
}

#[test]
fn payload_length_below_the_header_is_torn() {
    let mut f = three_mallocs();
    f.bare_header(api::HIP_MALLOC, 16);
    let s = summary_of(f, Manifest::Incomplete);
    assert_eq!((s.events, s.truncated), (3, true));
}

#[test]
fn clean_boundary_without_trailer_is_incomplete_but_not_truncated() {
    let s = summary_of(three_mallocs(), Manifest::Incomplete);
    assert_eq!((s.events, s.complete, s.truncated), (3, false, false));
    assert!(!s.trailer.present);
    assert_eq!(s.state.as_str(), "incomplete");
    assert_eq!(kinds(&s), vec!["no_trailer"]);
}

#[test]
fn one_record_and_ten_stray_bytes() {
    let mut f = EventsFile::v7();
    f.malloc(0x1000, 8).raw(&[0xAB; 10]);
    let s = summary_of(f, Manifest::Incomplete);
    assert_eq!(
        (s.events, s.complete, s.truncated, s.torn_bytes),
        (1, false, true, 10)
    );
}

#[test]
fn trailer_count_mismatch_is_not_complete() {
    let mut f = three_mallocs();
    f.trailer_counting(5);
    let s = summary_of(f, Manifest::Complete);
    assert!(s.trailer.present);
    assert_eq!((s.events, s.complete), (3, false));
    assert!(kinds(&s).contains(&"trailer_count_mismatch"));
    // The manifest said complete; the stream contradicts it.
    assert_eq!(s.state.as_str(), "incomplete");
    assert!(kinds(&s).contains(&"manifest_contradicted"));
}

#[test]
fn records_after_the_trailer_are_counted_not_decoded() {
    let mut f = EventsFile::v7();
    f.malloc(0x1000, 8).malloc(0x2000, 8).trailer();
    f.free(0x1000).free(0x2000);
    let mut p = ProcessArchive::new(7, f);
    p.manifest = Manifest::Raw(
        r#"{"pid":7,"parent_pid":0,"complete":true,"event_count":2,"blob_count":0}"#.into(),
    );
    let tmp = tempfile::tempdir().unwrap();
    let s = summarize(&p.write(tmp.path()).unwrap()).unwrap();
    assert_eq!(
        (s.events, s.records_after_trailer, s.complete),
        (2, 2, true)
    );
    assert_eq!(
        s.apis.len(),
        1,
        "hipFree after the trailer must not be counted: {:?}",
        s.apis
    );
    assert_eq!(s.apis[0].name, "hipMalloc");
    assert!(kinds(&s).contains(&"records_after_trailer"));
}

#[test]
fn ffff_records_that_are_not_trailers_are_events() {
    let mut f = EventsFile::v7();
    f.record(0xFFFF, &[]); // 32-byte 0xFFFF record (upstream UnknownEventType test)
    let mut fake = vec![0u8; 12];
    fake[8..12].copy_from_slice(b"NOPE"); // length 44, wrong magic
    f.record(0xFFFF, &fake);
    f.trailer();
    let s = summary_of(f, Manifest::Complete);
    assert_eq!((s.events, s.complete), (2, true));
    assert_eq!(s.apis.len(), 1);
    assert_eq!(
        (s.apis[0].id, s.apis[0].name.as_str(), s.apis[0].count),
        (0xFFFF, "unknown(65535)", 2)
    );
}

#[test]
fn unknown_ids_print_as_unknown() {
    let mut f = EventsFile::v7();
    f.record(600, &[0; 8]).record(555, &[]).trailer();
    let s = summary_of(f, Manifest::Complete);
    let names: Vec<&str> = s.apis.iter().map(|a| a.name.as_str()).collect();
    assert_eq!(names, vec!["unknown(555)", "unknown(600)"]);
    assert!(kinds(&s).contains(&"unknown_event_types"));
}

#[test]
fn header_only_malloc_is_kept_not_decoded() {
    let mut f = EventsFile::v7();
    f.record(api::HIP_MALLOC, &[]).trailer();
    let s = summary_of(f, Manifest::Complete);
    assert_eq!((s.events, s.complete), (1, true));
    assert!(kinds(&s).contains(&"undersized_events"));
}

#[test]
fn worked_example_of_104_bytes_decodes() {
    let mut f = EventsFile::v7();
    f.clock = 1_000_000;
    f.thread = 4242;
    f.malloc(0x0000_7f00_0000_0000, 1 << 20).trailer();
    assert_eq!(f.bytes().len(), 104);
    let s = summary_of(f, Manifest::Complete);
    assert_eq!((s.format_version, s.flags), (Some(7), Some(1)));
    assert_eq!(
        (s.events, s.complete, s.threads, s.duration_ns),
        (1, true, 1, 0)
    );
    assert_eq!((s.apis[0].id, s.apis[0].name.as_str()), (215, "hipMalloc"));
}

#[test]
fn format_6_uses_its_own_compiler_ids() {
    let mut f = EventsFile::new(6, 0);
    f.malloc(0x1000, 8)
        .fat_binary(api::HIP_REGISTER_FAT_BINARY_V6, (0x11, 0x22), 4096);
    f.trailer();
    let s = summary_of(f, Manifest::Complete);
    assert_eq!(s.api_table.as_deref(), Some("v6"));
    let names: Vec<(u16, &str)> = s.apis.iter().map(|a| (a.id, a.name.as_str())).collect();
    assert_eq!(
        names,
        vec![(215, "hipMalloc"), (546, "__hipRegisterFatBinary")]
    );
    // The fat binary is decoded as a blob reference (no file on disk).
    assert_eq!(s.blobs.referenced, 1);
    assert_eq!(
        s.blobs.missing,
        vec!["00000000000000110000000000000022".to_string()]
    );
}

#[test]
fn format_8_decodes_snapshots_with_the_v7_table_and_says_so() {
    let mut f = EventsFile::new(8, 1);
    let mut l = Launch::new("probe_kernel", [4, 1, 1], [64, 1, 1]);
    l.stream = 0x5000;
    l.snapshots = vec![Snapshot {
        ptr: 0x7000,
        offset: 0,
        length: 262_144,
        hash: (0x33, 0x44),
        direction: 0,
    }];
    f.launch(api::HIP_LAUNCH_KERNEL, &l)
        .fat_binary(api::HIP_REGISTER_FAT_BINARY_V7, (0, 0), 0);
    f.trailer();
    let s = summary_of(f, Manifest::Complete);
    assert!(s.api_table.as_deref().unwrap().contains("assumed"));
    assert!(!s.notes.is_empty());
    assert_eq!(s.apis[1].name, "__hipRegisterFatBinary");
    assert_eq!(
        (s.kernel_launches, s.kernels[0].name.as_str()),
        (1, "probe_kernel")
    );
    assert_eq!(
        s.blobs.missing,
        vec!["00000000000000330000000000000044".to_string()]
    );
    assert!(!kinds(&s).contains(&"malformed_event"));
}

#[test]
fn versions_5_and_9_are_refused_not_guessed() {
    for v in [5u16, 9] {
        let mut f = EventsFile::new(v, 0);
        f.malloc(0x1000, 8);
        let s = summary_of(f, Manifest::Complete);
        assert_eq!(s.format_version, Some(v));
        assert_eq!(
            s.fatal_problem().map(|p| p.kind.as_str()),
            Some("unsupported_version")
        );
        assert_eq!(s.events, 0);
        assert!(
            s.fatal_problem().unwrap().detail.contains("re-capture")
                || s.fatal_problem().unwrap().detail.contains("Re-capture")
        );
    }
}

#[test]
fn bad_magic_and_short_file_are_fatal() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("pid-1");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("events.bin"), b"HRRE\x07\x00\x01\x00").unwrap();
    let s = summarize(&dir).unwrap();
    assert_eq!(s.fatal_problem().unwrap().kind, "bad_magic");
    std::fs::write(dir.join("events.bin"), b"EHRR\x07").unwrap();
    let s = summarize(&dir).unwrap();
    assert_eq!(s.fatal_problem().unwrap().kind, "short_file");
}

#[test]
fn killed_process_without_manifest_is_not_finalized() {
    let s = summary_of(three_mallocs(), Manifest::None);
    assert_eq!(s.state.as_str(), "not_finalized");
    assert!(s.manifest.is_none());
    assert!(kinds(&s).contains(&"no_manifest"));
    let s = summary_of(
        three_mallocs(),
        Manifest::Raw("{\"pid\": 1, \"compl".into()),
    );
    assert_eq!(s.state.as_str(), "unknown");
    assert!(kinds(&s).contains(&"manifest_unreadable"));
}
