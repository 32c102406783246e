//! Hostile input (DESIGN §8): random byte strings and random mutations of a
//! valid archive never panic the decoder and never make it request more
//! memory at once than the 64 MiB record cap. A counting global allocator
//! records the largest single allocation of this test binary.

use std::path::Path;

use hrr::archive::event_stream::Events;
use hrr::archive::summarize;
use hrr_testkit::archive::{Manifest, ProcessArchive};
use hrr_testkit::events::{api, Arg, EventsFile, Launch, Snapshot};
use proptest::prelude::*;

#[global_allocator]
static ALLOCATOR: hrr_testkit::alloc::LargestAllocation = hrr_testkit::alloc::LargestAllocation;

/// The record cap plus one record header: the most a record may take.
const CAP: usize = (64 << 20) + 32;

fn valid_archive() -> Vec<u8> {
    let mut f = EventsFile::v7();
    let mut l = Launch::new("probe_kernel", [4, 1, 1], [64, 1, 1]);
    l.args = vec![
        Arg::Pointer(0x7f00),
        Arg::Embedded(vec![0; 16], vec![8]),
        Arg::Value(vec![1; 4]),
    ];
    l.attributes = Some((1, 8, vec![0; 8]));
    l.snapshots = vec![Snapshot {
        ptr: 1,
        offset: 0,
        length: 4,
        hash: (5, 6),
        direction: 1,
    }];
    f.malloc(0x7f00, 64)
        .memcpy(0x7f00, 0x5500, 64, 1, (1, 2))
        .launch(api::HIP_MODULE_LAUNCH_KERNEL, &l)
        .graph_kernel_node("probe_kernel", (3, 4), &[Arg::Pointer(9)])
        .memcpy_dtoh(0x5500, 0x7f00, 64, (7, 8))
        .fat_binary(api::HIP_REGISTER_FAT_BINARY_V7, (9, 9), 10)
        .record(0xFFFF, &[])
        .trailer();
    f.bytes().to_vec()
}

fn decode_everything(dir: &Path) {
    let s = summarize(dir).expect("a directory with events.bin is always summarised");
    serde_json::to_string(&s).unwrap();
    let _ = hrr::archive::report::process_text(&s, None);
    if let Ok(mut ev) = Events::open(dir) {
        while let Ok(Some(e)) = ev.next_matching(0, None) {
            let _ = e.text_line();
        }
    }
    assert!(
        hrr_testkit::alloc::largest() <= CAP,
        "an allocation exceeded the record cap"
    );
}

fn with_events(bytes: &[u8]) {
    let tmp = tempfile::tempdir().unwrap();
    let mut p = ProcessArchive::new(1, EventsFile::v7());
    p.manifest = Manifest::None;
    let dir = p.write(tmp.path()).unwrap();
    std::fs::write(dir.join("events.bin"), bytes).unwrap();
    decode_everything(&dir);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..2048)) {
        with_events(&bytes);
    }

    #[test]
    fn random_bytes_after_a_valid_header_never_panic(
        version in 5u16..10,
        bytes in proptest::collection::vec(any::<u8>(), 0..4096),
    ) {
        let mut f = b"EHRR".to_vec();
        f.extend(version.to_le_bytes());
        f.extend([1, 0]);
        f.extend(bytes);
        with_events(&f);
    }

    #[test]
    fn mutations_of_a_valid_archive_never_panic(
        edits in proptest::collection::vec((any::<usize>(), any::<u8>()), 1..16),
        cut in proptest::option::of(any::<usize>()),
    ) {
        let mut f = valid_archive();
        for (at, byte) in edits {
            let i = 8 + at % (f.len() - 8);
            f[i] = byte;
        }
        if let Some(c) = cut {
            f.truncate(c % (f.len() + 1));
        }
        with_events(&f);
    }
}

#[test]
fn hostile_payload_lengths_do_not_allocate_their_claim() {
    for claim in [64u32 << 20, (64 << 20) + 1, 0xFFFF_FFF0, 60 << 20] {
        let mut f = EventsFile::v7();
        f.malloc(0x1000, 8)
            .bare_header(api::HIP_MODULE_LAUNCH_KERNEL, claim);
        f.raw(&[0u8; 4096]);
        with_events(f.bytes());
    }
    assert!(
        hrr_testkit::alloc::largest() < 16 << 20,
        "a short file must not grow the buffer to the claim"
    );
}

#[test]
fn malformed_manifests_are_problems_not_panics() {
    for text in [
        "",
        "{",
        "null",
        "[]",
        "{\"complete\": \"yes\"}",
        "\u{0}\u{1}",
        "{\"pid\": -1, \"complete\": true}",
    ] {
        let tmp = tempfile::tempdir().unwrap();
        let mut p = ProcessArchive::new(1, {
            let mut f = EventsFile::v7();
            f.malloc(1, 1).trailer();
            f
        });
        p.manifest = Manifest::Raw(text.to_string());
        let dir = p.write(tmp.path()).unwrap();
        let s = summarize(&dir).unwrap();
        assert_eq!(s.events, 1);
    }
}
