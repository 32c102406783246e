//! `hrr --list`: builtins, aliases, Lua workflows and externals, each with
//! where it comes from; with `-v`, full paths and what shadows what.

use std::fmt::Write as _;

use crate::dispatch::builtin_names;
use crate::external;
use hrr::context::Context;
use hrr::lua;

/// Prints the command list on stdout.
pub fn run(ctx: &Context) -> anyhow::Result<i32> {
    let verbose = ctx.ui.verbose();
    let builtins: Vec<String> = builtin_names().into_iter().map(|(n, _)| n).collect();
    let mut out = String::from("Builtin commands:\n");
    for (name, about) in builtin_names() {
        let _ = writeln!(out, "    {name:<14} {about}");
    }
    let aliases = ctx.config.aliases();
    if !aliases.is_empty() {
        out.push_str("Aliases:\n");
        for (name, expansion) in &aliases {
            let note = if builtins.contains(name) {
                "  (ignored: a builtin has this name)"
            } else {
                ""
            };
            let origin = ctx
                .config
                .entry(&format!("alias.{name}"))
                .map(|e| e.origin.to_string())
                .unwrap_or_default();
            let from = if verbose {
                format!("  [{origin}]")
            } else {
                String::new()
            };
            let _ = writeln!(out, "    {name:<14} = {expansion}{from}{note}");
        }
    }
    let workflows = lua::scripts::all(&ctx.config);
    if !workflows.is_empty() {
        out.push_str("Lua workflows:\n");
        for w in &workflows {
            let hidden = if crate::dispatch::WORKFLOW_BUILTINS.contains(&w.name.as_str()) {
                format!("  (runs as `hrr {}`)", w.name)
            } else {
                hidden_by(&w.name, &builtins, &aliases)
            };
            let _ = writeln!(out, "    {:<14} {}{hidden}", w.name, w.origin(verbose));
            if verbose {
                for s in &w.shadows {
                    let _ = writeln!(out, "    {:<14}   shadows {}", "", s.display());
                }
            }
        }
        if verbose {
            for s in &ctx.config.project().skipped {
                let line = format!("(skipped {}: {})", s.dir.display(), s.why);
                let _ = writeln!(out, "    {}", hrr::error::single_line(&line));
            }
        }
    }
    let externals = external::all();
    if !externals.is_empty() {
        out.push_str("External commands:\n");
        for (name, paths) in &externals {
            let mut hidden = hidden_by(name, &builtins, &aliases);
            if hidden.is_empty() && lua::scripts::find(&ctx.config, name).is_some() {
                hidden = "  (hidden by the Lua workflow of the same name)".into();
            }
            let first = &paths[0];
            let shown = if verbose {
                first.display().to_string()
            } else {
                first
                    .parent()
                    .map(|p| p.display().to_string())
                    .unwrap_or_default()
            };
            let _ = writeln!(out, "    {name:<14} {shown}{hidden}");
            if verbose {
                for p in &paths[1..] {
                    let _ = writeln!(out, "    {:<14}   shadows {}", "", p.display());
                }
            }
        }
    }
    hrr::ui::print(out)?;
    Ok(0)
}

fn hidden_by(
    name: &str,
    builtins: &[String],
    aliases: &std::collections::BTreeMap<String, String>,
) -> String {
    if builtins.iter().any(|b| b == name) {
        "  (hidden by the builtin of the same name)".into()
    } else if aliases.contains_key(name) {
        "  (hidden by the alias of the same name)".into()
    } else {
        String::new()
    }
}
