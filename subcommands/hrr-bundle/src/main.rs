//! `hrr-bundle`: the external `hrr bundle` subcommand (DESIGN §9).
//!
//! Packs an HRR capture archive, its finding and its replay log into one
//! `.tar.zst` with a SHA-256 manifest (`BUNDLE.json`), and verifies such a
//! bundle. It talks to `hrr` only through its command line and JSON output,
//! like any third-party external would.

mod cli;
mod collect;
mod digest;
mod hrr;
mod manifest;
mod output;
mod pack;
mod pieces;
mod term;
// The rule for opening a path the user named, shared with `hrr` itself;
// the bundle uses only `open`.
#[path = "../../../src/user_input.rs"]
#[allow(dead_code)]
mod user_input;
mod verify;
mod writeback;

use std::ffi::OsString;

use clap::{CommandFactory, FromArgMatches};

use cli::{Cli, Command};

/// The subcommand name the dispatcher passes as the first argument.
const SUBCOMMAND: &str = "bundle";

fn main() {
    let mut argv: Vec<OsString> = std::env::args_os().collect();
    // `hrr bundle …` runs us as `[path, "bundle", args…]`; run directly we
    // get `[path, args…]`. Accept both.
    let via_hrr = argv.get(1).is_some_and(|a| a == SUBCOMMAND);
    if via_hrr {
        argv.remove(1);
    }
    std::process::exit(run(argv, via_hrr));
}

fn run(argv: Vec<OsString>, via_hrr: bool) -> i32 {
    let command = Cli::command().bin_name(if via_hrr { "hrr bundle" } else { "hrr-bundle" });
    let cli = match command
        .try_get_matches_from(argv)
        .and_then(|m| Cli::from_arg_matches(&m))
    {
        Ok(cli) => cli,
        Err(err) => return print_clap(&err),
    };
    let result = match cli.command {
        Some(Command::Verify { bundle }) => verify::run(&bundle),
        None => pack::run(&cli.pack),
    };
    match result {
        Ok(code) => code,
        Err(err) => {
            eprintln!("error: {}", term::inert(&format!("{err:#}")));
            1
        }
    }
}

/// Prints a clap outcome; help and version are success, anything else is a
/// bad argument (exit 1, as for `hrr`'s builtins).
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
