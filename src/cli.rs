//! The clap definitions of `hrr`'s global flags and builtin subcommands.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use crate::ui::ColorChoice;

/// hrr: decode and triage HRR (HIP Record & Replay) capture archives.
#[derive(Debug, Parser)]
#[command(
    name = "hrr",
    version,
    disable_help_subcommand = true,
    after_help = "`hrr --list` shows every command: builtins, Lua workflows and external hrr-* programs."
)]
pub struct Cli {
    /// Global flags, accepted before or after the subcommand.
    #[command(flatten)]
    pub global: GlobalArgs,

    /// List every command: builtins, Lua workflows, externals, aliases.
    #[arg(long)]
    pub list: bool,

    /// The subcommand.
    #[command(subcommand)]
    pub command: Option<Builtin>,
}

/// Flags every builtin accepts.
#[derive(Debug, Clone, Args)]
pub struct GlobalArgs {
    /// Read this config file on top of site/user/project (like HRR_CONFIG).
    #[arg(long, global = true, value_name = "FILE")]
    pub config: Option<PathBuf>,

    /// Select the [profile.NAME] tables of the config files.
    #[arg(long, global = true, value_name = "NAME")]
    pub profile: Option<String>,

    /// Set a config key for this run (repeatable), e.g. -c replay.gpu=1.
    #[arg(short = 'c', long = "set", global = true, value_name = "KEY=VALUE")]
    pub set: Vec<String>,

    /// Colour on stderr (NO_COLOR is honoured by `auto`).
    #[arg(long, global = true, value_enum, default_value_t = ColorChoice::Auto)]
    pub color: ColorChoice,

    /// No `[hrr]` status lines on stderr.
    #[arg(short, long, global = true)]
    pub quiet: bool,

    /// More detail: full paths in --list, Lua tracebacks, live replay echo.
    #[arg(short, long, global = true)]
    pub verbose: bool,
}

/// The builtin subcommands; anything else is an alias, a Lua workflow or an
/// external `hrr-<name>`.
#[derive(Debug, Subcommand)]
pub enum Builtin {
    /// Decode an archive without ROCm: health, totals, APIs, kernels, events.
    #[command(subcommand)]
    Archive(ArchiveCmd),

    /// Inspect and create config files.
    #[command(subcommand)]
    Config(ConfigCmd),

    /// Run a Lua workflow file.
    Run(RunArgs),

    /// Help for a builtin, a Lua workflow or an external command.
    Help {
        /// The command.
        command: Option<String>,
    },

    /// An alias, Lua workflow or external hrr-<name>.
    #[command(external_subcommand)]
    External(Vec<String>),
}

/// `hrr config …`.
#[derive(Debug, Subcommand)]
pub enum ConfigCmd {
    /// Print the effective config as TOML.
    Show {
        /// Add, per key, the file and line, env var or flag it came from.
        #[arg(long)]
        origin: bool,
    },
    /// List the config files consulted and whether each exists.
    Path,
    /// Print one effective value.
    Get {
        /// A dotted key, e.g. replay.timeout.
        key: String,
    },
    /// Write a commented starter config file (never overwrites).
    Init {
        /// The site file (/etc/hrr/config.toml).
        #[arg(long, group = "layer")]
        site: bool,
        /// The user file (~/.config/hrr/config.toml); the default.
        #[arg(long, group = "layer")]
        user: bool,
        /// The project file (.hrr/config.toml in the current directory).
        #[arg(long, group = "layer")]
        project: bool,
    },
}

/// `hrr run <script.lua> [args…]`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// The Lua file.
    pub script: PathBuf,
    /// Arguments for the script (`hrr.args`).
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    pub args: Vec<String>,
}

/// `hrr archive …`.
#[derive(Debug, Subcommand)]
pub enum ArchiveCmd {
    /// Health, totals, APIs, kernels, blobs, D2H checks; on a root with
    /// several processes, the process table and which one triage would pick.
    Info(ArchiveInfoArgs),
    /// Stream decoded events (JSON Lines with --json).
    Events(ArchiveEventsArgs),
}

/// How many kernel rows `archive info` shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KernelRows {
    /// Every kernel.
    All,
    /// The first N (by launches).
    First(usize),
}

impl std::str::FromStr for KernelRows {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if s == "all" {
            return Ok(KernelRows::All);
        }
        s.parse()
            .map(KernelRows::First)
            .map_err(|_| format!("expected a number or `all`, got '{s}'"))
    }
}

/// `hrr archive info <archive> [--json] [--kernels N|all]`.
#[derive(Debug, Args)]
pub struct ArchiveInfoArgs {
    /// A capture root (something.hrr) or one of its pid-* directories.
    pub archive: PathBuf,
    /// Print the schema_version 1 JSON document instead of the report.
    #[arg(long)]
    pub json: bool,
    /// Kernel rows to show: a number or `all` (text default 20, JSON default all).
    #[arg(long, value_name = "N|all")]
    pub kernels: Option<KernelRows>,
}

/// `hrr archive events <archive> [--json] [--from SEQ] [--limit N] [--api NAME]`.
#[derive(Debug, Args)]
pub struct ArchiveEventsArgs {
    /// A pid-* directory, or a root (its chosen process is shown).
    pub archive: PathBuf,
    /// One JSON object per line.
    #[arg(long)]
    pub json: bool,
    /// Only events whose sequence id is at least SEQ.
    #[arg(long, value_name = "SEQ")]
    pub from: Option<u64>,
    /// Stop after N events.
    #[arg(long, value_name = "N")]
    pub limit: Option<u64>,
    /// Only events of this API (e.g. hipModuleLaunchKernel, or unknown(<id>)).
    #[arg(long, value_name = "NAME")]
    pub api: Option<String>,
}
