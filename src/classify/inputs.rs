//! The archive side of the classifier's inputs: the facts it reads about the
//! capture the logs came from, decoded from the archive itself or read back
//! from a saved `hrr archive info --json` document. Every front end (the
//! `classify` command, `hrr.classify`, the fuzz harness) gets them here.

use std::path::Path;

use anyhow::Context as _;

use super::ArchiveFacts;

/// The largest `hrr archive info --json` document accepted.
const SUMMARY_LIMIT: u64 = 64 << 20;

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
