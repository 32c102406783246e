//! Rows of the `hrr-playback --info` tables (reference/playback-output.md
//! §2a): Event Type Breakdown, Kernel Summary, Kernel Call Counts and the
//! archive-root process table. A row is only read inside its table, which
//! the table's header line opened and a blank line closes.

use super::evidence::{Evidence, LIST_CAP};
use super::rules::{u, InputState};
use regex::Regex;
use std::sync::LazyLock;

/// Which `--info` table the current input is inside.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) enum Section {
    /// Not inside a table.
    #[default]
    None,
    /// `Event Type Breakdown:` rows.
    Breakdown,
    /// `Kernel Summary (first 20):` rows.
    Summary,
    /// `Kernel Call Counts:` rows.
    CallCounts,
    /// Archive-root process table.
    RootTable,
    /// `Event Log:` rows (`--events`), ignored.
    EventLog,
}

static SUMMARY_ROW: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^  \d+\s+(.+?)\s+\[[^\]]*\]\s+\[[^\]]*\]\s+\d+$").expect("compiles")
});
static ROOT_ROW: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^  (\d+)\s+\d+\s+(yes|NO)\s+\d+\s+\d+\s+\S").expect("compiles"));

/// A row of the current `--info` table; false when the line is not one.
pub(crate) fn table_row(line: &str, e: &mut Evidence, st: &InputState) -> bool {
    let body = line.trim();
    if body.starts_with("--") || body.starts_with("----") {
        return true;
    }
    match st.section {
        Section::None => false,
        Section::EventLog => true,
        Section::Breakdown => {
            let Some((api, count)) = body.rsplit_once(' ') else {
                return false;
            };
            let (api, Ok(count)) = (api.trim(), count.parse::<u64>()) else {
                return body.starts_with("Type");
            };
            if matches!(
                api,
                "hipModuleLaunchKernel"
                    | "hipExtModuleLaunchKernel"
                    | "hipLaunchKernel"
                    | "hipLaunchByPtr"
            ) {
                *e.info.breakdown_launches.get_or_insert(0) += count;
            }
            true
        }
        Section::Summary => {
            if body.starts_with("... and ") {
                e.info.summary_incomplete = true;
                return true;
            }
            if body.starts_with("ID ") {
                return true;
            }
            let Some(c) = SUMMARY_ROW.captures(line) else {
                return false;
            };
            let name = c[1].to_string();
            let names = &mut e.info.summary_names;
            if !name.ends_with("...") && !names.contains(&name) && names.len() < LIST_CAP {
                names.push(name);
            }
            true
        }
        Section::CallCounts => {
            let Some((name, count)) = body.rsplit_once(' ') else {
                return false;
            };
            let (name, Ok(count)) = (name.trim(), count.parse::<u64>()) else {
                return body.starts_with("Kernel");
            };
            e.info.call_count_rows += 1;
            if e.info.call_counts.len() < LIST_CAP {
                e.info.call_counts.push((name.to_string(), count));
            }
            true
        }
        Section::RootTable => {
            let Some(c) = ROOT_ROW.captures(line) else {
                return false;
            };
            if e.info.root_processes.len() < LIST_CAP {
                e.info.root_processes.push((u(&c, 1), &c[2] == "yes"));
            }
            true
        }
    }
}
