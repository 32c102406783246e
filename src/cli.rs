//! The clap definitions of `hrr`'s global flags and builtin subcommands.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use hrr::render::Format;
use hrr::replay::{GpuChoice, Overrides, ReplayMode, SyncMode};
use hrr::report::ReportFormat;
use hrr::schema::Document;
use hrr::ui::ColorChoice;

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
    #[arg(long, help_heading = "Global options")]
    pub list: bool,

    /// The subcommand.
    #[command(subcommand)]
    pub command: Option<Builtin>,
}

/// Flags every builtin accepts, listed after a command's own options under
/// a heading of their own.
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Global options")]
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
    /// Triage an archive: decode, preflight, replay, classify, report.
    #[command(
        after_help = "Examples:\n  hrr triage capture.hrr                     the process that died, replayed when this host can\n  hrr triage capture.hrr --no-replay         metadata only, on any machine\n  hrr triage capture.hrr/pid-4243 --gpu 1 --format json\n  hrr triage /nightly --gpus 0,1,2,3 --format jsonl -o findings/\n  hrr triage --from list.txt --shard $SLURM_ARRAY_TASK_ID/$SLURM_ARRAY_TASK_COUNT -o /shared/out\n\nMany archives: several paths, --from, or a directory searched 4 levels deep (symlinks not followed) for capture roots; each archive is triaged by an hrr worker of its own. Exit status: 0 when every archive got a finding (a failed one is an UNKNOWN finding with an error); with --exit-code, the highest outcome code."
    )]
    Triage(TriageArgs),

    /// Decode an archive without ROCm: health, totals, APIs, kernels, events.
    #[command(subcommand)]
    Archive(ArchiveCmd),

    /// Can this host (or a docker image) replay an archive faithfully?
    #[command(
        after_help = "Examples:\n  hrr preflight capture.hrr/pid-4243\n  hrr preflight capture.hrr/pid-4243 --mode docker --image rocm/pytorch:latest --json"
    )]
    Preflight(PreflightArgs),

    /// Print the hrr-playback that would be used and how it was found.
    #[command(
        after_help = "Examples:\n  hrr playback                 which player, how it was found, the format it reads\n  hrr playback --build         build it once from playback.source when none is found"
    )]
    Playback(PlaybackArgs),

    /// Replay one process capture with hrr-playback and record how it ended.
    #[command(
        after_help = "Example:\n  hrr replay capture.hrr/pid-4243 --gpu 1 --timeout 1h -- --verbose\n\nExit status: 0 when the replay ran, whatever the player did (its exit code, signal and timeout are in the output); 1 when it could not run; 130, 143 or 129 when hrr itself got SIGINT, SIGTERM or SIGHUP (the player's process group is stopped and the log ends with a marker)."
    )]
    Replay(ReplayArgs),

    /// The analyzer on its own: replay logs (+ the archive's summary) → finding.
    #[command(
        after_help = "Examples:\n  hrr classify --log hrr-replay.log --archive capture.hrr/pid-4243\n  hrr classify --log a.log --log b.log --format json"
    )]
    Classify(ClassifyArgs),

    /// Re-render a saved finding (JSON) as markdown or JSON.
    #[command(after_help = "Example:\n  hrr render pid-4243.finding.json")]
    Render(RenderArgs),

    /// Group many findings by crash signature: markdown, JSON, CSV or one HTML page.
    #[command(
        after_help = "Examples:\n  hrr report findings/                       every *.finding.json and *.jsonl below it\n  hrr report night.jsonl --format html -o night.html\n\nExit status: 0 when the report was written; 1 when no finding was read (each file that held none is named on stderr) or a path could not be read."
    )]
    Report(ReportArgs),

    /// Inspect and create config files.
    #[command(subcommand)]
    Config(ConfigCmd),

    /// Run a Lua workflow file.
    #[command(after_help = "Example:\n  hrr run flaky.lua capture.hrr/pid-4243")]
    Run(RunArgs),

    /// Print a shell completion script (with the workflows and externals found now).
    Completions {
        /// The shell.
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },

    /// Print the hrr(1) man page, or hrr-<command>(1), as roff on stdout.
    Man {
        /// A builtin command.
        command: Option<String>,
    },

    /// Print the LuaCATS type stubs of the `hrr` Lua module (for lua-language-server).
    #[command(
        after_help = "Save the output as a .lua file in a directory your editor's lua-language-server reads (e.g. `hrr lua-types > .hrr/hrr.d.lua` with workspace.library pointing there)."
    )]
    LuaTypes,

    /// Print the JSON Schema of a machine-readable output.
    Schema {
        /// The document: a finding (`triage`/`classify`/`render --format json`),
        /// `archive info --json`, `preflight --json`, one line of
        /// `archive events --json`, or `report --format json`.
        #[arg(value_enum)]
        document: Document,
    },

    /// Serve hrr's tools to an agent over the Model Context Protocol (stdio).
    #[command(
        after_help = "Tools: triage, archive_info, archive_events, preflight, classify; each runs hrr itself and answers the JSON it prints.\n\nClient config (Claude Desktop, Cursor and others):\n  {\"mcpServers\": {\"hrr\": {\"command\": \"hrr\", \"args\": [\"mcp\"]}}}\n\nExamples:\n  hrr mcp                        serve on stdin/stdout (an MCP client starts it)\n  hrr mcp --call-timeout 6h      for replays longer than the default limit of a call"
    )]
    Mcp(McpArgs),

    /// Help for a builtin, an alias, a Lua workflow or an external command.
    Help {
        /// The command.
        command: Option<String>,
    },

    /// An alias, Lua workflow or external hrr-<name>.
    #[command(external_subcommand)]
    External(Vec<String>),
}

/// `hrr mcp [--call-timeout DUR]`.
#[derive(Debug, Args)]
pub struct McpArgs {
    /// Stop a tool call (and the hrr it runs) after this long: 90s, 30m, 2h;
    /// 0 = none. Keep it above replay.timeout plus a player build.
    #[arg(long, value_name = "DUR", default_value = "2h", value_parser = parse_duration)]
    pub call_timeout: std::time::Duration,
}

fn parse_duration(s: &str) -> Result<std::time::Duration, String> {
    hrr::config::schema::parse_duration(s).map_err(|e| e.to_string())
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
        /// Write the embedded triage.lua into the user's (or, with
        /// --project, the project's) scripts directory instead.
        #[arg(long, conflicts_with = "site")]
        scripts: bool,
    },
}

/// `hrr run <script.lua> [args…]`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// The Lua file.
    pub script: PathBuf,
    /// Arguments for the script (`hrr.args`, byte for byte).
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    pub args: Vec<std::ffi::OsString>,
}

/// `hrr replay <archive> … [-- extra hrr-playback args]`.
#[derive(Debug, Args)]
pub struct ReplayArgs {
    /// A pid-* directory, or a capture root holding exactly one.
    pub archive: PathBuf,
    /// Where to run the player (default: replay.mode; auto = docker when
    /// docker.image is set, else native).
    #[arg(long, value_enum, value_name = "MODE")]
    pub replay: Option<ReplayMode>,
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

/// `hrr triage <archive>… [--from FILE] [--shard K/N] [--gpus LIST] …`.
#[derive(Debug, Args)]
pub struct TriageArgs {
    /// Archives: `pid-*` process directories or capture roots. A directory
    /// that is neither is searched for capture roots, 4 levels deep,
    /// symlinks not followed.
    #[arg(value_name = "ARCHIVE", required_unless_present_any = ["print_workflow", "from"])]
    pub archives: Vec<PathBuf>,
    /// Also triage the archives listed in FILE, one path per line (blank
    /// lines and `#` comments skipped; `-` reads stdin).
    #[arg(long, value_name = "FILE")]
    pub from: Option<PathBuf>,
    /// Triage only part K of N (0 <= K < N) of the byte-sorted archives:
    /// those whose index modulo N is K, as for a job array's task K.
    #[arg(long, value_name = "K/N")]
    pub shard: Option<String>,
    /// Replay on these GPUs, one replay per GPU at a time, e.g. 0,1,2,3
    /// (config replay.gpus; indices count within the device masks hrr got).
    #[arg(long, value_name = "LIST", conflicts_with = "gpu")]
    pub gpus: Option<String>,
    /// The replay plan a triage over many archives made once for all of its
    /// workers (internal to hrr).
    #[arg(long, hide = true, value_name = "JSON")]
    pub plan: Option<String>,
    /// Print the triage.lua embedded in hrr (the preset a site's triage.lua
    /// extends) and exit.
    #[arg(long, exclusive = true)]
    pub print_workflow: bool,
    /// Replay mode (config replay.mode).
    #[arg(long, value_enum, conflicts_with = "no_replay")]
    pub replay: Option<ReplayMode>,
    /// Metadata only: decode and preflight, no replay.
    #[arg(long)]
    pub no_replay: bool,
    /// Leave out --sync-after-launch (faster; faults are not tied to a launch).
    #[arg(long)]
    pub no_sync: bool,
    /// GPU ordinal for the replay (config replay.gpu).
    #[arg(long, value_name = "N")]
    pub gpu: Option<u32>,
    /// Docker image to replay in (config docker.image).
    #[arg(long, value_name = "IMG")]
    pub image: Option<String>,
    /// Replay time limit: 90, 90s, 30m, 1h; 0 = none (config replay.timeout).
    #[arg(long, value_name = "DUR")]
    pub timeout: Option<String>,
    /// Where findings and logs go (config output.workdir).
    #[arg(long, value_name = "DIR")]
    pub workdir: Option<PathBuf>,
    /// Also write the finding to FILE (never inside the archive); with
    /// several archives, a directory that gets one JSON finding per process,
    /// <root name>-<hash>-pid-<pid>.finding.json, or
    /// <root name>-<hash>.finding.json for a root that could not be
    /// resolved into processes.
    #[arg(short = 'o', long, value_name = "FILE|DIR")]
    pub output: Option<PathBuf>,
    /// Finding format on stdout and in files (config output.format); jsonl
    /// prints one compact JSON finding per line as each archive is done.
    #[arg(long, value_enum)]
    pub format: Option<Format>,
    /// Triage every process of a capture root, plus a summary table.
    #[arg(long)]
    pub all: bool,
    /// Proceed past a preflight version mismatch without asking.
    #[arg(long)]
    pub yes: bool,
    /// Exit with the outcome's code (PASS 0, FAIL 10, MAF 11, ABORT 12, HANG 13, UNKNOWN 14, metadata-only 15).
    #[arg(long)]
    pub exit_code: bool,
}

/// `hrr classify --log FILE… [--archive DIR | --archive-info FILE] [--format …] [-o FILE]`.
#[derive(Debug, Args)]
pub struct ClassifyArgs {
    /// A replay log or an `hrr-playback --info` dump; repeatable, any order
    /// (`--log a.log --log info.txt` or `--log a.log info.txt`).
    #[arg(
        long = "log",
        value_name = "FILE",
        num_args = 1..,
        required_unless_present_any = ["archive", "archive_info"]
    )]
    pub logs: Vec<PathBuf>,
    /// The archive the logs came from (a pid-* directory, or a capture root
    /// holding one process): decoded here, its summary joins the evidence.
    #[arg(long, value_name = "DIR", conflicts_with = "archive_info")]
    pub archive: Option<PathBuf>,
    /// The archive's summary saved earlier: an `hrr archive info --json` document.
    #[arg(long, value_name = "FILE")]
    pub archive_info: Option<PathBuf>,
    /// Finding format (config output.format).
    #[arg(long, value_enum)]
    pub format: Option<Format>,
    /// Write the finding to FILE (mode 0600) instead of stdout.
    #[arg(short = 'o', long, value_name = "FILE")]
    pub output: Option<PathBuf>,
}

/// `hrr render <finding.json> [--format …]`.
#[derive(Debug, Args)]
pub struct RenderArgs {
    /// A finding saved as JSON (`-` reads stdin).
    pub finding: PathBuf,
    /// Output format (config output.format).
    #[arg(long, value_enum)]
    pub format: Option<Format>,
}

/// `hrr report PATH… [--format markdown|json|csv|html] [-o FILE]`.
#[derive(Debug, Args)]
pub struct ReportArgs {
    /// Finding files (one finding, a JSON list, or JSON Lines) or
    /// directories searched for `*.finding.json` and `*.jsonl`.
    #[arg(required = true, value_name = "PATH")]
    pub paths: Vec<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = ReportFormat::Markdown)]
    pub format: ReportFormat,
    /// Write the report to FILE instead of stdout.
    #[arg(short = 'o', long, value_name = "FILE")]
    pub output: Option<PathBuf>,
}

/// `hrr preflight <archive> …`: exit 0 ok/warnings, 1 blocked, 2 needs
/// confirmation.
#[derive(Debug, Args)]
pub struct PreflightArgs {
    /// A pid-* directory, or a capture root with one process.
    pub archive: PathBuf,
    /// Probe this machine or a docker image (default: what a replay would
    /// use: docker when docker.image is set and replay.mode is auto/docker).
    #[arg(long, value_enum)]
    pub mode: Option<hrr::preflight::ProbeMode>,
    /// The docker image to probe (sets docker.image).
    #[arg(long, value_name = "IMG")]
    pub image: Option<String>,
    /// The replay GPU ordinal to check (sets replay.gpu).
    #[arg(long, value_name = "N")]
    pub gpu: Option<u32>,
    /// HIP runtime / comgr version mismatches block instead of asking.
    #[arg(long)]
    pub strict_version: bool,
    /// A GPU architecture mismatch blocks instead of warning.
    #[arg(long)]
    pub strict_arch: bool,
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
}

/// `hrr playback [--build] [--json]`.
#[derive(Debug, Args)]
pub struct PlaybackArgs {
    /// When none is found, build it once from playback.source with cmake.
    #[arg(long)]
    pub build: bool,
    /// Print the location as JSON.
    #[arg(long)]
    pub json: bool,
}

/// `hrr archive …`.
#[derive(Debug, Subcommand)]
pub enum ArchiveCmd {
    /// Health, totals, APIs, kernels, blobs, D2H checks; on a root with
    /// several processes, the process table and which one triage would pick.
    #[command(
        after_help = "Examples:\n  hrr archive info capture.hrr\n  hrr archive info capture.hrr/pid-4243 --json --kernels all"
    )]
    Info(ArchiveInfoArgs),
    /// Stream decoded events (JSON Lines with --json).
    #[command(
        after_help = "Examples:\n  hrr archive events capture.hrr/pid-4243 --api hipMalloc\n  hrr archive events capture.hrr/pid-4243 --json --from 100 --limit 20"
    )]
    Events(ArchiveEventsArgs),
    /// The allocation map: ranges live at a point, or one address's history.
    #[command(
        after_help = "Examples:\n  hrr archive memory capture.hrr/pid-4243\n  hrr archive memory capture.hrr/pid-4243 --at 120\n  hrr archive memory capture.hrr/pid-4243 --address 0x7f91da001000 --json"
    )]
    Memory(ArchiveMemoryArgs),
}

/// `hrr archive memory <archive> [--at SEQ] [--address ADDR] [--json]`.
#[derive(Debug, Args)]
pub struct ArchiveMemoryArgs {
    /// A pid-* directory, or a root (its chosen process is shown).
    pub archive: PathBuf,
    /// List the ranges live just before the first event past SEQ
    /// (default: at the end of the stream).
    #[arg(long, value_name = "SEQ")]
    pub at: Option<u64>,
    /// Show every allocation that covered ADDR and the launches passing it.
    #[arg(long, value_name = "ADDR", value_parser = hrr::archive::memory::parse_address)]
    pub address: Option<u64>,
    /// Print the JSON document instead of the report.
    #[arg(long)]
    pub json: bool,
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
    /// Skip the allocation map and the launch pointer audit (`memory` is null).
    #[arg(long)]
    pub no_memory: bool,
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

/// The flag of `hrr replay` and `hrr triage` that sets an [`Overrides`]
/// or [`TriageOverrides`] field, as the config names it as the value's
/// origin.
pub fn replay_flag(field: &str) -> String {
    match field {
        "mode" => "--replay".to_string(),
        "sync" => "--no-sync".to_string(),
        "proceed" => "--yes".to_string(),
        other => format!("--{other}"),
    }
}

impl ReplayArgs {
    /// The replay settings these flags give on top of the config.
    pub fn overrides(&self) -> Overrides {
        Overrides {
            mode: self.replay,
            gpu: self.gpu.map(GpuChoice::Ordinal),
            timeout: self.timeout.clone(),
            sync: self.no_sync.then_some(SyncMode::None),
            ..Overrides::default()
        }
    }
}

impl TriageArgs {
    /// The settings these flags give on top of the config.
    pub fn overrides(&self) -> TriageOverrides {
        TriageOverrides {
            replay: Overrides {
                mode: self.replay,
                gpu: self.gpu.map(GpuChoice::Ordinal),
                timeout: self.timeout.clone(),
                sync: self.no_sync.then_some(SyncMode::None),
                image: self.image.clone(),
                ..Overrides::default()
            },
            workdir: self.workdir.clone(),
            format: self.format,
            proceed: self.yes,
        }
    }
}

/// The settings the flags of `hrr triage` give on top of the config: the
/// replay's and the triage's own, applied as one layer.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TriageOverrides {
    /// The replay's settings (`--replay`, `--gpu`, `--timeout`, …).
    pub replay: Overrides,
    /// `output.workdir` (`--workdir`).
    pub workdir: Option<PathBuf>,
    /// `output.format` (`--format`).
    pub format: Option<Format>,
    /// `preflight.continue` (`--yes`); `false` leaves the config's value.
    pub proceed: bool,
}

impl TriageOverrides {
    /// `config` with these settings applied, each value's origin the flag
    /// that gave it.
    pub fn apply(&self, config: &hrr::config::Config) -> anyhow::Result<hrr::config::Config> {
        let mut settings = self.replay.settings();
        settings.extend([
            (
                "output.workdir",
                "workdir",
                self.workdir.as_ref().map(|w| w.display().to_string()),
            ),
            (
                "output.format",
                "format",
                self.format.map(|f| f.name().to_string()),
            ),
            (
                "preflight.continue",
                "proceed",
                self.proceed.then(|| "true".to_string()),
            ),
        ]);
        hrr::replay::overrides::apply(config, settings, replay_flag)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn triage_flags_land_on_their_keys_as_one_layer_named_by_flag() {
        let cli = Cli::try_parse_from([
            "hrr",
            "triage",
            "a.hrr",
            "--yes",
            "--format",
            "jsonl",
            "--workdir",
            "/w",
            "--gpu",
            "2",
            "--no-sync",
        ])
        .unwrap();
        let Some(Builtin::Triage(args)) = cli.command else {
            panic!("not triage: {cli:?}");
        };
        let base = hrr::config::Config::with_overrides(&[]).unwrap();
        let c = args.overrides().apply(&base).unwrap();
        let origin = |key: &str| c.entry(key).unwrap().origin.to_string();
        assert!(c.bool("preflight.continue"));
        assert_eq!(origin("preflight.continue"), "flag --yes true");
        assert_eq!(c.str("output.format"), Some("jsonl"));
        assert_eq!(origin("output.format"), "flag --format jsonl");
        assert_eq!(c.str("output.workdir"), Some("/w"));
        assert_eq!(origin("output.workdir"), "flag --workdir /w");
        assert_eq!(origin("replay.gpu"), "flag --gpu 2");
        assert_eq!(c.str("replay.sync"), Some("none"));
        // Without the flags the config's own values stay.
        let cli = Cli::try_parse_from(["hrr", "triage", "a.hrr"]).unwrap();
        let Some(Builtin::Triage(args)) = cli.command else {
            panic!("not triage: {cli:?}");
        };
        let c = args.overrides().apply(&base).unwrap();
        assert_eq!(
            c.entry("preflight.continue").map(|e| e.origin.to_string()),
            base.entry("preflight.continue")
                .map(|e| e.origin.to_string())
        );
        assert_eq!(c.str("output.format"), base.str("output.format"));
    }
}
