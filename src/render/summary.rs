//! The table `hrr triage --all` prints after the findings: one row per
//! process with its outcome, fault class and kernel, every
//! archive-controlled string made inert by the rules of the findings.

use std::fmt::Write as _;

use super::{class_name, code_or_na, inert, outcome_word};
use crate::finding::Finding;

/// The markdown summary of `rows`, each a process name (its `pid-*`
/// directory) and its finding.
pub fn summary(rows: &[(String, Finding)]) -> String {
    let mut out = String::from(
        "## HRR Triage — every process\n\n| process | outcome | fault class | kernel |\n|---|---|---|---|\n",
    );
    for (name, f) in rows {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} |",
            inert::text(name),
            outcome_word(f.outcome),
            class_name(f.fault_class),
            code_or_na(f.kernel_name.as_deref(), true)
        );
    }
    out
}
