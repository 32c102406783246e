//! `hrr completions <shell>` and `hrr man`: the conventions of the
//! ecosystem. Completions include the commands of the registry that run
//! when the script is generated (aliases, Lua workflows, externals), so
//! regenerate after adding one.

use clap::{Command, CommandFactory};

use crate::cli::Cli;
use crate::registry::Registry;
use hrr::context::Context;

/// Prints the completion script for `shell`.
pub fn run(ctx: &Context, shell: clap_complete::Shell) -> anyhow::Result<i32> {
    let mut cmd = with_runtime_commands(ctx, Cli::command());
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut cmd, "hrr", &mut script);
    hrr::ui::print(script)?;
    Ok(0)
}

/// The clap command extended with one subcommand (taking free arguments)
/// per alias, Lua workflow and external that `hrr <name>` would run.
fn with_runtime_commands(ctx: &Context, mut cmd: Command) -> Command {
    let registry = Registry::load(&ctx.config);
    for command in registry.reachable().filter(|c| !c.is_builtin()) {
        cmd = cmd.subcommand(
            Command::new(command.name.clone())
                .about(command.about())
                .arg(
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
