//! `hrr triage`: the builtin front end of the `triage` Lua workflow. It
//! parses the flags, applies them to the config, refuses outputs inside the
//! archive before any work starts, and runs `triage.lua` (a site's one in a
//! scripts directory, else the preset embedded in `hrr`, which
//! `--print-workflow` prints).

use std::rc::Rc;

use anyhow::{anyhow, bail};
use serde_json::json;

use crate::cli::TriageArgs;
use hrr::context::Context;
use hrr::lua::{self, Invocation};
use hrr::safety::ensure_outside;

/// Runs the triage workflow for `args`, or prints the embedded one
/// (`--print-workflow`).
pub fn run(ctx: Context, args: &TriageArgs) -> anyhow::Result<i32> {
    if args.print_workflow {
        let workflow = lua::scripts::embedded("triage")
            .ok_or_else(|| anyhow!("the triage workflow is missing from this build of hrr"))?;
        hrr::ui::print(workflow.text()?)?;
        return Ok(0);
    }
    let config = args
        .overrides()
        .apply(&ctx.config, crate::cli::replay_flag)?
        .with_flags(&output_flags(args))?;
    let Some(archive) = &args.archive else {
        bail!("hrr triage needs an archive: a pid-* directory or a capture root");
    };
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
        args: vec![archive.clone().into_os_string()],
        opts: opts.as_object().cloned().unwrap_or_default(),
        path_opts: std::iter::once(("archive", hrr::safety::resolve(archive)))
            .chain(args.output.iter().map(|o| ("output", o.clone())))
            .collect(),
        outputs: args.output.iter().cloned().collect(),
    };
    let ctx = Context { config, ..ctx };
    lua::run_workflow(Rc::new(ctx), &workflow, invocation)
}

/// The flags of `hrr triage` beyond the replay's, as config settings.
fn output_flags(args: &TriageArgs) -> [(&'static str, Option<String>, &'static str); 3] {
    [
        (
            "output.workdir",
            args.workdir.as_ref().map(|w| w.display().to_string()),
            "--workdir",
        ),
        (
            "output.format",
            args.format.map(|f| f.name().to_string()),
            "--format",
        ),
        (
            "preflight.continue",
            args.yes.then(|| "true".to_string()),
            "--yes",
        ),
    ]
}
