//! `hrr --list`: the command registry as people read it, builtins, aliases,
//! Lua workflows and externals, each with where it comes from; with `-v`,
//! full paths, alias origins and what shadows what.

use std::fmt::Write as _;

use crate::registry::{Command, Registry, Source, Standing};
use hrr::context::Context;

/// Prints the command list on stdout.
pub fn run(ctx: &Context) -> anyhow::Result<i32> {
    let verbose = ctx.ui.verbose();
    let registry = Registry::load(&ctx.config);
    let mut out = String::new();
    for group in registry
        .commands()
        .chunk_by(|a, b| section(a) == section(b))
    {
        let Some(heading) = group.first().map(section) else {
            continue;
        };
        let _ = writeln!(out, "{heading}");
        for command in group {
            line(&mut out, command, registry.standing(command), verbose);
        }
        if heading == WORKFLOWS && verbose {
            skipped_project_dirs(ctx, &mut out);
        }
    }
    hrr::ui::print(out)?;
    Ok(0)
}

const WORKFLOWS: &str = "Lua workflows:";

fn section(command: &Command) -> &'static str {
    match command.source {
        Source::Builtin { .. } => "Builtin commands:",
        Source::Alias(_) => "Aliases:",
        Source::Workflow(_) => WORKFLOWS,
        Source::External(_) => "External commands:",
    }
}

/// The line of one command, plus with `verbose` one line per file it
/// shadows.
fn line(out: &mut String, command: &Command, standing: Standing, verbose: bool) {
    let name = &command.name;
    let note = match standing {
        Standing::Runs => String::new(),
        Standing::RunByBuiltin => format!("  (runs as `hrr {name}`)"),
        Standing::HiddenBy(_) if matches!(command.source, Source::Alias(_)) => {
            "  (ignored: a builtin has this name)".into()
        }
        Standing::HiddenBy(winner) => {
            format!("  (hidden by the {} of the same name)", winner.kind())
        }
    };
    let shadows = match &command.source {
        Source::Builtin { about } => {
            let _ = writeln!(out, "    {name:<14} {about}");
            return;
        }
        Source::Alias(alias) => {
            let from = if verbose {
                format!("  [{}]", alias.origin)
            } else {
                String::new()
            };
            let _ = writeln!(out, "    {name:<14} = {}{from}{note}", alias.expansion);
            return;
        }
        Source::Workflow(w) => {
            let _ = writeln!(out, "    {name:<14} {}{note}", w.origin(verbose));
            &w.shadows
        }
        Source::External(e) => {
            let shown = if verbose {
                e.path.display().to_string()
            } else {
                e.path
                    .parent()
                    .map(|p| p.display().to_string())
                    .unwrap_or_default()
            };
            let _ = writeln!(out, "    {name:<14} {shown}{note}");
            &e.shadows
        }
    };
    if verbose {
        for s in shadows {
            let _ = writeln!(out, "    {:<14}   shadows {}", "", s.display());
        }
    }
}

/// Each project `.hrr/` passed over, and why (`-v`).
fn skipped_project_dirs(ctx: &Context, out: &mut String) {
    for s in &ctx.config.project().skipped {
        let line = format!("(skipped {}: {})", s.dir.display(), s.why);
        let _ = writeln!(out, "    {}", hrr::error::single_line(&line));
    }
}
