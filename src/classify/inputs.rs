//! Everything one classification reads, as one typed request that every
//! front end (the `classify` command, `hrr.classify`, the fuzz harness)
//! builds: the logs, and the facts about the capture they came from,
//! decoded from the archive itself or read back from a saved `hrr archive
//! info --json` document.

use std::io::BufReader;
use std::path::{Path, PathBuf};

use anyhow::Context as _;

use super::{ArchiveFacts, Classifier, READ_BUFFER};
use crate::finding::{Finding, ReplayInfo};

/// The largest `hrr archive info --json` document accepted.
const SUMMARY_LIMIT: u64 = 64 << 20;

/// One classification: what it reads, borrowed from the caller.
#[derive(Clone, Copy, Debug, Default)]
pub struct Inputs<'a> {
    /// Replay logs and `hrr-playback --info` dumps, any number, any order.
    pub logs: &'a [PathBuf],
    /// The archive summary ([`archive_facts`], [`summary_facts`]).
    pub archive: Option<&'a ArchiveFacts>,
    /// The replay runner's report.
    pub replay: Option<&'a ReplayInfo>,
    /// The preflight report (`hrr preflight --json`).
    pub preflight: Option<&'a serde_json::Value>,
    /// No replay was run on purpose (metadata-only triage).
    pub metadata_only: bool,
}

impl Inputs<'_> {
    /// Reads every log once, through a bounded buffer, and decides the
    /// finding. A log that cannot be read is an error naming it.
    pub fn classify(&self) -> anyhow::Result<Finding> {
        let mut c = Classifier::new();
        c.set_replay_skipped(self.metadata_only);
        for path in self.logs {
            let file = crate::user_input::open(path)
                .with_context(|| format!("cannot read replay log {}", path.display()))?;
            c.begin_input(path.display().to_string());
            c.feed_reader(BufReader::with_capacity(READ_BUFFER, file))
                .with_context(|| format!("cannot read replay log {}", path.display()))?;
        }
        Ok(c.finish(self.archive, self.replay, self.preflight))
    }
}

/// Decodes the single process archive at `dir` (a `pid-*` directory, or a
/// capture root holding exactly one) into the facts the classifier reads.
pub fn archive_facts(dir: &Path) -> anyhow::Result<ArchiveFacts> {
    let process = crate::archive::single_process(dir)?;
    let summary = crate::archive::summarize(&process)?;
    serde_json::to_value(&summary)
        .and_then(serde_json::from_value)
        .context("archive summary")
}

/// Reads the facts back from a saved `hrr archive info --json` document
/// (`-` is stdin), bounded by [`SUMMARY_LIMIT`].
pub fn summary_facts(path: &Path) -> anyhow::Result<ArchiveFacts> {
    let text = crate::user_input::read_text(path, SUMMARY_LIMIT)
        .with_context(|| format!("cannot read archive summary {}", path.display()))?;
    serde_json::from_str(&text).with_context(|| {
        format!(
            "{} is not an `hrr archive info --json` document",
            path.display()
        )
    })
}

/// The capture root of the summarised archive, when it exists on this host:
/// outputs must stay outside it.
pub fn archive_root(facts: &ArchiveFacts) -> Option<std::path::PathBuf> {
    let path = Path::new(facts.path.as_deref()?);
    path.exists().then(|| crate::safety::archive_root(path))
}
