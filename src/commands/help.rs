//! `hrr help [NAME]`: the help of whatever `hrr NAME` runs, as the command
//! registry resolves it: a builtin's clap help, an alias's expansion (and
//! the help of the builtin or workflow it runs), a workflow's leading
//! comment block, or an external's own `--help`.

use clap::CommandFactory;

use crate::cli::Cli;
use crate::external;
use crate::registry::{Registry, Source};
use hrr::context::Context;

/// Prints the help of `command`, or `hrr`'s own help without one.
pub fn run(ctx: &Context, command: Option<&str>) -> anyhow::Result<i32> {
    let Some(name) = command else {
        return root();
    };
    let registry = Registry::load(&ctx.config);
    let Some(found) = registry.resolve(name) else {
        return Err(registry.unknown(name));
    };
    match &found.source {
        Source::Builtin { .. } => builtin(&[name]),
        Source::Alias(alias) => {
            let line = format!(
                "{name}: alias for `hrr {}` ({})",
                alias.expansion, alias.origin
            );
            hrr::ui::print(format!("{}\n", hrr::error::single_line(&line)))?;
            let words: Vec<&str> = alias.expansion.split_whitespace().collect();
            let target = words.first().and_then(|w| registry.resolve(w));
            match target.map(|t| &t.source) {
                Some(Source::Builtin { .. }) => {
                    hrr::ui::print("\n")?;
                    builtin(&words)
                }
                Some(Source::Workflow(w)) => {
                    hrr::ui::print(format!("\n{}", w.help()))?;
                    Ok(0)
                }
                _ => Ok(0),
            }
        }
        Source::Workflow(w) => {
            hrr::ui::print(w.help())?;
            Ok(0)
        }
        Source::External(e) => external::run(ctx, &e.path, name, &["--help".to_string()]),
    }
}

/// `hrr`'s own help on stdout.
pub fn root() -> anyhow::Result<i32> {
    hrr::ui::print(Cli::command().render_help().to_string())?;
    Ok(0)
}

/// The help of the builtin that `words` name, as deep as they name
/// subcommands (`config get` is the help of `hrr config get`).
fn builtin(words: &[&str]) -> anyhow::Result<i32> {
    let mut root = Cli::command();
    root.build();
    let mut sub = &root;
    for word in words {
        // The walk stops at the first word that is not a subcommand (an
        // argument or a flag of the one reached).
        match sub.find_subcommand(word) {
            Some(next) => sub = next,
            None => break,
        }
    }
    let mut sub = sub.clone();
    hrr::ui::print(sub.render_help().to_string())?;
    Ok(0)
}
