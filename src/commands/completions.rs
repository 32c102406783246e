//! `hrr completions <shell>` and `hrr man`: the conventions of the
//! ecosystem. Completions include the Lua workflows, externals and aliases
//! visible when the script is generated, so regenerate after adding one.

use clap::{Command, CommandFactory};

use crate::cli::Cli;
use crate::external;
use hrr::context::Context;
use hrr::lua;

/// Prints the completion script for `shell`.
pub fn run(ctx: &Context, shell: clap_complete::Shell) -> anyhow::Result<i32> {
    let mut cmd = with_runtime_commands(ctx, Cli::command());
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut cmd, "hrr", &mut script);
    hrr::ui::print(script)?;
    Ok(0)
}

/// The clap command extended with one subcommand per alias, Lua workflow and
/// external (each taking free arguments), skipping names a builtin owns.
fn with_runtime_commands(ctx: &Context, mut cmd: Command) -> Command {
    let builtins: Vec<String> = cmd
        .get_subcommands()
        .map(|c| c.get_name().to_string())
        .collect();
    let mut extra: Vec<(String, String)> = Vec::new();
    for (name, expansion) in ctx.config.aliases() {
        extra.push((name, format!("alias for `hrr {expansion}`")));
    }
    for w in lua::scripts::all(&ctx.config) {
        extra.push((
            w.name.clone(),
            format!("Lua workflow ({})", w.origin(false)),
        ));
    }
    for (name, paths) in external::all() {
        extra.push((name, format!("external command {}", paths[0].display())));
    }
    let mut seen = builtins;
    for (name, about) in extra {
        if seen.contains(&name) {
            continue;
        }
        seen.push(name.clone());
        cmd = cmd.subcommand(
            Command::new(name).about(about).arg(
                clap::Arg::new("args")
                    .num_args(0..)
                    .trailing_var_arg(true)
                    .allow_hyphen_values(true),
            ),
        );
    }
    cmd
}

/// Prints the man page of `hrr` (with no command) or of one builtin, as
/// roff: `hrr man | man -l -`, or `hrr man > hrr.1` to install it.
pub fn man(command: Option<&str>) -> anyhow::Result<i32> {
    let mut root = Cli::command();
    root.build();
    let page = match command {
        None => root,
        Some(name) => {
            let sub = root.find_subcommand(name).ok_or_else(|| {
                anyhow::anyhow!("no builtin command '{name}' (`hrr --list` shows them)")
            })?;
            let title = format!("hrr-{name}");
            sub.clone()
                .name(title.clone())
                .bin_name(format!("hrr {name}"))
                .display_name(title)
                .version(env!("CARGO_PKG_VERSION"))
        }
    };
    let mut out = Vec::new();
    clap_mangen::Man::new(page).render(&mut out)?;
    hrr::ui::print(out)?;
    Ok(0)
}
