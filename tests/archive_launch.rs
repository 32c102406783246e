//! Launch payloads (reference §10), graph kernel nodes (§10.4), copies and
//! D2H checks (§12), blobs and code objects present vs referenced (§13),
//! region sidecars (§14), and a 300-kernel archive with no truncation.

use std::path::{Path, PathBuf};

use hrr::archive::event_stream::Events;
use hrr::archive::{summarize, ArchiveSummary};
use hrr_testkit::archive::ProcessArchive;
use hrr_testkit::events::{api, fnv1a128, hash_name, kind, Arg, EventsFile, Launch};

fn write(p: &ProcessArchive) -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = p.write(tmp.path()).unwrap();
    (tmp, dir)
}

fn summary(p: &ProcessArchive) -> ArchiveSummary {
    let (_tmp, dir) = write(p);
    summarize(&dir).unwrap()
}

fn all_events(dir: &Path) -> Vec<serde_json::Value> {
    let mut ev = Events::open(dir).unwrap();
    let mut out = Vec::new();
    while let Some(e) = ev.next_matching(0, None).unwrap() {
        out.push(serde_json::to_value(&e).unwrap());
    }
    out
}

#[test]
fn every_launch_id_counts_as_a_launch() {
    let mut f = EventsFile::v7();
    for (i, id) in api::LAUNCH_IDS.iter().enumerate() {
        f.launch(
            *id,
            &Launch::new(&format!("probe_kernel_{i}"), [1, 1, 1], [64, 1, 1]),
        );
    }
    f.trailer();
    let s = summary(&ProcessArchive::new(1, f));
    assert_eq!(s.kernel_launches, 10);
    assert_eq!(s.kernels.len(), 10);
    assert!(s.kernels.iter().all(|k| k.launches == 1));
    assert!(s.problems.is_empty(), "{:?}", s.problems);
}

#[test]
fn kind3_args_and_attribute_tail_are_decoded() {
    let mut f = EventsFile::v7();
    let mut l = Launch::new("probe_kernel", [4, 1, 1], [64, 1, 1]);
    l.stream = 0x5000;
    l.code_object = (0x1111, 0x2222);
    l.args = vec![
        Arg::Pointer(0x7f00_0000_1000),
        Arg::Embedded(vec![0xEE; 16], vec![8]),
    ];
    l.attributes = Some((2, 24, vec![0xCC; 48]));
    f.launch(api::HIP_MODULE_LAUNCH_KERNEL, &l).trailer();
    let p = ProcessArchive::new(1, f);
    let (_tmp, dir) = write(&p);
    let events = all_events(&dir);
    let e = &events[0];
    assert_eq!(e["kernel"], "probe_kernel");
    assert_eq!(e["stream"], "0x5000");
    assert_eq!(e["code_object"], "00000000000011110000000000002222");
    assert_eq!(e["grid"], serde_json::json!([4, 1, 1]));
    assert_eq!(e["args"][0]["value"], "0x7f0000001000");
    assert_eq!(e["args"][1]["kind"], "embedded_pointers");
    assert_eq!(e["args"][1]["size"], 16);
    assert_eq!(e["args"][1]["pointer_offsets"], serde_json::json!([8]));
    assert_eq!(
        e["attributes"],
        serde_json::json!({"count": 2, "stride": 24})
    );
}

#[test]
fn launch_without_attribute_tail_is_an_older_capture_not_an_error() {
    let mut f = EventsFile::v7();
    let mut l = Launch::new("probe_kernel", [1, 1, 1], [1, 1, 1]);
    l.attributes = None;
    l.args = vec![Arg::Value(vec![1, 2, 3, 4])];
    f.launch(api::HIP_LAUNCH_KERNEL, &l).trailer();
    let s = summary(&ProcessArchive::new(1, f));
    assert_eq!(s.kernels[0].name, "probe_kernel");
    assert!(s.problems.is_empty(), "{:?}", s.problems);
}

#[test]
fn launch_running_past_its_record_is_a_problem_not_a_panic() {
    let mut f = EventsFile::v7();
    let mut l = Launch::new("probe_kernel", [1, 1, 1], [1, 1, 1]);
    l.attributes = Some((1000, 24, vec![0; 24])); // claims 24,000 bytes, has 24
    f.launch(api::HIP_MODULE_LAUNCH_KERNEL, &l);
    let mut l2 = Launch::new("probe_kernel", [1, 1, 1], [1, 1, 1]);
    l2.num_snapshots = Some(3); // three snapshots announced, none present
    f.launch(api::HIP_MODULE_LAUNCH_KERNEL, &l2).trailer();
    let s = summary(&ProcessArchive::new(1, f));
    assert_eq!((s.events, s.kernel_launches, s.complete), (2, 2, true));
    assert!(s.kernels.is_empty(), "undecodable launches name no kernel");
    let malformed: Vec<_> = s
        .problems
        .iter()
        .filter(|p| p.kind == "malformed_event")
        .collect();
    assert_eq!(malformed.len(), 2);
    assert!(
        malformed[0].detail.contains("launch attributes"),
        "{}",
        malformed[0].detail
    );
    assert!(
        malformed[1].detail.contains("snapshot records"),
        "{}",
        malformed[1].detail
    );
}

#[test]
fn graph_kernel_node_tail_references_its_code_object() {
    let mut f = EventsFile::v7();
    f.graph_kernel_node("probe_kernel", (0xAB, 0xCD), &[Arg::Pointer(0x7f00)])
        .trailer();
    let p = ProcessArchive::new(1, f);
    let (_tmp, dir) = write(&p);
    let s = summarize(&dir).unwrap();
    assert_eq!(s.kernel_launches, 0, "a graph node is not a launch");
    assert_eq!(s.code_objects.referenced, 1);
    assert_eq!(s.code_objects.missing, vec![hash_name((0xAB, 0xCD))]);
    assert!(s.problems.iter().any(|p| p.kind == "missing_code_objects"));
    let e = &all_events(&dir)[0];
    assert_eq!(e["api"], "hipGraphAddKernelNode");
    assert_eq!(e["kernel"], "probe_kernel");
    assert_eq!(e["args"][0]["value"], "0x7f00");
}

#[test]
fn blobs_and_code_objects_present_referenced_and_missing() {
    let mut p = ProcessArchive::new(1, EventsFile::v7());
    let present = p.add_blob(b"input bytes");
    let co = p.add_code_object(b"\x7fELF code");
    p.add_blob(b"unreferenced blob");
    let absent_blob = fnv1a128(b"lost input");
    let absent_co = fnv1a128(b"lost code object");
    p.events
        .module_load(0x10, co)
        .module_load(0x20, absent_co)
        .memcpy(0x7f00, 0x5500, 11, kind::HOST_TO_DEVICE, present)
        .memcpy(0x7f00, 0x5500, 10, kind::HOST_TO_DEVICE, absent_blob)
        .trailer();
    let s = summary(&p);
    assert_eq!((s.blobs.files, s.blobs.referenced), (2, 2));
    assert_eq!(s.blobs.missing, vec![hash_name(absent_blob)]);
    assert_eq!((s.code_objects.files, s.code_objects.referenced), (1, 2));
    assert_eq!(s.code_objects.missing, vec![hash_name(absent_co)]);
    let kinds: Vec<&str> = s.problems.iter().map(|p| p.kind.as_str()).collect();
    assert!(kinds.contains(&"missing_blobs") && kinds.contains(&"missing_code_objects"));
}

#[test]
fn d2h_checks_count_only_verifiable_copies() {
    let mut f = EventsFile::v7();
    f.memcpy(0x55, 0x7f, 64, kind::DEVICE_TO_HOST, (1, 1)) // counted
        .memcpy(0x55, 0x7f, 64, kind::DEFAULT, (2, 2)) // kind 4: not verified
        .memcpy(0x55, 0x7f, 64, kind::DEVICE_TO_HOST, (0, 0)) // no expected blob
        .memcpy_dtoh(0x55, 0x7f, 64, (3, 3)) // counted
        .memcpy_dtoh(0x55, 0x7f, 64, (0, 0))
        .fixed(
            api::HIP_MEMCPY_SPT,
            64,
            &[(36, 0x55), (44, 0x7f), (52, 64), (60, 2)],
        ) // no blob fields
        .fixed(api::HIP_MEMCPY_2D, 120, &[(104, 4), (112, 4)]) // d2h hash set: counted
        .fixed(api::HIP_MEMCPY_2D, 120, &[(88, 5), (96, 5)]) // H2D blob only
        .trailer();
    let s = summary(&ProcessArchive::new(1, f));
    assert_eq!(s.d2h_checks, 3);
    assert_eq!(s.blobs.referenced, 5);
}

#[test]
fn region_sidecars_are_counted() {
    let p = ProcessArchive::new(1, {
        let mut f = EventsFile::v7();
        f.malloc(0x1000, 8).trailer();
        f
    });
    let (_tmp, dir) = write(&p);
    std::fs::create_dir_all(dir.join("regions")).unwrap();
    // Two batches (2 + 1 region records) in the §14 layout, then a torn one.
    let mut b = b"HRRR".to_vec();
    b.extend(1u16.to_le_bytes());
    b.extend(0u16.to_le_bytes());
    for n in [2u32, 1] {
        let len = 40 + 32 * n;
        b.extend(0xFFFDu16.to_le_bytes());
        b.extend([0u8; 24]);
        b.extend(len.to_le_bytes());
        b.extend([0u8; 2]);
        b.extend(n.to_le_bytes());
        b.extend(0u32.to_le_bytes());
        b.extend(vec![0u8; 32 * n as usize]);
    }
    std::fs::write(dir.join("regions/torch.hrrr"), &b).unwrap();
    b.extend([0xFD, 0xFF, 0, 0]);
    std::fs::write(dir.join("regions/zz.hrrr"), &b).unwrap();
    let s = summarize(&dir).unwrap();
    assert_eq!((s.regions.streams, s.regions.records), (2, 6));
    assert!(s
        .problems
        .iter()
        .any(|p| p.kind == "damaged_region_stream" && p.detail.contains("zz.hrrr")));
}

#[test]
fn three_hundred_kernels_keep_every_full_name() {
    let mut f = EventsFile::v7();
    let names: Vec<String> = (0..300)
        .map(|i| format!("_ZN9probe_ns{i:03}{}E", "L".repeat(150 + i % 40)))
        .collect();
    for (i, n) in names.iter().enumerate() {
        for _ in 0..(1 + i % 3) {
            f.launch(
                api::HIP_MODULE_LAUNCH_KERNEL,
                &Launch::new(n, [1, 1, 1], [64, 1, 1]),
            );
        }
    }
    f.trailer();
    let s = summary(&ProcessArchive::new(1, f));
    assert_eq!(s.kernels.len(), 300);
    let mut got: Vec<&str> = s.kernels.iter().map(|k| k.name.as_str()).collect();
    got.sort_unstable();
    let mut want: Vec<&str> = names.iter().map(String::as_str).collect();
    want.sort_unstable();
    assert_eq!(got, want);
    // Sorted by launches descending, then name.
    assert_eq!(s.kernels[0].launches, 3);
    assert_eq!(s.kernels[299].launches, 1);
    assert!(s.kernels.windows(2).all(|w| w[0].launches > w[1].launches
        || (w[0].launches == w[1].launches && w[0].name < w[1].name)));
    let json = serde_json::to_string(&s).unwrap();
    assert!(
        !json.contains("..."),
        "no elided names anywhere in the JSON"
    );
}
