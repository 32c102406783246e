//! The preflight report: markdown with the reference's sections
//! (upstream-triage.md §4.7) and the JSON shape
//! `{status, capture, host, blocks, confirms, warnings, notes}`.

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use super::capture::CaptureFacts;
use super::host::HostFacts;
use crate::error::single_line as one_line;

/// The overall answer, worst first: blocked > confirm > warn > ok.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// Nothing found that makes the replay unfaithful.
    Ok,
    /// Warnings only; the replay goes ahead.
    Warn,
    /// A version mismatch: replay only after the user agrees.
    Confirm,
    /// The replay cannot be faithful.
    Blocked,
}

impl Status {
    /// The exit code of `hrr preflight` (DESIGN §3.1): 0 ok/warn, 1 blocked,
    /// 2 confirmation needed.
    pub fn exit_code(self) -> i32 {
        match self {
            Status::Ok | Status::Warn => 0,
            Status::Blocked => 1,
            Status::Confirm => 2,
        }
    }
}

/// Whether this capture can be replayed faithfully in the probed
/// environment, and why.
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub struct PreflightReport {
    /// `ok`, `warn`, `confirm` or `blocked`.
    pub status: Status,
    /// What the capture's manifest says.
    pub capture: CaptureFacts,
    /// What the replay environment offers; `null` when it was not probed
    /// (a capture without metadata has nothing to compare).
    pub host: Option<HostFacts>,
    /// Blocking issues.
    pub blocks: Vec<String>,
    /// Mismatches that need the user's confirmation.
    pub confirms: Vec<String>,
    /// Warnings.
    pub warnings: Vec<String>,
    /// Context: what was assumed, why nothing was compared. Why a replay
    /// value is unknown is in `host.problems`.
    pub notes: Vec<String>,
}

impl PreflightReport {
    /// The status the lists imply.
    pub fn status_of(blocks: &[String], confirms: &[String], warnings: &[String]) -> Status {
        if !blocks.is_empty() {
            Status::Blocked
        } else if !confirms.is_empty() {
            Status::Confirm
        } else if !warnings.is_empty() {
            Status::Warn
        } else {
            Status::Ok
        }
    }

    /// The markdown report. Every value from the capture or the host is
    /// written on one line, control characters made visible, so a manifest
    /// cannot add a section or forge a verdict.
    pub fn to_markdown(&self) -> String {
        let mut out = String::from("# HRR replay compatibility\n\n## Capture metadata\n");
        let c = &self.capture;
        if c.metadata {
            let na = |v: &Option<String>| v.as_deref().map_or_else(|| "n/a".into(), one_line);
            let num = |v: Option<u64>| v.map_or_else(|| "n/a".into(), |n| n.to_string());
            let archs = c.arch_names();
            let _ = writeln!(out, "- schema_version: {}", na(&c.schema_version));
            let _ = writeln!(out, "- hip_runtime_version: {}", na(&c.hip_runtime_version));
            let _ = writeln!(out, "- comgr_version: {}", na(&c.comgr_version));
            let _ = writeln!(out, "- device_count: {}", num(c.device_count));
            let _ = writeln!(
                out,
                "- captured_device_count: {}",
                num(c.captured_device_count)
            );
            let _ = writeln!(
                out,
                "- gcn_arch_name: {}",
                archs.first().map_or_else(|| "n/a".into(), |a| one_line(a))
            );
            if archs.len() > 1 {
                let _ = writeln!(out, "- gcn_arch_names: {}", one_line(&archs.join(", ")));
            }
        } else {
            let why = c.missing_reason.as_deref().unwrap_or("no metadata");
            let _ = writeln!(out, "- none: {}", one_line(why));
        }
        if let Some(h) = &self.host {
            let unknown =
                |v: &Option<String>| v.as_deref().map_or_else(|| "unknown".into(), one_line);
            out.push_str("\n## Replay environment\n");
            let _ = writeln!(out, "- source: {}", one_line(&h.source));
            let visible = h
                .visible_gpus
                .map_or_else(|| "unknown".into(), |n| n.to_string());
            let _ = writeln!(out, "- visible_gpus: {visible}");
            if !h.device_masks.is_empty() {
                let _ = writeln!(out, "- device_masks: {}", h.device_masks.join(" "));
            }
            let _ = writeln!(
                out,
                "- hip_runtime_version: {}",
                unknown(&h.hip_runtime_version)
            );
            let _ = writeln!(out, "- comgr_version: {}", unknown(&h.comgr_version));
            if h.gpus.iter().any(|g| g.arch.is_some()) {
                let archs: Vec<&str> = h
                    .gpus
                    .iter()
                    .map(|g| g.arch.as_deref().unwrap_or("unknown"))
                    .collect();
                let _ = writeln!(out, "- gpu_archs: {}", one_line(&archs.join(", ")));
            }
        }
        list(&mut out, "Blocking issues", &self.blocks);
        list(&mut out, "Confirmation required", &self.confirms);
        if !self.confirms.is_empty() {
            out.push_str("Replay stack versions differ from capture. Do you want to continue?\n");
            out.push_str(
                "Set preflight.continue = true (or HRR_CONTINUE=1), or pass --yes to triage, \
                 to proceed without an interactive prompt.\n",
            );
        }
        list(&mut out, "Warnings", &self.warnings);
        let mut notes = self.notes.clone();
        if let Some(h) = &self.host {
            notes.extend(h.problems.iter().map(|p| format!("{}: {p}", h.source)));
        }
        list(&mut out, "Notes", &notes);
        if self.blocks.is_empty() && self.confirms.is_empty() && self.warnings.is_empty() {
            out.push_str("\nReplay preflight: OK\n");
        }
        crate::ui::inert(&out)
    }
}

fn list(out: &mut String, title: &str, items: &[String]) {
    if items.is_empty() {
        return;
    }
    let _ = write!(out, "\n## {title}\n");
    for item in items {
        let _ = writeln!(out, "- {}", one_line(item));
    }
}
