//! Line shapes of `hrr-playback` logs, `--info` dumps, the ROCm runtime's fault
//! lines and the replay runner's stop markers (reference/playback-output.md §2,
//! upstream-triage.md §2.10 and §7.2), and what each contributes to the
//! [`Evidence`].
//!
//! Matching is two-tier. The shapes that dominate a verbose log (`[HRR] Event
//! N:`, argument lines, `[HRR launch]`, `[HRR progress]`, `Kernel '…' OK`) are
//! recognised by their fixed prefix and parsed by hand. Every other line goes
//! through one [`RegexSet`]; only when it matches are the captures of the
//! matching rules computed.

use super::evidence::*;
use super::info_tables::{table_row, Section};
use crate::finding::CauseKind;
use regex::{Captures, Regex, RegexSet};
use std::sync::LazyLock;

/// Per-input parsing state.
#[derive(Debug, Default)]
pub(crate) struct InputState {
    /// Current `--info` table.
    pub section: Section,
    /// This input carried an `HRR Archive:` header (an `--info` dump).
    pub info_dump: bool,
    /// Lines of this input that only a replay prints.
    pub replay_lines: u64,
    /// This input printed `[HRR] Runtime :`, so a `[HRR]         :
    /// <library>` line (eight spaces for the label) names one more library.
    pub runtime_seen: bool,
}

type Handler = fn(&Captures<'_>, &str, &mut Evidence, &mut InputState);

struct Rule {
    re: Regex,
    replay: bool,
    apply: Handler,
}

struct Rules {
    set: RegexSet,
    list: Vec<Rule>,
}

pub(crate) fn u(c: &Captures<'_>, i: usize) -> u64 {
    c.get(i).and_then(|m| m.as_str().parse().ok()).unwrap_or(0)
}

fn opt_u(c: &Captures<'_>, i: usize) -> Option<u64> {
    c.get(i).and_then(|m| m.as_str().parse().ok())
}

fn s(c: &Captures<'_>, i: usize) -> String {
    c.get(i)
        .map_or_else(String::new, |m| m.as_str().to_string())
}

fn call(c: &Captures<'_>) -> FailedCall {
    FailedCall {
        thread: u(c, 1),
        index: u(c, 2),
        api: s(c, 3),
        code: c.get(4).and_then(|m| m.as_str().parse().ok()).unwrap_or(0),
        message: s(c, 5),
    }
}

/// `(pattern, printed only by a replay, handler)` for every regex-matched shape.
const RULE_TABLE: &[(&str, bool, Handler)] = &[
    // --info (reference/playback-output.md §2a)
    (r"^HRR Archive(?: Root)?: (.*)$", false, |c, _, e, st| {
        st.info_dump = true;
        e.info.path.get_or_insert_with(|| s(c, 1));
    }),
    // `(?-u:\b)`: an ASCII word boundary. A Unicode `\b` anywhere in the
    // set makes the lazy DFA give up on every non-ASCII line and fall back to
    // the PikeVM (0.4 MB/s on binary garbage instead of 250 MB/s).
    (
        r"(?i)^complete:\s+(yes|no)(?-u:\b)(.*)$",
        false,
        |c, _, e, _| {
            if e.info.complete.is_none() {
                e.info.complete = Some(c[1].eq_ignore_ascii_case("yes"));
                e.info.torn = c[2].contains("torn record discarded");
            }
        },
    ),
    (r"^Recovered:\s+(\d+) events", false, |c, _, e, _| {
        e.info.recovered = opt_u(c, 1)
    }),
    (r"^Events:\s+(\d+)\s*$", false, |c, _, e, _| {
        e.info.events = opt_u(c, 1)
    }),
    (r"^Kernels:\s+(\d+)\s*$", false, |c, _, e, _| {
        e.info.kernels = opt_u(c, 1)
    }),
    (r"^Blobs:\s+(\d+)\s*$", false, |c, _, e, _| {
        e.info.blobs = opt_u(c, 1)
    }),
    (r"^Code Objects:\s*(\d+)\s*$", false, |c, _, e, _| {
        e.info.code_objects = opt_u(c, 1)
    }),
    (r"^Threads:\s+(\d+)\s*$", false, |c, _, e, _| {
        e.info.threads = opt_u(c, 1)
    }),
    (r"^Event Type Breakdown:", false, |_, _, _, st| {
        st.section = Section::Breakdown
    }),
    (r"^Kernel Summary \(first \d+\):", false, |_, _, _, st| {
        st.section = Section::Summary
    }),
    (r"^Kernel Call Counts:", false, |_, _, _, st| {
        st.section = Section::CallCounts
    }),
    (r"^Event Log:", false, |_, _, _, st| {
        st.section = Section::EventLog
    }),
    (r"^  PID\s+Parent PID\s+Complete", false, |_, _, _, st| {
        st.section = Section::RootTable
    }),
    // reader diagnostics (§2a) — printed by --info and by a replay alike
    (
        r"^\[HRR\] Archive has no clean-shutdown trailer \(capture likely crashed\); recovered (\d+) events(, trailing torn record discarded)?",
        false,
        |c, _, e, _| {
            e.reader.no_trailer_recovered = opt_u(c, 1);
            e.reader.torn |= c.get(2).is_some();
        },
    ),
    (
        r"^\[HRR\] (?:Truncated event header|Torn trailing record|Implausible payload_length|Truncated event payload|Recovered \d+ events before the torn record)",
        false,
        |_, _, e, _| e.reader.torn = true,
    ),
    (
        r"^\[HRR\] Clean-shutdown trailer counts (\d+) events but (\d+) precede it",
        false,
        |c, _, e, _| {
            e.reader.trailer_mismatch = Some((u(c, 1), u(c, 2)));
        },
    ),
    (
        r"^\[HRR\] Ignored (\d+) records after the clean-shutdown trailer",
        false,
        |c, _, e, _| {
            e.reader.records_after_trailer = opt_u(c, 1);
        },
    ),
    (
        r"^\s*archive format version : (\d+)\s*$",
        false,
        |c, _, e, _| {
            e.reader_version = c[1].parse().ok();
        },
    ),
    (r"\[capture\] HIP_SO=(\S+)", false, |c, _, e, _| {
        e.capture_hip_so = Some(s(c, 1))
    }),
    // replay start (§2b)
    (
        r"^\[HRR\] Archive : (\d+) events, (\d+) kernels, (\d+) blobs, (\d+) code objects",
        true,
        |c, _, e, _| e.reader.header = Some([u(c, 1), u(c, 2), u(c, 3), u(c, 4)]),
    ),
    (r"^\[HRR\] Threads : (\d+) captured", true, |c, _, e, _| {
        e.reader.threads = opt_u(c, 1)
    }),
    // what the player loaded (§2b rows 5-6, §10.4): `Device` has two
    // spaces before its colon; `Runtime ` is followed by one `[HRR]` line of
    // eight spaces per further library
    (r"^\[HRR\] Device  : (.+)$", true, |c, _, e, _| {
        add_loaded(e, "Device", &c[1]);
    }),
    (r"^\[HRR\] Runtime : (.+)$", true, |c, _, e, st| {
        add_loaded(e, "Runtime", &c[1]);
        st.runtime_seen = true;
    }),
    (r"^\[HRR\] {9}: (.+)$", true, |c, _, e, st| {
        if st.runtime_seen {
            add_loaded(e, "Runtime", &c[1]);
        }
    }),
    (
        r"^\[HRR\] \[replay\] Device state OK",
        true,
        |_, _, e, _| e.replay_started = true,
    ),
    // placement (§2h)
    (r"^\[HRR\] Placement : off \((.*)\)$", true, |c, _, e, _| {
        e.placement.off.get_or_insert_with(|| s(c, 1));
    }),
    (
        r"^\[HRR\] Placement : \d+ range\(s\), [0-9.]+ MiB reserved at recorded addresses",
        true,
        |_, _, e, _| e.placement.active = true,
    ),
    (
        r"^\[HRR\]\s+Placement\s+: (\d+) placed at capture address, (\d+) fell back",
        true,
        |c, _, e, _| e.placement.summary = Some((u(c, 1), u(c, 2))),
    ),
    (
        r"^\[HRR\] Placement: (.+?)(?: (0x[0-9a-fA-F]+))?(?: \(\d+ bytes\))? not placed at its recorded address: (.*?)\. It replays elsewhere",
        true,
        |c, _, e, _| {
            let p = &mut e.placement;
            p.named_total += 1;
            if p.named.len() < LIST_CAP {
                p.named.push(match c.get(2) {
                    Some(addr) => format!("{} {}: {}", &c[1], addr.as_str(), &c[3]),
                    None => format!("{}: {}", &c[1], &c[3]),
                });
            }
        },
    ),
    // not-replayed APIs, null handles (§2d, §2e, upstream-triage §9)
    (
        r"^\[HRR\] NOOP playback handler called for (\S+)",
        true,
        |c, _, e, _| e.add_noop_api(&c[1]),
    ),
    (
        r"^\[HRR\] (\S+): NOT REPLAYABLE — ",
        true,
        |c, _, e, _| e.add_noop_api(&c[1]),
    ),
    (
        r"explicit \(node-API\) graph construction is NOT supported",
        true,
        |_, _, e, _| {
            e.graph_construction_unsupported = true;
        },
    ),
    // cause-bearing lines (§10.4)
    (
        r"^\[HRR\] (\S+): not reconstructable at replay, so the call is skipped and the graph it belongs to is marked incomplete",
        true,
        |c, line, e, _| {
            e.add_noop_api(&c[1]);
            e.set_cause(CauseKind::GraphIncomplete, line, None);
        },
    ),
    (
        r"^\[HRR\] hipGraphInstantiate: graph 0x[0-9a-fA-F]+ is missing nodes this replay could not reconstruct",
        true,
        |_, line, e, _| e.set_cause(CauseKind::GraphIncomplete, line, None),
    ),
    (
        r"^\[HRR\] hipMemCreate: the recording allocated on device (-?\d+) and this replay has (-?\d+) device\(s\)",
        true,
        |c, line, e, _| {
            let n = |i: usize| c[i].parse().unwrap_or(0);
            e.set_cause(CauseKind::DeviceCount, line, Some((n(1), n(2))));
        },
    ),
    (
        r"^\[HRR\] (?:Failed to load code object .*: -?\d+ \(.*\)|Code object .* not found in archive|H2D blob .* not found|__hipRegisterFatBinary: blob not found in archive)",
        true,
        |_, line, e, _| e.set_cause(CauseKind::ArchiveIncomplete, line, None),
    ),
    (r"^\[HRR\] GUARD FAULT: (.*)$", true, |c, line, e, _| {
        e.guard_fault_seen = true;
        if e.guard_fault_kernel.is_none() {
            e.guard_fault_kernel = GUARD_KERNEL.captures(&c[1]).map(|k| s(&k, 1));
        }
        e.set_cause(CauseKind::GuardFault, line, None);
    }),
    (r"^\[HRR\] region OOB: ", true, |_, line, e, _| {
        e.region_oob += 1;
        e.set_cause(CauseKind::RegionOob, line, None);
    }),
    (
        r"^\[HRR\] [Rr]efusing to read .*\(--max-file-bytes\)",
        true,
        |_, line, e, _| e.set_cause(CauseKind::FileCap, line, None),
    ),
    // a null kernel argument, printed without --verbose (§10.4)
    (
        r"^\[HRR\] '(.*)' arg\[(\d+)\]: recorded (0x[0-9a-fA-F]+) is in no known allocation",
        true,
        |c, _, e, _| {
            e.null_args_total += 1;
            if e.null_args.len() < LIST_CAP {
                e.null_args.push(NullArg {
                    kernel: s(c, 1),
                    arg: u(c, 2),
                    address: s(c, 3),
                });
            }
        },
    ),
    // fatal and error lines (§2e)
    (
        r"^\[HRR\] Fatal: T(\d+) Event (\d+) \(([^)]*)\) returned (-?\d+) \((.*)\)",
        true,
        |c, _, e, _| {
            e.fatal_call.get_or_insert_with(|| call(c));
        },
    ),
    (
        r"^\[HRR\] Fatal: GPU error after T(\d+) Event (\d+) \(([^)]*)\): (-?\d+) \((.*)\)",
        true,
        |c, _, e, _| {
            e.fatal_gpu.get_or_insert_with(|| call(c));
        },
    ),
    (
        r"^\[HRR\] Fatal: aborting replay after error in (\S+)",
        true,
        |c, _, e, _| {
            let api = s(c, 1);
            match &mut e.sync_error {
                Some(se) if se.api == api || se.api.is_empty() => se.api = api,
                Some(_) => {}
                None => {
                    e.sync_error = Some(SyncError {
                        api,
                        ..SyncError::default()
                    })
                }
            }
        },
    ),
    (
        r"^\[HRR\] (hipDeviceSynchronize|hipStreamSynchronize) error (-?\d+) \((.*)\)",
        true,
        |c, _, e, _| {
            e.sync_error.get_or_insert_with(|| SyncError {
                api: s(c, 1),
                code: c[2].parse().ok(),
                message: s(c, 3),
                end_of_pass: false,
            });
        },
    ),
    (
        r"^\[HRR\] Fatal: hipDeviceSynchronize after pass failed: (-?\d+) \((.*)\)",
        true,
        |c, _, e, _| {
            e.sync_error.get_or_insert_with(|| SyncError {
                api: "hipDeviceSynchronize".into(),
                code: c[1].parse().ok(),
                message: s(c, 2),
                end_of_pass: true,
            });
        },
    ),
    (
        r"^\[HRR\] Fatal: replay still running after (\d+) s \(--max-wall-seconds\)",
        true,
        |c, _, e, _| e.wall_limit_s = opt_u(c, 1),
    ),
    (
        r"^\[HRR\] (?:\[(?:replay|warm-up)\] FATAL: |Fatal: |Fatal error )",
        true,
        |_, line, e, _| {
            e.fatal_text
                .get_or_insert_with(|| line["[HRR] ".len()..].to_string());
        },
    ),
    (
        r"^\[HRR\] GPU error after '(.*)': (-?\d+) \(([^)]*)\)",
        true,
        |c, _, e, _| {
            e.gpu_error
                .get_or_insert_with(|| (s(c, 1), c[2].parse().unwrap_or(0), s(c, 3)));
        },
    ),
    (
        r"^\[HRR\] Replay aborted due to fatal HIP error",
        true,
        |_, _, e, _| {
            e.replay_aborted = true;
        },
    ),
    (
        r"^\[HRR\] Error: T(\d+) Event (\d+) \(([^)]*)\) returned (-?\d+) \((.*)\) — continuing",
        true,
        |c, _, e, _| {
            e.continued_errors.1 += 1;
            e.continued_errors.0.get_or_insert_with(|| call(c));
        },
    ),
    (r"^\[HRR\]\s+Events failed\s+: (\d+)", true, |c, _, e, _| {
        e.events_failed = opt_u(c, 1)
    }),
    (
        r"^\[HRR\] Kernel '(.*)' (launch error: .*|not found in any loaded module)$",
        true,
        |c, _, e, _| {
            if c[2].starts_with("not found") && e.not_found.is_none() {
                // Printed before that launch's `[HRR launch]` line, which
                // never comes (§10.2): the last one is the launch before.
                e.not_found = Some((s(c, 1), e.launch_lines));
            }
            e.launch_error.get_or_insert_with(|| (s(c, 1), s(c, 2)));
        },
    ),
    (
        r"^\[HRR\] (No GPU devices found|Cannot open .*|.* too short \(missing file header\)|Bad magic .*|Refusing .*\(--max-events\).*|Archive root .* contains multiple process captures.*|HIP error -?\d+ \(.*\) at \S+:\d+|No archive path specified)$",
        true,
        |c, _, e, _| {
            e.setup_error.get_or_insert_with(|| s(c, 1));
        },
    ),
    // version mismatch (§2f): both the current and the older reader's form
    (
        r"^\[HRR\] Version mismatch(?: in (.*))?: file=(\d+) reader=(\d+)",
        true,
        |c, _, e, _| {
            e.version_mismatch.get_or_insert_with(|| {
                (
                    c[2].parse().unwrap_or(0),
                    c[3].parse().unwrap_or(0),
                    c.get(1).map(|m| m.as_str().to_string()),
                )
            });
        },
    ),
    // summary block and verdict (§2g)
    (
        r"^\[HRR\]\s+Kernels launched:\s*(\d+)",
        true,
        |c, _, e, _| {
            e.kernels_launched = opt_u(c, 1);
        },
    ),
    (
        r"^\[HRR\]\s+D2H checks\s+: (\d+) pass(?: \((\d+) exact, (\d+) within tol\))?, (\d+) fail(?:, (\d+) skipped)?",
        true,
        |c, _, e, _| {
            e.d2h_summary = Some(D2hSummary {
                pass: u(c, 1),
                within_tol: opt_u(c, 3),
                fail: u(c, 4),
                skipped: opt_u(c, 5),
            });
        },
    ),
    (
        r"^\[HRR\]\s+GPU (kernel|graph|total) time\s*: ([0-9.]+) ms",
        true,
        |c, _, e, _| {
            let slot = match &c[1] {
                "kernel" => 0,
                "graph" => 1,
                _ => 2,
            };
            e.gpu_ms[slot] = c[2].parse().ok();
        },
    ),
    (
        r"^\[HRR\]\s+Untranslated\s+: (\d+) kernel-arg pointer",
        true,
        |c, _, e, _| {
            e.untranslated = opt_u(c, 1);
        },
    ),
    (
        r"^\[HRR\] ERROR: (\d+) D2H validation event\(s\) attempted but 0 pass/fail recorded",
        true,
        |c, _, e, _| e.d2h_all_skipped = opt_u(c, 1),
    ),
    (r"^\[HRR\] (PASS|FAIL)$", true, |c, _, e, _| {
        e.verdict = Some(&c[1] == "PASS")
    }),
    (
        r"^\[HRR\] \S+ D2H FAIL seq=(\d+)(?: \(exact\))?: \d+ bytes, (\d+)/(\d+) bytes differ",
        true,
        |c, line, e, _| d2h_fail_line(c, line, e),
    ),
    (
        r"^\[HRR\] (?:(?:(\S+) )?D2H validate FAIL: (.*)|(hipMemcpyDtoH(?:Async)?: src 0x[0-9a-fA-F]+ not mapped) — D2H validate FAIL)",
        true,
        |c, _, e, _| {
            e.d2h_validate_fail.1 += 1;
            let why = match (c.get(1), c.get(2)) {
                (Some(api), Some(why)) => format!("{}: {}", api.as_str(), why.as_str()),
                (None, Some(why)) => why.as_str().to_string(),
                _ => s(c, 3),
            };
            e.d2h_validate_fail.0.get_or_insert(why);
        },
    ),
    (
        r"^\[HRR\] replay DIVERGED at recorded event seq (\d+): (\d+)/(\d+) D2H validations failed \(([0-9.]+)% >= ([0-9.]+)% threshold\)",
        true,
        |c, _, e, _| {
            e.divergence = Some(Divergence {
                seq: opt_u(c, 1),
                failed: u(c, 2),
                attempted: u(c, 3),
                percent: Some((s(c, 4), s(c, 5))),
            });
        },
    ),
    (
        r"^\[HRR\] Replay stopped: data divergence exceeded threshold \((\d+)/(\d+) D2H validations failed\)",
        true,
        |c, _, e, _| {
            e.divergence.get_or_insert_with(|| Divergence {
                seq: None,
                failed: u(c, 1),
                attempted: u(c, 2),
                percent: None,
            });
        },
    ),
    // watchdog (§2i)
    (
        r"^\[HRR\]\[WATCHDOG\] GPU sync did not complete within (\d+) ms at: (.*)$",
        true,
        |c, _, e, _| watchdog_line(c, e),
    ),
    // ROCm runtime (§2j)
    (
        // `%p` of a null pointer prints `(nil)` (glibc); the `%s` after the
        // address is empty or `(may not be exact address)`, no space between
        r"Memory access fault by GPU node-(\d+)(?: \(Agent handle: (?:0x[0-9a-fA-F]+|\(nil\))\))? on address (0x[0-9a-fA-F]+|\(nil\)) ?(\(may not be exact address\))?\.\s*Reason: (.*?)\.?\s*$",
        true,
        |c, _, e, _| {
            e.memory_fault.get_or_insert_with(|| MemoryFault {
                node: c[1].parse().unwrap_or(0),
                address: pointer(&c[2]),
                inexact: c.get(3).is_some(),
                reason: s(c, 4),
            });
        },
    ),
    (r"Memory Fault Error \[(.*)\]", true, |c, _, e, _| {
        fault_error_bracket(&c[1], e)
    }),
    (r"HSA_STATUS_ERROR_([A-Z_]+)", true, |c, line, e, _| {
        queue_status(&c[1], line, e)
    }),
    (r"^\s*Kernel Name: (\S.*?)\s*$", true, |c, _, e, _| {
        e.hang_analysis_kernel.get_or_insert_with(|| s(c, 1));
    }),
    (
        r"kernarg_address=(?:0x)?(0x[0-9a-fA-F]+)",
        true,
        |c, _, e, _| {
            e.kernarg_address.get_or_insert_with(|| s(c, 1));
        },
    ),
    (
        r"grid=\[([^\]]*)\], workgroup=\[([^\]]*)\]",
        true,
        |c, _, e, _| {
            e.grid_workgroup
                .get_or_insert_with(|| (format!("[{}]", &c[1]), format!("[{}]", &c[2])));
        },
    ),
    (
        r"(?i)out of memory|hipErrorOutOfMemory",
        true,
        |_, line, e, _| {
            // A placement fallback "mapping it failed (out of memory)" is not a
            // replay OOM: the allocation falls back to a plain hipMalloc (§2i).
            if !line.starts_with("[HRR] Placement") {
                e.oom.get_or_insert_with(|| line.to_string());
            }
        },
    ),
    // replay runner stop markers (DESIGN §7, upstream-triage §2.10)
    (
        r"^\[(?:hrr|triage)\] replay timed out after (\d+) ?s",
        true,
        |c, _, e, _| {
            e.timeout_marker = opt_u(c, 1);
        },
    ),
    (
        r"^\[(?:hrr|triage)\] replay killed by signal (\d+)",
        true,
        |c, _, e, _| {
            e.signal_marker = c[1].parse().ok();
        },
    ),
    (
        r"^\[hrr\] replay crashed with (0x[0-9A-F]{8}) \(",
        true,
        |c, _, e, _| {
            e.exception_marker = Some(c[1].to_string());
        },
    ),
];

static RULES: LazyLock<Rules> = LazyLock::new(|| {
    let patterns: Vec<&str> = RULE_TABLE.iter().map(|r| r.0).collect();
    Rules {
        set: RegexSet::new(&patterns).expect("rule patterns compile"),
        list: RULE_TABLE
            .iter()
            .map(|&(p, replay, apply)| Rule {
                re: Regex::new(p).expect("rule pattern compiles"),
                replay,
                apply,
            })
            .collect(),
    }
});

static D2H_FIT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"best fit (\S+): .*max\|d\|=(\S+) maxrel=(\S+)").expect("compiles")
});
static WATCHDOG_AT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"^kernel #(\d+) "(.*)" \(seq=(\d+), grid=(\[[^\]]*\]) block=(\[[^\]]*\])\)"#)
        .expect("compiles")
});
static FAULT_ADDR: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"faulting addr: (0x[0-9a-fA-F]+|\(nil\))").expect("compiles"));
static GUARD_KERNEL: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r#"^kernel #\d+ "(.*)" ran past"#).expect("compiles"));
static FREE_MEM: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"Available Free mem : (\d+) MB").expect("compiles"));

/// A printed `%p`: glibc's `(nil)` is address 0.
fn pointer(p: &str) -> String {
    if p == "(nil)" {
        "0x0".into()
    } else {
        p.to_string()
    }
}

fn add_loaded(e: &mut Evidence, label: &str, value: &str) {
    let entry = (label.to_string(), value.trim().to_string());
    if e.loaded.len() < LIST_CAP && !e.loaded.contains(&entry) {
        e.loaded.push(entry);
    }
}
static ABORT_KERNEL: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)aborting with error.*\[[^\]]*kernel: ([^\]]+)\]").expect("compiles")
});
static STATUS_HEX: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?i)\bcode: (0x[0-9a-fA-F]+)").expect("compiles"));

fn d2h_fail_line(c: &Captures<'_>, line: &str, e: &mut Evidence) {
    e.d2h_fail_lines += 1;
    let seq = u(c, 1);
    e.d2h_first_fail_seq.get_or_insert(seq);
    let mut this = D2hWorst {
        seq,
        bytes_differ: (u(c, 2), u(c, 3)),
        ..D2hWorst::default()
    };
    if let Some(f) = D2H_FIT.captures(line) {
        this.fit = Some(s(&f, 1));
        this.max_abs = f[2].parse().ok();
        this.max_rel = f[3].parse().ok();
    }
    let worse = match &e.d2h_worst {
        None => true,
        Some(w) => match (this.max_abs, w.max_abs) {
            (Some(a), Some(b)) => a > b,
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (None, None) => {
                // exact mode: compare the fraction of differing bytes
                let frac = |d: (u64, u64)| d.0 as f64 / d.1.max(1) as f64;
                frac(this.bytes_differ) > frac(w.bytes_differ)
            }
        },
    };
    if worse {
        e.d2h_worst = Some(this);
    }
}

fn watchdog_line(c: &Captures<'_>, e: &mut Evidence) {
    let at = s(c, 2);
    let launch = WATCHDOG_AT.captures(&at).map(|k| Launch {
        ordinal: u(&k, 1),
        name: s(&k, 2),
        seq: u(&k, 3),
        grid: Some(s(&k, 4)),
        block: Some(s(&k, 5)),
        completed: false,
    });
    e.watchdog.get_or_insert(Watchdog {
        ms: u(c, 1),
        at,
        launch,
    });
}

fn fault_error_bracket(inside: &str, e: &mut Evidence) {
    let addr = FAULT_ADDR.captures(inside).map(|m| pointer(&m[1]));
    let kernel = inside
        .split_once(", kernel: ")
        .or_else(|| inside.strip_prefix("kernel: ").map(|k| ("", k)))
        .map(|(_, k)| k.trim().to_string())
        .filter(|k| !k.is_empty());
    if e.fault_error.is_none() {
        e.fault_error = Some((addr, kernel));
    }
}

fn queue_status(code: &str, line: &str, e: &mut Evidence) {
    let abort = line.to_ascii_lowercase().contains("aborting with error");
    let hex = STATUS_HEX.captures(line).map(|m| s(&m, 1));
    if abort && e.queue_abort_kernel.is_none() {
        e.queue_abort_kernel = ABORT_KERNEL.captures(line).map(|m| m[1].trim().to_string());
    }
    if abort && code == "OUT_OF_RESOURCES" && e.queue_oom.is_none() {
        e.queue_oom = Some(QueueOom {
            free_mb: FREE_MEM.captures(line).and_then(|m| m[1].parse().ok()),
        });
    }
    if let Some(q) = e.queue_statuses.iter_mut().find(|q| q.code == code) {
        q.abort |= abort;
        if q.hex.is_none() {
            q.hex = hex;
        }
    } else if e.queue_statuses.len() < LIST_CAP {
        e.queue_statuses.push(QueueStatus {
            code: code.to_string(),
            hex,
            abort,
        });
    }
}

/// Feed one line (without its line terminator) to the rules.
pub(crate) fn apply(line: &str, e: &mut Evidence, st: &mut InputState) {
    let line = line.trim_end_matches(['\r', ' ', '\t']);
    if line.is_empty() {
        st.section = Section::None;
        return;
    }
    if let Some(rest) = line.strip_prefix("[HRR") {
        if super::hot_lines::apply(rest, e) {
            st.replay_lines += 1;
            e.replay_lines += 1;
            return;
        }
    }
    if st.section != Section::None && line.starts_with("  ") && table_row(line, e, st) {
        return;
    }
    let rules = &*RULES;
    if !rules.set.is_match(line) {
        return;
    }
    let mut replay = false;
    for i in rules.set.matches(line).iter() {
        let rule = &rules.list[i];
        if let Some(c) = rule.re.captures(line) {
            (rule.apply)(&c, line, e, st);
            replay |= rule.replay;
        }
    }
    if replay {
        st.replay_lines += 1;
        e.replay_lines += 1;
    }
}

#[cfg(test)]
#[path = "rules_tests.rs"]
mod tests;
