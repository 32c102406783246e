//! The `archive info --json` documents (DESIGN §3.2, schema_version 1): the
//! per-process [`ArchiveSummary`] and the capture-root [`RootListing`].
//!
//! Field order here is the JSON field order. Beyond the DESIGN example the
//! process document carries `api_table` (which id → name table was used;
//! DESIGN asks for it for format 8) and `notes` (plain sentences that are not
//! problems, e.g. the format-8 table caveat).

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::archive::format::manifest::{CaptureMetadata, ProcessState};

/// JSON schema version of both documents.
pub const SCHEMA_VERSION: u32 = 1;

/// Problem kinds that make `archive info` exit 1: the stream could not be
/// decoded at all.
pub const FATAL_PROBLEMS: [&str; 4] = [
    "unsupported_version",
    "bad_magic",
    "short_file",
    "unreadable",
];

/// What an archive path names: one process archive (a `pid-*` directory,
/// or any directory holding `events.bin`) or a capture root holding
/// `pid-*` directories. Written `"process"` / `"root"` in JSON and Lua.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum ArchiveKind {
    /// One process archive; also what a document without `kind` is read as.
    #[default]
    Process,
    /// A capture root.
    Root,
}

/// A health problem: a stable `kind` for programs and a plain sentence.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Problem {
    /// Stable identifier (`torn_tail`, `no_trailer`, `missing_blobs`, …).
    pub kind: String,
    /// What happened and, where it helps, what to do.
    pub detail: String,
}

impl Problem {
    /// A problem of `kind` with a plain-words `detail`.
    pub fn new(kind: &str, detail: impl Into<String>) -> Problem {
        Problem {
            kind: kind.to_string(),
            detail: detail.into(),
        }
    }
}

/// The clean-shutdown trailer as found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TrailerInfo {
    /// A valid trailer (type 0xFFFF, length 44, "HEOF") was read.
    pub present: bool,
    /// Its event count, when present.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub total_events: Option<u64>,
}

/// Calls of one API.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ApiCount {
    /// Raw `event_type` as recorded.
    pub id: u16,
    /// API name from the version's table, or `unknown(<id>)`.
    pub name: String,
    /// Events of this type.
    pub count: u64,
}

/// Launches of one kernel (by full name).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct KernelSummary {
    /// Full mangled name, never truncated (lossy UTF-8 of the raw bytes).
    pub name: String,
    /// Launch events naming it.
    pub launches: u64,
    /// 32-hex code-object hash of its first launch with one, or null.
    pub code_object: Option<String>,
}

/// Files present vs hashes referenced by events.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct FileRefs {
    /// Files found on disk.
    pub files: u64,
    /// Distinct non-zero hashes referenced by events.
    pub referenced: u64,
    /// Referenced hashes with no file, ascending.
    pub missing: Vec<String>,
}

/// Region sidecar counts.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
pub struct RegionSummary {
    /// `regions/*.hrrr` files.
    pub streams: u64,
    /// Region records in them.
    pub records: u64,
}

/// Everything `hrr` can tell about one process archive without ROCm.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ArchiveSummary {
    /// Always [`SCHEMA_VERSION`].
    #[schemars(extend("const" = SCHEMA_VERSION))]
    pub schema_version: u32,
    /// Always `"process"`.
    #[schemars(with = "String", extend("const" = "process"))]
    pub kind: ArchiveKind,
    /// Absolute path of the `pid-*` directory.
    pub path: String,
    /// Process id (manifest, else the directory name).
    pub pid: Option<u64>,
    /// `events.bin` format version; null when the header is unreadable.
    pub format_version: Option<u16>,
    /// Header flags.
    pub flags: Option<u16>,
    /// Id → name table used (`v6`, `v7`, `v7 (assumed for format 8)`), or
    /// null for an undecodable version.
    pub api_table: Option<String>,
    /// complete | incomplete | not_finalized | unknown.
    pub state: ProcessState,
    /// A valid trailer whose count equals the events before it.
    pub complete: bool,
    /// The trailer as found.
    pub trailer: TrailerInfo,
    /// A torn tail record was discarded.
    pub truncated: bool,
    /// Bytes discarded with the torn tail.
    pub torn_bytes: u64,
    /// Records after the trailer (counted, not decoded).
    pub records_after_trailer: u64,
    /// Complete non-trailer records before the trailer (or the torn point).
    pub events: u64,
    /// Events of the ten launch ids.
    pub kernel_launches: u64,
    /// Distinct thread ids.
    pub threads: u64,
    /// Last minus first timestamp.
    pub duration_ns: u64,
    /// When `events.bin` was last written (RFC 3339 UTC, seconds): the one
    /// wall-clock date of a capture, whose own clocks are monotonic; null
    /// where the file system keeps none.
    pub events_modified: Option<String>,
    /// Calls per API, ascending id.
    pub apis: Vec<ApiCount>,
    /// Kernels by launches descending, then name.
    pub kernels: Vec<KernelSummary>,
    /// Blob files vs references.
    pub blobs: FileRefs,
    /// Code-object files vs references.
    pub code_objects: FileRefs,
    /// Device-to-host copies that carry an expected-output blob.
    pub d2h_checks: u64,
    /// Region sidecars.
    pub regions: RegionSummary,
    /// The allocation map and launch pointer audit; null when not built
    /// (`--no-memory`) or the stream could not be decoded.
    pub memory: Option<crate::archive::memory::MemorySection>,
    /// The per-process manifest as parsed, or null.
    pub manifest: Option<Value>,
    /// The manifest's `metadata`, read once for the reports; not part of
    /// the document, which carries it inside `manifest` as written.
    #[serde(skip)]
    #[schemars(skip)]
    pub capture: Option<CaptureMetadata>,
    /// Health problems; empty when healthy.
    pub problems: Vec<Problem>,
    /// Facts worth knowing that are not problems.
    pub notes: Vec<String>,
}

impl ArchiveSummary {
    /// The problem that stopped decoding (unsupported version, bad magic,
    /// short or unreadable file), if any: `archive info` exits 1 on it.
    pub fn fatal_problem(&self) -> Option<&Problem> {
        self.problems
            .iter()
            .find(|p| FATAL_PROBLEMS.contains(&p.kind.as_str()))
    }
}

/// One `pid-*` entry of a capture root.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ProcessEntry {
    /// Process id from the directory name.
    pub pid: u64,
    /// `parent_pid` from the manifest, when there is one.
    pub parent_pid: Option<u64>,
    /// State from the manifest alone.
    pub state: ProcessState,
    /// Events: manifest `event_count`, or counted from `events.bin` when
    /// there is no readable manifest.
    pub events: u64,
    /// `*.blob` files.
    pub blobs: u64,
    /// Size of `events.bin`.
    pub events_bin_bytes: u64,
    /// Absolute path of the `pid-*` directory.
    pub path: String,
    /// The same directory as a path, exact where `path` is shown lossily
    /// (a name that is not UTF-8); not part of the document.
    #[serde(skip)]
    #[schemars(skip)]
    pub dir: std::path::PathBuf,
}

/// The `archive info --json` document of a capture root.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RootListing {
    /// Always [`SCHEMA_VERSION`].
    #[schemars(extend("const" = SCHEMA_VERSION))]
    pub schema_version: u32,
    /// Always `"root"`.
    #[schemars(with = "String", extend("const" = "root"))]
    pub kind: ArchiveKind,
    /// Absolute path of the root.
    pub path: String,
    /// Process archives, ascending pid.
    pub processes: Vec<ProcessEntry>,
    /// The pid triage would pick (DESIGN §3).
    pub chosen: Option<u64>,
    /// Why it was picked, in words.
    pub reason: String,
    /// `pid-*` directories without `events.bin` (never chosen).
    pub leftovers: Vec<String>,
    /// Entries refused (symlinked `pid-*`, unreadable directories).
    pub problems: Vec<Problem>,
}
