//! Markdown of the finding for each outcome, reviewed line by line against
//! DESIGN §6 (chat template first, zero as 0, unknown as n/a, UNKNOWN in words).

use hrr::classify::Classifier;
use hrr::finding::{Finding, ReplayInfo};
use std::io::BufReader;

fn fixture(name: &str) -> std::path::PathBuf {
    std::path::PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/fixtures")).join(name)
}

/// Classify fixture files (named by their file name, so sources carry no
/// machine path) and inline logs.
fn classify(files: &[&str], inline: &[(&str, &str)], replay: Option<&ReplayInfo>) -> Finding {
    let mut c = Classifier::new();
    for name in files {
        c.begin_input(*name);
        c.feed_reader(BufReader::new(std::fs::File::open(fixture(name)).unwrap()))
            .unwrap();
    }
    for (name, text) in inline {
        c.begin_input(*name);
        for line in text.lines() {
            c.feed_line(line.as_bytes());
        }
    }
    c.finish(None, replay, None)
}

fn replay(command: &[&str], log: &str, exit_code: Option<i32>, signal: Option<i32>) -> ReplayInfo {
    ReplayInfo {
        mode: Some("native".into()),
        command: command.iter().map(|s| s.to_string()).collect(),
        gpu: Some(0),
        log: Some(format!("/work/{log}")),
        exit_code,
        signal,
        timed_out: false,
        duration_s: Some(2.4),
        ..ReplayInfo::default()
    }
}

#[test]
fn pass() {
    insta::assert_snapshot!(hrr::render::markdown(&classify(
        &["replay_pass.log"],
        &[],
        None
    )));
}

#[test]
fn maf_inferred_kernel() {
    let f = classify(&["replay_memory_fault.log", "info_crash.txt"], &[], None);
    insta::assert_snapshot!(hrr::render::markdown(&f));
}

/// reference/playback-output.md §3b, the run as triage runs it.
const MAF_NAMED: &str = "\
[HRR] Truncated event payload (expected 184 bytes) at tail
[HRR] Recovered 17 events before the torn record
[HRR] Archive has no clean-shutdown trailer (capture likely crashed); recovered 17 events, trailing torn record discarded
:0:rocdevice.cpp            :3678: 3194366185 us:  Memory Fault Error [host: node01, GPU index: 0, faulting addr: 0x7f3a2c600000, kernel: _Z9crash_oobPKiPii]
Memory access fault by GPU node-2 (Agent handle: 0x55d5c2a1e6b0) on address 0x7f3a2c600000. Reason: Page not present or supervisor privilege.
[hrr] replay killed by signal 6
";

#[test]
fn maf_named_kernel() {
    let r = replay(
        &[
            "hrr-playback",
            "/data/crash.hrr/pid-5120",
            "--sync-after-launch",
        ],
        "hrr-replay-pid-5120.log",
        None,
        Some(6),
    );
    let f = classify(&[], &[("hrr-replay-pid-5120.log", MAF_NAMED)], Some(&r));
    insta::assert_snapshot!(hrr::render::markdown(&f));
}

const CRASHED: &str = "\
[HRR] Archive : 61 events, 5 kernels, 8 blobs, 1 code objects
[HRR] Threads : 1 captured
[HRR] [replay] Device state OK — beginning replay
[HRR progress] elapsed_s=0.0 seq=19 kernels=1 d2h_pass=0 d2h_fail=0 d2h_attempted=0 last=\"fill_ones\"
[hrr] replay killed by signal 11
";

#[test]
fn abort_replay_crashed() {
    let r = replay(
        &[
            "hrr-playback",
            "/data/cap.hrr/pid-4242",
            "--sync-after-launch",
        ],
        "hrr-replay-pid-4242.log",
        None,
        Some(11),
    );
    let f = classify(&[], &[("hrr-replay-pid-4242.log", CRASHED)], Some(&r));
    insta::assert_snapshot!(hrr::render::markdown(&f));
}

/// A Windows replay that died of an access violation: the log as hrr
/// writes it there (the player's lines, then the crash marker).
const ACCESS_VIOLATION: &str = "\
[HRR] Archive : 61 events, 5 kernels, 8 blobs, 1 code objects
[HRR] Threads : 1 captured
[HRR] [replay] Device state OK — beginning replay
[HRR progress] elapsed_s=0.0 seq=19 kernels=1 d2h_pass=0 d2h_fail=0 d2h_attempted=0 last=\"fill_ones\"
[hrr] replay crashed with 0xC0000005 (access violation)
";

#[test]
fn abort_windows_exception() {
    let r = ReplayInfo {
        exception: Some("0xC0000005".into()),
        ..replay(
            &[
                r"C:\Program Files\AMD\ROCm\6.2\bin\hrr-playback.exe",
                r"C:\caps\cap.hrr\pid-4242",
                "--sync-after-launch",
            ],
            "hrr-replay-pid-4242.log",
            None,
            None,
        )
    };
    let f = classify(
        &[],
        &[("hrr-replay-pid-4242.log", ACCESS_VIOLATION)],
        Some(&r),
    );
    insta::assert_snapshot!(hrr::render::markdown(&f));
}

#[test]
fn hang() {
    insta::assert_snapshot!(hrr::render::markdown(&classify(
        &["replay_hang_timeout.log"],
        &[],
        None
    )));
}

#[test]
fn version_mismatch() {
    insta::assert_snapshot!(hrr::render::markdown(&classify(
        &["version_mismatch.log"],
        &[],
        None
    )));
}

const NO_VERDICT: &str = "\
[HRR] Archive : 61 events, 5 kernels, 8 blobs, 1 code objects
[HRR] Threads : 1 captured
[HRR] [replay] Device state OK — beginning replay
";

#[test]
fn unknown() {
    let r = replay(
        &["hrr-playback", "/data/cap.hrr/pid-4242"],
        "hrr-replay-pid-4242.log",
        Some(1),
        None,
    );
    let f = classify(&[], &[("hrr-replay-pid-4242.log", NO_VERDICT)], Some(&r));
    insta::assert_snapshot!(hrr::render::markdown(&f));
}

#[test]
fn archive_strings_are_inert_in_markdown() {
    let hostile = "evil|`x`<img src=x>\u{1b}[2J";
    let line =
        format!("Memory Fault Error [GPU index: 0, faulting addr: 0x1000, kernel: {hostile}]");
    let f = classify(&[], &[("hostile.log", line.as_str())], None);
    assert_eq!(
        f.kernel_name.as_deref(),
        Some(hostile),
        "the finding keeps the raw name"
    );
    let md = hrr::render::markdown(&f);
    assert!(
        !md.contains('\u{1b}'),
        "no escape sequence reaches the markdown"
    );
    let kernel_rows: Vec<&str> = md.lines().filter(|l| l.starts_with("| Kernel |")).collect();
    assert_eq!(
        kernel_rows,
        ["| Kernel | ``evil\\|`x`<img src=x>`` (named by the fault report) |"]
    );
    let step = md.lines().find(|l| l.starts_with("1. ")).unwrap();
    assert!(step.contains("evil\\|\\`x\\`\\<img src=x\\>"), "{step}");
}

/// reference/playback-output.md §10.4: a graph the replay cannot rebuild,
/// with the start lines that say what the player loaded.
const GRAPH_INCOMPLETE: &str = "\
[HRR] Archive : 61 events, 5 kernels, 8 blobs, 1 code objects
[HRR] Threads : 1 captured
[HRR] Device  : AMD Instinct MI300X (gfx942:sramecc+:xnack-)
[HRR] Runtime : /opt/rocm-7.0.0/lib/libamd_comgr.so.3.0.70000
[HRR]         : /opt/rocm-7.0.0/lib/libamdhip64.so.7.0.70000
[HRR] [replay] Device state OK — beginning replay
[HRR] hipGraphAddMemcpyNode1D: not reconstructable at replay, so the call is skipped and the graph it belongs to is marked incomplete; the graph is refused at instantiation
[HRR] hipGraphInstantiate: graph 0x55d5c2a1f000 is missing nodes this replay could not reconstruct (1 skipped). Refusing to instantiate it
[HRR] Fatal: T7 Event 120 (hipGraphInstantiate) returned 1 (invalid argument) — aborting replay
[HRR] Replay aborted due to fatal HIP error — exiting
";

#[test]
fn abort_with_a_cause() {
    let r = replay(
        &[
            "hrr-playback",
            "--sync-after-launch",
            "--trace-kernels",
            "/data/cap.hrr/pid-4242",
        ],
        "hrr-replay-pid-4242.log",
        Some(1),
        None,
    );
    let f = classify(
        &[],
        &[("hrr-replay-pid-4242.log", GRAPH_INCOMPLETE)],
        Some(&r),
    );
    insta::assert_snapshot!(hrr::render::markdown(&f));
}

/// §10.2: `Kernel '…' not found` comes before that launch's `[HRR launch]`
/// line, which never comes.
const NOT_FOUND: &str = "\
[HRR launch] seq=28 kernel=1 launch=MOD grid=[64,1,1] block=[64,1,1] shared=0 args=2 snapshots=0 name=\"fill_ones\"
[HRR] Kernel '_Z13missing_kernelPf' not found in any loaded module
[HRR] Fatal: T4242 Event 44 (hipModuleLaunchKernel) returned 500 (named symbol not found) — aborting replay
[HRR] Replay aborted due to fatal HIP error — exiting
";

#[test]
fn abort_kernel_not_found() {
    let f = classify(&[], &[("hrr-replay-pid-4242.log", NOT_FOUND)], None);
    insta::assert_snapshot!(hrr::render::markdown(&f));
}
