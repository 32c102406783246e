//! What the line rules gather from replay logs and `--info` dumps.
//!
//! Evidence only accumulates: a field is set when its line shape is seen and
//! is never cleared by a later input, so an `--info` dump read after a log
//! (or before it) cannot erase the log's progress or fault lines. Log lines
//! and `--info` lines fill disjoint fields, which makes the result
//! independent of input order. Lists are capped so memory stays bounded
//! whatever the log size.

use std::collections::BTreeSet;

/// Most entries any evidence list keeps (names, fallbacks, APIs).
pub const LIST_CAP: usize = 64;

/// `--info` facts about the archive.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct InfoFacts {
    /// `HRR Archive: <path>` (or `HRR Archive Root: <path>`).
    pub path: Option<String>,
    /// `Complete:` yes/NO.
    pub complete: Option<bool>,
    /// `Complete:     NO (crash-truncated; trailing torn record discarded)`.
    pub torn: bool,
    /// `Recovered:` (always equal to `Events:`).
    pub recovered: Option<u64>,
    /// `Events:`.
    pub events: Option<u64>,
    /// `Kernels:` (launch events).
    pub kernels: Option<u64>,
    /// `Blobs:`.
    pub blobs: Option<u64>,
    /// `Code Objects:`.
    pub code_objects: Option<u64>,
    /// `Threads:`.
    pub threads: Option<u64>,
    /// Sum of the launch rows of the Event Type Breakdown (fallback for `Kernels:`).
    pub breakdown_launches: Option<u64>,
    /// Untruncated kernel names from the Kernel Summary rows, first seen first.
    pub summary_names: Vec<String>,
    /// The Kernel Summary said `... and N more`.
    pub summary_incomplete: bool,
    /// Kernel Call Counts rows `(name, calls)`; names may end in `...`.
    pub call_counts: Vec<(String, u64)>,
    /// Kernel Call Counts rows seen (distinct kernels; the name list is capped).
    pub call_count_rows: u64,
    /// Process ids of an archive-root table, with their `Complete` column.
    pub root_processes: Vec<(u64, bool)>,
}

/// Reader diagnostics and the replay's `[HRR] Archive :` header line.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ReaderFacts {
    /// `Archive has no clean-shutdown trailer …; recovered N events`.
    pub no_trailer_recovered: Option<u64>,
    /// A torn tail record was discarded.
    pub torn: bool,
    /// `Clean-shutdown trailer counts N events but M precede it`.
    pub trailer_mismatch: Option<(u64, u64)>,
    /// `Ignored N records after the clean-shutdown trailer`.
    pub records_after_trailer: Option<u64>,
    /// `[HRR] Archive : E events, K kernels, B blobs, C code objects`.
    pub header: Option<[u64; 4]>,
    /// `[HRR] Threads : N captured`.
    pub threads: Option<u64>,
}

/// One `[HRR progress]` line.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Progress {
    /// `elapsed_s`.
    pub elapsed_s: f64,
    /// Recorded sequence id of the completed launch.
    pub seq: u64,
    /// Launches completed so far.
    pub kernels: u64,
    /// Running D2H counters.
    pub d2h_pass: u64,
    /// Running D2H failures.
    pub d2h_fail: u64,
    /// Running D2H attempts.
    pub d2h_attempted: u64,
    /// Kernel of the completed launch (may be shortened with `...`).
    pub last: String,
}

/// A launch the player announced (`[HRR launch]` or `[HRR sync begin]`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Launch {
    /// Recorded sequence id.
    pub seq: u64,
    /// 1-based launch ordinal.
    pub ordinal: u64,
    /// Full kernel name.
    pub name: String,
    /// `[a,b,c]`, when the line carries it.
    pub grid: Option<String>,
    /// `[a,b,c]`, when the line carries it.
    pub block: Option<String>,
    /// A later line showed this launch finished (`Kernel '…' OK`, sync done, progress).
    pub completed: bool,
}

/// A verbose per-event line (`[HRR] Event N: api`, `[HRR] T<tid> [i] api`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct EventLine {
    /// Recorded thread (multi-threaded form only).
    pub thread: Option<u64>,
    /// Event index.
    pub index: u64,
    /// API name.
    pub api: String,
    /// `-> Kernel '<name>'` suffix, when present.
    pub kernel: Option<String>,
}

/// A failing HIP call: `Fatal: T.. Event .. (api) returned ..` and friends.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FailedCall {
    /// Recorded thread.
    pub thread: u64,
    /// Event index.
    pub index: u64,
    /// API name.
    pub api: String,
    /// Numeric HIP error.
    pub code: i64,
    /// HIP error text.
    pub message: String,
}

/// The ROCr `Memory access fault by GPU node-…` line.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MemoryFault {
    /// KFD node.
    pub node: u32,
    /// Faulting address.
    pub address: String,
    /// `(may not be exact address)` was printed.
    pub inexact: bool,
    /// Reason text.
    pub reason: String,
}

/// One HSA queue status seen (`HSA_STATUS_ERROR_<code>`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct QueueStatus {
    /// The part after `HSA_STATUS_ERROR_`.
    pub code: String,
    /// `code: 0x…` of the abort line, if printed.
    pub hex: Option<String>,
    /// The line was a queue abort (`aborting with error`), not just a warning.
    pub abort: bool,
}

/// The worst `D2H FAIL` line seen.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct D2hWorst {
    /// Recorded sequence id of the copy.
    pub seq: u64,
    /// `max|d|` (absent in exact mode).
    pub max_abs: Option<f64>,
    /// `maxrel`.
    pub max_rel: Option<f64>,
    /// `best fit` element type.
    pub fit: Option<String>,
    /// Differing bytes / total bytes.
    pub bytes_differ: (u64, u64),
}

/// The player's sync watchdog block.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Watchdog {
    /// Watchdog limit in ms.
    pub ms: u64,
    /// The `at:` text.
    pub at: String,
    /// `kernel #K "<name>" (seq=S, grid=… block=…)` when the sync followed a launch.
    pub launch: Option<Launch>,
}

/// The divergence stop (`replay DIVERGED …`, exit 2).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Divergence {
    /// Recorded sequence id where it stopped.
    pub seq: Option<u64>,
    /// Failed D2H validations.
    pub failed: u64,
    /// Attempted D2H validations.
    pub attempted: u64,
    /// Failure percentage and threshold percentage, as printed.
    pub percent: Option<(String, String)>,
}

/// The end-of-run summary `D2H checks` line, in any of its three forms
/// (§10.4): `N pass (E exact, T within tol), M fail, K skipped`, `N pass, M
/// fail, K skipped`, and the oldest `N pass, M fail`.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct D2hSummary {
    /// Passed.
    pub pass: u64,
    /// Passed only within tolerance (when printed).
    pub within_tol: Option<u64>,
    /// Failed.
    pub fail: u64,
    /// Skipped (not printed by the oldest players).
    pub skipped: Option<u64>,
}

/// `[HRR] '<kernel>' arg[N]: recorded 0x… is in no known allocation —
/// passing null so it faults at first use`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NullArg {
    /// The kernel, as printed (full name).
    pub kernel: String,
    /// The argument index.
    pub arg: u64,
    /// The recorded address.
    pub address: String,
}

/// A queue abort with `HSA_STATUS_ERROR_OUT_OF_RESOURCES`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct QueueOom {
    /// `Available Free mem : N MB`, when printed.
    pub free_mb: Option<u64>,
}

/// A cause-bearing player line (§10.4) and what it carries.
#[derive(Debug, Clone, PartialEq)]
pub struct CauseLine {
    /// The cause.
    pub cause: crate::finding::Cause,
    /// `device_count`: (the recording's device, devices this replay has).
    pub devices: Option<(i64, i64)>,
}

/// An error that surfaced at a call that is no launch and has no `Fatal:
/// T… Event …` line of its own: a recorded device/stream synchronize, the
/// end-of-pass synchronize.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SyncError {
    /// The API (`hipDeviceSynchronize`, `hipStreamSynchronize`).
    pub api: String,
    /// Numeric HIP error, when printed.
    pub code: Option<i64>,
    /// HIP error text, when printed.
    pub message: String,
    /// The end-of-pass synchronize (`hipDeviceSynchronize after pass failed`).
    pub end_of_pass: bool,
}

/// Placement lines.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PlacementFacts {
    /// `Placement : off (<why>)`.
    pub off: Option<String>,
    /// The start line said ranges were reserved (placement on).
    pub active: bool,
    /// Summary `X placed at capture address, M fell back`.
    pub summary: Option<(u64, u64)>,
    /// Named fallbacks `"<api> 0x<addr>: <reason>"` (capped).
    pub named: Vec<String>,
    /// Fallback lines seen (the cap does not limit this count).
    pub named_total: u64,
}

/// Everything gathered from the inputs.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Evidence {
    /// `--info` facts.
    pub info: InfoFacts,
    /// Reader diagnostics and replay header.
    pub reader: ReaderFacts,
    /// `[capture] HIP_SO=`.
    pub capture_hip_so: Option<String>,
    /// `  archive format version : N` (`hrr-playback --version`).
    pub reader_version: Option<u32>,
    /// `[HRR] [replay] Device state OK — beginning replay`.
    pub replay_started: bool,
    /// Last progress line.
    pub progress: Option<Progress>,
    /// Last announced launch.
    pub last_launch: Option<Launch>,
    /// Last verbose event line.
    pub last_event: Option<EventLine>,
    /// First `Fatal: T.. Event .. returned` line.
    pub fatal_call: Option<FailedCall>,
    /// First `Fatal: GPU error after T.. Event ..` line.
    pub fatal_gpu: Option<FailedCall>,
    /// First `[HRR] Fatal…` text of any kind.
    pub fatal_text: Option<String>,
    /// `GPU error after '<kernel>': code (msg)`: kernel, code, message.
    pub gpu_error: Option<(String, i64, String)>,
    /// `Kernel '<k>' launch error …` / `not found in any loaded module`: kernel, text.
    pub launch_error: Option<(String, String)>,
    /// `Replay aborted due to fatal HIP error`.
    pub replay_aborted: bool,
    /// First `Error: … — continuing` call and how many there were.
    pub continued_errors: (Option<FailedCall>, u64),
    /// Summary `Events failed : N`.
    pub events_failed: Option<u64>,
    /// Start-up / load failure line (no GPU, cannot open, bad magic, …).
    pub setup_error: Option<String>,
    /// `Version mismatch[ in <path>]: file=N reader=M`.
    pub version_mismatch: Option<(u32, u32, Option<String>)>,
    /// First out-of-memory line outside placement lines.
    pub oom: Option<String>,
    /// ROCr fault line (first).
    pub memory_fault: Option<MemoryFault>,
    /// CLR `Memory Fault Error [...]`: address, kernel.
    pub fault_error: Option<(Option<String>, Option<String>)>,
    /// Hang-analysis `Kernel Name:` line.
    pub hang_analysis_kernel: Option<String>,
    /// HSA statuses, first seen first, one per code.
    pub queue_statuses: Vec<QueueStatus>,
    /// Kernel bracket of a queue-abort line.
    pub queue_abort_kernel: Option<String>,
    /// `kernarg_address=` (the `0x0x` doubling removed).
    pub kernarg_address: Option<String>,
    /// `grid=[…], workgroup=[…]` of the hang analysis.
    pub grid_workgroup: Option<(String, String)>,
    /// `[HRR] PASS` / `[HRR] FAIL` (last one).
    pub verdict: Option<bool>,
    /// Summary `Kernels launched:`.
    pub kernels_launched: Option<u64>,
    /// Summary `D2H checks`.
    pub d2h_summary: Option<D2hSummary>,
    /// `GPU kernel/graph/total time` in ms.
    pub gpu_ms: [Option<f64>; 3],
    /// `D2H FAIL` lines seen.
    pub d2h_fail_lines: u64,
    /// Sequence id of the first `D2H FAIL` line.
    pub d2h_first_fail_seq: Option<u64>,
    /// Worst `D2H FAIL` line.
    pub d2h_worst: Option<D2hWorst>,
    /// `D2H validate FAIL: <why>` and not-mapped lines (first, count).
    pub d2h_validate_fail: (Option<String>, u64),
    /// `ERROR: N D2H validation event(s) attempted but 0 pass/fail recorded`.
    pub d2h_all_skipped: Option<u64>,
    /// Divergence stop.
    pub divergence: Option<Divergence>,
    /// Sync watchdog.
    pub watchdog: Option<Watchdog>,
    /// `Fatal: replay still running after N s (--max-wall-seconds)`.
    pub wall_limit_s: Option<u64>,
    /// Runner stop marker: timed out after N s.
    pub timeout_marker: Option<u64>,
    /// Runner stop marker: killed by signal N.
    pub signal_marker: Option<i32>,
    /// Runner stop marker: crashed with a Windows exception code.
    pub exception_marker: Option<String>,
    /// Placement lines.
    pub placement: PlacementFacts,
    /// APIs replayed as no-ops or not replayable (capped).
    pub noop_apis: BTreeSet<String>,
    /// `explicit (node-API) graph construction is NOT supported`.
    pub graph_construction_unsupported: bool,
    /// `(MISSING!)` argument lines.
    pub missing_args: u64,
    /// First `(MISSING!)` argument line, trimmed.
    pub missing_example: Option<String>,
    /// Summary `Untranslated : N kernel-arg pointer(s)…`.
    pub untranslated: Option<u64>,
    /// Launches announced: `[HRR launch]` lines, and `[HRR sync begin]`
    /// lines of launches no `[HRR launch]` line announced.
    pub launch_lines: u64,
    /// `Kernel '<k>' not found in any loaded module` (first): the kernel and
    /// how many `[HRR launch]` lines preceded it.
    pub not_found: Option<(String, u64)>,
    /// The log shows `--sync-after-launch` at work (`Kernel '…' OK`, `[HRR
    /// sync begin]`/`[HRR sync done]`).
    pub launch_sync_seen: bool,
    /// `Fatal: aborting replay after error in <api>`, or the error lines of
    /// a recorded or end-of-pass synchronize.
    pub sync_error: Option<SyncError>,
    /// Kernel arguments the player passed as null (first ones, capped).
    pub null_args: Vec<NullArg>,
    /// Null-argument lines seen (the cap does not limit this count).
    pub null_args_total: u64,
    /// A queue abort for lack of resources.
    pub queue_oom: Option<QueueOom>,
    /// The first cause-bearing player line.
    pub cause: Option<CauseLine>,
    /// A `GUARD FAULT:` line was seen.
    pub guard_fault_seen: bool,
    /// `GUARD FAULT: kernel #N "<kernel>"`: the kernel, as printed.
    pub guard_fault_kernel: Option<String>,
    /// `region OOB:` lines seen.
    pub region_oob: u64,
    /// `[HRR] Device  :` and `[HRR] Runtime :` lines: (label, value), capped.
    pub loaded: Vec<(String, String)>,
    /// Lines that only a replay (not `--info`) prints.
    pub replay_lines: u64,
    /// Lines read.
    pub lines: u64,
    /// Bytes read.
    pub bytes: u64,
    /// Lines longer than the per-line cap (only their head was examined).
    pub long_lines: u64,
}

impl Evidence {
    /// Every D2H failure the inputs report: the summary's count, else the
    /// last progress line's, else the number of `D2H FAIL` lines.
    pub fn d2h_failures(&self) -> u64 {
        if let Some(s) = self.d2h_summary {
            return s.fail.max(self.d2h_fail_lines);
        }
        let progress = self.progress.as_ref().map_or(0, |p| p.d2h_fail);
        progress.max(self.d2h_fail_lines)
    }

    /// Record the first cause-bearing line.
    pub(crate) fn set_cause(
        &mut self,
        kind: crate::finding::CauseKind,
        line: &str,
        devices: Option<(i64, i64)>,
    ) {
        if self.cause.is_none() {
            let detail = line.strip_prefix("[HRR] ").unwrap_or(line).to_string();
            self.cause = Some(CauseLine {
                cause: crate::finding::Cause { kind, detail },
                devices,
            });
        }
    }

    /// Record an API that replay did not reproduce.
    pub(crate) fn add_noop_api(&mut self, api: &str) {
        if self.noop_apis.len() < LIST_CAP {
            self.noop_apis.insert(api.to_string());
        }
    }
}
