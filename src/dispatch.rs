//! From argv to a command: builtin → alias → Lua workflow → external
//! `hrr-<name>` (DESIGN §5, §9). Also `hrr --list` and `hrr help`.

use std::ffi::OsString;
use std::path::PathBuf;
use std::rc::Rc;

use anyhow::anyhow;
use clap::{CommandFactory, FromArgMatches};

use crate::cli::{Builtin, Cli, GlobalArgs};
use crate::commands;
use crate::config::{Config, LoadOptions};
use crate::context::Context;
use crate::error;
use crate::external;
use crate::lua;
use crate::ui::Ui;

/// Runs `hrr` with `argv` and returns the process exit code. Errors are
/// printed here as one `error:` line.
pub fn run(argv: Vec<OsString>) -> i32 {
    match parse(argv).and_then(execute) {
        Ok(code) => code,
        Err(err) => {
            if let Some(clap_err) = err.downcast_ref::<clap::Error>() {
                return print_clap(clap_err);
            }
            let code = error::exit_code(&err);
            eprintln!("error: {}", error::one_line(&err));
            code
        }
    }
}

fn print_clap(err: &clap::Error) -> i32 {
    use clap::error::ErrorKind;
    let _ = err.print();
    match err.kind() {
        ErrorKind::DisplayHelp
        | ErrorKind::DisplayVersion
        | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => 0,
        _ => 1,
    }
}

fn parse(argv: Vec<OsString>) -> anyhow::Result<Cli> {
    let matches = Cli::command().try_get_matches_from(argv)?;
    Ok(Cli::from_arg_matches(&matches)?)
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

fn execute(cli: Cli) -> anyhow::Result<i32> {
    let ctx = context(&cli.global)?;
    if cli.list {
        return commands::list::run(&ctx);
    }
    let Some(command) = cli.command else {
        Cli::command().print_help()?;
        return Ok(0);
    };
    match command {
        Builtin::Archive(cmd) => commands::archive::run(&ctx, &cmd),
        Builtin::Config(cmd) => commands::config::run(&ctx, &cmd),
        Builtin::Replay(args) => commands::replay::run(&ctx, &args),
        Builtin::Triage(args) => commands::triage::run(ctx, &args),
        Builtin::Classify(args) => commands::classify::run(&ctx, &args),
        Builtin::Render(args) => commands::render::run(&ctx, &args),
        Builtin::Preflight(args) => commands::preflight::run(&ctx, &args),
        Builtin::Playback(args) => commands::playback::run(&ctx, &args),
        Builtin::Run(args) => lua::run_file(Rc::new(ctx), &args.script, args.args),
        Builtin::Completions { shell } => commands::completions::run(&ctx, shell),
        Builtin::Man { command } => commands::completions::man(command.as_deref()),
        Builtin::Help { command } => help(&ctx, command.as_deref()),
        Builtin::External(words) => not_builtin(ctx, cli.global, words),
    }
}

/// Builtins whose work is done by the Lua workflow of the same name, so a
/// user's `<name>.lua` customises them instead of being hidden.
pub const WORKFLOW_BUILTINS: &[&str] = &["triage"];

/// The names of the builtin subcommands, for `--list`, suggestions and the
/// no-shadowing rule.
pub fn builtin_names() -> Vec<(String, String)> {
    Cli::command()
        .get_subcommands()
        .map(|c| {
            let about = c.get_about().map(|a| a.to_string()).unwrap_or_default();
            (c.get_name().to_string(), about)
        })
        .collect()
}

fn not_builtin(ctx: Context, global: GlobalArgs, words: Vec<String>) -> anyhow::Result<i32> {
    let (name, rest) = words
        .split_first()
        .ok_or_else(|| anyhow!("no command given"))?;
    if let Some(expansion) = ctx.config.aliases().get(name) {
        return run_alias(global, name, expansion, rest);
    }
    if let Some(workflow) = lua::scripts::find(&ctx.config, name) {
        return lua::run_workflow(
            Rc::new(ctx),
            &workflow,
            lua::Invocation::with_args(rest.to_vec()),
        );
    }
    if let Some(path) = external::find(name) {
        return external::run(&ctx, &path, name, rest);
    }
    Err(unknown_command(&ctx, name))
}

fn run_alias(
    global: GlobalArgs,
    name: &str,
    expansion: &str,
    rest: &[String],
) -> anyhow::Result<i32> {
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
    if cli.global.color == crate::ui::ColorChoice::Auto {
        cli.global.color = global.color;
    }
    execute(cli)
}

fn unknown_command(ctx: &Context, name: &str) -> anyhow::Error {
    let mut known: Vec<String> = builtin_names().into_iter().map(|(n, _)| n).collect();
    known.extend(ctx.config.aliases().into_keys());
    known.extend(lua::scripts::all(&ctx.config).into_iter().map(|w| w.name));
    known.extend(external::all().into_keys());
    let hint = crate::suggest::closest(name, known.iter().map(String::as_str))
        .map(|s| format!("; did you mean '{s}'?"))
        .unwrap_or_default();
    anyhow!(
        "no such command: '{}'{hint} (`hrr --list` shows every command)",
        crate::ui::inert(name)
    )
}

fn help(ctx: &Context, command: Option<&str>) -> anyhow::Result<i32> {
    let Some(name) = command else {
        Cli::command().print_help()?;
        return Ok(0);
    };
    let mut root = Cli::command();
    root.build();
    if let Some(sub) = root.find_subcommand_mut(name) {
        sub.print_help()?;
        return Ok(0);
    }
    if let Some(workflow) = lua::scripts::find(&ctx.config, name) {
        print!("{}", workflow.help());
        return Ok(0);
    }
    if let Some(path) = external::find(name) {
        return external::run(ctx, &path, name, &["--help".to_string()]);
    }
    Err(unknown_command(ctx, name))
}

/// The path of the running `hrr`, handed to externals as `HRR`.
pub fn self_path() -> PathBuf {
    std::env::current_exe().unwrap_or_else(|_| PathBuf::from("hrr"))
}
