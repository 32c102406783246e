//! `hrr preflight <archive>`: the compatibility report on stdout; exit 0
//! ok/warnings, 1 blocked, 2 confirmation needed (DESIGN §3.1).

use crate::cli::PreflightArgs;
use hrr::context::Context;
use hrr::error::Failure;
use hrr::preflight::{self, PreflightOptions, ProbeMode, Status};

/// Runs the preflight and prints the report (markdown, or JSON with `--json`).
pub fn run(ctx: &Context, args: &PreflightArgs) -> anyhow::Result<i32> {
    let flag = |on: bool| on.then(|| "true".to_string());
    let config = ctx.config.with_flags(&[
        ("replay.gpu", args.gpu.map(|g| g.to_string()), "--gpu"),
        ("docker.image", args.image.clone(), "--image"),
        (
            "preflight.strict_version",
            flag(args.strict_version),
            "--strict-version",
        ),
        (
            "preflight.strict_arch",
            flag(args.strict_arch),
            "--strict-arch",
        ),
    ])?;
    let mut opts = PreflightOptions::from_config(&config);
    if let Some(mode) = args.mode {
        opts.mode = mode;
    } else if args.image.is_some() {
        opts.mode = ProbeMode::Docker;
    }
    let ctx = Context {
        config,
        ui: ctx.ui.clone(),
    };
    let report = preflight::check(&ctx, &args.archive, &opts)?;
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
