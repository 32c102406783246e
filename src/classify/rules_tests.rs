//! One test per line shape. Every line is a format string of
//! reference/playback-output.md rendered with example values (or a line of
//! the recorded fixtures), so these also pin the upstream-miss shapes of §5.

use super::*;

fn feed(lines: &[&str]) -> Evidence {
    let mut e = Evidence::default();
    let mut st = InputState::default();
    for l in lines {
        apply(l, &mut e, &mut st);
    }
    e
}

#[test]
fn info_header_and_counts() {
    let e = feed(&[
        "HRR Archive: /data/cap.hrr/pid-4242",
        "========================================",
        "Complete:     yes (clean shutdown)",
        "Recovered:    23 events",
        "Events:       23",
        "Kernels:      3",
        "Blobs:        4",
        "Code Objects: 1",
        "Threads:      1",
    ]);
    let i = &e.info;
    assert_eq!(i.path.as_deref(), Some("/data/cap.hrr/pid-4242"));
    assert_eq!(i.complete, Some(true));
    assert!(!i.torn);
    assert_eq!(
        (
            i.recovered,
            i.events,
            i.kernels,
            i.blobs,
            i.code_objects,
            i.threads
        ),
        (Some(23), Some(23), Some(3), Some(4), Some(1), Some(1))
    );
    assert_eq!(e.replay_lines, 0, "--info lines are not replay evidence");
}

#[test]
fn info_complete_no_torn() {
    let e = feed(&["Complete:     NO (crash-truncated; trailing torn record discarded)"]);
    assert_eq!(e.info.complete, Some(false));
    assert!(e.info.torn);
}

#[test]
fn info_tables() {
    let e = feed(&[
        "Event Type Breakdown:",
        "  Type                   Count",
        "  ----                   -----",
        "  hipMalloc              2",
        "  hipLaunchKernel        1",
        "  hipModuleLaunchKernel  3",
        "  __hipPushCallConfiguration 1",
        "",
        "Kernel Summary (first 20):",
        "  ID   Kernel                                             Grid            Block           SharedMem",
        "  --   ------                                             ----            -----           ---------",
        "  0    vector_add                                         [4096,1,1]      [256,1,1]       0",
        "  1    Cijk_Ailk_Bljk_HHS_BH_MT128x128x32_MI32x32x8x1_... [16,16,1]       [256,1,1]       32768",
        "  2    vector_add                                         [4096,1,1]      [256,1,1]       0",
        "  ... and 4 more",
        "",
        "Kernel Call Counts:",
        "  Kernel                                                       Calls",
        "  ------                                                       -----",
        "  Cijk_Ailk_Bljk_HHS_BH_MT128x128x32_MI32x32x8x1_SN_1LDSB0_... 1",
        "  vector_add                                                   6",
        "",
    ]);
    let i = &e.info;
    assert_eq!(
        i.breakdown_launches,
        Some(4),
        "hipLaunchKernel 1 + hipModuleLaunchKernel 3"
    );
    assert_eq!(
        i.summary_names,
        ["vector_add"],
        "truncated and duplicate names skipped"
    );
    assert!(i.summary_incomplete);
    assert_eq!(i.call_count_rows, 2);
    assert_eq!(i.call_counts[1], ("vector_add".to_string(), 6));
}

#[test]
fn info_root_table() {
    let e = feed(&[
        "HRR Archive Root: /data/serve.hrr",
        "Processes:    2",
        "",
        "  PID          Parent PID   Complete   Events       Blobs      Path",
        "  ---          ----------   --------   ------       -----      ----",
        "  680          1            yes        4211         12         /data/serve.hrr/pid-680",
        "  731          680          NO         0            0          /data/serve.hrr/pid-731",
    ]);
    assert_eq!(e.info.root_processes, [(680, true), (731, false)]);
}

#[test]
fn reader_diagnostics() {
    let e = feed(&[
        "[HRR] Truncated event payload (expected 184 bytes) at tail",
        "[HRR] Recovered 17 events before the torn record",
        "[HRR] Archive has no clean-shutdown trailer (capture likely crashed); recovered 17 events, trailing torn record discarded",
        "[HRR] Clean-shutdown trailer counts 30 events but 29 precede it; the archive is not treated as complete",
        "[HRR] Ignored 2 records after the clean-shutdown trailer",
    ]);
    assert_eq!(e.reader.no_trailer_recovered, Some(17));
    assert!(e.reader.torn);
    assert_eq!(e.reader.trailer_mismatch, Some((30, 29)));
    assert_eq!(e.reader.records_after_trailer, Some(2));
    let plain = feed(&[
        "[HRR] Archive has no clean-shutdown trailer (capture likely crashed); recovered 5 events",
    ]);
    assert!(!plain.reader.torn);
}

#[test]
fn replay_start_lines() {
    let e = feed(&[
        "[HRR] Archive : 61 events, 5 kernels, 8 blobs, 1 code objects",
        "[HRR] Threads : 1 captured",
        "[HRR] [replay] Device state OK — beginning replay",
    ]);
    assert_eq!(e.reader.header, Some([61, 5, 8, 1]));
    assert_eq!(e.reader.threads, Some(1));
    assert!(e.replay_started);
    assert_eq!(e.replay_lines, 3);
}

#[test]
fn placement_lines() {
    let e = feed(&[
        "[HRR] Placement : 2 range(s), 6.0 MiB reserved at recorded addresses, 0 could not be",
        "[HRR] Placement: hipMalloc 0x7f0000200000 (4096 bytes) not placed at its recorded address: its range could not be held. It replays elsewhere, so a copy of its address stored in device memory is stale",
        "[HRR] Placement: region segment 0x7f0000400000 (8192 bytes) not placed at its recorded address: mapping it failed (out of memory). It replays elsewhere, so a copy of its address stored in device memory is stale",
        "[HRR] Placement: hipMallocAsync not placed at its recorded address: replay does not know which device its pool allocates on. It replays elsewhere, so a copy of its address stored in device memory is stale",
        "[HRR] Placement: further fallbacks are only counted; --verbose names every one",
        "[HRR]   Placement      : 6 placed at capture address, 19 fell back, 1 frees deferred to a later sync",
    ]);
    let p = &e.placement;
    assert!(p.active);
    assert_eq!(p.summary, Some((6, 19)));
    assert_eq!(p.named_total, 3);
    assert_eq!(
        p.named,
        [
            "hipMalloc 0x7f0000200000: its range could not be held",
            "region segment 0x7f0000400000: mapping it failed (out of memory)",
            "hipMallocAsync: replay does not know which device its pool allocates on",
        ]
    );
    assert_eq!(
        e.oom, None,
        "a placement fallback's out of memory is not a replay OOM"
    );
    let off = feed(&["[HRR] Placement : off (--no-placement)"]);
    assert_eq!(off.placement.off.as_deref(), Some("--no-placement"));
}

#[test]
fn noop_and_not_replayable() {
    let e = feed(&[
        "[HRR] NOOP playback handler called for hipGetProcAddress — this API is not replayed; results may differ from capture.",
        "[HRR] hipMemcpyToSymbol: NOT REPLAYABLE — its symbol lives in a code object replay does not load. The call is in the archive but its effect cannot be reproduced here, so it is skipped; this replay is not a faithful reproduction of the recording.",
        "[HRR] explicit (node-API) graph construction is NOT supported",
    ]);
    let apis: Vec<&str> = e.noop_apis.iter().map(String::as_str).collect();
    assert_eq!(apis, ["hipGetProcAddress", "hipMemcpyToSymbol"]);
    assert!(e.graph_construction_unsupported);
}

#[test]
fn argument_lines_and_missing_handles() {
    let e = feed(&[
        "[HRR]   arg[0]: ptr 0x7f3a2c200000 -> 0x7f3a2c200000",
        "[HRR]   arg[1]: ptr 0x7f3a2c400000 -> (nil) (MISSING!)",
        "[HRR]   arg[2]: scalar 4 bytes = 00000100 (u32=65536)",
        "[HRR]   Untranslated   : 3 kernel-arg pointer(s) resolved in no allocation, VMM reservation or region — they reached the GPU as null",
    ]);
    assert_eq!(e.missing_args, 1);
    assert_eq!(
        e.missing_example.as_deref(),
        Some("arg[1]: ptr 0x7f3a2c400000 -> (nil) (MISSING!)")
    );
    assert_eq!(e.untranslated, Some(3));
}

#[test]
fn per_event_lines() {
    let e = feed(&[
        "[HRR] Event 15: __hipPushCallConfiguration",
        "[HRR] Event 16: hipLaunchKernel",
    ]);
    let ev = e.last_event.unwrap();
    assert_eq!(
        (ev.thread, ev.index, ev.api.as_str(), ev.kernel),
        (None, 16, "hipLaunchKernel", None)
    );
    let e = feed(&["[HRR] Event 1304: hipModuleLaunchKernel   -> Kernel 'fill_FillFunctor' OK"]);
    assert_eq!(
        e.last_event.unwrap().kernel.as_deref(),
        Some("fill_FillFunctor")
    );
    let e = feed(&["[HRR] T48213 [7] hipMemcpyAsync"]);
    let ev = e.last_event.unwrap();
    assert_eq!(
        (ev.thread, ev.index, ev.api.as_str()),
        (Some(48213), 7, "hipMemcpyAsync")
    );
    let e = feed(&["[HRR] T48213 Event 5: no handler for type 999"]);
    assert_eq!(e.last_event, None);
}

#[test]
fn launch_trace_and_completion() {
    let launch = r#"[HRR launch] seq=29 kernel=1 launch=MOD grid=[1024,1,1] block=[256,1,1] shared=0 args=3 snapshots=0 name="_Z9crash_oobPKiPii""#;
    let e = feed(&[launch]);
    let l = e.last_launch.unwrap();
    assert_eq!(
        (l.seq, l.ordinal, l.name.as_str()),
        (29, 1, "_Z9crash_oobPKiPii")
    );
    assert_eq!(
        (l.grid.as_deref(), l.block.as_deref()),
        (Some("[1024,1,1]"), Some("[256,1,1]"))
    );
    assert!(!l.completed);
    let e = feed(&[launch, "[HRR] Kernel '_Z9crash_oobPKiPii' OK"]);
    assert!(
        e.last_launch.unwrap().completed,
        "a Kernel 'x' OK line completes the launch"
    );
    let e = feed(&[
        launch,
        r#"[HRR progress] elapsed_s=0.0 seq=29 kernels=1 d2h_pass=0 d2h_fail=0 d2h_attempted=0 last="_Z9crash_oobPKiPii""#,
    ]);
    assert!(
        e.last_launch.unwrap().completed,
        "a progress line counts the launch as done"
    );
    let e = feed(&[
        r#"[HRR sync begin] seq=90211 kernel=812 name="Cijk_X""#,
        "[HRR sync done] seq=90211 kernel=812 status=success",
    ]);
    let l = e.last_launch.unwrap();
    assert_eq!((l.seq, l.ordinal), (90211, 812));
    assert!(l.completed);
}

#[test]
fn progress_line() {
    let e = feed(&[
        r#"[HRR progress] elapsed_s=612.4 seq=13118764 kernels=797227 d2h_pass=4303 d2h_fail=2 d2h_attempted=4315 last="Cijk_Ailk_Bljk_BBS_BH_x""#,
    ]);
    let p = e.progress.unwrap();
    assert_eq!(
        (
            p.seq,
            p.kernels,
            p.d2h_pass,
            p.d2h_fail,
            p.d2h_attempted,
            p.last.as_str()
        ),
        (13118764, 797227, 4303, 2, 4315, "Cijk_Ailk_Bljk_BBS_BH_x")
    );
    assert!((p.elapsed_s - 612.4).abs() < 1e-9);
}

#[test]
fn fatal_lines() {
    let e = feed(&[
        "[HRR] Fatal: T138 Event 7352 (hipMemcpyWithStream) returned 1 (invalid argument) — aborting replay",
        "[HRR] Replay aborted due to fatal HIP error — exiting",
    ]);
    let c = e.fatal_call.unwrap();
    assert_eq!(
        (
            c.thread,
            c.index,
            c.api.as_str(),
            c.code,
            c.message.as_str()
        ),
        (138, 7352, "hipMemcpyWithStream", 1, "invalid argument")
    );
    assert!(e.replay_aborted);
    assert!(e.fatal_text.unwrap().starts_with("Fatal: T138 Event 7352"));
    let e = feed(&["[HRR] Fatal: GPU error after T48213 Event 16 (hipLaunchKernel): 700 (an illegal memory access was encountered) — aborting"]);
    let g = e.fatal_gpu.unwrap();
    assert_eq!((g.thread, g.index, g.code), (48213, 16, 700));
    assert_eq!(g.message, "an illegal memory access was encountered");
    let e =
        feed(&["[HRR] Fatal: replay still running after 3600 s (--max-wall-seconds); ending it"]);
    assert_eq!(e.wall_limit_s, Some(3600));
    for line in [
        "[HRR] Fatal: aborting replay after error in hipDeviceSynchronize",
        "[HRR] [replay] FATAL: hipDeviceSynchronize failed: 700 (an illegal memory access was encountered)",
        "[HRR] Fatal error in module pre-pass — aborting",
    ] {
        assert!(feed(&[line]).fatal_text.is_some(), "{line}");
    }
}

#[test]
fn gpu_error_after_kernel() {
    let e = feed(&["[HRR] GPU error after '_Z9crash_oobPKiPii': 700 (an illegal memory access was encountered) last=700 (an illegal memory access was encountered)"]);
    assert_eq!(
        e.gpu_error,
        Some((
            "_Z9crash_oobPKiPii".into(),
            700,
            "an illegal memory access was encountered".into()
        ))
    );
}

#[test]
fn continue_on_error_lines() {
    let e = feed(&[
        "[HRR] Error: T5 Event 9 (hipMemset) returned 1 (invalid argument) — continuing",
        "[HRR] Error: T5 Event 12 (hipMemset) returned 1 (invalid argument) — continuing",
        "[HRR]   Events failed  : 2 (continued past each)",
    ]);
    assert_eq!(e.continued_errors.1, 2);
    assert_eq!(e.continued_errors.0.unwrap().index, 9);
    assert_eq!(e.events_failed, Some(2));
}

#[test]
fn launch_error_and_setup_errors() {
    let e = feed(&["[HRR] Kernel 'my_kernel' not found in any loaded module"]);
    assert_eq!(
        e.launch_error,
        Some(("my_kernel".into(), "not found in any loaded module".into()))
    );
    assert_eq!(
        feed(&["[HRR] No GPU devices found"]).setup_error.as_deref(),
        Some("No GPU devices found")
    );
    let bad = feed(&["[HRR] Bad magic 0x00000000 in /a/events.bin (expected 0x48525231)"]);
    assert!(bad.setup_error.unwrap().starts_with("Bad magic"));
}

#[test]
fn version_mismatch_both_forms() {
    let old = feed(&["[HRR] Version mismatch: file=3 reader=4"]);
    assert_eq!(old.version_mismatch, Some((3, 4, None)));
    let cur =
        feed(&["[HRR] Version mismatch in /data/cap.hrr/pid-4242/events.bin: file=7 reader=8"]);
    assert_eq!(
        cur.version_mismatch,
        Some((7, 8, Some("/data/cap.hrr/pid-4242/events.bin".into())))
    );
    let v = feed(&["  archive format version : 8"]);
    assert_eq!(v.reader_version, Some(8));
}

#[test]
fn summary_block_and_verdict() {
    let e = feed(&[
        "",
        "[HRR] -- Replay summary ------------------------------",
        "[HRR]   Wall time      : 58.4 ms",
        "[HRR]   Kernels launched: 5",
        "[HRR]   GPU kernel time : 0.4 ms",
        "[HRR]   GPU graph time  : 0.0 ms",
        "[HRR]   GPU total time  : 0.4 ms",
        "[HRR]   D2H checks     : 3 pass (2 exact, 1 within tol), 0 fail, 0 skipped",
        "[HRR] PASS",
    ]);
    assert_eq!(e.kernels_launched, Some(5));
    assert_eq!(e.gpu_ms, [Some(0.4), Some(0.0), Some(0.4)]);
    assert_eq!(
        e.d2h_summary,
        Some(D2hSummary {
            pass: 3,
            within_tol: Some(1),
            fail: 0,
            skipped: Some(0)
        })
    );
    assert_eq!(e.verdict, Some(true));
    let f = feed(&[
        "[HRR] ERROR: 4 D2H validation event(s) attempted but 0 pass/fail recorded (all skipped — check pointer translation and blob files)",
        "[HRR] FAIL",
    ]);
    assert_eq!((f.d2h_all_skipped, f.verdict), (Some(4), Some(false)));
}

#[test]
fn d2h_fail_lines_keep_the_worst() {
    let e = feed(&[
        "[HRR] kernarg D2H FAIL seq=211: 4096 bytes, 2048/4096 bytes differ (50.00%), first@2 (got 0x00 exp 0x80); best fit f32: 1024/1024 elems exceed tol (atol=0.001 rtol=0.001), max|d|=1 maxrel=1",
        "[HRR] DtoH D2H FAIL seq=305: 64 bytes, 4/64 bytes differ (6.25%), first@0 (got 0x01 exp 0x00); best fit bf16: 2/32 elems exceed tol (atol=0.001 rtol=0.001), max|d|=7.5 maxrel=0.25",
        "[HRR] DtoH D2H FAIL seq=400 (exact): 64 bytes, 64/64 bytes differ, first@0 (got 0x01 exp 0x00)",
    ]);
    assert_eq!(e.d2h_fail_lines, 3);
    assert_eq!(e.d2h_first_fail_seq, Some(211));
    let w = e.d2h_worst.unwrap();
    assert_eq!(
        (w.seq, w.max_abs, w.fit.as_deref()),
        (305, Some(7.5), Some("bf16"))
    );
    let v = feed(&[
        "[HRR] D2H validate FAIL: src 0x7f00 not mapped — pointer translation bug",
        "[HRR] hipMemcpyDtoH: src 0x7f10 not mapped — D2H validate FAIL",
    ]);
    assert_eq!(
        v.d2h_validate_fail,
        (
            Some("src 0x7f00 not mapped — pointer translation bug".into()),
            2
        )
    );
}

#[test]
fn divergence_stop() {
    let e = feed(&[
        "[HRR] replay DIVERGED at recorded event seq 9001: 20/64 D2H validations failed (31.2% >= 25.0% threshold). Aborting cleanly before a downstream GPU fault. This is a replay-fidelity divergence (e.g. nondeterministic GPU reductions in an unstable model state), not an HRR translation/memory bug. Set HIP_HRR_REPLAY_DIVERGENCE_ABORT=0 to disable this guard.",
        "[HRR] Replay stopped: data divergence exceeded threshold (20/64 D2H validations failed). This is a replay-fidelity limit (nondeterministic GPU reductions in an unstable workload), not an HRR bug — see the [HRR] replay DIVERGED message above.",
    ]);
    let d = e.divergence.unwrap();
    assert_eq!((d.seq, d.failed, d.attempted), (Some(9001), 20, 64));
    assert_eq!(d.percent, Some(("31.2".into(), "25.0".into())));
}

#[test]
fn watchdog_block() {
    let e = feed(&[
        "",
        r#"[HRR][WATCHDOG] GPU sync did not complete within 60000 ms at: kernel #812 "Cijk_Ailk_Bljk_SK3_x" (seq=90211, grid=[304,1,1] block=[256,1,1])"#,
        "[HRR][WATCHDOG] Treating this as a hung/deadlocked kernel (e.g. a StreamK",
    ]);
    let w = e.watchdog.unwrap();
    assert_eq!(w.ms, 60000);
    let l = w.launch.unwrap();
    assert_eq!(
        (l.ordinal, l.name.as_str(), l.seq, l.grid.as_deref()),
        (812, "Cijk_Ailk_Bljk_SK3_x", 90211, Some("[304,1,1]"))
    );
    let other = feed(&["[HRR][WATCHDOG] GPU sync did not complete within 500 ms at: end-of-pass device synchronize"]);
    let w = other.watchdog.unwrap();
    assert_eq!(
        (w.at.as_str(), w.launch),
        ("end-of-pass device synchronize", None)
    );
}

#[test]
fn rocr_memory_fault_forms() {
    let cur = feed(&["Memory access fault by GPU node-1 (Agent handle: 0x5645b71d8d60) on address 0x7f2d68800000. Reason: Page not present or supervisor privilege."]);
    let m = cur.memory_fault.unwrap();
    assert_eq!(
        (m.node, m.address.as_str(), m.inexact, m.reason.as_str()),
        (
            1,
            "0x7f2d68800000",
            false,
            "Page not present or supervisor privilege"
        )
    );
    let old = feed(&["Memory access fault by GPU node-4 on address 0x1000. Reason: Write access to a read-only page."]);
    assert_eq!(
        old.memory_fault.unwrap().reason,
        "Write access to a read-only page"
    );
    let inexact = feed(&["Memory access fault by GPU node-2 (Agent handle: 0x55a1) on address 0x7f91da000000(may not be exact address). Reason: Unknown."]);
    let m = inexact.memory_fault.unwrap();
    assert_eq!(
        (m.address.as_str(), m.inexact, m.reason.as_str()),
        ("0x7f91da000000", true, "Unknown")
    );
}

#[test]
fn clr_fault_bracket_forms() {
    let host = feed(&[":0:rocdevice.cpp            :3678: 3194366185 us:  Memory Fault Error [host: node01, GPU index: 0, faulting addr: 0x7f3a2c600000, kernel: _Z9crash_oobPKiPii]"]);
    assert_eq!(
        host.fault_error,
        Some((
            Some("0x7f3a2c600000".into()),
            Some("_Z9crash_oobPKiPii".into())
        ))
    );
    let idx = feed(&["Memory Fault Error [GPU index: 1, faulting addr: 0x7f48ef14c000, kernel: void mul_mat_vec_q_moe<(ggml_type)39, 1>(void const*, int)]"]);
    assert_eq!(
        idx.fault_error.unwrap().1.as_deref(),
        Some("void mul_mat_vec_q_moe<(ggml_type)39, 1>(void const*, int)")
    );
}

#[test]
fn hsa_queue_statuses() {
    let e = feed(&[
        "Warning: Queue error - HSA_STATUS_ERROR_MEMORY_FAULT",
        ":0:rocdevice.cpp            :3594: 34648731232 us:  Callback: Queue 0x7f745c100000 aborting with error : HSA_STATUS_ERROR_EXCEPTION: An HSAIL operation resulted in a hardware exception. code: 0x1016",
        "Callback: Queue 0x70e817200000 Aborting with error : HSA_STATUS_ERROR_OUT_OF_RESOURCES: The runtime failed to allocate the necessary resources. Code: 0x1008",
        "Device::callbackQueue aborting with error : HSA_STATUS_ERROR_ILLEGAL_INSTRUCTION code: 0x2a",
    ]);
    let got: Vec<(&str, Option<&str>, bool)> = e
        .queue_statuses
        .iter()
        .map(|q| (q.code.as_str(), q.hex.as_deref(), q.abort))
        .collect();
    assert_eq!(
        got,
        [
            ("MEMORY_FAULT", None, false),
            ("EXCEPTION", Some("0x1016"), true),
            ("OUT_OF_RESOURCES", Some("0x1008"), true),
            ("ILLEGAL_INSTRUCTION", Some("0x2a"), true),
        ]
    );
    assert_eq!(e.oom, None);
    let k = feed(&["Callback: Queue 0x7f aborting with error : HSA_STATUS_ERROR_EXCEPTION: x code: 0x1016 [GPU index: 0, kernel: _ZN2at6native29indexSelectSmallIndexEv]"]);
    assert_eq!(
        k.queue_abort_kernel.as_deref(),
        Some("_ZN2at6native29indexSelectSmallIndexEv")
    );
}

#[test]
fn hang_analysis_block() {
    let e = feed(&[
        "VGPU(0x5645c6184410) hang analysis:",
        "Kernel Name: _ZN2at6native6kernelEv",
        " grid=[6144, 1, 1], workgroup=[128, 1, 1], group_seg_size=25088, kernel_obj=0x7f2c",
        "kernel_obj=0x7f2cd2682380, kernarg_address=0x0x7f2fb4a00000",
    ]);
    assert_eq!(
        e.hang_analysis_kernel.as_deref(),
        Some("_ZN2at6native6kernelEv")
    );
    assert_eq!(
        e.grid_workgroup,
        Some(("[6144, 1, 1]".into(), "[128, 1, 1]".into()))
    );
    assert_eq!(
        e.kernarg_address.as_deref(),
        Some("0x7f2fb4a00000"),
        "0x0x is read as the real address"
    );
}

#[test]
fn out_of_memory_lines() {
    let e = feed(&[
        "[HRR] Fatal: T146 Event 9268 (hipMalloc) returned 2 (out of memory) — aborting replay",
    ]);
    assert!(e.oom.is_some());
    assert!(feed(&["hipErrorOutOfMemory"]).oom.is_some());
}

#[test]
fn stop_markers_both_spellings() {
    for (t, s) in [
        (
            "[hrr] replay timed out after 1800s",
            "[hrr] replay killed by signal 6",
        ),
        (
            "[triage] replay timed out after 90s",
            "[triage] replay killed by signal 11",
        ),
    ] {
        let e = feed(&[t, s]);
        assert!(
            e.timeout_marker.is_some() && e.signal_marker.is_some(),
            "{t} / {s}"
        );
    }
    assert_eq!(
        feed(&["[triage] replay killed by signal 11"]).signal_marker,
        Some(11)
    );
    assert_eq!(
        feed(&["[hrr] replay timed out after 1800s"]).timeout_marker,
        Some(1800)
    );
}

#[test]
fn capture_hip_so_and_crlf() {
    let e = feed(&[
        "[capture] HIP_SO=/opt/rocm/lib/libamdhip64.so.7\r",
        "[HRR] PASS\r",
    ]);
    assert_eq!(
        e.capture_hip_so.as_deref(),
        Some("/opt/rocm/lib/libamdhip64.so.7")
    );
    assert_eq!(e.verdict, Some(true), "a pty's CRLF line ends are accepted");
}

#[test]
fn the_rule_set_has_no_unicode_word_boundary() {
    // A Unicode `\b` stops the set's lazy DFA on any non-ASCII byte, and a
    // log of binary garbage is then scanned by the PikeVM, ~500x slower.
    for (pattern, _, _) in super::RULE_TABLE {
        let stripped = pattern.replace(r"(?-u:\b)", "");
        assert!(
            !stripped.contains(r"\b") && !stripped.contains(r"\B"),
            "{pattern}: write an ASCII boundary (?-u:\\b)"
        );
    }
}

#[test]
fn complete_yes_no_still_needs_a_word_boundary() {
    let e = feed(&["Complete:  yesterday"]);
    assert_eq!(e.info.complete, None);
    let e = feed(&["Complete:  no (torn record discarded)"]);
    assert_eq!(e.info.complete, Some(false));
    assert!(e.info.torn);
}

// ---- reference/playback-output.md §10 -------------------------------------

#[test]
fn rocr_nil_addresses_read_as_zero() {
    let e = feed(&["Memory access fault by GPU node-3 (Agent handle: (nil)) on address (nil)(may not be exact address). Reason: Page not present or supervisor privilege."]);
    let m = e.memory_fault.unwrap();
    assert_eq!((m.node, m.address.as_str(), m.inexact), (3, "0x0", true));
    let b = feed(&["Memory Fault Error [GPU index: 0, faulting addr: (nil), kernel: k]"]);
    assert_eq!(b.fault_error, Some((Some("0x0".into()), Some("k".into()))));
}

#[test]
fn null_argument_lines() {
    let e = feed(&[
        "[HRR] 'vector_add' arg[2]: recorded 0x7f0000400000 is in no known allocation — passing null so it faults at first use",
        "[HRR] 'saxpy' arg[0]: recorded 0x1234 is in no known allocation — passing null so it faults at first use",
    ]);
    assert_eq!(e.null_args_total, 2);
    let a = &e.null_args[0];
    assert_eq!(
        (a.kernel.as_str(), a.arg, a.address.as_str()),
        ("vector_add", 2, "0x7f0000400000")
    );
    assert_eq!(e.replay_lines, 2);
}

#[test]
fn out_of_resources_abort_keeps_free_memory_and_kernel() {
    let e = feed(&["Callback: Queue 0x70e817200000 Aborting with error : HSA_STATUS_ERROR_OUT_OF_RESOURCES: The runtime failed to allocate the necessary resources. Code: 0x1008 Available Free mem : 512 MB [GPU index: 1, kernel: big]"]);
    assert_eq!(e.queue_oom, Some(QueueOom { free_mb: Some(512) }));
    assert_eq!(e.queue_abort_kernel.as_deref(), Some("big"));
    assert_eq!(e.oom, None, "not an allocation OOM line");
    let warn = feed(&["Warning: Queue error - HSA_STATUS_ERROR_OUT_OF_RESOURCES"]);
    assert_eq!(warn.queue_oom, None, "a warning is no abort");
}

#[test]
fn not_found_records_the_launch_lines_before_it() {
    let e = feed(&[
        r#"[HRR launch] seq=28 kernel=1 launch=MOD grid=[64,1,1] block=[64,1,1] shared=0 args=2 snapshots=0 name="fill_ones""#,
        "[HRR] Kernel 'gone' not found in any loaded module",
    ]);
    assert_eq!(e.launch_lines, 1);
    assert_eq!(e.not_found, Some(("gone".into(), 1)));
    let l = feed(&["[HRR] Kernel 'k' launch error: 98 (invalid device function) func=0x0 grid=[1,1,1] block=[1,1,1]"]);
    assert_eq!(l.not_found, None);
    assert!(l.launch_error.is_some());
}

#[test]
fn sync_errors_name_their_api() {
    let e = feed(&[
        "[HRR] hipStreamSynchronize error 700 (an illegal memory access was encountered)",
        "[HRR] Fatal: aborting replay after error in hipStreamSynchronize",
    ]);
    let s = e.sync_error.unwrap();
    assert_eq!(
        (s.api.as_str(), s.code, s.end_of_pass),
        ("hipStreamSynchronize", Some(700), false)
    );
    let p = feed(&[
        "[HRR] Fatal: hipDeviceSynchronize after pass failed: 719 (unspecified launch failure)",
    ]);
    assert!(p.sync_error.unwrap().end_of_pass);
    let bare = feed(&["[HRR] Fatal: aborting replay after error in hipDeviceSynchronize"]);
    assert_eq!(bare.sync_error.unwrap().api, "hipDeviceSynchronize");
}

#[test]
fn cause_lines_keep_the_first() {
    use crate::finding::CauseKind as K;
    for (line, kind) in [
        ("[HRR] hipGraphAddKernelNode: not reconstructable at replay, so the call is skipped and the graph it belongs to is marked incomplete; …", K::GraphIncomplete),
        ("[HRR] hipGraphInstantiate: graph 0x7f00 is missing nodes this replay could not reconstruct (2). Refusing to instantiate it", K::GraphIncomplete),
        ("[HRR] hipMemCreate: the recording allocated on device 1 and this replay has 1 device(s)", K::DeviceCount),
        ("[HRR] Failed to load code object /a/code_objects/x.hsaco: 200 (invalid kernel file)", K::ArchiveIncomplete),
        ("[HRR] Code object x not found in archive", K::ArchiveIncomplete),
        ("[HRR] H2D blob 0000000000000001000000000000000a not found", K::ArchiveIncomplete),
        ("[HRR] __hipRegisterFatBinary: blob not found in archive", K::ArchiveIncomplete),
        (r#"[HRR] GUARD FAULT: kernel #2 "k" ran past the end of a guarded block (sync=0 last=0); 1 block(s) were guarded."#, K::GuardFault),
        ("[HRR] region OOB: kernel #2 arg[0] past its block", K::RegionOob),
        ("[HRR] refusing to read /a/blobs/x.blob (5 GiB > --max-file-bytes) (--max-file-bytes)", K::FileCap),
    ] {
        let e = feed(&[line, "[HRR] Code object later not found in archive"]);
        let c = e.cause.unwrap_or_else(|| panic!("no cause: {line}"));
        assert_eq!(c.cause.kind, kind, "{line}");
        assert_eq!(c.cause.detail, &line["[HRR] ".len()..]);
    }
    let d = feed(&[
        "[HRR] hipMemCreate: the recording allocated on device 2 and this replay has 1 device(s)",
    ]);
    assert_eq!(d.cause.unwrap().devices, Some((2, 1)));
    let g = feed(&[
        r#"[HRR] GUARD FAULT: kernel #2 "k" ran past the end of a guarded block (sync=0 last=0)"#,
    ]);
    assert_eq!(
        (g.guard_fault_seen, g.guard_fault_kernel.as_deref()),
        (true, Some("k"))
    );
    let n = feed(&["[HRR] hipGraphAddKernelNode: not reconstructable at replay, so the call is skipped and the graph it belongs to is marked incomplete"]);
    assert!(n.noop_apis.contains("hipGraphAddKernelNode"));
}

#[test]
fn device_and_runtime_lines() {
    let e = feed(&[
        "[HRR]         : /before/any/runtime/line.so",
        "[HRR] Device  : AMD Instinct MI300X (gfx942:sramecc+:xnack-)",
        "[HRR] Runtime : /opt/rocm/lib/libamd_comgr.so.3",
        "[HRR]         : /opt/rocm/lib/libamdhip64.so.7",
        "[HRR] Mode    : single-threaded",
        "[HRR]   Kernels launched: 5",
    ]);
    assert_eq!(
        e.loaded,
        [
            (
                "Device".into(),
                "AMD Instinct MI300X (gfx942:sramecc+:xnack-)".into()
            ),
            ("Runtime".into(), "/opt/rocm/lib/libamd_comgr.so.3".into()),
            ("Runtime".into(), "/opt/rocm/lib/libamdhip64.so.7".into()),
        ]
    );
    // `Device :` with one space is not the player's line
    assert!(feed(&["[HRR] Device : x"]).loaded.is_empty());
}

#[test]
fn d2h_summary_forms_and_prefixed_validate_lines() {
    let old = feed(&["[HRR]   D2H checks     : 4 pass, 1 fail"]);
    assert_eq!(
        old.d2h_summary,
        Some(D2hSummary {
            pass: 4,
            within_tol: None,
            fail: 1,
            skipped: None
        })
    );
    let mid = feed(&["[HRR]   D2H checks     : 4 pass, 1 fail, 2 skipped"]);
    assert_eq!(mid.d2h_summary.unwrap().skipped, Some(2));
    let v = feed(&[
        "[HRR] hipMemcpy3D D2H validate FAIL: expected blob not found in archive",
        "[HRR] D2H validate FAIL: src 0x7f00 not mapped — pointer translation bug",
    ]);
    assert_eq!(
        v.d2h_validate_fail,
        (
            Some("hipMemcpy3D: expected blob not found in archive".into()),
            2
        )
    );
    // a `D2H FAIL seq=` line is not a validate line
    let f = feed(&["[HRR] DtoH D2H FAIL seq=400 (exact): 64 bytes, 64/64 bytes differ, first@0 (got 0x01 exp 0x00)"]);
    assert_eq!((f.d2h_fail_lines, f.d2h_validate_fail.1), (1, 0));
}

#[test]
fn compacted_names_complete_their_launch() {
    let full = format!("{}{}", "K".repeat(110), "_tail_of_the_kernel_name");
    let short = super::super::names::compact(&full).into_owned();
    let e = feed(&[
        &format!(
            r#"[HRR launch] seq=5 kernel=1 launch=MOD grid=[1,1,1] block=[1,1,1] shared=0 args=0 snapshots=0 name="{short}""#
        ),
        &format!("[HRR] Kernel '{full}' OK"),
    ]);
    assert!(e.last_launch.unwrap().completed);
    assert!(e.launch_sync_seen);
}

#[test]
fn the_windows_crash_marker_carries_its_exception_code() {
    assert_eq!(
        feed(&["[hrr] replay crashed with 0xC0000005 (access violation)"]).exception_marker,
        Some("0xC0000005".into())
    );
    assert_eq!(
        feed(&["[hrr] replay crashed with 0x00000003 (abort)"]).exception_marker,
        Some("0x00000003".into())
    );
    assert_eq!(
        feed(&["[HRR] replay crashed with 0xC0000005 (access violation)"]).exception_marker,
        None,
        "only hrr's own marker counts"
    );
}
