//! The `Finding`: what triage concluded about one archive and its replay
//! (DESIGN §6). One serde struct with a stable JSON schema (`schema_version: 1`)
//! that the classifier fills, Lua workflows annotate and the renderer prints.
//!
//! Every field that may be unknown is an `Option`: `None` is serialised as
//! `null` and rendered as `n/a`, while a real zero stays `0`.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// The JSON schema version written in every finding and accepted by `hrr render`.
pub const SCHEMA_VERSION: u32 = 1;

/// What happened to the replay, in the upstream skill's vocabulary.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default, schemars::JsonSchema,
)]
#[serde(rename_all = "UPPERCASE")]
pub enum Outcome {
    /// The replay completed and its D2H checks passed (the player printed `[HRR] PASS`).
    Pass,
    /// A GPU memory access fault during replay.
    Maf,
    /// The replay finished (or stopped cleanly) but output validation failed.
    Fail,
    /// The replay stopped early: fatal API, version mismatch, queue abort, crash.
    Abort,
    /// The replay made no progress and a timeout or watchdog stopped it.
    Hang,
    /// Not enough evidence to say (no replay, missing or partial log).
    #[default]
    Unknown,
}

/// Why the replay ended the way it did (DESIGN §6 fault classes).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum FaultClass {
    /// Clean replay, nothing to report.
    ReplayPass,
    /// GPU memory access fault (page not present, aperture violation, …).
    IllegalMemoryAccess,
    /// GPU write to a read-only page.
    ReadOnlyPageFault,
    /// A replayed HIP call returned an error and the player gave up.
    ReplayFatalApi,
    /// The replay host ran out of device memory.
    ReplayOom,
    /// The replay was aborted (HSA queue abort other than a memory fault, setup failure).
    ReplayAborted,
    /// The player died on a signal without a GPU fault line: the run failed, not the workload.
    ReplayCrashed,
    /// No progress until a timeout or the player's own watchdog.
    Hang,
    /// Replayed outputs differ from the captured ones (D2H failures, divergence stop).
    NanInfDivergence,
    /// The player cannot read this archive's format version.
    VersionMismatch,
    /// Evidence does not support any class.
    #[default]
    Unknown,
    /// No replay was run; only the archive was examined.
    MetadataOnly,
    /// The replay preflight refused this host.
    PreflightBlocked,
}

/// A named known-limitation pattern attached to a finding (DESIGN §6 labels).
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
)]
pub enum Label {
    /// The archive has no valid clean-shutdown trailer: the capture died.
    #[serde(rename = "CRASH-TRUNCATED")]
    CrashTruncated,
    /// Replayed device-to-host copies differ from the captured bytes.
    #[serde(rename = "D2H-FAIL")]
    D2hFail,
    /// A kernel-argument pointer translated to null during replay.
    #[serde(rename = "MISSING-HANDLE")]
    MissingHandle,
    /// A launch passes a pointer into memory freed earlier and not
    /// reallocated (the capture-time pointer audit).
    #[serde(rename = "STALE-POINTER")]
    StalePointer,
    /// Some recorded APIs were replayed as no-ops or skipped as not replayable.
    #[serde(rename = "NOOP-API")]
    NoopApi,
    /// `hrr-playback` had to be built for this triage.
    #[serde(rename = "BUILD-NEEDED")]
    BuildNeeded,
    /// The capture root holds several processes; each is triaged on its own.
    #[serde(rename = "MULTI-PROCESS")]
    MultiProcess,
    /// Device allocations did not land at their recorded addresses (or placement was off).
    #[serde(rename = "PLACEMENT-FALLBACK")]
    PlacementFallback,
    /// A PASS with nothing that qualifies the replay's evidence.
    #[serde(rename = "CLEAN")]
    Clean,
}

impl Label {
    /// Every label, in the documented order.
    pub const ALL: [Label; 9] = [
        Label::CrashTruncated,
        Label::D2hFail,
        Label::MissingHandle,
        Label::StalePointer,
        Label::NoopApi,
        Label::BuildNeeded,
        Label::MultiProcess,
        Label::PlacementFallback,
        Label::Clean,
    ];

    /// The documented spelling (`CRASH-TRUNCATED`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            Label::CrashTruncated => "CRASH-TRUNCATED",
            Label::D2hFail => "D2H-FAIL",
            Label::MissingHandle => "MISSING-HANDLE",
            Label::StalePointer => "STALE-POINTER",
            Label::NoopApi => "NOOP-API",
            Label::BuildNeeded => "BUILD-NEEDED",
            Label::MultiProcess => "MULTI-PROCESS",
            Label::PlacementFallback => "PLACEMENT-FALLBACK",
            Label::Clean => "CLEAN",
        }
    }

    /// Whether this label qualifies what the replay showed. Such a label
    /// rules out CLEAN; BUILD-NEEDED and MULTI-PROCESS describe the tooling
    /// and the capture root, so a PASS can be CLEAN beside them.
    pub fn qualifies_replay(self) -> bool {
        matches!(
            self,
            Label::CrashTruncated
                | Label::D2hFail
                | Label::MissingHandle
                | Label::StalePointer
                | Label::NoopApi
                | Label::PlacementFallback
        )
    }
}

impl fmt::Display for Label {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Label {
    type Err = anyhow::Error;
    fn from_str(s: &str) -> anyhow::Result<Self> {
        Label::ALL
            .into_iter()
            .find(|l| l.as_str() == s)
            .ok_or_else(|| {
                let known: Vec<&str> = Label::ALL.iter().map(|l| l.as_str()).collect();
                anyhow::anyhow!("unknown label `{s}` (known: {})", known.join(", "))
            })
    }
}

/// How the kernel name in a finding was established (DESIGN §6 `kernel_source`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum KernelSource {
    /// The runtime's fault report (`Memory Fault Error [... kernel: …]`, the
    /// hang-analysis `Kernel Name:` line) or the player's watchdog line.
    FaultLine,
    /// The HSA queue-abort line's kernel bracket.
    AbortLine,
    /// The last `[HRR launch]` line (`--trace-kernels`) before the fault.
    TraceKernels,
    /// `[HRR] GPU error after '<kernel>'` (`--sync-after-launch`).
    GpuErrorLine,
    /// The last verbose per-event line that named a kernel.
    LastEvent,
    /// Inferred: the archive holds exactly one kernel.
    SingleKernelArchive,
    /// hrr-playback's `Kernel '<name>' not found in any loaded module` line:
    /// the launch that could not run (the player prints no `[HRR launch]`
    /// line for it).
    NotFoundLine,
}

/// What hrr-playback said caused the failure, before the fatal line it led
/// to (reference/playback-output.md §10.4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CauseKind {
    /// A graph node the replay cannot rebuild (`not reconstructable at
    /// replay`, `Refusing to instantiate`).
    GraphIncomplete,
    /// The recording allocated on a device the replay does not have
    /// (`hipMemCreate: the recording allocated on device N and this replay has M device(s)`).
    DeviceCount,
    /// A code object or blob the archive lacks or the runtime cannot load
    /// (`not found in archive`, `blob … not found`, `Failed to load code object`).
    ArchiveIncomplete,
    /// A kernel ran past the end of a guarded block (`GUARD FAULT`, `--guard-blocks`).
    GuardFault,
    /// An intra-segment out-of-bounds access found by the region check (`region OOB`).
    RegionOob,
    /// A file larger than the player's cap (`refusing to read … (--max-file-bytes)`).
    FileCap,
}

impl CauseKind {
    /// The JSON spelling (`graph_incomplete`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            CauseKind::GraphIncomplete => "graph_incomplete",
            CauseKind::DeviceCount => "device_count",
            CauseKind::ArchiveIncomplete => "archive_incomplete",
            CauseKind::GuardFault => "guard_fault",
            CauseKind::RegionOob => "region_oob",
            CauseKind::FileCap => "file_cap",
        }
    }
}

/// The cause hrr-playback named for a failed replay.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Cause {
    /// Which kind of cause.
    pub kind: CauseKind,
    /// The player's line that named it (without its `[HRR] ` prefix).
    #[serde(default)]
    pub detail: String,
}

/// One line of what the player reported it loaded: the device it replays
/// on (`[HRR] Device  :`) and the ROCm libraries (`[HRR] Runtime :`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct LoadedLine {
    /// `Device` or `Runtime`.
    pub label: String,
    /// What the player printed after the colon.
    pub value: String,
}

/// One label with its one-line explanation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct LabelEntry {
    /// The label.
    pub label: Label,
    /// What exactly was seen (APIs, counts, worst error…).
    #[serde(default)]
    pub detail: String,
}

/// Device-allocation placement during replay (`hrr-playback` placement lines).
/// Serialised as `{"off": reason}` or `{"placed", "fell_back", "named"}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(untagged)]
pub enum Placement {
    /// Placement was off for the whole replay (`Placement : off (<why>)`).
    Off {
        /// The player's reason, e.g. `--no-placement`.
        off: String,
    },
    /// Placement was active.
    Active {
        /// Allocations placed at their capture address (summary line), if printed.
        placed: Option<u64>,
        /// Allocations that fell back to another address.
        fell_back: u64,
        /// The fallbacks the player named: `"<api> 0x<addr>: <reason>"`.
        named: Vec<String>,
    },
}

/// How a fault address relates to the archive's allocations.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Relation {
    /// Inside a range live at the point of the fault.
    Inside,
    /// Past the end of the nearest live range below it.
    PastEnd,
    /// Before the start of the nearest live range above it.
    BeforeStart,
    /// Inside a range freed before the fault and not reallocated.
    Freed,
    /// No relation: no range is known, or placement was off.
    None,
}

/// Whether the replay's allocations sat at their capture addresses, from
/// the replay log's placement lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PlacementState {
    /// Placement was on and nothing fell back.
    Placed,
    /// Some allocations replayed elsewhere: attribution is by capture address.
    FellBack,
    /// Placement was off: replay addresses are not capture addresses.
    Off,
    /// The log carried no placement lines.
    Unknown,
}

/// The launch argument whose pointer lies in the attributed range, or is
/// nearest the address.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ArgumentRef {
    /// Argument index in the kernel's signature.
    pub index: u16,
    /// The launched kernel.
    pub kernel: String,
}

/// Where the fault address lies among the archive's allocations at the
/// point of the fault.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct FaultAllocation {
    /// The address attributed: the fault address, or for a null-page fault
    /// after hrr-playback passed null for an argument, that argument's
    /// recorded pointer.
    pub address: String,
    /// How the address relates to the range.
    pub relation: Relation,
    /// Allocating API of the range (`region block` / `region segment` for
    /// sidecar ranges).
    pub api: Option<String>,
    /// First byte of the range.
    pub base: Option<String>,
    /// Bytes of the range.
    pub size: Option<u64>,
    /// Bytes from the base (`inside`, `freed`), past the end (`past_end`)
    /// or before the base (`before_start`).
    pub offset: Option<u64>,
    /// Sequence id of the allocation.
    pub alloc_seq: Option<u64>,
    /// Sequence id of the free (`freed`).
    pub free_seq: Option<u64>,
    /// The launch argument pointing into the range, or nearest the address.
    pub argument: Option<ArgumentRef>,
    /// Placement during the replay.
    pub placement: PlacementState,
}

/// `n` with thousands separators (`3,840`).
fn grouped(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

impl FaultAllocation {
    /// The attribution in one sentence, e.g. `0x7f91da001000 is 3,840 bytes
    /// past the end of the 256-byte hipMalloc at 0x7f91da000000 (seq 1),
    /// passed as argument 0 of crash_oob.`
    pub fn sentence(&self) -> String {
        let range = || {
            let seq = self
                .alloc_seq
                .map_or(String::new(), |s| format!(" (seq {s})"));
            format!(
                "the {}-byte {} at {}{seq}",
                grouped(self.size.unwrap_or(0)),
                self.api.as_deref().unwrap_or("allocation"),
                self.base.as_deref().unwrap_or("n/a")
            )
        };
        let off = grouped(self.offset.unwrap_or(0));
        let what = match self.relation {
            Relation::Inside => format!("is {off} bytes inside {}", range()),
            Relation::PastEnd => format!("is {off} bytes past the end of {}", range()),
            Relation::BeforeStart => format!("is {off} bytes before the start of {}", range()),
            Relation::Freed => {
                let at = self.free_seq.map_or(String::new(), |s| format!(" at seq {s}"));
                format!("is {off} bytes into {}, freed{at} before the fault", range())
            }
            Relation::None if self.placement == PlacementState::Off => {
                "is not attributed: placement was off, so replay addresses are not capture addresses".into()
            }
            Relation::None => "lies in no recorded allocation".into(),
        };
        let arg = self.argument.as_ref().map_or(String::new(), |a| {
            format!(", passed as argument {} of {}", a.index, a.kernel)
        });
        format!("{} {what}{arg}.", self.address)
    }
}

/// Archive health as the finding reports it (from `hrr archive info` or `--info`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default)]
pub struct ArchiveHealth {
    /// The archive has a valid clean-shutdown trailer.
    pub complete: Option<bool>,
    /// A trailer record is present (it may still disagree with the event count).
    pub trailer: Option<bool>,
    /// A torn tail record was discarded.
    pub truncated: Option<bool>,
    /// Events recovered from an archive without a clean trailer; 0 when complete.
    pub recovered_events: Option<u64>,
    /// Complete event records.
    pub events: Option<u64>,
    /// Kernel-launch events.
    pub kernel_launches: Option<u64>,
    /// Blob files.
    pub blobs: Option<u64>,
    /// Code-object files.
    pub code_objects: Option<u64>,
    /// Recorded threads.
    pub threads: Option<u64>,
    /// Process ids in the capture (one for a process archive, all for a root).
    pub processes: Vec<u64>,
    /// When the archive's `events.bin` was last written (RFC 3339 UTC,
    /// seconds), from the decoded archive: its own clocks are monotonic,
    /// so this is the capture's one wall-clock date. Null without an
    /// archive to read.
    pub events_modified: Option<String>,
}

/// Capture environment from the manifest metadata.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default)]
pub struct CaptureInfo {
    /// HIP runtime version of the capture host.
    pub hip_runtime_version: Option<String>,
    /// comgr version of the capture host.
    pub comgr_version: Option<String>,
    /// GPUs the capture's runtime enumerated.
    pub device_count: Option<u64>,
    /// `gcn_arch_name` of the capture's device 0.
    pub gcn_arch: Option<String>,
    /// `[capture] HIP_SO=` path, when a log carries it.
    pub hip_so: Option<String>,
}

/// How the replay was run and how the player process ended (what the replay
/// runner reports; `hrr.replay.run` returns exactly these fields).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default)]
pub struct ReplayInfo {
    /// `native` or `docker`.
    pub mode: Option<String>,
    /// The argv that ran the player.
    pub command: Vec<String>,
    /// `HIP_VISIBLE_DEVICES` ordinal used.
    pub gpu: Option<u32>,
    /// The replay log file.
    pub log: Option<String>,
    /// Plain exit code, when the player exited.
    pub exit_code: Option<i32>,
    /// Signal that killed the player, when it died on one.
    pub signal: Option<i32>,
    /// Windows exception code the player crashed with (`0xC0000005`).
    pub exception: Option<String>,
    /// The runner's timeout stopped the player.
    pub timed_out: bool,
    /// Wall time of the replay.
    pub duration_s: Option<f64>,
    /// Which limit ended the replay: `hrr_timeout`, `player_wall_limit`,
    /// `player_watchdog`; null when none did.
    pub stopped_by: Option<crate::replay::StoppedBy>,
    /// What the player reported it loaded (`[HRR] Device  :` and `[HRR]
    /// Runtime :` lines of the log), filled in by the classifier.
    pub loaded: Vec<LoadedLine>,
}

/// The triage result for one archive (DESIGN §6). JSON field names and order
/// are the documented schema.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default)]
pub struct Finding {
    /// Always [`SCHEMA_VERSION`].
    #[schemars(extend("const" = SCHEMA_VERSION))]
    pub schema_version: u32,
    /// The archive path the finding is about, when known.
    pub archive: Option<String>,
    /// What happened.
    pub outcome: Outcome,
    /// Why.
    pub fault_class: FaultClass,
    /// Why no finding could be made from the archive's own evidence (a
    /// triage run over many archives whose worker crashed, was killed,
    /// printed no finding, or could not read the archive); null otherwise.
    pub error: Option<String>,
    /// What hrr-playback said caused the failure, when it printed a
    /// cause-bearing line before its fatal one; null otherwise.
    pub cause: Option<Cause>,
    /// The implicated kernel (full name; never a `...`-truncated one).
    pub kernel_name: Option<String>,
    /// `hipblaslt_gemm[/MT…][/streamk…]`, `pytorch_kernel`, or `other`.
    pub kernel_family: Option<String>,
    /// How `kernel_name` was established.
    pub kernel_source: Option<KernelSource>,
    /// Faulting GPU virtual address.
    pub fault_address: Option<String>,
    /// The runtime's fault reason text.
    pub fault_reason: Option<String>,
    /// Where the fault address lies among the archive's allocations; null
    /// without a fault address or an archive to read.
    pub fault_allocation: Option<FaultAllocation>,
    /// KFD topology node of the faulting GPU (not the HIP ordinal).
    pub gpu_node: Option<u32>,
    /// Recorded sequence id of the failing event.
    pub failing_event_seq: Option<u64>,
    /// 0-based index of the failing event in the replayed order.
    pub failing_call_index: Option<u64>,
    /// Recorded OS thread id of the failing event.
    pub failing_thread: Option<u64>,
    /// HIP API of the failing event.
    pub failing_api: Option<String>,
    /// Kernel-argument buffer address from the runtime's hang analysis.
    pub kernarg_address: Option<String>,
    /// Grid of the faulting dispatch.
    pub grid: Option<String>,
    /// Workgroup of the faulting dispatch.
    pub workgroup: Option<String>,
    /// Signal that ended the replay.
    pub replay_signal: Option<i32>,
    /// Windows exception code that ended the replay (`"0xC0000005"`; an
    /// abort is `"0xC0000409"` or the legacy `"0x00000003"`).
    pub replay_exception: Option<String>,
    /// Plain exit code of the player.
    pub replay_exit_code: Option<i32>,
    /// The timeout (seconds) after which the replay was stopped.
    pub timed_out_after_s: Option<u64>,
    /// Kernel of the last `[HRR progress]` line (a completed launch).
    pub last_progress_kernel: Option<String>,
    /// Kernel of the last launch the log shows starting.
    pub last_event_kernel: Option<String>,
    /// Kernel launches replayed.
    pub kernels_launched: Option<u64>,
    /// D2H checks that passed.
    pub d2h_pass: Option<u64>,
    /// D2H checks that failed.
    pub d2h_fail: Option<u64>,
    /// D2H checks attempted (pass + fail + skipped).
    pub d2h_attempted: Option<u64>,
    /// Passing D2H checks that matched only within tolerance.
    pub d2h_within_tol: Option<u64>,
    /// `GPU kernel time` of the summary (`--timing`).
    pub gpu_kernel_ms: Option<f64>,
    /// `GPU graph time` of the summary (`--timing`).
    pub gpu_graph_ms: Option<f64>,
    /// `GPU total time` of the summary (`--timing`).
    pub gpu_total_ms: Option<f64>,
    /// Allocation placement, when the player printed placement lines.
    pub placement: Option<Placement>,
    /// Archive health.
    pub archive_health: ArchiveHealth,
    /// events.bin format version of the archive.
    pub archive_format_version: Option<u32>,
    /// Format version the player reads.
    pub reader_format_version: Option<u32>,
    /// Capture environment.
    pub capture: CaptureInfo,
    /// The preflight report `{status, capture, host, blocks, confirms, warnings, notes}`.
    #[schemars(with = "Option<serde_json::Map<String, serde_json::Value>>")]
    pub preflight: Option<serde_json::Value>,
    /// How the replay ran, when a replay runner reported it.
    pub replay: Option<ReplayInfo>,
    /// Known-limitation labels.
    pub labels: Vec<LabelEntry>,
    /// Recommended next steps, most useful first.
    pub next_steps: Vec<String>,
    /// Inputs the finding was built from.
    pub sources: Vec<String>,
    /// Caveats and how-to-confirm remarks.
    pub notes: Vec<String>,
}

impl Default for Finding {
    fn default() -> Self {
        Finding::new(None)
    }
}

impl Finding {
    /// An empty finding (`UNKNOWN` / `unknown`) about `archive`.
    pub fn new(archive: Option<String>) -> Self {
        Finding {
            schema_version: SCHEMA_VERSION,
            archive,
            outcome: Outcome::Unknown,
            fault_class: FaultClass::Unknown,
            error: None,
            cause: None,
            kernel_name: None,
            kernel_family: None,
            kernel_source: None,
            fault_address: None,
            fault_reason: None,
            fault_allocation: None,
            gpu_node: None,
            failing_event_seq: None,
            failing_call_index: None,
            failing_thread: None,
            failing_api: None,
            kernarg_address: None,
            grid: None,
            workgroup: None,
            replay_signal: None,
            replay_exception: None,
            replay_exit_code: None,
            timed_out_after_s: None,
            last_progress_kernel: None,
            last_event_kernel: None,
            kernels_launched: None,
            d2h_pass: None,
            d2h_fail: None,
            d2h_attempted: None,
            d2h_within_tol: None,
            gpu_kernel_ms: None,
            gpu_graph_ms: None,
            gpu_total_ms: None,
            placement: None,
            archive_health: ArchiveHealth::default(),
            archive_format_version: None,
            reader_format_version: None,
            capture: CaptureInfo::default(),
            preflight: None,
            replay: None,
            labels: Vec::new(),
            next_steps: Vec::new(),
            sources: Vec::new(),
            notes: Vec::new(),
        }
    }

    /// Attach `label`. Labels form a set: adding one that is present replaces
    /// its detail. A label that qualifies the replay (see
    /// [`Label::qualifies_replay`]) removes CLEAN, and CLEAN is not added
    /// beside such a label, so CLEAN always means "nothing else was found".
    pub fn add_label(&mut self, label: Label, detail: impl Into<String>) {
        let detail = detail.into();
        if label == Label::Clean && self.labels.iter().any(|e| e.label.qualifies_replay()) {
            return;
        }
        if label.qualifies_replay() {
            self.labels.retain(|e| e.label != Label::Clean);
        }
        match self.labels.iter_mut().find(|e| e.label == label) {
            Some(entry) => entry.detail = detail,
            None => self.labels.push(LabelEntry { label, detail }),
        }
    }

    /// Whether `label` is attached.
    pub fn has_label(&self, label: Label) -> bool {
        self.labels.iter().any(|e| e.label == label)
    }

    /// Append a note (a caveat or how to confirm something); duplicates are dropped.
    pub fn add_note(&mut self, text: impl Into<String>) {
        push_unique(&mut self.notes, text.into());
    }

    /// Append a recommended next step; duplicates are dropped.
    pub fn add_next_step(&mut self, text: impl Into<String>) {
        push_unique(&mut self.next_steps, text.into());
    }

    /// Parse a finding from JSON, refusing other schema versions.
    pub fn from_json(text: &str) -> anyhow::Result<Finding> {
        Finding::from_value(serde_json::from_str(text)?)
    }

    /// A finding from parsed JSON, refusing other schema versions.
    pub fn from_value(value: serde_json::Value) -> anyhow::Result<Finding> {
        match value.get("schema_version").and_then(|v| v.as_u64()) {
            Some(v) if v == u64::from(SCHEMA_VERSION) => {}
            Some(v) => anyhow::bail!(
                "finding schema_version {v} is not supported (this hrr reads {SCHEMA_VERSION})"
            ),
            None => anyhow::bail!("not a finding: no numeric `schema_version` field"),
        }
        Ok(serde_json::from_value(value)?)
    }

    /// Pretty JSON (two-space indent) with a trailing newline.
    pub fn to_json_pretty(&self) -> String {
        let mut s = serde_json::to_string_pretty(self).expect("a Finding always serialises");
        s.push('\n');
        s
    }
}

fn push_unique(list: &mut Vec<String>, text: String) {
    if !text.is_empty() && !list.contains(&text) {
        list.push(text);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn documented_spellings() {
        let f = Finding::new(Some("a".into()));
        let v = serde_json::to_value(&f).unwrap();
        assert_eq!(v["schema_version"], 1);
        assert_eq!(v["outcome"], "UNKNOWN");
        assert_eq!(v["fault_class"], "unknown");
        assert!(v["kernel_name"].is_null());
        assert_eq!(
            serde_json::to_value(FaultClass::IllegalMemoryAccess).unwrap(),
            "illegal_memory_access"
        );
        assert_eq!(serde_json::to_value(Outcome::Maf).unwrap(), "MAF");
        assert_eq!(serde_json::to_value(Label::D2hFail).unwrap(), "D2H-FAIL");
        assert_eq!(
            serde_json::to_value(KernelSource::SingleKernelArchive).unwrap(),
            "single_kernel_archive"
        );
        for l in Label::ALL {
            assert_eq!(serde_json::to_value(l).unwrap(), l.as_str());
            assert_eq!(l.as_str().parse::<Label>().unwrap(), l);
        }
        assert!("CLEANISH".parse::<Label>().is_err());
    }

    #[test]
    fn field_order_follows_design() {
        let f = Finding::new(None);
        let v = serde_json::to_value(&f).unwrap();
        let keys: Vec<&str> = v.as_object().unwrap().keys().map(|k| k.as_str()).collect();
        assert_eq!(
            &keys[..4],
            ["schema_version", "archive", "outcome", "fault_class"]
        );
        assert_eq!(keys.last(), Some(&"notes"));
        assert_eq!(keys.len(), 45);
    }

    #[test]
    fn placement_shapes() {
        let off = Placement::Off {
            off: "--no-placement".into(),
        };
        assert_eq!(
            serde_json::to_string(&off).unwrap(),
            r#"{"off":"--no-placement"}"#
        );
        let on: Placement =
            serde_json::from_str(r#"{"placed":6,"fell_back":1,"named":["hipMalloc 0x1: x"]}"#)
                .unwrap();
        assert_eq!(
            on,
            Placement::Active {
                placed: Some(6),
                fell_back: 1,
                named: vec!["hipMalloc 0x1: x".into()]
            }
        );
        let back: Placement = serde_json::from_str(r#"{"off":"why"}"#).unwrap();
        assert_eq!(back, Placement::Off { off: "why".into() });
    }

    #[test]
    fn labels_are_a_set_and_clean_means_nothing_else() {
        let mut f = Finding::new(None);
        f.add_label(Label::Clean, "");
        f.add_label(Label::BuildNeeded, "built");
        assert!(
            f.has_label(Label::Clean),
            "BUILD-NEEDED does not qualify the replay"
        );
        f.add_label(Label::NoopApi, "hipA");
        assert!(!f.has_label(Label::Clean));
        f.add_label(Label::NoopApi, "hipA, hipB");
        assert_eq!(f.labels.len(), 2);
        assert_eq!(f.labels[1].detail, "hipA, hipB");
        f.add_label(Label::Clean, "");
        assert!(!f.has_label(Label::Clean));
    }

    #[test]
    fn notes_and_steps_dedupe() {
        let mut f = Finding::new(None);
        f.add_note("x");
        f.add_note("x");
        f.add_next_step("y");
        f.add_next_step("y");
        f.add_next_step("");
        assert_eq!(f.notes, ["x"]);
        assert_eq!(f.next_steps, ["y"]);
    }

    #[test]
    fn json_round_trip_and_version_check() {
        let mut f = Finding::new(Some("/a/pid-1".into()));
        f.outcome = Outcome::Hang;
        f.fault_class = FaultClass::Hang;
        f.timed_out_after_s = Some(0);
        let text = f.to_json_pretty();
        assert_eq!(Finding::from_json(&text).unwrap(), f);
        assert!(Finding::from_json(
            &text.replace("\"schema_version\": 1", "\"schema_version\": 2")
        )
        .unwrap_err()
        .to_string()
        .contains("schema_version 2"));
        assert!(Finding::from_json("{}").is_err());
    }
}
