//! `hrr triage`: the builtin front end of the `triage` Lua workflow. It
//! parses the flags, applies them to the config, refuses outputs inside the
//! archive before any work starts, and runs `triage.lua` (a user's copy in a
//! scripts directory, else the one embedded in `hrr`).

use std::rc::Rc;

use anyhow::{anyhow, bail};
use serde_json::json;

use crate::cli::{ReplayChoice, TriageArgs};
use hrr::context::Context;
use hrr::lua::{self, Invocation};
use hrr::render::Format;
use hrr::safety::ensure_outside;

/// Runs the triage workflow for `args`.
pub fn run(ctx: Context, args: &TriageArgs) -> anyhow::Result<i32> {
    let config = ctx.config.with_flags(&flags(args))?;
    let archive = &args.archive;
    if !archive.is_dir() {
        bail!(
            "archive not found: {} (give a pid-* directory or a capture root)",
            archive.display()
        );
    }
    let root = hrr::safety::archive_root(archive);
    let workdir = hrr::workdir::configured(&config);
    ensure_outside(&workdir, &root)?;
    if let Some(output) = &args.output {
        ensure_outside(output, &root)?;
    }
    // Refuse an `-o` that must not be written before any work starts; a
    // pipe stays open until the workflow has written it, so its reader does
    // not see the end of its input in between.
    let _output = args
        .output
        .as_deref()
        .map(hrr::output_file::open)
        .transpose()?;
    let workflow = lua::scripts::find(&config, "triage")
        .ok_or_else(|| anyhow!("the triage workflow is missing from this build of hrr"))?;
    let opts = json!({
        "archive": hrr::safety::resolve(archive).display().to_string(),
        "all": args.all,
        "no_replay": args.no_replay,
        "exit_code": args.exit_code,
        "output": args.output.as_ref().map(|o| o.display().to_string()),
    });
    let invocation = Invocation {
        args: vec![archive.display().to_string()],
        opts: opts.as_object().cloned().unwrap_or_default(),
        outputs: args.output.iter().cloned().collect(),
    };
    let ctx = Context { config, ..ctx };
    lua::run_workflow(Rc::new(ctx), &workflow, invocation)
}

fn flags(args: &TriageArgs) -> Vec<(&'static str, Option<String>, &'static str)> {
    let replay = args.replay.map(|r| {
        match r {
            ReplayChoice::Auto => "auto",
            ReplayChoice::Native => "native",
            ReplayChoice::Docker => "docker",
        }
        .to_string()
    });
    let format = args.format.map(|f| {
        match f {
            Format::Markdown => "markdown",
            Format::Json => "json",
        }
        .to_string()
    });
    vec![
        ("replay.mode", replay, "--replay"),
        (
            "replay.sync",
            args.no_sync.then(|| "none".to_string()),
            "--no-sync",
        ),
        ("replay.gpu", args.gpu.map(|g| g.to_string()), "--gpu"),
        ("docker.image", args.image.clone(), "--image"),
        ("replay.timeout", args.timeout.clone(), "--timeout"),
        (
            "output.workdir",
            args.workdir.as_ref().map(|w| w.display().to_string()),
            "--workdir",
        ),
        ("output.format", format, "--format"),
        (
            "preflight.continue",
            args.yes.then(|| "true".to_string()),
            "--yes",
        ),
    ]
}
