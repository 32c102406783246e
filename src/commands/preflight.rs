//! `hrr preflight <archive>`: the compatibility report on stdout; exit 0
//! ok/warnings, 1 blocked, 2 confirmation needed (DESIGN §3.1).

use crate::cli::PreflightArgs;
use hrr::context::Context;
use hrr::error::Failure;
use hrr::preflight::{self, Overrides, PreflightOptions, Status};

/// Runs the preflight and prints the report (markdown, or JSON with `--json`).
pub fn run(ctx: &Context, args: &PreflightArgs) -> anyhow::Result<i32> {
    let opts = PreflightOptions::from_config(&ctx.config).overridden(&Overrides {
        mode: args.mode,
        image: args.image.clone(),
        gpu: args.gpu,
        strict_version: args.strict_version.then_some(true),
        strict_arch: args.strict_arch.then_some(true),
    });
    let report = preflight::check(ctx, &args.archive, &opts)?;
    if args.json {
        hrr::ui::print(serde_json::to_string_pretty(&report)? + "\n")?;
    } else {
        hrr::ui::print(report.to_markdown())?;
    }
    match report.status {
        Status::Blocked => Err(Failure::new(
            1,
            format!("replay preflight blocked: {}", report.blocks.join("; ")),
        )
        .into()),
        Status::Confirm => Err(Failure::new(
            2,
            format!(
                "replay preflight needs confirmation: {} (set preflight.continue = true or pass --yes to triage to proceed)",
                report.confirms.join("; ")
            ),
        )
        .into()),
        Status::Ok | Status::Warn => Ok(0),
    }
}
