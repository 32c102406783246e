//! The test player replays the archive it is given: every kernel name,
//! count and sequence id it prints comes from that archive (decoded with
//! hrr's reader), faults and hangs happen at the last launch, a capture
//! without launches still ends sensibly, and an archive the reader cannot
//! load fails the way the real loader does (reference playback-output.md
//! §2a, §2b, §2e–§2j). Expectations are written by hand from what each test
//! wrote into its archive.
#![cfg(unix)]

mod common;

use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::Output;

use common::{stderr, stdout, test_player, Sandbox};
use hrr_testkit::synth::{clean_process, crashed_process, CRASH_KERNEL};

fn examples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/crash.hrr")
}

/// Runs the player on `archive` under `scenario`, stdout and stderr piped.
fn player(archive: &Path, scenario: &str, args: &[&str]) -> Output {
    std::process::Command::new(test_player())
        .arg(archive)
        .args(args)
        .env_clear()
        .env("HRR_TEST_SCENARIO", scenario)
        .output()
        .unwrap()
}

/// Every kernel name the player's lines carry: the runtime's bracket,
/// `[HRR launch] name=`, `GPU error after '…'`, `Kernel '…' OK`, the
/// watchdog's `kernel #N "…"` and progress `last="…"`.
fn kernel_names(text: &str) -> Vec<String> {
    let re = regex::Regex::new(
        r#"kernel: ([^\]]+)\]|name="([^"]+)"|GPU error after '([^']+)'|Kernel '([^']+)'|kernel #\d+ "([^"]+)"|last="([^"]+)""#,
    )
    .unwrap();
    re.captures_iter(text)
        .map(|c| {
            c.iter()
                .skip(1)
                .flatten()
                .next()
                .unwrap()
                .as_str()
                .to_string()
        })
        .collect()
}

#[test]
fn every_failure_on_the_crash_example_names_only_its_one_kernel() {
    let pid = examples().join("pid-4243");
    let flags = [
        "--sync-after-launch",
        "--trace-kernels",
        "--verbose",
        "--progress-seconds",
        "1",
    ];
    for scenario in [
        "fault_abort",
        "fault_error",
        "queue_abort",
        "segv",
        "watchdog",
    ] {
        let out = player(&pid, scenario, &flags);
        let text = format!("{}{}", stdout(&out), stderr(&out));
        let names = kernel_names(&text);
        assert!(!names.is_empty(), "{scenario}: {text}");
        assert!(
            names.iter().all(|n| n == CRASH_KERNEL),
            "{scenario} names a kernel the archive does not hold: {names:?}\n{text}"
        );
    }
}

#[test]
fn triage_of_the_crash_example_reports_the_kernel_it_holds() {
    let sb = Sandbox::new();
    let kfd = sb.write("kfd", "");
    let out = sb
        .hrr()
        .env("HRR_TEST_SCENARIO", "fault_abort")
        .arg("-q")
        .arg("-c")
        .arg(format!("playback.path={}", test_player().display()))
        .arg("-c")
        .arg(format!("replay.kfd={}", kfd.display()))
        .arg("triage")
        .arg(examples().join("pid-4243"))
        .args(["--format", "json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let finding: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(finding["outcome"], "MAF");
    assert_eq!(finding["kernel_name"], CRASH_KERNEL);
    assert_eq!(finding["last_event_kernel"], CRASH_KERNEL);
    assert_eq!(finding["replay_signal"], 6);
}

#[test]
fn info_reports_the_decoded_archive_in_the_reference_layout() {
    let sb = Sandbox::new();
    let a = common::write_replay_archive(
        &sb.path().join("cap.hrr"),
        4242,
        &["saxpy", "fill_ones", "saxpy"],
    );
    let out = player(&a.dir, "pass", &["--info"]);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(
        stderr(&out),
        "",
        "a clean archive has no reader diagnostics"
    );
    // write_replay_archive: module load, 2 mallocs, H2D copy, saxpy,
    // fill_ones, D2H copy, saxpy, D2H copy, 2 frees, synchronize, trailer;
    // blobs: the input and two expected outputs; rows in API-id order.
    let want = format!(
        "HRR Archive: {}
========================================
Complete:     yes (clean shutdown)
Recovered:    12 events
Events:       12
Kernels:      3
Blobs:        3
Code Objects: 1
Threads:      1

Event Type Breakdown:
  Type                   Count
  ----                   -----
  hipDeviceSynchronize   1
  hipFree                2
  hipMalloc              2
  hipMemcpy              3
  hipModuleLaunchKernel  3
  hipModuleLoad          1

Kernel Summary (first 20):
  ID   Kernel                                             Grid            Block           SharedMem
  --   ------                                             ----            -----           ---------
  0    saxpy                                              [64,1,1]        [256,1,1]       0
  1    fill_ones                                          [128,1,1]       [256,1,1]       0
  2    saxpy                                              [192,1,1]       [256,1,1]       0

Kernel Call Counts:
  Kernel                                                       Calls
  ------                                                       -----
  fill_ones                                                    1
  saxpy                                                        2

",
        a.dir.display()
    );
    assert_eq!(stdout(&out), want);
}

#[test]
fn a_replay_walks_the_archive_and_faults_at_its_last_launch() {
    let sb = Sandbox::new();
    let a = common::write_replay_archive(
        &sb.path().join("cap.hrr"),
        4242,
        &["fill_ones", "vector_add", "saxpy"],
    );
    let out = player(&a.dir, "pass", &["--verbose", "--progress-seconds", "600"]);
    assert_eq!(out.status.code(), Some(0));
    let (first, err) = (&a.launches[0], stderr(&out));
    // the first completed launch always gets a progress line (§2c)
    assert!(err.contains(&format!(
        "[HRR progress] elapsed_s=0.0 seq={} kernels=1 d2h_pass=0 d2h_fail=0 d2h_attempted=0 last=\"{}\"\n",
        first.seq, first.name
    )), "{err}");
    let events = err
        .lines()
        .filter(|l| l.starts_with("[HRR] Event "))
        .count();
    assert_eq!(events as u64, a.events, "--verbose prints every event");
    let text = stdout(&out);
    assert!(text.contains("[HRR]   Kernels launched: 3\n"), "{text}");
    assert!(
        text.contains("[HRR]   D2H checks     : 2 pass (2 exact, 0 within tol), 0 fail, 0 skipped\n[HRR] PASS\n"),
        "{text}"
    );

    let last = a.last_launch();
    let out = player(&a.dir, "fault_error", &["--sync-after-event"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains(&format!(
        "[HRR] Fatal: GPU error after T{} Event {} (hipModuleLaunchKernel): 700 (an illegal memory access was encountered) — aborting\n",
        a.thread, last.seq
    )));
    let out = player(&a.dir, "fatal_api", &[]);
    // the first copy is event 3 (after the module load and two mallocs)
    assert!(stderr(&out).contains(&format!(
        "[HRR] Fatal: T{} Event 3 (hipMemcpy) returned 1 (invalid argument) — aborting replay\n",
        a.thread
    )));
}

#[test]
fn a_kernel_name_that_is_not_utf8_is_printed_as_its_recorded_bytes() {
    let sb = Sandbox::new();
    let name: &[u8] = b"saxpy_\xff\xfe<\xc0\xaf>";
    let a = common::write_replay_archive_bytes(&sb.path().join("cap.hrr"), 4242, &[b"fill", name]);
    let out = player(&a.dir, "fault_abort", &["--trace-kernels"]);
    assert_eq!(out.status.signal(), Some(6));
    let launch = [b"args=2 snapshots=0 name=\"".as_slice(), name, b"\"\n"].concat();
    let fault = [b"kernel: ".as_slice(), name, b"]\n"].concat();
    for line in [launch, fault] {
        assert!(
            out.stderr.windows(line.len()).any(|w| w == line),
            "{}",
            stderr(&out)
        );
    }
}

#[test]
fn a_capture_without_launches_ends_sensibly_in_every_scenario() {
    let sb = Sandbox::new();
    let a = common::write_replay_archive(&sb.path().join("cap.hrr"), 7, &[]);

    let out = player(&a.dir, "pass", &["--sync-after-launch", "--trace-kernels"]);
    assert_eq!(out.status.code(), Some(0));
    let text = stdout(&out);
    assert!(
        text.starts_with("[HRR] Archive : 7 events, 0 kernels, 1 blobs, 1 code objects\n"),
        "{text}"
    );
    assert!(text.contains("[HRR]   Kernels launched: 0\n"), "{text}");
    assert!(text.contains(
        "[HRR]   (no D2H validation blobs in archive -- re-capture to enable)\n[HRR] PASS\n"
    ));
    assert!(!stderr(&out).contains("[HRR launch]"));

    let out = player(&a.dir, "fault_abort", &["--sync-after-launch"]);
    assert_eq!(out.status.signal(), Some(6));
    let err = stderr(&out);
    assert!(err.contains("Memory access fault by GPU node-2"), "{err}");
    assert!(
        !err.contains("Memory Fault Error ["),
        "no kernel to name: {err}"
    );

    let out = player(&a.dir, "watchdog", &["--sync-after-launch"]);
    assert_eq!(out.status.code(), Some(124));
    assert!(stderr(&out).contains(
        "[HRR][WATCHDOG] GPU sync did not complete within 60000 ms at: end-of-pass device synchronize\n"
    ));

    let out = player(&a.dir, "fault_error", &["--sync-after-launch"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains(
        "[HRR] Fatal: hipDeviceSynchronize after pass failed: 700 (an illegal memory access was encountered)\n"
    ));

    let out = player(&a.dir, "d2h_fail", &[]);
    assert_eq!(out.status.code(), Some(99));
    assert!(
        stderr(&out).contains("needs a D2H copy"),
        "{}",
        stderr(&out)
    );

    let out = player(&a.dir, "pass", &["--info"]);
    let text = stdout(&out);
    assert!(text.contains("Kernels:      0\n"), "{text}");
    assert!(!text.contains("Kernel Summary"), "{text}");
}

#[test]
fn the_crashed_example_gets_the_readers_diagnostics() {
    let pid = examples().join("pid-4243");
    let events = crashed_process().events.events();
    let line = format!(
        "[HRR] Archive has no clean-shutdown trailer (capture likely crashed); recovered {events} events\n"
    );
    let out = player(&pid, "pass", &["--info"]);
    assert_eq!(stderr(&out), line);
    assert!(
        stdout(&out).contains("Complete:     NO (no shutdown trailer; capture likely crashed)\n")
    );
    let out = player(&pid, "pass", &[]);
    assert!(stderr(&out).starts_with(&line), "{}", stderr(&out));
}

#[test]
fn root_info_lists_each_process_with_its_decoded_numbers() {
    let root = examples();
    let out = player(&root, "pass", &["--info"]);
    assert_eq!(out.status.code(), Some(0));
    let (clean, crashed) = (clean_process(), crashed_process());
    let row = |pid: u64, parent: u64, complete: &str, events: u64, blobs: usize| {
        let path = root.join(format!("pid-{pid}"));
        format!(
            "  {pid:<12} {parent:<12} {complete:<10} {events:<12} {blobs:<10} {}\n",
            path.display()
        )
    };
    let text = stdout(&out);
    assert!(
        text.contains("Owner PID:    4242\nProcesses:    2\n"),
        "{text}"
    );
    assert!(
        text.contains(&row(
            4242,
            0,
            "yes",
            clean.events.events(),
            clean.blobs.len()
        )),
        "{text}"
    );
    assert!(
        text.contains(&row(
            4243,
            4242,
            "NO",
            crashed.events.events(),
            crashed.blobs.len()
        )),
        "{text}"
    );
}

#[test]
fn an_archive_the_reader_cannot_load_fails_like_the_real_loader() {
    let sb = Sandbox::new();
    let empty = sb.write("a.hrr/pid-1/events.bin", "");
    let out = player(empty.parent().unwrap(), "pass", &[]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(stdout(&out), "");
    assert_eq!(
        stderr(&out),
        format!(
            "[HRR] {} too short (missing file header)\n",
            empty.display()
        )
    );

    let bad = sb.write("b.hrr/pid-1/events.bin", "XXXXXXXXXXXX");
    let out = player(bad.parent().unwrap(), "pass", &["--info"]);
    assert_eq!(out.status.code(), Some(1));
    // "XXXX" read as a little-endian u32; HRR_MAGIC is 0x52524845
    assert_eq!(
        stderr(&out),
        format!(
            "[HRR] Bad magic 0x58585858 in {} (expected 0x52524845)\n",
            bad.display()
        )
    );

    let v9 = sb.path().join("c.hrr/pid-1");
    std::fs::create_dir_all(&v9).unwrap();
    std::fs::write(v9.join("events.bin"), b"EHRR\x09\x00\x00\x00").unwrap();
    let out = player(&v9, "pass", &[]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        stderr(&out),
        format!(
            "[HRR] Version mismatch in {}: file=9 reader=7\n",
            v9.join("events.bin").display()
        )
    );
}
