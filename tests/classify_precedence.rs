//! Outcome/class precedence, kernel attribution and the DESIGN §6 rules,
//! on logs assembled from the line shapes of reference/playback-output.md.
//! Expected values are derived by hand from the reference rules.

use hrr::classify::{ArchiveFacts, Classifier};
use hrr::finding::{FaultClass, Finding, KernelSource, Label, Outcome, Placement, ReplayInfo};

const MAF: &str = "Memory access fault by GPU node-2 (Agent handle: 0x55d5c2a1e6b0) on address 0x7f3a2c600000. Reason: Page not present or supervisor privilege.";
const SIGNAL6: &str = "[hrr] replay killed by signal 6";
const INFO_ONE_KERNEL: &[&str] = &[
    "HRR Archive: /data/crash.hrr/pid-5120",
    "Complete:     NO (no shutdown trailer; capture likely crashed)",
    "Events:       17",
    "Kernels:      1",
    "",
    "Kernel Summary (first 20):",
    "  0    _Z9crash_oobPKiPii                                 [1024,1,1]      [256,1,1]       0",
    "",
    "Kernel Call Counts:",
    "  _Z9crash_oobPKiPii                                           1",
    "",
];

fn run(inputs: &[&[&str]], replay: Option<&ReplayInfo>, archive: Option<&ArchiveFacts>) -> Finding {
    let mut c = Classifier::new();
    for (i, lines) in inputs.iter().enumerate() {
        c.begin_input(format!("input{i}"));
        for l in *lines {
            c.feed_line(l.as_bytes());
        }
    }
    c.finish(archive, replay, None)
}

fn log(lines: &[&str]) -> Finding {
    run(&[lines], None, None)
}

fn synced() -> ReplayInfo {
    ReplayInfo {
        command: vec![
            "hrr-playback".into(),
            "/a/pid-1".into(),
            "--sync-after-launch".into(),
            "--trace-kernels".into(),
        ],
        ..ReplayInfo::default()
    }
}

#[test]
fn fault_plus_signal_marker_is_maf() {
    let f = log(&[MAF, SIGNAL6]);
    assert_eq!(
        (f.outcome, f.fault_class),
        (Outcome::Maf, FaultClass::IllegalMemoryAccess)
    );
    assert_eq!(f.replay_signal, Some(6));
    assert_eq!(f.fault_address.as_deref(), Some("0x7f3a2c600000"));
    assert_eq!(f.gpu_node, Some(2));
}

#[test]
fn fault_plus_fatal_gpu_error_is_the_fault() {
    let f = log(&[
        "[HRR] Fatal: GPU error after T48213 Event 16 (hipLaunchKernel): 700 (an illegal memory access was encountered) — aborting",
        "[HRR] Replay aborted due to fatal HIP error — exiting",
        MAF,
    ]);
    assert_eq!(
        (f.outcome, f.fault_class),
        (Outcome::Maf, FaultClass::IllegalMemoryAccess)
    );
    assert_eq!(
        (
            f.failing_thread,
            f.failing_call_index,
            f.failing_api.as_deref()
        ),
        (Some(48213), Some(16), Some("hipLaunchKernel"))
    );
}

#[test]
fn read_only_reason_gives_read_only_class() {
    let f = log(&["Memory access fault by GPU node-1 on address 0x7f0000001000. Reason: Write access to a read-only page."]);
    assert_eq!(
        (f.outcome, f.fault_class),
        (Outcome::Maf, FaultClass::ReadOnlyPageFault)
    );
}

#[test]
fn timeout_with_partial_output_is_hang() {
    let f = log(&[
        "[HRR] [replay] Device state OK — beginning replay",
        r#"[HRR progress] elapsed_s=0.0 seq=19 kernels=1 d2h_pass=0 d2h_fail=0 d2h_attempted=0 last="fill_ones""#,
        r#"[HRR progress] elapsed_s=30.0 seq=4411 kernels=812 d2h_pass=3 d2h_fail=0 d2h_attempted=3 last="Cijk_Ailk_Bljk_SK3_x""#,
        "Warning: Queue error - HSA_STATUS_ERROR_EXCEPTION",
        "[hrr] replay timed out after 1800s",
    ]);
    assert_eq!(
        (f.outcome, f.fault_class),
        (Outcome::Hang, FaultClass::Hang)
    );
    assert_eq!(f.timed_out_after_s, Some(1800));
    assert_eq!(f.kernel_name, None, "a plain timeout names no kernel");
    assert_eq!(
        f.last_progress_kernel.as_deref(),
        Some("Cijk_Ailk_Bljk_SK3_x")
    );
    assert_eq!(f.kernels_launched, Some(812));
    assert!(f.next_steps[0].contains("timeout"));
    assert!(f.next_steps[1].contains("Cijk_Ailk_Bljk_SK3_x"));
}

#[test]
fn runner_timeout_from_replay_info_is_hang() {
    let r = ReplayInfo {
        timed_out: true,
        duration_s: Some(90.2),
        signal: Some(9),
        ..ReplayInfo::default()
    };
    let f = run(
        &[&["[HRR] [replay] Device state OK — beginning replay"]],
        Some(&r),
        None,
    );
    assert_eq!(
        (f.outcome, f.fault_class, f.timed_out_after_s),
        (Outcome::Hang, FaultClass::Hang, Some(90))
    );
}

#[test]
fn queue_abort_is_never_a_hang() {
    let f = log(&[
        ":0:rocdevice.cpp            :3594: 34648731232 us:  Callback: Queue 0x7f745c100000 aborting with error : HSA_STATUS_ERROR_EXCEPTION: An HSAIL operation resulted in a hardware exception. code: 0x1016",
        SIGNAL6,
    ]);
    assert_eq!(
        (f.outcome, f.fault_class),
        (Outcome::Abort, FaultClass::ReplayAborted)
    );
    assert!(f
        .notes
        .iter()
        .any(|n| n.contains("HSA_STATUS_ERROR_EXCEPTION (code 0x1016)")));
    let m = log(&["Callback: Queue 0x7f Aborting with error : HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION: The agent attempted to access memory beyond the largest legal address. Code: 0x29"]);
    assert_eq!(
        (m.outcome, m.fault_class),
        (Outcome::Maf, FaultClass::IllegalMemoryAccess)
    );
    assert!(m
        .notes
        .iter()
        .any(|n| n.contains("HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION (code 0x29)")));
}

#[test]
fn pass_with_d2h_failures_is_divergence_without_a_kernel() {
    let f = log(&[
        "[HRR] Event 16: hipLaunchKernel",
        "[HRR] kernarg D2H FAIL seq=211: 4096 bytes, 2048/4096 bytes differ (50.00%), first@2 (got 0x00 exp 0x80); best fit f32: 1024/1024 elems exceed tol (atol=0.001 rtol=0.001), max|d|=1 maxrel=1",
        "[HRR]   D2H checks     : 3 pass (3 exact, 0 within tol), 1 fail, 0 skipped",
        "[HRR] PASS",
    ]);
    assert_eq!(
        (f.outcome, f.fault_class),
        (Outcome::Pass, FaultClass::NanInfDivergence)
    );
    assert_eq!(
        (
            f.kernel_name.as_deref(),
            f.failing_api.as_deref(),
            f.failing_event_seq
        ),
        (None, None, None)
    );
    assert_eq!(
        (f.d2h_pass, f.d2h_fail, f.d2h_attempted),
        (Some(3), Some(1), Some(4))
    );
    let d2h = f
        .labels
        .iter()
        .find(|l| l.label == Label::D2hFail)
        .expect("D2H-FAIL label");
    assert!(
        d2h.detail.contains("max|d|=1") && d2h.detail.contains("seq 211"),
        "{}",
        d2h.detail
    );
    assert!(!f.has_label(Label::Clean));
    let md = hrr::render::markdown(&f);
    assert!(
        md.contains("#### Fault details"),
        "fault details kept for a PASS with D2H failures"
    );
}

#[test]
fn clean_pass_names_nothing() {
    let f = log(&[
        "[HRR] Event 99: hipLaunchKernel   -> Kernel 'k' OK",
        r#"[HRR launch] seq=29 kernel=1 launch=MOD grid=[1,1,1] block=[1,1,1] shared=0 args=0 snapshots=0 name="k""#,
        "[HRR]   Kernels launched: 0",
        "[HRR]   D2H checks     : 0 pass (0 exact, 0 within tol), 0 fail, 0 skipped",
        "[HRR] PASS",
    ]);
    assert_eq!(
        (f.outcome, f.fault_class),
        (Outcome::Pass, FaultClass::ReplayPass)
    );
    assert_eq!(
        (
            f.kernel_name.clone(),
            f.last_event_kernel.clone(),
            f.failing_call_index,
            f.failing_api.clone()
        ),
        (None, None, None, None)
    );
    assert!(f.has_label(Label::Clean));
    assert_eq!(f.kernels_launched, Some(0));
    assert!(f
        .next_steps
        .iter()
        .any(|s| s.contains("no D2H validation blobs")));
}

#[test]
fn version_mismatch_beats_everything() {
    let f = log(&[
        "[HRR] Version mismatch in /d/pid-1/events.bin: file=7 reader=8",
        SIGNAL6,
        MAF,
    ]);
    assert_eq!(
        (f.outcome, f.fault_class),
        (Outcome::Abort, FaultClass::VersionMismatch)
    );
    assert_eq!(
        (f.archive_format_version, f.reader_format_version),
        (Some(7), Some(8))
    );
    assert_eq!(f.kernel_name, None);
}

#[test]
fn oom_beats_a_fault_but_placement_oom_does_not_count() {
    let f = log(&[
        "[HRR] Fatal: T146 Event 9268 (hipMalloc) returned 2 (out of memory) — aborting replay",
        MAF,
    ]);
    assert_eq!(
        (f.outcome, f.fault_class),
        (Outcome::Abort, FaultClass::ReplayOom)
    );
    let p = log(&[
        "[HRR] Placement: hipMalloc 0x7f0000200000 (4096 bytes) not placed at its recorded address: mapping it failed (out of memory). It replays elsewhere, so a copy of its address stored in device memory is stale",
        MAF,
    ]);
    assert_eq!(p.fault_class, FaultClass::IllegalMemoryAccess);
}

#[test]
fn signal_alone_is_a_crashed_run_naming_no_kernel() {
    let f = run(
        &[
            &["[HRR] [replay] Device state OK — beginning replay", SIGNAL6],
            INFO_ONE_KERNEL,
        ],
        None,
        None,
    );
    assert_eq!(
        (f.outcome, f.fault_class),
        (Outcome::Abort, FaultClass::ReplayCrashed)
    );
    assert_eq!(
        (f.kernel_name.clone(), f.kernel_family.clone()),
        (None, None),
        "even for a single-kernel archive"
    );
    assert!(
        f.notes
            .iter()
            .any(|n| n.contains("killed by signal 6")
                && n.contains("hrr-playback or its environment"))
    );
    let r = ReplayInfo {
        signal: Some(11),
        ..ReplayInfo::default()
    };
    let g = run(&[&[]], Some(&r), None);
    assert_eq!(
        (g.outcome, g.fault_class, g.replay_signal),
        (Outcome::Abort, FaultClass::ReplayCrashed, Some(11))
    );
}

#[test]
fn a_windows_crash_code_is_a_crashed_run_unless_a_fault_line_names_the_kernel() {
    let av = "[hrr] replay crashed with 0xC0000005 (access violation)";
    let f = run(
        &[
            &["[HRR] [replay] Device state OK — beginning replay", av],
            INFO_ONE_KERNEL,
        ],
        None,
        None,
    );
    assert_eq!(
        (f.outcome, f.fault_class),
        (Outcome::Abort, FaultClass::ReplayCrashed)
    );
    assert_eq!(f.replay_exception.as_deref(), Some("0xC0000005"));
    assert_eq!((f.replay_signal, f.kernel_name.clone()), (None, None));
    assert!(f
        .notes
        .iter()
        .any(|n| n.contains("killed by Windows exception 0xC0000005")));
    // An abort after a GPU fault line (fast-fail): the fault decides.
    let g = log(&[
        MAF,
        "[hrr] replay crashed with 0xC0000409 (abort: fast fail)",
    ]);
    assert_eq!(
        (g.outcome, g.fault_class),
        (Outcome::Maf, FaultClass::IllegalMemoryAccess)
    );
    assert_eq!(g.replay_exception.as_deref(), Some("0xC0000409"));
    // From the runner's record alone (the legacy abort's exit code 3).
    let r = ReplayInfo {
        exception: Some("0x00000003".into()),
        ..ReplayInfo::default()
    };
    let h = run(&[&[]], Some(&r), None);
    assert_eq!(
        (h.outcome, h.fault_class, h.replay_exception.as_deref()),
        (
            Outcome::Abort,
            FaultClass::ReplayCrashed,
            Some("0x00000003")
        )
    );
}

#[test]
fn watchdog_and_wall_clock_exits_are_hangs() {
    let f = log(&[
        r#"[HRR][WATCHDOG] GPU sync did not complete within 60000 ms at: kernel #812 "Cijk_Ailk_Bljk_HHS_BH_MT256x256x64_SK3_x" (seq=90211, grid=[304,1,1] block=[256,1,1])"#,
    ]);
    assert_eq!(
        (f.outcome, f.fault_class),
        (Outcome::Hang, FaultClass::Hang)
    );
    assert_eq!(
        f.kernel_name.as_deref(),
        Some("Cijk_Ailk_Bljk_HHS_BH_MT256x256x64_SK3_x")
    );
    assert_eq!(f.kernel_source, Some(KernelSource::FaultLine));
    assert_eq!(
        f.kernel_family.as_deref(),
        Some("hipblaslt_gemm/MT256x256x64/streamk")
    );
    assert_eq!(
        (f.failing_event_seq, f.grid.as_deref()),
        (Some(90211), Some("[304,1,1]"))
    );
    let w =
        log(&["[HRR] Fatal: replay still running after 3600 s (--max-wall-seconds); ending it"]);
    assert_eq!(
        (w.outcome, w.fault_class, w.timed_out_after_s),
        (Outcome::Hang, FaultClass::Hang, Some(3600))
    );
    let r = ReplayInfo {
        exit_code: Some(124),
        ..ReplayInfo::default()
    };
    let e = run(&[&[]], Some(&r), None);
    assert_eq!(
        (e.outcome, e.fault_class),
        (Outcome::Hang, FaultClass::Hang)
    );
}

#[test]
fn divergence_stop_is_nan_inf_with_its_numbers() {
    let f = log(&["[HRR] replay DIVERGED at recorded event seq 9001: 20/64 D2H validations failed (31.2% >= 25.0% threshold). Aborting cleanly before a downstream GPU fault."]);
    assert_eq!(
        (f.outcome, f.fault_class),
        (Outcome::Fail, FaultClass::NanInfDivergence)
    );
    assert_eq!(
        (f.d2h_fail, f.d2h_attempted, f.failing_event_seq),
        (Some(20), Some(64), Some(9001))
    );
    assert!(f
        .notes
        .iter()
        .any(|n| n.contains("20/64") && n.contains("31.2% >= 25.0%")));
}

#[test]
fn fail_verdict_classes() {
    let d = log(&["[HRR] DtoH D2H FAIL seq=400 (exact): 64 bytes, 64/64 bytes differ, first@0 (got 0x01 exp 0x00)", "[HRR]   D2H checks     : 0 pass (0 exact, 0 within tol), 1 fail, 0 skipped", "[HRR] FAIL"]);
    assert_eq!(
        (d.outcome, d.fault_class, d.failing_event_seq),
        (Outcome::Fail, FaultClass::NanInfDivergence, Some(400))
    );
    let c = log(&[
        "[HRR] Error: T5 Event 9 (hipMemset) returned 1 (invalid argument) — continuing",
        "[HRR]   Events failed  : 1 (continued past each)",
        "[HRR] FAIL",
    ]);
    assert_eq!(
        (c.outcome, c.fault_class, c.failing_api.as_deref()),
        (Outcome::Fail, FaultClass::ReplayFatalApi, Some("hipMemset"))
    );
    let s = log(&["[HRR] ERROR: 4 D2H validation event(s) attempted but 0 pass/fail recorded (all skipped — check pointer translation and blob files)", "[HRR] FAIL"]);
    assert_eq!(
        (s.outcome, s.fault_class),
        (Outcome::Fail, FaultClass::Unknown)
    );
    assert!(s.notes.iter().any(|n| n.contains("all skipped")));
}

#[test]
fn fatal_api_names_the_call_not_a_kernel() {
    let f = run(&[&["[HRR] Fatal: T138 Event 7352 (hipMemcpyWithStream) returned 1 (invalid argument) — aborting replay", "[HRR] Replay aborted due to fatal HIP error — exiting"], INFO_ONE_KERNEL], None, None);
    assert_eq!(
        (f.outcome, f.fault_class),
        (Outcome::Abort, FaultClass::ReplayFatalApi)
    );
    assert_eq!(
        (
            f.failing_thread,
            f.failing_call_index,
            f.failing_api.as_deref()
        ),
        (Some(138), Some(7352), Some("hipMemcpyWithStream"))
    );
    assert_eq!(f.kernel_name, None, "a failed memcpy implicates no kernel");
}

#[test]
fn gpu_error_line_names_the_kernel() {
    let f = log(&[
        "[HRR] GPU error after '_Z9crash_oobPKiPii': 700 (an illegal memory access was encountered) last=700 (an illegal memory access was encountered)",
        "[HRR] Fatal: T48213 Event 16 (hipLaunchKernel) returned 700 (an illegal memory access was encountered) — aborting replay",
    ]);
    assert_eq!(
        (f.outcome, f.fault_class),
        (Outcome::Maf, FaultClass::IllegalMemoryAccess)
    );
    assert_eq!(
        (f.kernel_name.as_deref(), f.kernel_source),
        (Some("_Z9crash_oobPKiPii"), Some(KernelSource::GpuErrorLine))
    );
}

const LAUNCH_A: &str = r#"[HRR launch] seq=28 kernel=1 launch=MOD grid=[64,1,1] block=[64,1,1] shared=0 args=2 snapshots=0 name="fill_ones""#;
const LAUNCH_B: &str = r#"[HRR launch] seq=29 kernel=2 launch=MOD grid=[1024,1,1] block=[256,1,1] shared=0 args=3 snapshots=0 name="_Z9crash_oobPKiPii""#;

#[test]
fn trace_kernels_attributes_the_unfinished_launch() {
    let f = run(
        &[&[
            LAUNCH_A,
            "[HRR] Kernel 'fill_ones' OK",
            LAUNCH_B,
            MAF,
            SIGNAL6,
        ]],
        Some(&synced()),
        None,
    );
    assert_eq!(
        (f.kernel_name.as_deref(), f.kernel_source),
        (Some("_Z9crash_oobPKiPii"), Some(KernelSource::TraceKernels))
    );
    assert_eq!(
        (
            f.failing_event_seq,
            f.grid.as_deref(),
            f.workgroup.as_deref()
        ),
        (Some(29), Some("[1024,1,1]"), Some("[256,1,1]"))
    );
    assert!(f
        .notes
        .iter()
        .any(|n| n.contains("under --sync-after-launch that is the launch that failed")));
    // without knowing the replay synced, the name is marked as needing confirmation
    let g = log(&[LAUNCH_B, MAF]);
    assert!(g
        .notes
        .iter()
        .any(|n| n.contains("only if the replay ran with --sync-after-launch")));
    assert!(g
        .next_steps
        .iter()
        .any(|s| s.contains("--sync-after-launch --trace-kernels")));
    // a launch that completed is not the faulting one
    let h = log(&[LAUNCH_A, "[HRR] Kernel 'fill_ones' OK", MAF]);
    assert_eq!(h.kernel_name, None);
}

#[test]
fn fallback_order_fault_line_first() {
    let bracket = ":0:rocdevice.cpp            :3678: 3194366185 us:  Memory Fault Error [host: node01, GPU index: 0, faulting addr: 0x7f3a2c600000, kernel: _Z9crash_oobPKiPii]";
    let f = run(&[&[LAUNCH_A, bracket, MAF], INFO_ONE_KERNEL], None, None);
    assert_eq!(
        (f.kernel_name.as_deref(), f.kernel_source),
        (Some("_Z9crash_oobPKiPii"), Some(KernelSource::FaultLine))
    );
    assert!(
        f.notes.iter().all(|n| !n.contains("inferred")),
        "a named kernel needs no inference note"
    );
    let abort = "Callback: Queue 0x7f aborting with error : HSA_STATUS_ERROR_MEMORY_FAULT: Agent attempted to access an inaccessible address. code: 0x2b [GPU index: 0, kernel: _ZN2at6native29indexSelectSmallIndexEv]";
    let g = run(&[&[LAUNCH_A, abort], INFO_ONE_KERNEL], None, None);
    assert_eq!(
        (g.kernel_name.as_deref(), g.kernel_source),
        (
            Some("_ZN2at6native29indexSelectSmallIndexEv"),
            Some(KernelSource::AbortLine)
        )
    );
    let e = log(&[
        "[HRR] Event 1304: hipModuleLaunchKernel   -> Kernel 'fill_FillFunctor' OK",
        MAF,
    ]);
    assert_eq!(
        (e.kernel_name.as_deref(), e.kernel_source),
        (Some("fill_FillFunctor"), Some(KernelSource::LastEvent))
    );
    assert!(e.notes.iter().any(|n| n.contains("--verbose")));
}

#[test]
fn truncated_names_are_never_used() {
    let bracket = "Memory Fault Error [GPU index: 0, faulting addr: 0x7f00, kernel: Cijk_Ailk_Bljk_HHS_BH_MT128x128x32_MI32x32x8x1_...]";
    let info: &[&str] = &[
        "Kernels:      1",
        "Kernel Summary (first 20):",
        "  0    Cijk_Ailk_Bljk_HHS_BH_MT128x128x32_MI32x32x8x1_... [16,16,1]       [256,1,1]       32768",
        "",
        "Kernel Call Counts:",
        "  Cijk_Ailk_Bljk_HHS_BH_MT128x128x32_MI32x32x8x1_SN_1LDSB0_... 1",
    ];
    let f = run(&[&[bracket, MAF], info], None, None);
    assert_eq!(f.kernel_name, None);
    assert!(f.notes.iter().any(|n| n.contains("no kernel is named")));
}

#[test]
fn several_kernels_are_not_guessed() {
    let facts: ArchiveFacts = serde_json::from_str(r#"{"kind":"process","kernel_launches":3,"kernels":[{"name":"a","launches":2},{"name":"b","launches":1}]}"#).unwrap();
    let f = run(&[&[MAF]], None, Some(&facts));
    assert_eq!(f.kernel_name, None);
    let one: ArchiveFacts = serde_json::from_str(r#"{"kind":"process","path":"/c/pid-7","complete":false,"events":5,"kernel_launches":2,"kernels":[{"name":"crash_oob","launches":2}]}"#).unwrap();
    let g = run(&[&[MAF]], None, Some(&one));
    assert_eq!(
        (g.kernel_name.as_deref(), g.kernel_source),
        (Some("crash_oob"), Some(KernelSource::SingleKernelArchive))
    );
    assert_eq!(g.archive.as_deref(), Some("/c/pid-7"));
    assert!(g.has_label(Label::CrashTruncated));
}

#[test]
fn aten_fault_keeps_its_class_and_asks_for_the_signature() {
    let bracket = "Memory Fault Error [GPU index: 0, faulting addr: 0x7f00, kernel: _ZN2at6native29vectorized_elementwise_kernelEv]";
    let f = log(&[bracket, MAF]);
    assert_eq!(f.fault_class, FaultClass::IllegalMemoryAccess);
    assert_eq!(f.kernel_family.as_deref(), Some("pytorch_kernel"));
    assert!(f.notes.iter().any(|n| n.ends_with(
        "Confirm against the user's original failure signature before reporting this as their bug."
    )));
    assert!(f.next_steps[0].contains("original failure signature"));
}

#[test]
fn kernel_families() {
    let fam = |k: &str| {
        log(&[&format!(
            "Memory Fault Error [GPU index: 0, faulting addr: 0x1, kernel: {k}]"
        )])
        .kernel_family
    };
    assert_eq!(
        fam("Cijk_Ailk_Bljk_BBS_BH_MT128x128x64_MI16x16x1_SK2_x").as_deref(),
        Some("hipblaslt_gemm/MT128x128x64/streamk_variant")
    );
    assert_eq!(fam("Cijk_Alik_Bljk_SB").as_deref(), Some("hipblaslt_gemm"));
    assert_eq!(
        fam("void at::native::foo<float>(int)").as_deref(),
        Some("pytorch_kernel")
    );
    assert_eq!(fam("my_kernel").as_deref(), Some("other"));
}

const FALLBACK: &str = "[HRR] Placement: hipMalloc 0x7f0000200000 (4096 bytes) not placed at its recorded address: its range could not be held. It replays elsewhere, so a copy of its address stored in device memory is stale";

#[test]
fn placement_fallback_in_a_failed_replay_adds_one_fidelity_note() {
    let f = log(&[FALLBACK, MAF]);
    let fidelity: Vec<&String> = f
        .notes
        .iter()
        .filter(|n| n.starts_with("replay fidelity:"))
        .collect();
    assert_eq!(fidelity.len(), 1);
    assert!(fidelity[0].contains("hipMalloc 0x7f0000200000"));
    assert!(f.has_label(Label::PlacementFallback));
    assert_eq!(
        f.fault_class,
        FaultClass::IllegalMemoryAccess,
        "the class stays what the evidence says"
    );
    assert_eq!(
        f.placement,
        Some(Placement::Active {
            placed: None,
            fell_back: 1,
            named: vec!["hipMalloc 0x7f0000200000: its range could not be held".into()]
        })
    );
    let off = log(&["[HRR] Placement : off (--no-placement)", MAF]);
    assert!(off
        .notes
        .iter()
        .any(|n| n.starts_with("replay fidelity: placement was off (--no-placement)")));
    let zero = log(&[
        "[HRR]   Placement      : 6 placed at capture address, 0 fell back",
        MAF,
    ]);
    assert!(zero
        .notes
        .iter()
        .all(|n| !n.starts_with("replay fidelity:")));
    let pass = log(&[
        FALLBACK,
        "[HRR]   Placement      : 5 placed at capture address, 1 fell back",
        "[HRR] PASS",
    ]);
    assert!(pass
        .notes
        .iter()
        .all(|n| !n.starts_with("replay fidelity:")));
    assert!(pass.has_label(Label::PlacementFallback) && !pass.has_label(Label::Clean));
}

#[test]
fn limitation_labels() {
    let f = log(&[
        "[HRR] NOOP playback handler called for hipGetProcAddress — this API is not replayed; results may differ from capture.",
        "[HRR]   arg[1]: ptr 0x7f3a2c400000 -> (nil) (MISSING!)",
        MAF,
    ]);
    let noop = f.labels.iter().find(|l| l.label == Label::NoopApi).unwrap();
    assert!(noop.detail.contains("hipGetProcAddress"));
    assert!(f.has_label(Label::MissingHandle));
    let root = run(
        &[&[
            "HRR Archive Root: /d/serve.hrr",
            "  PID          Parent PID   Complete   Events       Blobs      Path",
            "  680          1            yes        4211         12         /d/serve.hrr/pid-680",
            "  731          680          NO         0            0          /d/serve.hrr/pid-731",
        ]],
        None,
        None,
    );
    assert!(root.has_label(Label::MultiProcess));
    assert_eq!(root.archive_health.processes, [680, 731]);
}

#[test]
fn evidence_order_does_not_matter() {
    let replay: &[&str] = &[
        r#"[HRR progress] elapsed_s=0.0 seq=19 kernels=1 d2h_pass=0 d2h_fail=0 d2h_attempted=0 last="fill_ones""#,
        MAF,
        SIGNAL6,
    ];
    let a = run(&[replay, INFO_ONE_KERNEL], None, None);
    let b = run(&[INFO_ONE_KERNEL, replay], None, None);
    let strip = |mut f: Finding| {
        f.sources.clear();
        f
    };
    assert_eq!(
        a.last_progress_kernel.as_deref(),
        Some("fill_ones"),
        "--info must not erase progress"
    );
    assert_eq!(a.kernel_name.as_deref(), Some("_Z9crash_oobPKiPii"));
    assert_eq!(strip(a), strip(b));
}

#[test]
fn sources_list_logs_before_info_dumps() {
    let mut c = Classifier::new();
    c.begin_input("info.txt");
    c.feed_line(b"HRR Archive: /x/pid-1");
    c.begin_input("replay.log");
    c.feed_line(b"[HRR] PASS");
    let f = c.finish(None, None, None);
    assert_eq!(
        f.sources,
        ["replay.log (replay log)", "info.txt (hrr-playback --info)"]
    );
}

#[test]
fn no_replay_is_metadata_only_unless_the_preflight_blocked() {
    let f = run(&[INFO_ONE_KERNEL], None, None);
    assert_eq!(
        (f.outcome, f.fault_class),
        (Outcome::Unknown, FaultClass::MetadataOnly)
    );
    assert_eq!(f.kernel_name, None);
    let blocked = serde_json::json!({"status": "blocked", "blocks": ["capture saw 2 GPU(s) but replay environment only exposes 1"]});
    let g = Classifier::new().finish(None, None, Some(&blocked));
    assert_eq!(g.fault_class, FaultClass::PreflightBlocked);
    let mut c = Classifier::new();
    c.set_replay_skipped(true);
    assert_eq!(
        c.finish(None, None, Some(&blocked)).fault_class,
        FaultClass::MetadataOnly
    );
}

#[test]
fn unknown_says_so_and_invents_nothing() {
    let r = ReplayInfo {
        exit_code: Some(3),
        ..ReplayInfo::default()
    };
    let f = run(
        &[
            &["[HRR] Archive : 5 events, 1 kernels, 1 blobs, 2 code objects"],
            INFO_ONE_KERNEL,
        ],
        Some(&r),
        None,
    );
    assert_eq!(
        (f.outcome, f.fault_class, f.kernel_name.clone()),
        (Outcome::Unknown, FaultClass::Unknown, None)
    );
    assert!(f.notes.iter().any(|n| n.contains("exited with code 3")));
    let md = hrr::render::markdown(&f);
    assert!(
        md.contains("**UNKNOWN** — the outcome of this replay is unknown"),
        "{md}"
    );
    let empty = log(&[]);
    assert_eq!(
        (empty.outcome, empty.fault_class),
        (Outcome::Unknown, FaultClass::Unknown)
    );
}

#[test]
fn capture_falls_back_to_the_preflight_report() {
    let report = serde_json::json!({
        "status": "warn",
        "capture": {"metadata": true, "hip_runtime_version": "7.2.53211", "comgr_version": "3.0", "device_count": 2,
                    "devices": [{"ordinal": 0, "name": "x", "gcn_arch_name": "gfx950:sramecc+:xnack-"}]},
        "host": null, "blocks": [], "confirms": [], "warnings": ["w"], "notes": []
    });
    let mut c = Classifier::new();
    c.begin_input("r.log");
    c.feed_line(b"[HRR] PASS");
    let f = c.finish(None, None, Some(&report));
    assert_eq!(f.capture.hip_runtime_version.as_deref(), Some("7.2.53211"));
    assert_eq!(f.capture.device_count, Some(2));
    assert_eq!(
        f.capture.gcn_arch.as_deref(),
        Some("gfx950:sramecc+:xnack-")
    );
    assert_eq!(f.preflight.as_ref().unwrap()["status"], "warn");
}
