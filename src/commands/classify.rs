//! `hrr classify`: the analyzer on its own. Replay logs and `--info` dumps
//! (any number, any order) plus, optionally, the archive's own summary, in; a
//! finding out, on stdout or in a 0600 file.

use crate::cli::ClassifyArgs;
use hrr::classify::{self, classify};
use hrr::context::Context;
use hrr::render::{self, Format};

/// Runs `hrr classify`.
pub fn run(ctx: &Context, args: &ClassifyArgs) -> anyhow::Result<i32> {
    let format = Format::chosen(&ctx.config, args.format)?;
    if let (Some(output), Some(dir)) = (&args.output, &args.archive) {
        hrr::safety::ensure_outside(output, &hrr::safety::archive_root(dir))?;
    }
    let archive = match (&args.archive, &args.archive_info) {
        (Some(dir), _) => Some(classify::archive_facts(dir)?),
        (None, Some(file)) => Some(classify::summary_facts(file)?),
        (None, None) => None,
    };
    if let (Some(output), Some(root)) = (
        &args.output,
        archive.as_ref().and_then(classify::archive_root),
    ) {
        hrr::safety::ensure_outside(output, &root)?;
    }
    let destination = args
        .output
        .as_deref()
        .map(|named| hrr::output_file::open(named).map(|dest| (named, dest)))
        .transpose()?;
    let finding = classify(&args.logs, archive.as_ref(), None, None)?;
    let text = render::render(&finding, format);
    match destination {
        Some((named, dest)) => {
            dest.write(text.as_bytes())?;
            ctx.ui
                .status(&format!("wrote finding to {}", named.display()));
        }
        None => hrr::ui::print(text)?,
    }
    Ok(0)
}
