//! `hrr help [NAME]`: the help of whatever `hrr NAME` runs, as the command
//! registry resolves it: a builtin's clap help, an alias's expansion (and
//! the help of the builtin or workflow it runs), a workflow's leading
//! comment block, or an external's own `--help`.

use clap::CommandFactory;

use crate::cli::Cli;
use crate::external;
use crate::registry::{Registry, Source};
use hrr::config::Alias;
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
    let text = match &found.source {
        Source::Builtin { .. } => builtin(&[name]),
        Source::Alias(alias) => alias_help(&registry, name, alias),
        Source::Workflow(w) => w.help(),
        Source::External(e) => {
            return external::run(ctx, &e.path, name, &["--help".to_string()]);
        }
    };
    hrr::ui::print(text)?;
    Ok(0)
}

/// An alias's expansion and where it was set, then the help of the builtin
/// or workflow its first word runs.
fn alias_help(registry: &Registry, name: &str, alias: &Alias) -> String {
    let line = format!(
        "{name}: alias for `hrr {}` ({})",
        alias.expansion, alias.origin
    );
    let mut text = format!("{}\n", hrr::error::single_line(&line));
    let words: Vec<&str> = alias.expansion.split_whitespace().collect();
    let target = words.first().and_then(|w| registry.resolve(w));
    match target.map(|t| &t.source) {
        Some(Source::Builtin { .. }) => text = format!("{text}\n{}", builtin(&words)),
        Some(Source::Workflow(w)) => text = format!("{text}\n{}", w.help()),
        _ => {}
    }
    text
}

/// `hrr`'s own help on stdout.
pub fn root() -> anyhow::Result<i32> {
    hrr::ui::print(Cli::command().render_help().to_string())?;
    Ok(0)
}

/// The help of the builtin that `words` name, as deep as they name
/// subcommands (`config get` is the help of `hrr config get`).
fn builtin(words: &[&str]) -> String {
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
    sub.clone().render_help().to_string()
}
