//! From argv to a command: a builtin as clap parses it, else the alias, Lua
//! workflow or external `hrr-<name>` the command registry resolves the
//! name to (DESIGN §5, §9).

use std::ffi::OsString;
use std::path::PathBuf;
use std::rc::Rc;

use anyhow::anyhow;
use clap::{CommandFactory, FromArgMatches};

use crate::cli::{Builtin, Cli, GlobalArgs};
use crate::commands;
use crate::external;
use crate::registry::{Registry, Source};
use hrr::config::{Config, LoadOptions};
use hrr::context::Context;
use hrr::error;
use hrr::lua;
use hrr::ui::Ui;

/// Runs `hrr` with `argv` and returns the process exit code. Errors are
/// printed here as one `error:` line.
pub fn run(argv: Vec<OsString>) -> i32 {
    match parse(argv).and_then(|cli| execute(cli, &[])) {
        Ok(code) => code,
        Err(err) => {
            if let Some(clap_err) = err.downcast_ref::<clap::Error>() {
                return print_clap(clap_err);
            }
            report(&err)
        }
    }
}

/// Prints `err` as the one `error:` line and returns its exit code.
fn report(err: &anyhow::Error) -> i32 {
    hrr::ui::stderr_line(&format!("error: {}", error::one_line(err)));
    error::exit_code(err)
}

fn print_clap(err: &clap::Error) -> i32 {
    use clap::error::ErrorKind;
    let printed = err.print();
    match err.kind() {
        ErrorKind::DisplayHelp
        | ErrorKind::DisplayVersion
        | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => match printed {
            Ok(()) => 0,
            Err(e) => report(&hrr::ui::stdout_error(e)),
        },
        _ => 1,
    }
}

fn parse(argv: Vec<OsString>) -> anyhow::Result<Cli> {
    let matches = Cli::command().try_get_matches_from(&argv)?;
    let mut cli = Cli::from_arg_matches(&matches)?;
    let passthrough = match &cli.command {
        Some(Builtin::Run(args)) => args.args.len(),
        Some(Builtin::External(words)) => words.len(),
        _ => 0,
    };
    cli.global.set = config_overrides(&argv, passthrough);
    Ok(cli)
}

/// Every `-c/--set` value in argv order, from every command level. clap keeps
/// only the occurrences of the last level that has any (`hrr -c a=1 triage -c
/// b=2` would lose `a=1`), so they are read from argv: `-c V`, `-cV`,
/// `--set V`, `--set=V`, up to a `--` and never among the trailing
/// `passthrough` words that belong to a Lua script or an external command.
fn config_overrides(argv: &[OsString], passthrough: usize) -> Vec<String> {
    let end = argv.len().saturating_sub(passthrough);
    let mut words = argv.iter().take(end).skip(1).map(|w| w.to_string_lossy());
    let mut out = Vec::new();
    while let Some(word) = words.next() {
        match word.as_ref() {
            "--" => break,
            "-c" | "--set" => out.extend(words.next().map(|v| v.into_owned())),
            w if w.starts_with("--set=") => out.push(w["--set=".len()..].to_string()),
            w if w.starts_with("-c") => out.push(w[2..].to_string()),
            _ => {}
        }
    }
    out
}

fn context(global: &GlobalArgs) -> anyhow::Result<Context> {
    let config = Config::load(&LoadOptions {
        config_file: global.config.clone(),
        profile: global.profile.clone(),
        overrides: global.set.clone(),
    })?;
    Ok(Context {
        config,
        ui: Ui::new(global.quiet, global.verbose, global.color),
    })
}

/// Runs `cli`; `aliases` are the aliases being expanded to reach it, outermost
/// first, so a cycle among them is an error rather than endless recursion.
fn execute(cli: Cli, aliases: &[&str]) -> anyhow::Result<i32> {
    let ctx = context(&cli.global)?;
    if cli.list {
        return commands::list::run(&ctx);
    }
    let Some(command) = cli.command else {
        return commands::help::root();
    };
    match command {
        Builtin::Archive(cmd) => commands::archive::run(&ctx, &cmd),
        Builtin::Config(cmd) => commands::config::run(&ctx, &cmd),
        Builtin::Replay(args) => commands::replay::run(&ctx, &args),
        Builtin::Triage(args) => commands::triage::run(ctx, &cli.global, &args),
        Builtin::Classify(args) => commands::classify::run(&ctx, &args),
        Builtin::Render(args) => commands::render::run(&ctx, &args),
        Builtin::Report(args) => commands::report::run(&ctx, &args),
        Builtin::Preflight(args) => commands::preflight::run(&ctx, &args),
        Builtin::Playback(args) => commands::playback::run(&ctx, &args),
        Builtin::Run(args) => lua::run_file(Rc::new(ctx), &args.script, args.args),
        Builtin::Completions { shell } => commands::completions::run(&ctx, shell),
        Builtin::Man { command } => commands::completions::man(command.as_deref()),
        Builtin::LuaTypes => commands::lua_types::run(),
        Builtin::Schema { document } => commands::schema::run(document),
        Builtin::Mcp(args) => commands::mcp::run(&cli.global, &args),
        Builtin::Help { command } => commands::help::run(&ctx, command.as_deref()),
        Builtin::External(words) => not_builtin(ctx, cli.global, words, aliases),
    }
}

fn not_builtin(
    ctx: Context,
    global: GlobalArgs,
    words: Vec<String>,
    aliases: &[&str],
) -> anyhow::Result<i32> {
    let (name, rest) = words
        .split_first()
        .ok_or_else(|| anyhow!("no command given"))?;
    match Registry::find(&ctx.config, name).map(|c| c.source) {
        Some(Source::Alias(alias)) => run_alias(global, aliases, name, &alias.expansion, rest),
        Some(Source::Workflow(workflow)) => lua::run_workflow(
            Rc::new(ctx),
            &workflow,
            lua::Invocation::with_args(rest.iter().map(Into::into).collect()),
        ),
        Some(Source::External(e)) => external::run(&ctx, &e.path, name, rest),
        // clap has already matched every builtin name.
        Some(Source::Builtin { .. }) | None => Err(Registry::load(&ctx.config).unknown(name)),
    }
}

/// Runs alias `name`, reached by expanding the aliases `outer`.
fn run_alias(
    global: GlobalArgs,
    outer: &[&str],
    name: &str,
    expansion: &str,
    rest: &[String],
) -> anyhow::Result<i32> {
    let expanding = [outer, &[name]].concat();
    if outer.contains(&name) {
        return Err(anyhow!(
            "the aliases expand in a cycle: {}; change one of them in [alias] of the config",
            expanding.join(" -> ")
        ));
    }
    let mut argv: Vec<OsString> = vec!["hrr".into()];
    argv.extend(expansion.split_whitespace().map(OsString::from));
    argv.extend(rest.iter().map(OsString::from));
    let mut cli = parse(argv)?;
    if let Some(Builtin::External(words)) = &cli.command {
        if words.first().map(String::as_str) == Some(name) {
            return Err(anyhow!("alias '{name}' expands to itself"));
        }
    }
    cli.global.set = [global.set, cli.global.set].concat();
    cli.global.quiet |= global.quiet;
    cli.global.verbose |= global.verbose;
    cli.global.config = cli.global.config.or(global.config);
    cli.global.profile = cli.global.profile.or(global.profile);
    if cli.global.color == hrr::ui::ColorChoice::Auto {
        cli.global.color = global.color;
    }
    execute(cli, &expanding)
}

/// The path of the running `hrr`, handed to externals as `HRR`.
pub fn self_path() -> PathBuf {
    std::env::current_exe().unwrap_or_else(|_| PathBuf::from("hrr"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(s: &str) -> Vec<OsString> {
        s.split(' ').map(OsString::from).collect()
    }

    #[test]
    fn overrides_are_kept_from_every_level_and_never_from_passthrough() {
        let argv = words("hrr -c a=1 triage --set b=2 -cc=3 x --set=d=4 -- -c no");
        assert_eq!(config_overrides(&argv, 0), ["a=1", "b=2", "c=3", "d=4"]);
        let argv = words("hrr -c a=1 run s.lua -c mine");
        assert_eq!(config_overrides(&argv, 2), ["a=1"]);
    }
}
