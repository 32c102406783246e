//! The allocation map, the launch pointer audit and fault attribution
//! on synthetic archives built from the documented shapes
//! (reference §10–§11, §14) and replay logs in the runtime's and the
//! player's own line shapes (playback-output.md §2h, §10.3, §10.4).

mod common;

use std::path::{Path, PathBuf};

use common::{stderr, stdout, Sandbox};
use hrr_testkit::archive::ProcessArchive;
use hrr_testkit::events::{api, Arg, EventsFile, Launch};
use hrr_testkit::regions::{self, Region};
use serde_json::Value;

const BASE: u64 = 0x7f91_da00_0000;
const KERNEL: &str = "crash_oob";

fn launch(kernel: &str, args: Vec<Arg>) -> Launch {
    let mut l = Launch::new(kernel, [64, 1, 1], [64, 1, 1]);
    l.args = args;
    l
}

/// Writes process 4243 with the events `build` records.
fn archive(sb: &Sandbox, build: impl FnOnce(&mut EventsFile)) -> PathBuf {
    let mut ev = EventsFile::v7();
    build(&mut ev);
    let root = sb.path().join("cap.hrr");
    ProcessArchive::new(4243, ev).write(&root).unwrap()
}

fn info(sb: &Sandbox, dir: &Path) -> Value {
    let out = sb
        .hrr()
        .args(["archive", "info", "--json"])
        .arg(dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    serde_json::from_str(&stdout(&out)).unwrap()
}

/// The runtime's fault lines for a fault at `address` in `kernel`.
fn fault_log(sb: &Sandbox, address: &str, extra: &[&str]) -> PathBuf {
    let mut lines: Vec<String> = extra.iter().map(|s| s.to_string()).collect();
    lines.push(format!(":0:rocdevice.cpp            :3678: 3194366185 us:  Memory Fault Error [host: node01, GPU index: 0, faulting addr: {address}, kernel: {KERNEL}]"));
    lines.push(format!("Memory access fault by GPU node-2 (Agent handle: 0x55d5c2a1e6b0) on address {address}. Reason: Page not present or supervisor privilege."));
    sb.write("replay.log", &(lines.join("\n") + "\n"))
}

fn classify(sb: &Sandbox, dir: &Path, log: &Path) -> Value {
    let out = sb
        .hrr()
        .args(["classify", "--format", "json", "--log"])
        .arg(log)
        .arg("--archive")
        .arg(dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    serde_json::from_str(&stdout(&out)).unwrap()
}

fn markdown(sb: &Sandbox, dir: &Path, log: &Path) -> String {
    let out = sb
        .hrr()
        .args(["classify", "--format", "markdown", "--log"])
        .arg(log)
        .arg("--archive")
        .arg(dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    stdout(&out)
}

/// hipMalloc(BASE, 256), then `crash_oob(BASE, 64)`.
fn one_buffer(sb: &Sandbox) -> PathBuf {
    archive(sb, |ev| {
        ev.malloc(BASE, 256).launch(
            api::HIP_MODULE_LAUNCH_KERNEL,
            &launch(
                KERNEL,
                vec![Arg::Pointer(BASE), Arg::Value(64u32.to_le_bytes().to_vec())],
            ),
        );
    })
}

#[test]
fn a_fault_past_the_end_is_attributed_in_one_sentence() {
    let sb = Sandbox::new();
    let dir = one_buffer(&sb);
    let log = fault_log(&sb, "0x7f91da001000", &[]);
    let f = classify(&sb, &dir, &log);
    let a = &f["fault_allocation"];
    assert_eq!(a["relation"], "past_end");
    assert_eq!(a["api"], "hipMalloc");
    assert_eq!(a["base"], "0x7f91da000000");
    assert_eq!(a["size"], 256);
    assert_eq!(a["offset"], 3840);
    assert_eq!(a["alloc_seq"], 0);
    assert_eq!(a["free_seq"], Value::Null);
    assert_eq!(a["argument"]["index"], 0);
    assert_eq!(a["argument"]["kernel"], KERNEL);
    assert_eq!(a["placement"], "unknown");
    let md = markdown(&sb, &dir, &log);
    assert!(
        md.contains("0x7f91da001000 is 3,840 bytes past the end of the 256-byte hipMalloc at 0x7f91da000000 (seq 0), passed as argument 0 of crash_oob."),
        "{md}"
    );
}

#[test]
fn a_fault_inside_and_before_the_start() {
    let sb = Sandbox::new();
    let dir = one_buffer(&sb);
    let f = classify(&sb, &dir, &fault_log(&sb, "0x7f91da000010", &[]));
    assert_eq!(f["fault_allocation"]["relation"], "inside");
    assert_eq!(f["fault_allocation"]["offset"], 16);
    let f = classify(&sb, &dir, &fault_log(&sb, "0x7f91d9ffffc0", &[]));
    assert_eq!(f["fault_allocation"]["relation"], "before_start");
    assert_eq!(f["fault_allocation"]["offset"], 64);
}

#[test]
fn the_nearest_edge_wins() {
    let sb = Sandbox::new();
    // Two buffers with a gap: a fault 16 bytes before the second is
    // nearer its start than the first one's end.
    let dir = archive(&sb, |ev| {
        ev.malloc(BASE, 256).malloc(BASE + 0x1000, 256).launch(
            api::HIP_MODULE_LAUNCH_KERNEL,
            &launch(
                KERNEL,
                vec![Arg::Pointer(BASE), Arg::Pointer(BASE + 0x1000)],
            ),
        );
    });
    let f = classify(&sb, &dir, &fault_log(&sb, "0x7f91da000ff0", &[]));
    let a = &f["fault_allocation"];
    assert_eq!(a["relation"], "before_start");
    assert_eq!(a["base"], "0x7f91da001000");
    assert_eq!(a["offset"], 16);
    assert_eq!(a["argument"]["index"], 1, "the argument pointing into it");
}

#[test]
fn a_fault_in_a_freed_range_and_the_stale_pointer_that_led_there() {
    let sb = Sandbox::new();
    // The buffer is freed, then passed again to a later launch.
    let dir = archive(&sb, |ev| {
        ev.malloc(BASE, 256)
            .launch(
                api::HIP_MODULE_LAUNCH_KERNEL,
                &launch("producer", vec![Arg::Pointer(BASE)]),
            )
            .free(BASE)
            .launch(
                api::HIP_MODULE_LAUNCH_KERNEL,
                &launch(KERNEL, vec![Arg::Value(vec![0; 4]), Arg::Pointer(BASE + 8)]),
            );
    });
    let m = &info(&sb, &dir)["memory"];
    assert_eq!(
        (m["allocations"].as_u64(), m["frees"].as_u64()),
        (Some(1), Some(1))
    );
    assert_eq!(m["live_at_end"], 0);
    assert_eq!(m["peak_live_bytes"], 256);
    assert_eq!(m["stale_pointer_launches"], 1);
    let ex = &m["examples"][0];
    assert_eq!(ex["kind"], "stale_pointer");
    assert_eq!(ex["launch_seq"], 3);
    assert_eq!(ex["kernel"], KERNEL);
    assert_eq!(ex["argument"], 1);
    assert_eq!(ex["address"], "0x7f91da000008");
    assert_eq!(ex["range"]["freed_by"], "hipFree");
    assert_eq!(ex["range"]["free_seq"], 2);

    let f = classify(&sb, &dir, &fault_log(&sb, "0x7f91da000040", &[]));
    let a = &f["fault_allocation"];
    assert_eq!(a["relation"], "freed");
    assert_eq!(a["offset"], 64);
    assert_eq!(a["free_seq"], 2);
    assert_eq!(a["argument"]["index"], 1);
    let label = f["labels"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["label"] == "STALE-POINTER")
        .expect("STALE-POINTER");
    let detail = label["detail"].as_str().unwrap();
    for part in [
        "launch seq 3",
        KERNEL,
        "arg 1",
        "0x7f91da000008",
        "hipFree at seq 2",
    ] {
        assert!(detail.contains(part), "{part} in {detail}");
    }
}

#[test]
fn stale_pointers_are_labelled_in_metadata_only_triage() {
    let sb = Sandbox::new();
    let dir = archive(&sb, |ev| {
        ev.malloc(BASE, 4096).free(BASE).launch(
            api::HIP_MODULE_LAUNCH_KERNEL,
            &launch(KERNEL, vec![Arg::Pointer(BASE)]),
        );
    });
    let out = sb
        .hrr()
        .args(["triage", "--no-replay", "--format", "json"])
        .arg(&dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let f: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(f["fault_class"], "metadata_only");
    assert!(f["labels"]
        .as_array()
        .unwrap()
        .iter()
        .any(|l| l["label"] == "STALE-POINTER"));
    assert_eq!(f["fault_allocation"], Value::Null, "no fault address");
}

#[test]
fn a_fault_in_no_range_and_pointers_in_none_get_no_label() {
    let sb = Sandbox::new();
    let dir = archive(&sb, |ev| {
        ev.launch(
            api::HIP_MODULE_LAUNCH_KERNEL,
            &launch(KERNEL, vec![Arg::Pointer(BASE), Arg::Pointer(0)]),
        );
    });
    let m = &info(&sb, &dir)["memory"];
    assert_eq!(m["unattributed_pointer_args"], 1, "the null one is ignored");
    assert_eq!(m["examples"][0]["kind"], "unattributed");
    let f = classify(&sb, &dir, &fault_log(&sb, "0x7f91da000000", &[]));
    assert_eq!(f["fault_allocation"]["relation"], "none");
    assert!(!f["labels"]
        .as_array()
        .unwrap()
        .iter()
        .any(|l| l["label"] == "STALE-POINTER"));
    assert!(
        markdown(&sb, &dir, &fault_log(&sb, "0x7f91da000000", &[])).contains(
            "0x7f91da000000 lies in no recorded allocation, passed as argument 0 of crash_oob."
        )
    );
}

#[test]
fn address_reuse_after_a_free_starts_a_new_life() {
    let sb = Sandbox::new();
    let dir = archive(&sb, |ev| {
        ev.malloc(BASE, 256).free(BASE).malloc(BASE, 1024).launch(
            api::HIP_MODULE_LAUNCH_KERNEL,
            &launch(KERNEL, vec![Arg::Pointer(BASE)]),
        );
    });
    let m = &info(&sb, &dir)["memory"];
    assert_eq!(m["stale_pointer_launches"], 0, "reallocated: not stale");
    let f = classify(&sb, &dir, &fault_log(&sb, "0x7f91da000200", &[]));
    let a = &f["fault_allocation"];
    assert_eq!(a["relation"], "inside");
    assert_eq!(a["size"], 1024);
    assert_eq!(a["alloc_seq"], 2);
}

#[test]
fn pointers_embedded_in_kind_3_structs_are_audited() {
    let sb = Sandbox::new();
    let dir = archive(&sb, |ev| {
        let mut s = vec![0u8; 24];
        s[8..16].copy_from_slice(&(BASE + 0x10).to_le_bytes());
        ev.malloc(BASE, 256).free(BASE).launch(
            api::HIP_MODULE_LAUNCH_KERNEL,
            &launch(
                KERNEL,
                vec![
                    Arg::Value(vec![1; 4]),
                    Arg::Value(vec![2; 4]),
                    Arg::Embedded(s, vec![8]),
                ],
            ),
        );
    });
    let m = &info(&sb, &dir)["memory"];
    assert_eq!(m["stale_pointer_launches"], 1);
    assert_eq!(m["examples"][0]["argument"], 2);
    assert_eq!(m["examples"][0]["address"], "0x7f91da000010");
}

#[test]
fn a_region_block_inside_a_segment_wins_and_the_segment_is_named() {
    let sb = Sandbox::new();
    // The allocator's segment is a hipMalloc; the sidecar's block inside
    // it becomes live between the malloc (ns 1,000,000) and the launch.
    let dir = archive(&sb, |ev| {
        ev.malloc(BASE, 1 << 20);
        ev.clock += 10_000;
        ev.launch(
            api::HIP_MODULE_LAUNCH_KERNEL,
            &launch(KERNEL, vec![Arg::Pointer(BASE + 0x1000)]),
        );
    });
    regions::write(
        &dir,
        "torch",
        &[&[Region::add_block(BASE + 0x1000, 512, 1_005_000)]],
    )
    .unwrap();
    let m = &info(&sb, &dir)["memory"];
    assert_eq!(m["allocations"], 2, "the hipMalloc and the block");
    let f = classify(&sb, &dir, &fault_log(&sb, "0x7f91da001100", &[]));
    let a = &f["fault_allocation"];
    assert_eq!(a["relation"], "inside");
    assert_eq!(a["api"], "region block");
    assert_eq!(a["base"], "0x7f91da001000");
    assert_eq!(a["offset"], 256);
    assert_eq!(a["alloc_seq"], Value::Null, "region records carry no seq");
    assert!(
        f["notes"].as_array().unwrap().iter().any(|n| n
            .as_str()
            .unwrap()
            .contains("lies inside the 1048576-byte hipMalloc at 0x7f91da000000 (seq 0)")),
        "{}",
        f["notes"]
    );
    // Freed by the producer before the launch, inside the live segment:
    // the segment holds it.
    regions::write(
        &dir,
        "torch",
        &[
            &[Region::add_block(BASE + 0x1000, 512, 1_002_000)],
            &[Region::del_block(BASE + 0x1000, 512, 1_004_000)],
        ],
    )
    .unwrap();
    let f = classify(&sb, &dir, &fault_log(&sb, "0x7f91da001100", &[]));
    assert_eq!(f["fault_allocation"]["api"], "hipMalloc");
    assert_eq!(f["fault_allocation"]["offset"], 0x1100);
}

#[test]
fn a_region_segment_alone_is_a_range() {
    let sb = Sandbox::new();
    let dir = archive(&sb, |ev| {
        ev.launch(
            api::HIP_MODULE_LAUNCH_KERNEL,
            &launch(KERNEL, vec![Arg::Pointer(BASE + 64)]),
        );
    });
    regions::write(&dir, "torch", &[&[Region::add_segment(BASE, 4096, 0)]]).unwrap();
    let m = &info(&sb, &dir)["memory"];
    assert_eq!(m["unattributed_pointer_args"], 0);
    assert_eq!(m["live_at_end"], 1);
}

#[test]
fn placement_fallback_and_placement_off() {
    let sb = Sandbox::new();
    let dir = one_buffer(&sb);
    let fell = "[HRR]   Placement      : 5 placed at capture address, 1 fell back";
    let f = classify(&sb, &dir, &fault_log(&sb, "0x7f91da000010", &[fell]));
    assert_eq!(f["fault_allocation"]["placement"], "fell_back");
    assert_eq!(f["fault_allocation"]["relation"], "inside");
    assert!(f["notes"].as_array().unwrap().iter().any(|n| n
        .as_str()
        .unwrap()
        .contains("attribution is by capture address")));
    let placed = "[HRR]   Placement      : 6 placed at capture address, 0 fell back";
    let f = classify(&sb, &dir, &fault_log(&sb, "0x7f91da000010", &[placed]));
    assert_eq!(f["fault_allocation"]["placement"], "placed");
    let off = "[HRR] Placement : off (--no-placement)";
    let f = classify(&sb, &dir, &fault_log(&sb, "0x7f91da000010", &[off]));
    let a = &f["fault_allocation"];
    assert_eq!(a["placement"], "off");
    assert_eq!(a["relation"], "none", "no relation asserted");
    assert_eq!(a["base"], Value::Null);
}

#[test]
fn a_null_page_fault_after_passing_null_attributes_the_recorded_pointer() {
    let sb = Sandbox::new();
    let dir = archive(&sb, |ev| {
        ev.malloc(BASE, 256).free(BASE).launch(
            api::HIP_MODULE_LAUNCH_KERNEL,
            &launch(
                KERNEL,
                vec![Arg::Value(vec![0; 4]), Arg::Pointer(BASE + 0x20)],
            ),
        );
    });
    let null = format!("[HRR] '{KERNEL}' arg[1]: recorded 0x7f91da000020 is in no known allocation — passing null so it faults at first use");
    let log = sb.write(
        "replay.log",
        &format!("{null}\nMemory access fault by GPU node-2 (Agent handle: 0x55d5c2a1e6b0) on address (nil). Reason: Page not present or supervisor privilege.\n"),
    );
    let f = classify(&sb, &dir, &log);
    let a = &f["fault_allocation"];
    assert_eq!(a["address"], "0x7f91da000020");
    assert_eq!(a["relation"], "freed");
    assert_eq!(a["argument"]["index"], 1);
    let notes = f["notes"].to_string();
    assert!(
        notes.contains("the capture-time pointer audit and the replay agree"),
        "{notes}"
    );
}

#[test]
fn no_archive_or_no_address_is_null() {
    let sb = Sandbox::new();
    let log = fault_log(&sb, "0x7f91da000010", &[]);
    let out = sb
        .hrr()
        .args(["classify", "--format", "json", "--log"])
        .arg(&log)
        .output()
        .unwrap();
    let f: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(f["fault_allocation"], Value::Null);
}

#[test]
fn archive_memory_lists_live_ranges_and_an_address_history() {
    let sb = Sandbox::new();
    let dir = archive(&sb, |ev| {
        ev.malloc(BASE, 256)
            .launch(
                api::HIP_MODULE_LAUNCH_KERNEL,
                &launch(KERNEL, vec![Arg::Pointer(BASE)]),
            )
            .free(BASE)
            .malloc(BASE, 512)
            .malloc(BASE + 0x1000, 64);
    });
    let json = |args: &[&str]| -> Value {
        let out = sb
            .hrr()
            .args(["archive", "memory"])
            .arg(&dir)
            .args(args)
            .arg("--json")
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
        serde_json::from_str(&stdout(&out)).unwrap()
    };
    let at_end = json(&[]);
    assert_eq!(at_end["live_total"], 2);
    assert_eq!(at_end["live"][0]["size"], 512);
    let at_1 = json(&["--at", "1"]);
    assert_eq!(at_1["live_total"], 1);
    assert_eq!(at_1["live"][0]["size"], 256);
    assert_eq!(at_1["live"][0]["alloc_seq"], 0);
    let h = json(&["--address", "0x7f91da000010"]);
    let lives: Vec<(u64, Value)> = h["history"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["size"].as_u64().unwrap(), r["free_seq"].clone()))
        .collect();
    assert_eq!(lives, vec![(256, Value::from(2)), (512, Value::Null)]);
    assert_eq!(h["passes"][0]["launch_seq"], 1);
    assert_eq!(h["passes"][0]["kernel"], KERNEL);
    assert_eq!(h["passes"][0]["live"], true);

    let out = sb
        .hrr()
        .args(["archive", "memory"])
        .arg(&dir)
        .args(["--address", "0x7f91da000010"])
        .output()
        .unwrap();
    let text = stdout(&out);
    assert!(
        text.contains(
            "0x7f91da000000 256 bytes hipMalloc seq 0 thread 4242, freed by hipFree at seq 2"
        ),
        "{text}"
    );
    assert!(
        text.contains("launch seq 1 crash_oob arg 0 = 0x7f91da000000 (live)"),
        "{text}"
    );

    let bad = sb
        .hrr()
        .args(["archive", "memory"])
        .arg(&dir)
        .args(["--address", "nowhere"])
        .output()
        .unwrap();
    assert!(!bad.status.success());
    assert!(stderr(&bad).contains("expected an address like 0x7f91da001000"));
}

#[test]
fn the_lua_binding_answers_the_same_document() {
    let sb = Sandbox::new();
    let dir = one_buffer(&sb);
    let script = sb.write(
        "mem.lua",
        &format!(
            "local m = hrr.archive.memory({:?}, {{ address = \"0x7f91da000010\" }})\n\
             print(m.history[1].api .. ' ' .. m.history[1].size .. ' ' .. m.passes[1].kernel)\n\
             local ok, err = pcall(hrr.archive.memory, {:?}, {{ address = true }})\n\
             print(err)\n",
            dir.display().to_string(),
            dir.display().to_string()
        ),
    );
    let out = sb.hrr().arg("run").arg(&script).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("hipMalloc 256 crash_oob"), "{text}");
    assert!(
        text.contains("hrr.archive.memory: address must be an integer or a string, got a boolean"),
        "{text}"
    );
}

#[test]
fn info_without_the_map_has_a_null_memory_section() {
    let sb = Sandbox::new();
    let dir = one_buffer(&sb);
    let out = sb
        .hrr()
        .args(["archive", "info", "--json", "--no-memory"])
        .arg(&dir)
        .output()
        .unwrap();
    let v: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(v["memory"], Value::Null);
    assert_eq!(info(&sb, &dir)["memory"]["live_at_end"], 1);
}
