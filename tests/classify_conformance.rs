//! Issue 20, classifier side: line shapes confirmed against the upstream
//! player, reader and runtime sources (reference/playback-output.md §10).
//! Every log line here is one of those format strings rendered with example
//! values; expected values follow from §10 by hand.

mod common;

use hrr::archive::summarize;
use hrr::classify::{ArchiveFacts, Classifier};
use hrr::finding::{CauseKind, FaultClass, Finding, KernelSource, Label, Outcome, ReplayInfo};
use hrr_testkit::archive::{Manifest, ProcessArchive};
use hrr_testkit::events::{api, EventsFile, Launch};

const SIGNAL6: &str = "[hrr] replay killed by signal 6";
const ABORTED: &str = "[HRR] Replay aborted due to fatal HIP error — exiting";

fn run(lines: &[&str], replay: Option<&ReplayInfo>, archive: Option<&ArchiveFacts>) -> Finding {
    let mut c = Classifier::new();
    c.begin_input("replay.log");
    for l in lines {
        c.feed_line(l.as_bytes());
    }
    c.finish(archive, replay, None)
}

fn log(lines: &[&str]) -> Finding {
    run(lines, None, None)
}

/// A replay record of the command `hrr replay` would run with `sync`.
fn replay_with(sync: Option<&str>) -> ReplayInfo {
    let mut command = vec!["hrr-playback".to_string(), "--trace-kernels".to_string()];
    command.extend(sync.map(str::to_string));
    command.push("/a/pid-1".into());
    ReplayInfo {
        mode: Some("native".into()),
        command,
        ..ReplayInfo::default()
    }
}

/// The three `replay.sync` settings, and no replay record at all.
fn every_sync() -> Vec<Option<ReplayInfo>> {
    vec![
        Some(replay_with(Some("--sync-after-launch"))),
        Some(replay_with(Some("--sync-after-event"))),
        Some(replay_with(None)),
        None,
    ]
}

fn launch_line(seq: u64, ordinal: u64, name: &str) -> String {
    format!(
        r#"[HRR launch] seq={seq} kernel={ordinal} launch=MOD grid=[1024,1,1] block=[256,1,1] shared=0 args=3 snapshots=0 name="{name}""#
    )
}

fn facts(kernels: &[(&str, u64)], launches: u64) -> ArchiveFacts {
    let rows: Vec<serde_json::Value> = kernels
        .iter()
        .map(|(n, l)| serde_json::json!({"name": n, "launches": l}))
        .collect();
    serde_json::from_value(serde_json::json!({
        "schema_version": 1, "kind": "process", "path": "/c/pid-1",
        "complete": true, "kernel_launches": launches, "kernels": rows
    }))
    .unwrap()
}

fn has_note(f: &Finding, needle: &str) -> bool {
    f.notes.iter().any(|n| n.contains(needle))
}

// ---- 1. null-page faults ------------------------------------------------

#[test]
fn a_fault_on_address_nil_is_a_gpu_fault_at_zero() {
    let nil = "Memory access fault by GPU node-2 (Agent handle: 0x55d5c2a1e6b0) on address (nil). Reason: Page not present or supervisor privilege.";
    let f = log(&[nil, SIGNAL6]);
    assert_eq!(
        (f.outcome, f.fault_class),
        (Outcome::Maf, FaultClass::IllegalMemoryAccess)
    );
    assert_eq!(f.fault_address.as_deref(), Some("0x0"));
    assert_eq!(f.gpu_node, Some(2));
    assert_eq!(
        f.fault_reason.as_deref(),
        Some("Page not present or supervisor privilege")
    );
    assert_eq!(f.replay_signal, Some(6));

    let read_only = "Memory access fault by GPU node-1 (Agent handle: 0x5645b71d8d60) on address (nil). Reason: Write access to a read-only page.";
    let g = log(&[read_only, SIGNAL6]);
    assert_eq!(
        (g.outcome, g.fault_class, g.fault_address.as_deref()),
        (Outcome::Maf, FaultClass::ReadOnlyPageFault, Some("0x0"))
    );
    // older ROCr (no agent handle) and a null agent handle
    for line in [
        "Memory access fault by GPU node-4 on address (nil). Reason: Unknown.",
        "Memory access fault by GPU node-4 (Agent handle: (nil)) on address (nil). Reason: Unknown.",
    ] {
        let h = log(&[line, SIGNAL6]);
        assert_eq!(h.fault_class, FaultClass::IllegalMemoryAccess, "{line}");
        assert_eq!(h.fault_address.as_deref(), Some("0x0"), "{line}");
    }
}

#[test]
fn a_null_page_fault_gets_the_usual_kernel_attribution() {
    let nil = "Memory access fault by GPU node-2 (Agent handle: 0x55d5c2a1e6b0) on address (nil). Reason: Page not present or supervisor privilege.";
    let launch = launch_line(29, 2, "_Z9crash_oobPKiPii");
    let synced = replay_with(Some("--sync-after-launch"));
    let f = run(&[&launch, nil, SIGNAL6], Some(&synced), None);
    assert_eq!(
        (f.kernel_name.as_deref(), f.kernel_source),
        (Some("_Z9crash_oobPKiPii"), Some(KernelSource::TraceKernels))
    );
    assert_eq!(f.failing_event_seq, Some(29));
    let bracket =
        "Memory Fault Error [GPU index: 0, faulting addr: (nil), kernel: _Z9crash_oobPKiPii]";
    let g = log(&[bracket, nil, SIGNAL6]);
    assert_eq!(g.kernel_source, Some(KernelSource::FaultLine));
    assert_eq!(g.fault_address.as_deref(), Some("0x0"));
}

#[test]
fn may_not_be_exact_follows_the_address_without_a_space() {
    for addr in ["0x7f91da000000", "(nil)"] {
        let line = format!("Memory access fault by GPU node-2 (Agent handle: 0x55a197628600) on address {addr}(may not be exact address). Reason: Unknown.");
        let f = log(&[&line, SIGNAL6]);
        assert_eq!(f.fault_class, FaultClass::IllegalMemoryAccess, "{line}");
        let want = if addr == "(nil)" { "0x0" } else { addr };
        assert_eq!(f.fault_address.as_deref(), Some(want));
        assert_eq!(f.fault_reason.as_deref(), Some("Unknown"));
        assert!(has_note(&f, "may not be exact address"), "{:?}", f.notes);
    }
}

// ---- 2. fatal errors and the launch lines --------------------------------

const FILL: &str = r#"[HRR launch] seq=28 kernel=1 launch=MOD grid=[64,1,1] block=[64,1,1] shared=0 args=2 snapshots=0 name="fill_ones""#;
const SAXPY: &str = r#"[HRR launch] seq=31 kernel=2 launch=MOD grid=[4096,1,1] block=[256,1,1] shared=0 args=4 snapshots=0 name="saxpy""#;

#[test]
fn a_fatal_on_a_call_that_is_no_launch_names_no_kernel() {
    let memcpy =
        "[HRR] Fatal: T4242 Event 40 (hipMemcpy) returned 1 (invalid argument) — aborting replay";
    for r in every_sync() {
        let f = run(&[FILL, SAXPY, memcpy, ABORTED], r.as_ref(), None);
        let what = format!("{:?}", r.as_ref().map(|r| &r.command));
        assert_eq!(
            (f.outcome, f.fault_class),
            (Outcome::Abort, FaultClass::ReplayFatalApi),
            "{what}"
        );
        assert_eq!(
            (f.kernel_name.clone(), f.kernel_source),
            (None, None),
            "{what}"
        );
        assert_eq!(f.kernel_family, None);
        assert_eq!(f.failing_api.as_deref(), Some("hipMemcpy"));
        assert_eq!(f.failing_call_index, Some(40));
        assert_eq!(
            f.failing_event_seq, None,
            "saxpy's seq is not the memcpy's: {what}"
        );
        assert_eq!(
            (f.grid.clone(), f.workgroup.clone()),
            (None, None),
            "{what}"
        );
        assert!(
            has_note(&f, "the failing call, hipMemcpy, launches no kernel"),
            "{what}: {:?}",
            f.notes
        );
        assert!(
            !f.notes
                .iter()
                .any(|n| n.contains("that is the launch that failed")),
            "no note may call saxpy the failing launch: {what}: {:?}",
            f.notes
        );
        assert_eq!(f.last_event_kernel.as_deref(), Some("saxpy"));
    }
    let synced = run(
        &[FILL, SAXPY, memcpy, ABORTED],
        Some(&replay_with(Some("--sync-after-launch"))),
        None,
    );
    assert!(
        has_note(&synced, "under --sync-after-launch the launch of the last [HRR launch] line (saxpy, launch #2) had completed"),
        "{:?}",
        synced.notes
    );
}

#[test]
fn an_illegal_access_returned_by_a_memcpy_names_no_kernel_either() {
    let memcpy = "[HRR] Fatal: T4242 Event 40 (hipMemcpy) returned 700 (an illegal memory access was encountered) — aborting replay";
    // a single-kernel archive does not change that: the call that failed launches nothing
    let one = facts(&[("saxpy", 1)], 1);
    for r in every_sync() {
        let f = run(&[SAXPY, memcpy, ABORTED], r.as_ref(), Some(&one));
        assert_eq!(
            (f.outcome, f.fault_class),
            (Outcome::Maf, FaultClass::IllegalMemoryAccess)
        );
        assert_eq!(f.kernel_name, None);
        assert_eq!(f.failing_api.as_deref(), Some("hipMemcpy"));
        assert_eq!(f.failing_event_seq, None);
    }
    let unsynced = run(&[SAXPY, memcpy, ABORTED], Some(&replay_with(None)), None);
    assert!(
        has_note(
            &unsynced,
            "so that launch is a candidate, not an established cause"
        ),
        "{:?}",
        unsynced.notes
    );
}

#[test]
fn a_fatal_on_a_launch_still_names_its_traced_launch() {
    let launch = "[HRR] Fatal: T4242 Event 41 (hipModuleLaunchKernel) returned 1 (invalid argument) — aborting replay";
    let f = run(
        &[FILL, "[HRR] Kernel 'fill_ones' OK", SAXPY, launch, ABORTED],
        Some(&replay_with(Some("--sync-after-launch"))),
        None,
    );
    assert_eq!(
        (
            f.kernel_name.as_deref(),
            f.kernel_source,
            f.failing_event_seq
        ),
        (Some("saxpy"), Some(KernelSource::TraceKernels), Some(31))
    );
}

#[test]
fn kernel_not_found_names_that_kernel_never_the_launch_before() {
    let lines = [
        FILL,
        "[HRR] Kernel 'fill_ones' OK",
        SAXPY,
        "[HRR] Kernel 'saxpy' OK",
        "[HRR] Kernel '_Z13missing_kernelPf' not found in any loaded module",
        "[HRR] Fatal: T4242 Event 44 (hipModuleLaunchKernel) returned 500 (named symbol not found) — aborting replay",
        ABORTED,
    ];
    // The same without the verbose `OK` lines: saxpy then looks unfinished.
    let terse: Vec<&str> = lines
        .iter()
        .copied()
        .filter(|l| !l.ends_with("' OK"))
        .collect();
    for input in [&lines[..], &terse[..]] {
        for r in every_sync() {
            let f = run(input, r.as_ref(), None);
            let what = format!("{:?} {}", r.as_ref().map(|r| &r.command), input.len());
            assert_eq!(
                (f.outcome, f.fault_class),
                (Outcome::Abort, FaultClass::ReplayFatalApi),
                "{what}"
            );
            assert_eq!(
                (f.kernel_name.as_deref(), f.kernel_source),
                (
                    Some("_Z13missing_kernelPf"),
                    Some(KernelSource::NotFoundLine)
                ),
                "{what}"
            );
            assert_eq!(f.failing_event_seq, None, "31 is saxpy's: {what}");
            assert_eq!(f.grid, None, "{what}");
            assert_eq!(f.failing_api.as_deref(), Some("hipModuleLaunchKernel"));
            assert!(
                has_note(&f, "found kernel _Z13missing_kernelPf in no loaded module, so that launch never ran"),
                "{what}: {:?}",
                f.notes
            );
            assert!(
                has_note(
                    &f,
                    "(saxpy, launch #2) is the launch before, not the one that failed"
                ),
                "{what}"
            );
            assert!(
                !f.notes.iter().any(|n| n.contains("had not completed")),
                "{what}: {:?}",
                f.notes
            );
        }
    }
    // the first launch of a replay: no launch before it
    let first = log(&[
        "[HRR] Kernel 'k0' not found in any loaded module",
        "[HRR] Fatal: T1 Event 3 (hipLaunchKernel) returned 500 (named symbol not found) — aborting replay",
    ]);
    assert_eq!(
        (first.kernel_name.as_deref(), first.kernel_source),
        (Some("k0"), Some(KernelSource::NotFoundLine))
    );
}

#[test]
fn a_failed_recorded_sync_names_no_kernel() {
    let lines = [
        SAXPY,
        "[HRR] hipDeviceSynchronize error 700 (an illegal memory access was encountered)",
        "[HRR] Fatal: aborting replay after error in hipDeviceSynchronize",
        ABORTED,
    ];
    for r in every_sync() {
        let f = run(&lines, r.as_ref(), None);
        assert_eq!(f.outcome, Outcome::Maf);
        assert_eq!(f.failing_api.as_deref(), Some("hipDeviceSynchronize"));
        assert_eq!(f.kernel_name, None);
    }
}

// ---- 3. compacted names ----------------------------------------------------

/// Two hipBLASLt-style names longer than 120 characters that share their
/// first 96 and last 21 characters.
fn long_names() -> (String, String) {
    let head = "Cijk_Ailk_Bljk_HHS_BH_MT128x128x32_MI32x32x8x1_SN_1LDSB0_AFC1_AFEM1_AFEM1_ASEM1_CLR1_CADS0_EPS0_";
    let tail = "_WG32_8_1_WGM8_WGMXCC1";
    (
        format!("{head}GRVWA8_GRVWB8_GSU1_ISA942_IU1_K1_LBSPPA128{tail}"),
        format!("{head}GRVWA4_GRVWB4_GSU2_ISA942_IU1_K1_LBSPPA256{tail}"),
    )
}

/// `compact_kernel_name` as §10.2 gives it.
fn compact(full: &str) -> String {
    assert!(full.len() > 120);
    format!("{}...{}", &full[..96], &full[full.len() - 21..])
}

#[test]
fn a_compacted_launch_name_is_expanded_through_a_complete_kernel_table() {
    let (a, b) = long_names();
    let short = compact(&a);
    assert_eq!(short, compact(&b), "the two names compact alike");
    assert_eq!(short.len(), 120);
    let launch = launch_line(90, 7, &short);
    let maf = "Memory access fault by GPU node-2 (Agent handle: 0x55d5c2a1e6b0) on address 0x7f3a2c600000. Reason: Page not present or supervisor privilege.";
    let synced = replay_with(Some("--sync-after-launch"));
    let table = facts(&[(&a, 3), ("saxpy", 4)], 7);
    let f = run(&[&launch, maf, SIGNAL6], Some(&synced), Some(&table));
    assert_eq!(
        (f.kernel_name.as_deref(), f.kernel_source),
        (Some(a.as_str()), Some(KernelSource::TraceKernels))
    );
    assert_eq!(
        f.kernel_family.as_deref(),
        Some("hipblaslt_gemm/MT128x128x32")
    );
    assert_eq!(f.last_event_kernel.as_deref(), Some(a.as_str()));
    assert!(
        has_note(&f, "it was expanded to the one kernel"),
        "{:?}",
        f.notes
    );

    // no archive, two matches, a table that misses launches: no name
    let both = facts(&[(&a, 3), (&b, 4)], 7);
    let capped = facts(&[(&a, 3)], 9);
    for (archive, why) in [
        (None, "the archive is not known"),
        (Some(&both), "2 kernels of the archive"),
        (Some(&capped), "does not hold every kernel"),
    ] {
        let g = run(&[&launch, maf, SIGNAL6], Some(&synced), archive);
        assert_eq!(g.kernel_name, None, "{why}");
        assert_eq!(g.kernel_family, None, "{why}");
        assert_eq!(g.last_event_kernel, None, "{why}");
        assert!(has_note(&g, why), "{why}: {:?}", g.notes);
        assert!(
            has_note(&g, "so no kernel is named from that line"),
            "{why}"
        );
        // the single-kernel fallback is not reached through a shortened name
        assert_ne!(g.kernel_source, Some(KernelSource::TraceKernels));
    }
}

#[test]
fn compacted_progress_and_watchdog_names_are_read_the_same_way() {
    let (a, b) = long_names();
    let short = compact(&a);
    let progress = format!(
        r#"[HRR progress] elapsed_s=30.0 seq=4411 kernels=812 d2h_pass=3 d2h_fail=0 d2h_attempted=3 last="{short}""#
    );
    let watchdog = format!(
        r#"[HRR][WATCHDOG] GPU sync did not complete within 60000 ms at: kernel #813 "{short}" (seq=90211, grid=[304,1,1] block=[256,1,1])"#
    );
    let table = facts(&[(&a, 800), ("fill", 20)], 820);
    let f = run(&[&progress, "", &watchdog], None, Some(&table));
    assert_eq!(
        (f.outcome, f.fault_class),
        (Outcome::Hang, FaultClass::Hang)
    );
    assert_eq!(f.last_progress_kernel.as_deref(), Some(a.as_str()));
    assert_eq!(
        (f.kernel_name.as_deref(), f.kernel_source),
        (Some(a.as_str()), Some(KernelSource::FaultLine))
    );
    assert!(has_note(&f, &format!("(seq 4411, {a})")), "{:?}", f.notes);

    let both = facts(&[(&a, 800), (&b, 20)], 820);
    let g = run(&[&progress, "", &watchdog], None, Some(&both));
    assert_eq!(
        (g.last_progress_kernel.clone(), g.kernel_name.clone()),
        (None, None)
    );
    assert_eq!(g.kernel_family, None);
    assert!(
        g.next_steps.iter().all(|s| !s.contains(&short)),
        "a shortened name is no name: {:?}",
        g.next_steps
    );
}

#[test]
fn the_full_name_of_kernel_ok_completes_a_compacted_launch() {
    let (a, _) = long_names();
    let launch = launch_line(90, 7, &compact(&a));
    let ok = format!("[HRR] Kernel '{a}' OK");
    let maf = "Memory access fault by GPU node-2 (Agent handle: 0x55d5c2a1e6b0) on address 0x7f3a2c600000. Reason: Unknown.";
    let table = facts(&[(&a, 7), ("fill_ones", 1)], 8);
    let f = run(&[&launch, &ok, maf, SIGNAL6], None, Some(&table));
    assert_eq!(
        f.kernel_name, None,
        "the launch had completed: {:?}",
        f.kernel_source
    );
    let g = run(&[&launch, maf, SIGNAL6], None, Some(&table));
    assert_eq!(
        g.kernel_name.as_deref(),
        Some(a.as_str()),
        "without the OK line it had not"
    );
}

#[test]
fn classify_archive_expands_a_compacted_name_from_the_decoded_archive() {
    let (a, b) = long_names();
    let tmp = tempfile::tempdir().unwrap();
    let mut ev = EventsFile::v7();
    ev.launch(
        api::HIP_MODULE_LAUNCH_KERNEL,
        &Launch::new(&a, [304, 1, 1], [256, 1, 1]),
    );
    ev.launch(
        api::HIP_MODULE_LAUNCH_KERNEL,
        &Launch::new("fill_ones", [1, 1, 1], [64, 1, 1]),
    );
    ev.trailer();
    let dir = ProcessArchive::new(4242, ev).write(tmp.path()).unwrap();
    let log_path = tmp.path().join("replay.log");
    let text = format!(
        "{}\nMemory access fault by GPU node-2 (Agent handle: 0x55d5c2a1e6b0) on address 0x7f3a2c600000. Reason: Unknown.\n{SIGNAL6}\n",
        launch_line(1, 1, &compact(&a))
    );
    std::fs::write(&log_path, text).unwrap();
    let sb = common::Sandbox::new();
    let out = sb
        .hrr()
        .args(["classify", "--format", "json", "--archive"])
        .arg(&dir)
        .arg("--log")
        .arg(&log_path)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", common::stderr(&out));
    let f = Finding::from_json(&common::stdout(&out)).unwrap();
    assert_eq!(f.kernel_name.as_deref(), Some(a.as_str()));
    assert_eq!(f.kernel_source, Some(KernelSource::TraceKernels));
    assert_ne!(f.kernel_name.as_deref(), Some(b.as_str()));
}

// ---- 8. null arguments -------------------------------------------------------

#[test]
fn a_null_argument_line_is_a_missing_handle_and_a_null_fault_cites_it() {
    let null_arg = "[HRR] '_Z9crash_oobPKiPii' arg[1]: recorded 0x7f3a2c400000 is in no known allocation — passing null so it faults at first use";
    let nil = "Memory access fault by GPU node-2 (Agent handle: 0x55d5c2a1e6b0) on address (nil). Reason: Page not present or supervisor privilege.";
    let launch = launch_line(29, 2, "_Z9crash_oobPKiPii");
    let f = run(
        &[null_arg, &launch, nil, SIGNAL6],
        Some(&replay_with(Some("--sync-after-launch"))),
        None,
    );
    let label = f
        .labels
        .iter()
        .find(|l| l.label == Label::MissingHandle)
        .expect("MISSING-HANDLE");
    for part in ["_Z9crash_oobPKiPii", "arg[1]", "0x7f3a2c400000"] {
        assert!(label.detail.contains(part), "{part} in {}", label.detail);
    }
    assert_eq!(f.fault_address.as_deref(), Some("0x0"));
    assert!(
        f.notes.iter().any(|n| n.contains("in the null page")
            && n.contains("'_Z9crash_oobPKiPii' arg[1] (recorded 0x7f3a2c400000)")),
        "{:?}",
        f.notes
    );
    // a fault elsewhere does not cite it; the label stays
    let far = "Memory access fault by GPU node-2 (Agent handle: 0x55d5c2a1e6b0) on address 0x7f3a2c600000. Reason: Unknown.";
    let g = log(&[null_arg, far, SIGNAL6]);
    assert!(g.has_label(Label::MissingHandle));
    assert!(!has_note(&g, "null page"));
}

// ---- 9. out-of-resources queue aborts ----------------------------------------

#[test]
fn an_out_of_resources_queue_abort_is_replay_oom_with_its_kernel() {
    let abort = ":0:rocdevice.cpp            :3594: 34648731232 us:  Callback: Queue 0x70e817200000 Aborting with error : HSA_STATUS_ERROR_OUT_OF_RESOURCES: The runtime failed to allocate the necessary resources. This error may also occur when the core runtime library needs to spawn threads or create internal OS-specific events. Code: 0x1008 Available Free mem : 12 MB [GPU index: 0, kernel: _ZN2at6native13reduce_kernelEv]";
    let f = log(&[SAXPY, abort, SIGNAL6]);
    assert_eq!(
        (f.outcome, f.fault_class),
        (Outcome::Abort, FaultClass::ReplayOom)
    );
    assert_eq!(
        (f.kernel_name.as_deref(), f.kernel_source),
        (
            Some("_ZN2at6native13reduce_kernelEv"),
            Some(KernelSource::AbortLine)
        )
    );
    assert!(has_note(&f, "12 MB of device memory free"), "{:?}", f.notes);
    assert!(f.next_steps.iter().any(|s| s.contains("more free memory")));
    // without the bracket (older CLR): still OOM, no kernel
    let bare = "Callback: Queue 0x70e817200000 Aborting with error : HSA_STATUS_ERROR_OUT_OF_RESOURCES: The runtime failed to allocate the necessary resources. Code: 0x1008 Available Free mem : 0 MB";
    let g = log(&[SAXPY, bare, SIGNAL6]);
    assert_eq!(
        (g.outcome, g.fault_class, g.kernel_name.clone()),
        (Outcome::Abort, FaultClass::ReplayOom, None)
    );
    assert!(has_note(&g, "0 MB of device memory free"));
}

// ---- 10. cause-bearing lines ---------------------------------------------------

fn cause_of(f: &Finding) -> Option<CauseKind> {
    f.cause.as_ref().map(|c| c.kind)
}

#[test]
fn a_graph_that_cannot_be_rebuilt_is_its_cause() {
    let f = log(&[
        "[HRR] hipGraphAddMemcpyNode1D: not reconstructable at replay, so the call is skipped and the graph it belongs to is marked incomplete; the graph is refused at instantiation",
        "[HRR] hipGraphInstantiate: graph 0x55d5c2a1f000 is missing nodes this replay could not reconstruct (1 skipped). Refusing to instantiate it",
        "[HRR] Fatal: T7 Event 120 (hipGraphInstantiate) returned 1 (invalid argument) — aborting replay",
        ABORTED,
    ]);
    assert_eq!(
        (f.outcome, f.fault_class),
        (Outcome::Abort, FaultClass::ReplayFatalApi)
    );
    assert_eq!(cause_of(&f), Some(CauseKind::GraphIncomplete));
    assert!(f
        .cause
        .as_ref()
        .unwrap()
        .detail
        .starts_with("hipGraphAddMemcpyNode1D: not reconstructable"));
    let noop = f
        .labels
        .iter()
        .find(|l| l.label == Label::NoopApi)
        .expect("NOOP-API");
    assert!(
        noop.detail.contains("hipGraphAddMemcpyNode1D"),
        "{}",
        noop.detail
    );
    assert!(has_note(&f, "cause (graph_incomplete)"));
    assert_eq!(f.kernel_name, None);
}

#[test]
fn a_missing_device_asks_for_more_devices() {
    let f = log(&[
        "[HRR] hipMemCreate: the recording allocated on device 3 and this replay has 1 device(s)",
        "[HRR] Fatal: T7 Event 55 (hipMemCreate) returned 101 (invalid device ordinal) — aborting replay",
        ABORTED,
    ]);
    assert_eq!(
        (f.outcome, f.fault_class),
        (Outcome::Abort, FaultClass::ReplayFatalApi)
    );
    assert_eq!(cause_of(&f), Some(CauseKind::DeviceCount));
    assert!(
        f.next_steps[0].contains("at least 4 device(s) visible"),
        "{:?}",
        f.next_steps
    );
    assert!(has_note(&f, "cause (device_count)"));
}

#[test]
fn a_missing_code_object_or_blob_points_at_archive_info() {
    for line in [
        "[HRR] Code object 5f3c0a1b2c3d4e5f60718293a4b5c6d7 not found in archive",
        "[HRR] Failed to load code object 5f3c0a1b2c3d4e5f60718293a4b5c6d7: 200 (invalid kernel file)",
        "[HRR] H2D blob 00000000000000010000000000000002 not found",
        "[HRR] __hipRegisterFatBinary: blob not found in archive",
    ] {
        let f = log(&[
            line,
            "[HRR] Fatal: failed to pre-load code object 5f3c0a1b2c3d4e5f60718293a4b5c6d7 — aborting",
        ]);
        assert_eq!((f.outcome, f.fault_class), (Outcome::Abort, FaultClass::ReplayFatalApi), "{line}");
        assert_eq!(cause_of(&f), Some(CauseKind::ArchiveIncomplete), "{line}");
        assert!(f.next_steps[0].contains("hrr archive info"), "{line}: {:?}", f.next_steps);
    }
}

#[test]
fn guard_faults_and_region_oob_are_illegal_accesses() {
    let guard = r#"[HRR] GUARD FAULT: kernel #3 "_Z9crash_oobPKiPii" ran past the end of a guarded block (sync=700 last=700); 2 block(s) were guarded. This is the intra-segment out-of-bounds access the contiguous replay segment would otherwise have absorbed."#;
    let fatal = "[HRR] Fatal: T7 Event 16 (hipLaunchKernel) returned 700 (an illegal memory access was encountered) — aborting replay";
    let f = log(&[guard, fatal, ABORTED]);
    assert_eq!(
        (f.outcome, f.fault_class),
        (Outcome::Maf, FaultClass::IllegalMemoryAccess)
    );
    assert_eq!(cause_of(&f), Some(CauseKind::GuardFault));
    assert_eq!(
        (f.kernel_name.as_deref(), f.kernel_source),
        (Some("_Z9crash_oobPKiPii"), Some(KernelSource::FaultLine))
    );
    // a guard fault with no fatal line is still an illegal access
    let g = log(&[guard]);
    assert_eq!(
        (g.outcome, g.fault_class),
        (Outcome::Maf, FaultClass::IllegalMemoryAccess)
    );
    // a runtime fault line says otherwise
    let ro = "Memory access fault by GPU node-1 on address 0x7f0000001000. Reason: Write access to a read-only page.";
    let h = log(&[guard, ro, SIGNAL6]);
    assert_eq!(h.fault_class, FaultClass::ReadOnlyPageFault);
    assert_eq!(cause_of(&h), Some(CauseKind::GuardFault));

    let oob = "[HRR] region OOB: kernel #5 arg[0] 0x7f0000200ff0 lies 16 bytes past block 0x7f0000200000+4080 of segment 0x7f0000200000";
    let strict = log(&[
        oob,
        "[HRR]   Region check   : 12 pointer(s) checked, 1 intra-segment out-of-bounds/stale",
        "[HRR] FAIL",
    ]);
    assert_eq!(
        (strict.outcome, strict.fault_class),
        (Outcome::Maf, FaultClass::IllegalMemoryAccess)
    );
    assert_eq!(cause_of(&strict), Some(CauseKind::RegionOob));
    // report-only: a PASS stays a PASS, says so, and is not CLEAN
    let pass = log(&[
        oob,
        "[HRR]   D2H checks     : 3 pass (3 exact, 0 within tol), 0 fail, 0 skipped",
        "[HRR] PASS",
    ]);
    assert_eq!(
        (pass.outcome, pass.fault_class),
        (Outcome::Pass, FaultClass::ReplayPass)
    );
    assert_eq!(pass.cause, None);
    assert!(!pass.has_label(Label::Clean));
    assert!(has_note(&pass, "region OOB"), "{:?}", pass.notes);
}

#[test]
fn a_file_over_the_cap_asks_to_raise_it() {
    let f = log(&[
        "[HRR] refusing to read /c/pid-1/blobs/0000000000000001000000000000000a.blob: 6442450944 bytes, more than 4294967296 (--max-file-bytes)",
        "[HRR] Fatal: T7 Event 12 (hipMemcpy) returned 1 (invalid argument) — aborting replay",
        ABORTED,
    ]);
    assert_eq!(
        (f.outcome, f.fault_class),
        (Outcome::Abort, FaultClass::ReplayFatalApi)
    );
    assert_eq!(cause_of(&f), Some(CauseKind::FileCap));
    assert!(
        f.next_steps[0].contains("--max-file-bytes"),
        "{:?}",
        f.next_steps
    );
}

#[test]
fn a_cause_does_not_attach_to_a_pass_or_a_crash() {
    let blob = "[HRR] H2D blob 00000000000000010000000000000002 not found";
    let pass = log(&[blob, "[HRR] PASS"]);
    assert_eq!((pass.outcome, pass.cause), (Outcome::Pass, None));
    let crash = log(&[blob, SIGNAL6]);
    assert_eq!(
        (crash.fault_class, crash.cause),
        (FaultClass::ReplayCrashed, None)
    );
}

const START: &[&str] = &[
    "[HRR] Archive : 17 events, 1 kernels, 2 blobs, 0 code objects",
    "[HRR] Threads : 1 captured",
    "[HRR] Device  : AMD Instinct MI300X (gfx942:sramecc+:xnack-)",
    "[HRR] Runtime : /opt/rocm-7.0.0/lib/libamd_comgr.so.3.0.70000",
    "[HRR]         : /opt/rocm-7.0.0/lib/libamdhip64.so.7.0.70000",
    "[HRR]         : /opt/rocm-7.0.0/lib/libhsa-runtime64.so.1.16.70000",
    "[HRR] Mode    : single-threaded",
    "[HRR] [replay] Device state OK — beginning replay",
];

#[test]
fn what_the_player_loaded_goes_in_the_replay_record_or_a_note() {
    let mut lines = START.to_vec();
    lines.push("[HRR] PASS");
    let r = replay_with(Some("--sync-after-launch"));
    let f = run(&lines, Some(&r), None);
    let loaded: Vec<(&str, &str)> = f
        .replay
        .as_ref()
        .unwrap()
        .loaded
        .iter()
        .map(|l| (l.label.as_str(), l.value.as_str()))
        .collect();
    assert_eq!(
        loaded,
        [
            ("Device", "AMD Instinct MI300X (gfx942:sramecc+:xnack-)"),
            ("Runtime", "/opt/rocm-7.0.0/lib/libamd_comgr.so.3.0.70000"),
            ("Runtime", "/opt/rocm-7.0.0/lib/libamdhip64.so.7.0.70000"),
            (
                "Runtime",
                "/opt/rocm-7.0.0/lib/libhsa-runtime64.so.1.16.70000"
            ),
        ]
    );
    assert!(!has_note(&f, "what it loaded"));
    let g = log(&lines);
    assert!(
        has_note(&g, "Device: AMD Instinct MI300X (gfx942:sramecc+:xnack-); Runtime: /opt/rocm-7.0.0/lib/libamd_comgr.so.3.0.70000, /opt/rocm-7.0.0/lib/libamdhip64.so.7.0.70000, /opt/rocm-7.0.0/lib/libhsa-runtime64.so.1.16.70000"),
        "{:?}",
        g.notes
    );
    // the summary's own `[HRR]   Label : value` lines are no library
    let h = log(&[
        "[HRR]   Wall time      : 58.4 ms",
        "[HRR]         : /not/after/a/runtime/line",
    ]);
    assert!(!has_note(&h, "what it loaded"));
}

// ---- 11. older summary forms ------------------------------------------------------

#[test]
fn every_d2h_summary_form_is_read() {
    let d2h = |line: &str| {
        let f = log(&[line, "[HRR] FAIL"]);
        (f.d2h_pass, f.d2h_fail, f.d2h_attempted, f.d2h_within_tol)
    };
    assert_eq!(
        d2h("[HRR]   D2H checks     : 3 pass (2 exact, 1 within tol), 1 fail, 2 skipped"),
        (Some(3), Some(1), Some(6), Some(1))
    );
    assert_eq!(
        d2h("[HRR]   D2H checks     : 7 pass, 2 fail, 1 skipped"),
        (Some(7), Some(2), Some(10), None)
    );
    assert_eq!(
        d2h("[HRR]   D2H checks     : 7 pass, 2 fail"),
        (Some(7), Some(2), None, None),
        "the oldest form prints no skipped count"
    );
    let f = log(&[
        r#"[HRR progress] elapsed_s=0.0 seq=19 kernels=1 d2h_pass=7 d2h_fail=2 d2h_attempted=12 last="fill_ones""#,
        "[HRR]   D2H checks     : 7 pass, 2 fail",
        "[HRR] FAIL",
    ]);
    assert_eq!(f.d2h_attempted, Some(12), "attempts from the progress line");
    assert_eq!(
        (f.outcome, f.fault_class),
        (Outcome::Fail, FaultClass::NanInfDivergence)
    );
}

#[test]
fn prefixed_d2h_validate_fail_lines_are_counted() {
    let f = log(&[
        "[HRR] hipMemcpy2D D2H validate FAIL: src 0x7f0000200000 not mapped — pointer translation bug",
        "[HRR] hipMemcpyDtoH D2H validate FAIL: expected blob not found in archive",
        "[HRR] D2H validate FAIL: expected blob not found in archive",
        "[HRR] FAIL",
    ]);
    assert_eq!(
        (f.outcome, f.fault_class),
        (Outcome::Fail, FaultClass::NanInfDivergence)
    );
    let label = f
        .labels
        .iter()
        .find(|l| l.label == Label::D2hFail)
        .expect("D2H-FAIL");
    assert!(
        label
            .detail
            .contains("3 validation(s) could not run: hipMemcpy2D: src 0x7f0000200000 not mapped"),
        "{}",
        label.detail
    );
}

// ---- 14. bytes after a trailer ---------------------------------------------------------

fn summary_facts(events: EventsFile) -> (hrr::archive::ArchiveSummary, ArchiveFacts) {
    let tmp = tempfile::tempdir().unwrap();
    let mut p = ProcessArchive::new(4242, events);
    p.manifest = Manifest::Complete;
    let dir = p.write(tmp.path()).unwrap();
    let s = summarize(&dir).unwrap();
    let facts = serde_json::from_value(serde_json::to_value(&s).unwrap()).unwrap();
    (s, facts)
}

#[test]
fn a_partial_record_after_a_valid_trailer_is_not_a_torn_tail() {
    for tail in [&[0xAB_u8; 10][..], &[0u8; 0][..]] {
        let mut ev = EventsFile::v7();
        ev.malloc(0x7f00_0000_1000, 64)
            .malloc(0x7f00_0000_2000, 64)
            .trailer();
        ev.free(0x7f00_0000_1000);
        if tail.is_empty() {
            // a header that announces more bytes than remain
            ev.bare_header(api::HIP_FREE, 200);
        } else {
            ev.raw(tail);
        }
        let (s, facts) = summary_facts(ev);
        assert_eq!(
            (
                s.events,
                s.complete,
                s.truncated,
                s.torn_bytes,
                s.records_after_trailer
            ),
            (2, true, false, 0, 1),
            "{:?}",
            s.problems
        );
        let kinds: Vec<&str> = s.problems.iter().map(|p| p.kind.as_str()).collect();
        assert!(kinds.contains(&"bytes_after_trailer"), "{kinds:?}");
        assert!(!kinds.contains(&"torn_tail"), "{kinds:?}");
        let f = run(&["[HRR] PASS"], None, Some(&facts));
        assert_eq!(f.archive_health.complete, Some(true));
        assert_eq!(f.archive_health.truncated, Some(false));
        assert!(!f.has_label(Label::CrashTruncated), "{:?}", f.labels);
        assert!(has_note(&f, "not a torn tail"), "{:?}", f.notes);
    }
    // without a trailer the same bytes are a torn tail
    let mut ev = EventsFile::v7();
    ev.malloc(0x7f00_0000_1000, 64).raw(&[0xAB; 10]);
    let (s, facts) = summary_facts(ev);
    assert_eq!((s.complete, s.truncated), (false, true));
    let f = run(&["[HRR] PASS"], None, Some(&facts));
    assert!(f.has_label(Label::CrashTruncated));
}
