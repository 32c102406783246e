//! The allocation map of a process archive: every allocation and
//! free whose payload records an address and a size (reference §11), the
//! region sidecars' blocks and segments (§14) merged by time, and the audit
//! of every launch's pointer arguments (§10.2) against them. It is built in
//! the one summary pass (`summary/pass.rs`): decoders take the events out
//! of their pieces ([`ops`]) and the pieces are applied in stream order
//! ([`merge`]) to the [`map`].
//!
//! What payloads do not carry is left out, not guessed: pitched and 3-D
//! allocations (the pitch is recorded as a host address only), arrays, IPC
//! and pool imports (no size), and the VMM calls (§11 gives no layout).

pub mod map;
pub(crate) mod merge;
pub(crate) mod nowhere;
pub mod ops;
pub(crate) mod overlay;
pub(crate) mod packed;
pub(crate) mod page_cache;
pub(crate) mod ranges;
pub(crate) mod view;
pub mod watch;
pub(crate) mod whole_blocks;

#[cfg(test)]
mod model_tests;

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::archive::format::apis::ApiTable;
use crate::archive::memory::map::{PointerExample, Range, Source, Totals};
use crate::archive::memory::watch::Watch;

/// Region records read at most per process (32 bytes each).
pub const MAX_REGION_RECORDS: usize = 1 << 18;

/// The name of a v7 id (the map keeps ids as the v7 table numbers them).
fn api_name(api: u16) -> String {
    ApiTable::V7.display_name(api).into_owned()
}

/// The name of what allocated a range: the API, or `region block` /
/// `region segment` (hrr-playback's words for sidecar ranges).
pub fn source_name(s: Source) -> String {
    match s {
        Source::Api(api) => api_name(api),
        Source::RegionSegment => "region segment".into(),
        Source::RegionBlock => "region block".into(),
    }
}

/// A `0x…` address.
pub fn hex(a: u64) -> String {
    format!("{a:#x}")
}

/// An address as a user gives it: `0x…` hex or decimal.
pub fn parse_address(s: &str) -> Result<u64, String> {
    let parsed = match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(hex, 16),
        None => s.parse(),
    };
    parsed.map_err(|_| format!("expected an address like 0x7f91da001000, got '{s}'"))
}

/// One range as documents show it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RangeDoc {
    /// Allocating API, or `region block` / `region segment`.
    pub api: String,
    /// First byte, `0x…`.
    pub base: String,
    /// Bytes.
    pub size: u64,
    /// Sequence id of the allocation (null for region records).
    pub alloc_seq: Option<u64>,
    /// Freeing API, or `region` for a region DEL record; null while live.
    pub freed_by: Option<String>,
    /// Sequence id of the free (null while live and for region records).
    pub free_seq: Option<u64>,
    /// Thread of the allocation (null for region records).
    pub thread: Option<u64>,
}

impl RangeDoc {
    /// The document form of `r`.
    pub fn of(r: &Range) -> RangeDoc {
        RangeDoc {
            api: source_name(r.source),
            base: hex(r.base),
            size: r.size,
            alloc_seq: r.alloc_seq,
            freed_by: r.freed.map(|d| match d.api {
                Some(api) => api_name(api),
                None => "region".into(),
            }),
            free_seq: r.freed.and_then(|d| d.seq),
            thread: r.thread,
        }
    }
}

/// A launch pointer the audit shows.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PointerDoc {
    /// `stale_pointer` (into freed memory) or `unattributed` (in no range).
    pub kind: String,
    /// Sequence id of the launch.
    pub launch_seq: u64,
    /// Kernel name.
    pub kernel: String,
    /// Argument index.
    pub argument: u16,
    /// The pointer, `0x…`.
    pub address: String,
    /// The freed range it points into (stale pointers).
    pub range: Option<RangeDoc>,
}

impl PointerDoc {
    fn of(kind: &str, e: &PointerExample) -> PointerDoc {
        PointerDoc {
            kind: kind.into(),
            launch_seq: e.launch_seq,
            kernel: e.kernel.clone(),
            argument: e.argument,
            address: hex(e.address),
            range: e.freed.as_ref().map(RangeDoc::of),
        }
    }
}

/// The `memory` section of `archive info`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(default)]
pub struct MemorySection {
    /// Allocations followed (HIP calls and region ADD records).
    pub allocations: u64,
    /// Frees followed (HIP calls and region DEL records).
    pub frees: u64,
    /// Ranges live at the end of the stream.
    pub live_at_end: u64,
    /// Largest sum of live HIP allocation sizes.
    pub peak_live_bytes: u64,
    /// Launches passing a pointer into memory freed earlier and not
    /// reallocated (STALE-POINTER).
    pub stale_pointer_launches: u64,
    /// Pointer arguments in no recorded range (symbols, textures and
    /// unrecorded APIs make these common; no label).
    pub unattributed_pointer_args: u64,
    /// The first stale pointers, then the first unattributed ones.
    pub examples: Vec<PointerDoc>,
}

impl MemorySection {
    /// The section from the map's totals and live count, with the notes
    /// the caps call for.
    pub fn of(t: &Totals, live: usize) -> (MemorySection, Vec<String>) {
        let a = &t.audit;
        let examples = a
            .stale_examples
            .iter()
            .map(|e| PointerDoc::of("stale_pointer", e))
            .chain(
                a.unattributed_examples
                    .iter()
                    .map(|e| PointerDoc::of("unattributed", e)),
            )
            .collect();
        let s = MemorySection {
            allocations: t.allocations,
            frees: t.frees,
            live_at_end: live as u64,
            peak_live_bytes: t.peak_live_bytes,
            stale_pointer_launches: a.stale_pointer_launches,
            unattributed_pointer_args: a.unattributed_pointer_args,
            examples,
        };
        (s, cap_notes(t))
    }
}

/// The sentences that say where the map left something out.
fn cap_notes(t: &Totals) -> Vec<String> {
    let mut notes = Vec::new();
    if t.capped_allocations > 0 {
        notes.push(format!(
            "memory: {} allocation(s) past the cap of {} live ranges were not tracked; pointers into them count as unattributed",
            t.capped_allocations,
            map::MAX_LIVE
        ));
    }
    if t.forgotten_frees > 0 {
        notes.push(format!(
            "memory: the {} oldest freed range(s) were forgotten past the cap of {}; a stale pointer into one of them is not reported",
            t.forgotten_frees,
            map::MAX_FREED
        ));
    }
    if t.regions_capped {
        notes.push(format!(
            "memory: only the first {MAX_REGION_RECORDS} region records were merged into the allocation map"
        ));
    }
    notes
}

/// What `hrr archive memory` asks of an archive.
#[derive(Debug, Clone, Default)]
pub struct Query {
    /// List the ranges live at this sequence id.
    pub at: Option<u64>,
    /// Follow this address.
    pub address: Option<u64>,
    /// A kernel whose last launch is a point of interest (fault attribution).
    pub kernel: Option<String>,
}

/// Runs the summary pass of `process_dir` with `query` watched; the summary
/// and what was watched.
pub fn query(
    process_dir: &Path,
    q: &Query,
) -> anyhow::Result<(crate::archive::ArchiveSummary, Watch)> {
    let watch = Watch {
        at: q.at,
        address: q.address,
        kernel: q.kernel.as_ref().map(|k| k.as_bytes().to_vec()),
        ..Watch::default()
    };
    crate::archive::summary::pass::summarize_watching(process_dir, watch)
}

/// A launch that passed a pointer into a range of the followed address.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PassDoc {
    /// Sequence id of the launch.
    pub launch_seq: u64,
    /// Kernel name.
    pub kernel: String,
    /// Argument index.
    pub argument: u16,
    /// The pointer passed, `0x…`.
    pub address: String,
    /// Whether the range it points into was live at that launch.
    pub live: bool,
}

/// The `hrr archive memory --json` document.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct MemoryReport {
    /// The process archive.
    pub path: String,
    /// The sequence id the live ranges are listed at (null: the end).
    pub at: Option<u64>,
    /// Ranges live there (all layers, by layer then base; at most 10,000).
    pub live: Vec<RangeDoc>,
    /// How many ranges were live there.
    pub live_total: u64,
    /// The followed address, when asked.
    pub address: Option<String>,
    /// Every range that covered it, in allocation order.
    pub history: Vec<RangeDoc>,
    /// Launches that passed a pointer into one of them (or the address).
    pub passes: Vec<PassDoc>,
    /// The archive's memory section.
    pub memory: Option<MemorySection>,
    /// Where a list was cut at its cap, and the archive's notes.
    pub notes: Vec<String>,
}

impl MemoryReport {
    /// Runs the query on `process_dir`: the ranges live at `at` (the end of
    /// the stream when not given), and the history of `address`.
    pub fn build(
        process_dir: &Path,
        at: Option<u64>,
        address: Option<u64>,
    ) -> anyhow::Result<MemoryReport> {
        let q = Query {
            at: Some(at.unwrap_or(u64::MAX)),
            address,
            kernel: None,
        };
        let (summary, w) = query(process_dir, &q)?;
        if let Some(p) = summary.fatal_problem() {
            anyhow::bail!("{}: {}", summary.path, p.detail);
        }
        let (live, total) = w.live_at.unwrap_or_default();
        let mut notes = summary.notes.clone();
        if total > live.len() {
            notes.push(format!("{} of {total} live ranges listed", live.len()));
        }
        if w.history_more > 0 || w.passes_more > 0 {
            notes.push(format!(
                "{} more range(s) and {} more launch(es) of the address not listed",
                w.history_more, w.passes_more
            ));
        }
        Ok(MemoryReport {
            path: summary.path.clone(),
            at,
            live: live.iter().map(RangeDoc::of).collect(),
            live_total: total as u64,
            address: address.map(hex),
            history: w.history.iter().map(RangeDoc::of).collect(),
            passes: w
                .passes
                .iter()
                .map(|p| PassDoc {
                    launch_seq: p.seq,
                    kernel: p.kernel.clone(),
                    argument: p.argument,
                    address: hex(p.address),
                    live: p.live,
                })
                .collect(),
            memory: summary.memory,
            notes,
        })
    }

    /// The readable form: archive-controlled names are made inert.
    pub fn text(&self) -> String {
        use std::fmt::Write as _;
        let clean = |s: &str| crate::ui::inert(s).replace('\n', "\\n");
        let mut o = String::new();
        let _ = writeln!(o, "HRR archive memory: {}", clean(&self.path));
        if let Some(m) = &self.memory {
            let _ = writeln!(
                o,
                "  {} allocations, {} frees, {} live at end, peak {} live; {} launch(es) pass a stale pointer",
                m.allocations,
                m.frees,
                m.live_at_end,
                crate::archive::report::human_bytes(m.peak_live_bytes),
                m.stale_pointer_launches
            );
        }
        let range_line = |r: &RangeDoc| {
            let seq = r.alloc_seq.map_or(String::new(), |s| format!(" seq {s}"));
            let thread = r.thread.map_or(String::new(), |t| format!(" thread {t}"));
            let freed = match (&r.freed_by, r.free_seq) {
                (Some(by), Some(s)) => format!(", freed by {} at seq {s}", clean(by)),
                (Some(by), None) => format!(", freed by {}", clean(by)),
                _ => String::new(),
            };
            format!(
                "  {} {} bytes {}{seq}{thread}{freed}",
                r.base,
                r.size,
                clean(&r.api)
            )
        };
        if self.address.is_none() || self.at.is_some() {
            let at = self
                .at
                .map_or("the end of the stream".into(), |s| format!("seq {s}"));
            let _ = writeln!(o, "\nLive at {at} ({} ranges)", self.live_total);
            for r in &self.live {
                let _ = writeln!(o, "{}", range_line(r));
            }
        }
        if let Some(a) = &self.address {
            let _ = writeln!(o, "\nHistory of {a} ({} ranges)", self.history.len());
            for r in &self.history {
                let _ = writeln!(o, "{}", range_line(r));
            }
            let _ = writeln!(o, "\nLaunches passing it ({})", self.passes.len());
            for p in &self.passes {
                let state = if p.live { "live" } else { "not live" };
                let _ = writeln!(
                    o,
                    "  launch seq {} {} arg {} = {} ({state})",
                    p.launch_seq,
                    clean(&p.kernel),
                    p.argument,
                    p.address
                );
            }
        }
        for n in &self.notes {
            let _ = writeln!(o, "  Note: {n}");
        }
        o
    }
}
