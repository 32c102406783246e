//! `hrr report`: the findings of many archives grouped by crash signature
//! (outcome, fault class, kernel, failing API, the labels about the crash),
//! so that thirty-seven archives of the same fault read as one line.
//!
//! [`load`] reads finding files and directories of them, [`group`] builds
//! the [`Report`], and [`render`] prints it as markdown, JSON, CSV or a
//! self-contained HTML page.

mod csv_table;
mod group;
mod html;
mod load;
mod markdown;

pub use group::{
    group, Group, OutcomeCount, Report, Signature, EXAMPLES, NOT_IN_SIGNATURE, SCHEMA_VERSION,
};
pub use load::{
    load, Loaded, Skipped, MAX_DEPTH, MAX_ENTRIES, MAX_FILES, MAX_FILE_BYTES, MAX_FINDINGS,
};

/// How `hrr report` prints the report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum ReportFormat {
    /// Totals, outcome counts and the grouped table.
    #[default]
    Markdown,
    /// The `hrr schema report` document.
    Json,
    /// One row per group.
    Csv,
    /// One self-contained page: a bar chart of outcomes and the grouped table.
    Html,
}

/// `report` in `format`.
pub fn render(report: &Report, format: ReportFormat) -> anyhow::Result<String> {
    Ok(match format {
        ReportFormat::Markdown => markdown::markdown(report),
        ReportFormat::Json => {
            let mut text = serde_json::to_string_pretty(report)?;
            text.push('\n');
            text
        }
        ReportFormat::Csv => csv_table::csv(report)?,
        ReportFormat::Html => html::html(report),
    })
}

/// The totals line every format but JSON opens with: `12 findings from 9
/// files in 4 groups; 1 skipped` (each skipped file is named on stderr).
fn totals(report: &Report) -> String {
    let plural = |n: u64, word: &str| format!("{n} {word}{}", if n == 1 { "" } else { "s" });
    let mut line = format!(
        "{} from {} in {}",
        plural(report.findings, "finding"),
        plural(report.files, "file"),
        plural(report.groups.len() as u64, "group")
    );
    if !report.skipped.is_empty() {
        line.push_str(&format!("; {} skipped", report.skipped.len()));
    }
    line
}
