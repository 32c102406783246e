//! `hrr render`: print a saved finding again, as markdown or JSON.

use anyhow::Context as _;

use crate::cli::RenderArgs;
use hrr::context::Context;
use hrr::finding::Finding;

/// The largest finding file accepted.
const FINDING_LIMIT: u64 = 64 << 20;

/// Runs `hrr render`.
pub fn run(ctx: &Context, args: &RenderArgs) -> anyhow::Result<i32> {
    let format = hrr::render::Format::chosen(&ctx.config, args.format)?;
    let name = args.finding.display();
    let text = hrr::user_input::read_text(&args.finding, FINDING_LIMIT)
        .with_context(|| format!("cannot read finding {name}"))?;
    let finding = Finding::from_json(&text)
        .with_context(|| format!("{name} is not an hrr finding (JSON, schema_version 1)"))?;
    hrr::ui::print(hrr::render::render(&finding, format))?;
    Ok(0)
}
