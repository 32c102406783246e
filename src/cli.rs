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
    /// Inspect and create config files.
    #[command(subcommand)]
    Config(ConfigCmd),

    /// Run a Lua workflow file.
    Run(RunArgs),

    /// Replay one process capture with hrr-playback and record how it ended.
    #[command(
        after_help = "Exit status: 0 when the replay ran, whatever the player did (its exit code, signal and timeout are in the output); 1 when it could not run; 130, 143 or 129 when hrr itself got SIGINT, SIGTERM or SIGHUP (the player's process group is stopped and the log ends with a marker)."
    )]
    Replay(ReplayArgs),

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

/// Where `hrr replay` runs the player.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ReplayModeArg {
    /// On this host (needs a readable /dev/kfd).
    Native,
    /// In docker.image.
    Docker,
}

/// `hrr replay <archive> … [-- extra hrr-playback args]`.
#[derive(Debug, Args)]
pub struct ReplayArgs {
    /// A pid-* directory, or a capture root holding exactly one.
    pub archive: PathBuf,
    /// Where to run the player (default: replay.mode; auto = docker when
    /// docker.image is set, else native).
    #[arg(long, value_enum, value_name = "MODE")]
    pub replay: Option<ReplayModeArg>,
    /// Do not pass a sync flag (replay.sync = none).
    #[arg(long)]
    pub no_sync: bool,
    /// GPU ordinal for HIP_VISIBLE_DEVICES (default: replay.gpu).
    #[arg(long, value_name = "N")]
    pub gpu: Option<u32>,
    /// Stop the replay after this long: 90, 90s, 30m, 1h; 0 = none.
    #[arg(long, value_name = "DUR")]
    pub timeout: Option<String>,
    /// Write the replay log here instead of the workdir.
    #[arg(long, value_name = "FILE")]
    pub log: Option<PathBuf>,
    /// Print the result as JSON.
    #[arg(long)]
    pub json: bool,
    /// Extra arguments for hrr-playback, after `--`.
    #[arg(last = true, value_name = "ARGS")]
    pub extra: Vec<String>,
}
