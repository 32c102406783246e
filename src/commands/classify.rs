//! `hrr classify`: the analyzer on its own. Replay logs and `--info` dumps
//! (any number, any order) plus, optionally, the archive's own summary, in; a
//! finding out, on stdout or in a 0600 file.

use std::path::Path;

use anyhow::Context as _;

use crate::classify::{classify, ArchiveFacts};
use crate::cli::{ClassifyArgs, FindingFormat};
use crate::context::Context;
use crate::render::{self, Format};

/// The largest `hrr archive info --json` document accepted.
const SUMMARY_LIMIT: u64 = 64 << 20;

/// Runs `hrr classify`.
pub fn run(ctx: &Context, args: &ClassifyArgs) -> anyhow::Result<i32> {
    let format = format(ctx, args.format)?;
    if let (Some(output), Some(dir)) = (&args.output, &args.archive) {
        crate::safety::ensure_outside(output, &crate::commands::triage::archive_root(dir))?;
    }
    let archive = match (&args.archive, &args.archive_info) {
        (Some(dir), _) => Some(decode(dir)?),
        (None, Some(file)) => Some(read_summary(file)?),
        (None, None) => None,
    };
    if let (Some(output), Some(root)) = (&args.output, archive.as_ref().and_then(archive_root)) {
        crate::safety::ensure_outside(output, &root)?;
    }
    let destination = args
        .output
        .as_deref()
        .map(|named| crate::output_file::open(named).map(|dest| (named, dest)))
        .transpose()?;
    let finding = classify(&args.logs, archive.as_ref(), None, None)?;
    let text = render::render(&finding, format);
    match destination {
        Some((named, dest)) => {
            dest.write(text.as_bytes())?;
            ctx.ui
                .status(&format!("wrote finding to {}", named.display()));
        }
        None => crate::ui::print(text)?,
    }
    Ok(0)
}

/// `--format`, else config `output.format`.
pub fn format(ctx: &Context, flag: Option<FindingFormat>) -> anyhow::Result<Format> {
    match flag {
        Some(FindingFormat::Json) => Ok(Format::Json),
        Some(FindingFormat::Markdown) => Ok(Format::Markdown),
        None => ctx
            .config
            .str("output.format")
            .unwrap_or("markdown")
            .parse()
            .context("config output.format"),
    }
}

/// Decode the archive the logs came from into the facts the classifier reads.
pub fn decode(dir: &Path) -> anyhow::Result<ArchiveFacts> {
    let process = crate::archive::single_process(dir)?;
    let summary = crate::archive::summarize(&process)?;
    serde_json::to_value(&summary)
        .and_then(serde_json::from_value)
        .context("archive summary")
}

fn read_summary(path: &Path) -> anyhow::Result<ArchiveFacts> {
    let text = read_limited(path, SUMMARY_LIMIT)
        .with_context(|| format!("cannot read archive summary {}", path.display()))?;
    serde_json::from_str(&text).with_context(|| {
        format!(
            "{} is not an `hrr archive info --json` document",
            path.display()
        )
    })
}

/// A text file of at most `limit` bytes (`-` is stdin).
pub fn read_limited(path: &Path, limit: u64) -> anyhow::Result<String> {
    let bytes = if path == Path::new("-") {
        crate::user_input::read_capped(std::io::stdin().lock(), limit)?
    } else {
        crate::user_input::read_all(path, limit)?
    };
    String::from_utf8(bytes).context("not UTF-8 text")
}

/// The capture root of the summarised archive, when it exists on this host:
/// outputs must stay outside it.
fn archive_root(facts: &ArchiveFacts) -> Option<std::path::PathBuf> {
    let path = Path::new(facts.path.as_deref()?);
    path.exists()
        .then(|| crate::commands::triage::archive_root(path))
}
