//! Command-line definitions of `hrr bundle` and `hrr bundle verify`.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

/// Pack an HRR capture archive, its finding and replay log into one
/// verifiable `.tar.zst` for handing to a kernel developer.
#[derive(Debug, Parser)]
#[command(
    version,
    args_conflicts_with_subcommands = true,
    subcommand_negates_reqs = true,
    after_help = "The bundle holds archive/<name>/…, finding/<file>, log/<file> and, last, \
BUNDLE.json: every file with its size, role and the SHA-256 of each 4 MiB piece, plus the \
`hrr archive info --json` summary. Check one with `hrr bundle verify <file>`."
)]
pub struct Cli {
    /// `verify`, or nothing to pack an archive.
    #[command(subcommand)]
    pub command: Option<Command>,
    /// What to pack.
    #[command(flatten)]
    pub pack: PackArgs,
}

/// Subcommands of `hrr bundle`.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Re-read a bundle and check every file against BUNDLE.json.
    Verify {
        /// The `.tar.zst` bundle to check.
        bundle: PathBuf,
    },
}

/// `hrr bundle <archive> [--finding FILE] [--log FILE] [-o FILE]`.
#[derive(Debug, Args)]
pub struct PackArgs {
    /// A `pid-*` process directory (packed alone) or a capture root (packed
    /// whole, every process).
    #[arg(required = true, value_name = "ARCHIVE")]
    pub archive: Option<PathBuf>,
    /// A finding to include (e.g. the JSON or markdown `hrr triage` wrote).
    #[arg(long, value_name = "FILE")]
    pub finding: Option<PathBuf>,
    /// A replay log to include.
    #[arg(long, value_name = "FILE")]
    pub log: Option<PathBuf>,
    /// Without --finding: run `hrr triage <archive> --no-replay --format
    /// json` and include its finding.
    #[arg(long, conflicts_with = "finding")]
    pub triage: bool,
    /// Where to write the bundle [default:
    /// ./<archive-name>-<UTC time>.hrr-bundle.tar.zst].
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Replace an existing output file.
    #[arg(long)]
    pub force: bool,
    /// No warnings or summary on stderr (errors are still printed).
    #[arg(short, long)]
    pub quiet: bool,
}
