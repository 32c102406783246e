//! `hrr playback [--build] [--json]`: which `hrr-playback` a replay would
//! use and how it was found.

use std::fmt::Write as _;

use crate::cli::PlaybackArgs;
use hrr::context::Context;
use hrr::playback::{self, FoundBy};

/// Prints the player's path (first line), how it was found and its
/// `--version` identity; JSON with `--json`.
pub fn run(ctx: &Context, args: &PlaybackArgs) -> anyhow::Result<i32> {
    let loc = playback::locate(ctx, args.build)?;
    if args.json {
        hrr::ui::print(serde_json::to_string_pretty(&loc)? + "\n")?;
        return Ok(0);
    }
    let how = match (loc.how, loc.built) {
        (FoundBy::Config, _) => "playback.path".to_string(),
        (FoundBy::Rocm, _) => format!("rocm.path ({})", ctx.config.rocm_path().display()),
        (FoundBy::Path, _) => "PATH".to_string(),
        (FoundBy::Built, true) => "built now from playback.source".to_string(),
        (FoundBy::Built, false) => "an earlier build in playback.build_dir".to_string(),
    };
    let mut out = format!("{}\n  found via: {how}\n", loc.path.display());
    match &loc.version {
        Some(v) => {
            let na = |s: &Option<String>| s.clone().unwrap_or_else(|| "unknown".into());
            let format = v
                .format_version
                .map_or_else(|| "unknown".into(), |n| n.to_string());
            let _ = writeln!(out, "  archive format version: {format}");
            let _ = writeln!(out, "  source revision: {}", na(&v.source_revision));
            let _ = writeln!(out, "  build type: {}", na(&v.build_type));
            if let Some(how) = &v.ended {
                let _ = writeln!(
                    out,
                    "  --version ended: {how}, after printing the lines above"
                );
            }
        }
        None => out.push_str("  archive format version: unknown (--version gave none)\n"),
    }
    hrr::ui::print(hrr::ui::inert(&out))?;
    Ok(0)
}
