//! `hrr replay <archive>`: run the replay only, print where the log is and
//! how the replay ended (markdown, or JSON with `--json`).
//!
//! Exit code 0 whenever the replay ran, whatever the player did (its exit
//! code, signal and timeout are in the output); 1 when it could not run;
//! 130/143/129 when `hrr` was interrupted by SIGINT/SIGTERM/SIGHUP (the
//! player's process group is stopped and the log ends with a marker).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::bail;

use crate::cli::ReplayArgs;
use hrr::context::Context;
use hrr::output_file::Destination;
use hrr::replay::{self, ReplayRequest, ReplayResult};

/// Runs `hrr replay`.
pub fn run(ctx: &Context, args: &ReplayArgs) -> anyhow::Result<i32> {
    let config = args
        .overrides()
        .apply(&ctx.config, crate::cli::replay_flag)?;
    let mut req = ReplayRequest::from_config(&config, &args.archive)?;
    req.extra_args.extend(args.extra.iter().cloned());
    req.log = args.log.as_deref().map(log_file).transpose()?;
    let ctx = Context {
        config,
        ui: ctx.ui.clone(),
    };
    req.locate_player(&ctx)?;
    let result = replay::run(&ctx, &req)?;
    if args.json {
        hrr::ui::print(serde_json::to_string_pretty(&result)? + "\n")?;
    } else {
        hrr::ui::print(markdown(&args.archive.display().to_string(), &result))?;
    }
    Ok(0)
}

/// Where `hrr replay --log PATH` writes: by the rule of every named output
/// ([`hrr::output_file`]), a regular file or a new one, through any
/// symlink. A device or a pipe is refused, because the log is streamed into
/// a file that is made private (0600) and removed when the replay cannot
/// start, which must never happen to a device node.
fn log_file(path: &Path) -> anyhow::Result<PathBuf> {
    match hrr::output_file::open(path)? {
        Destination::File(real) => Ok(real),
        Destination::Stream { .. } => bail!(
            "cannot write the replay log to {}: it is a device or a pipe, and the replay log must be a regular file; name a file (and read it with `tail -f`)",
            path.display()
        ),
    }
}

/// The result as a markdown table; unknown values print as `n/a`.
fn markdown(archive: &str, r: &ReplayResult) -> String {
    let na = |v: Option<i32>| v.map_or("n/a".to_string(), |n| n.to_string());
    let mode = r.mode.name();
    let mut out = String::new();
    let _ = writeln!(out, "## HRR replay — {}\n", hrr::ui::inert(archive));
    let _ = writeln!(out, "| | |\n|---|---|");
    let rows = [
        ("mode", mode.to_string()),
        ("GPU", r.gpu.to_string()),
        ("command", format!("`{}`", r.command.join(" "))),
        ("exit code", na(r.exit_code)),
        ("signal", na(r.signal)),
        (
            "timed out",
            if r.timed_out { "yes" } else { "no" }.to_string(),
        ),
        ("duration", format!("{:.1} s", r.duration_s)),
        ("log", r.log.display().to_string()),
    ];
    for (k, v) in rows {
        let _ = writeln!(out, "| {k} | {} |", hrr::ui::inert(&v).replace('|', "\\|"));
    }
    out
}
