//! `hrr triage`: the builtin front end of the `triage` Lua workflow. It
//! parses the flags, applies them to the config, refuses outputs inside the
//! archive before any work starts, and runs `triage.lua` (a site's one in a
//! scripts directory, else the preset embedded in `hrr`, which
//! `--print-workflow` prints).

use std::path::{Path, PathBuf};
use std::rc::Rc;

use anyhow::{anyhow, bail};
use serde_json::json;

use crate::cli::{FindingFormat, ReplayChoice, TriageArgs};
use crate::context::Context;
use crate::lua::{self, Invocation};
use crate::safety::ensure_outside;

/// Runs the triage workflow for `args`, or prints the embedded one
/// (`--print-workflow`).
pub fn run(ctx: Context, args: &TriageArgs) -> anyhow::Result<i32> {
    if args.print_workflow {
        let workflow = lua::scripts::embedded("triage")
            .ok_or_else(|| anyhow!("the triage workflow is missing from this build of hrr"))?;
        crate::ui::print(workflow.text()?)?;
        return Ok(0);
    }
    let config = ctx.config.with_flags(&flags(args))?;
    let Some(archive) = &args.archive else {
        bail!("hrr triage needs an archive: a pid-* directory or a capture root");
    };
    if !archive.is_dir() {
        bail!(
            "archive not found: {} (give a pid-* directory or a capture root)",
            archive.display()
        );
    }
    let root = archive_root(archive);
    let workdir = crate::workdir::configured(&config);
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
        .map(crate::output_file::open)
        .transpose()?;
    let workflow = lua::scripts::find(&config, "triage")
        .ok_or_else(|| anyhow!("the triage workflow is missing from this build of hrr"))?;
    let opts = json!({
        "archive": crate::safety::resolve(archive).display().to_string(),
        "all": args.all,
        "no_replay": args.no_replay,
        "exit_code": args.exit_code,
        "output": args.output.as_ref().map(|o| o.display().to_string()),
    });
    let invocation = Invocation {
        args: vec![archive.clone().into_os_string()],
        opts: opts.as_object().cloned().unwrap_or_default(),
        path_opts: std::iter::once(("archive", crate::safety::resolve(archive)))
            .chain(args.output.iter().map(|o| ("output", o.clone())))
            .collect(),
        outputs: args.output.iter().cloned().collect(),
    };
    let ctx = Context { config, ..ctx };
    lua::run_workflow(Rc::new(ctx), &workflow, invocation)
}

/// The directory that must never be written into: the capture root when
/// `archive` is a `pid-*` directory, else `archive` itself.
pub fn archive_root(archive: &Path) -> PathBuf {
    let resolved = crate::safety::resolve(archive);
    let is_process = resolved
        .file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.starts_with("pid-"));
    match resolved.parent() {
        Some(parent) if is_process => parent.to_path_buf(),
        _ => resolved,
    }
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
            FindingFormat::Markdown => "markdown",
            FindingFormat::Json => "json",
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
