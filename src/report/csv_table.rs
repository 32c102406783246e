//! The report as CSV: a header and one row per group. Lists (labels, fault
//! classes) are space-separated, and the example archives are separated by
//! newlines inside their quoted cell, since a path may hold any other
//! character. A name from an archive or a path that begins like a formula
//! (`=`, `+`, `-`, `@`, a tab or a carriage return) gets a leading `'`, so a
//! spreadsheet opening the file shows it as text instead of evaluating it.

use super::Report;
use crate::finding::Label;
use crate::render::{class_name, outcome_word};

/// The CSV header.
const HEADER: [&str; 11] = [
    "count",
    "outcome",
    "fault_class",
    "kernel_name",
    "failing_api",
    "labels",
    "also_seen",
    "fault_classes",
    "examples",
    "oldest",
    "newest",
];

/// The CSV report.
pub fn csv(report: &Report) -> anyhow::Result<String> {
    let mut w = csv::Writer::from_writer(Vec::new());
    w.write_record(HEADER)?;
    for g in &report.groups {
        let s = &g.signature;
        let classes: Vec<String> = g.fault_classes.iter().map(|c| class_name(*c)).collect();
        w.write_record([
            g.count.to_string(),
            outcome_word(s.outcome).to_string(),
            class_name(s.fault_class),
            inert(s.kernel_name.as_deref().unwrap_or_default()),
            inert(s.failing_api.as_deref().unwrap_or_default()),
            words(&s.labels),
            words(&g.also_seen()),
            classes.join(" "),
            inert(&g.examples.join("\n")),
            g.oldest.clone().unwrap_or_default(),
            g.newest.clone().unwrap_or_default(),
        ])?;
    }
    let bytes = w
        .into_inner()
        .map_err(|e| anyhow::anyhow!("{}", e.error()))?;
    Ok(String::from_utf8(bytes)?)
}

/// `cell`, with a `'` before it when a spreadsheet would read it as a
/// formula.
fn inert(cell: &str) -> String {
    match cell.starts_with(['=', '+', '-', '@', '\t', '\r']) {
        true => format!("'{cell}"),
        false => cell.to_string(),
    }
}

fn words(labels: &[Label]) -> String {
    let words: Vec<&str> = labels.iter().map(|l| l.as_str()).collect();
    words.join(" ")
}
