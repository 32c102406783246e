//! The arguments of each MCP tool (their input schemas come from these
//! types) and the `hrr` command line each one stands for.
//!
//! Values are passed as `--flag=value` and the archive after `--`, so a
//! value that starts with `-` is read as a value, never as another flag.

use std::ffi::OsString;
use std::path::PathBuf;

use schemars::JsonSchema;
use serde::Deserialize;

use hrr::replay::ReplayMode;

/// Events `archive_events` returns when the call gives no `limit`.
pub const DEFAULT_EVENT_LIMIT: u64 = 1000;

/// What `preflight` probes (`hrr preflight --mode`).
#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ProbeMode {
    /// This machine.
    Host,
    /// A docker image (`image`, or config docker.image).
    Docker,
}

/// Arguments of the `triage` tool.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TriageParams {
    /// A pid-* process directory or a capture root (the process that died is
    /// picked).
    pub archive: PathBuf,
    /// Metadata only: decode and preflight, no replay (any machine, no GPU).
    #[serde(default)]
    pub no_replay: bool,
    /// Replay mode (default: config replay.mode, which is auto).
    pub replay: Option<ReplayMode>,
    /// GPU ordinal for the replay (default: config replay.gpu).
    pub gpu: Option<u32>,
    /// Docker image to replay in (default: config docker.image).
    pub image: Option<String>,
    /// Replay time limit: 90, 90s, 30m, 1h; 0 = none (default: config
    /// replay.timeout).
    pub timeout: Option<String>,
    /// Triage every process of a capture root: the result is then
    /// {"findings": [...]}, one finding per process.
    #[serde(default)]
    pub all: bool,
    /// Proceed past a preflight version mismatch (there is no one to ask).
    #[serde(default)]
    pub yes: bool,
}

impl TriageParams {
    /// `hrr triage … --format json -- <archive>`.
    pub fn argv(&self) -> Vec<OsString> {
        let mut argv = words(&["triage", "--format=json"]);
        flag(&mut argv, "--no-replay", self.no_replay);
        flag(&mut argv, "--all", self.all);
        flag(&mut argv, "--yes", self.yes);
        if let Some(mode) = self.replay {
            value(&mut argv, "--replay", Some(mode.name()));
        }
        value(&mut argv, "--gpu", self.gpu);
        value(&mut argv, "--image", self.image.as_deref());
        value(&mut argv, "--timeout", self.timeout.as_deref());
        archive_last(argv, &self.archive)
    }
}

/// Arguments of the `archive_info` tool.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ArchiveInfoParams {
    /// A capture root (something.hrr) or one of its pid-* directories.
    pub archive: PathBuf,
}

impl ArchiveInfoParams {
    /// `hrr archive info --json -- <archive>`.
    pub fn argv(&self) -> Vec<OsString> {
        archive_last(words(&["archive", "info", "--json"]), &self.archive)
    }
}

/// Arguments of the `archive_events` tool.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ArchiveEventsParams {
    /// A pid-* directory, or a capture root (its chosen process is read).
    pub archive: PathBuf,
    /// Only events whose sequence id is at least this (to page on: the last
    /// seq returned plus one).
    pub from: Option<u64>,
    /// At most this many events (default 1000).
    #[serde(default = "default_event_limit")]
    pub limit: u64,
    /// Only events of this API, e.g. hipModuleLaunchKernel, or unknown(<id>).
    pub api: Option<String>,
}

fn default_event_limit() -> u64 {
    DEFAULT_EVENT_LIMIT
}

impl ArchiveEventsParams {
    /// `hrr archive events --json --limit=N … -- <archive>`.
    pub fn argv(&self) -> Vec<OsString> {
        let mut argv = words(&["archive", "events", "--json"]);
        value(&mut argv, "--limit", Some(self.limit));
        value(&mut argv, "--from", self.from);
        value(&mut argv, "--api", self.api.as_deref());
        archive_last(argv, &self.archive)
    }
}

/// Arguments of the `preflight` tool.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PreflightParams {
    /// A pid-* directory, or a capture root with one process.
    pub archive: PathBuf,
    /// Probe this machine or a docker image (default: what a replay would
    /// use).
    pub mode: Option<ProbeMode>,
    /// The docker image to probe.
    pub image: Option<String>,
    /// The replay GPU ordinal to check.
    pub gpu: Option<u32>,
}

impl PreflightParams {
    /// `hrr preflight --json … -- <archive>`.
    pub fn argv(&self) -> Vec<OsString> {
        let mut argv = words(&["preflight", "--json"]);
        let mode = self.mode.map(|m| match m {
            ProbeMode::Host => "host",
            ProbeMode::Docker => "docker",
        });
        value(&mut argv, "--mode", mode);
        value(&mut argv, "--image", self.image.as_deref());
        value(&mut argv, "--gpu", self.gpu);
        archive_last(argv, &self.archive)
    }
}

/// Arguments of the `classify` tool.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ClassifyParams {
    /// Replay logs or hrr-playback --info dumps, in any order.
    pub logs: Vec<PathBuf>,
    /// The archive the logs came from (a pid-* directory, or a capture root
    /// holding one process): its summary joins the evidence.
    pub archive: Option<PathBuf>,
}

impl ClassifyParams {
    /// `hrr classify --format json --log=<log>… [--archive=<dir>]`.
    pub fn argv(&self) -> Vec<OsString> {
        let mut argv = words(&["classify", "--format=json"]);
        for log in &self.logs {
            argv.push(joined("--log", log.as_os_str()));
        }
        if let Some(archive) = &self.archive {
            argv.push(joined("--archive", archive.as_os_str()));
        }
        argv
    }
}

fn words(list: &[&str]) -> Vec<OsString> {
    list.iter().map(OsString::from).collect()
}

fn flag(argv: &mut Vec<OsString>, name: &str, on: bool) {
    if on {
        argv.push(name.into());
    }
}

fn value(argv: &mut Vec<OsString>, name: &str, v: Option<impl ToString>) {
    if let Some(v) = v {
        argv.push(format!("{name}={}", v.to_string()).into());
    }
}

/// `--name=value` for a value that may not be UTF-8 (a path).
fn joined(name: &str, v: &std::ffi::OsStr) -> OsString {
    let mut word = OsString::from(name);
    word.push("=");
    word.push(v);
    word
}

fn archive_last(mut argv: Vec<OsString>, archive: &std::path::Path) -> Vec<OsString> {
    argv.push("--".into());
    argv.push(archive.into());
    argv
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(argv: &[OsString]) -> Vec<String> {
        argv.iter()
            .map(|w| w.to_string_lossy().into_owned())
            .collect()
    }

    #[test]
    fn a_dash_leading_value_stays_a_value() {
        let p: TriageParams = serde_json::from_value(serde_json::json!({
            "archive": "--help", "image": "-x", "gpu": 1, "replay": "docker"
        }))
        .unwrap();
        assert_eq!(
            text(&p.argv()),
            [
                "triage",
                "--format=json",
                "--replay=docker",
                "--gpu=1",
                "--image=-x",
                "--",
                "--help"
            ]
        );
    }

    #[test]
    fn events_are_bounded_when_no_limit_is_given() {
        let p: ArchiveEventsParams =
            serde_json::from_value(serde_json::json!({"archive": "a"})).unwrap();
        assert!(text(&p.argv()).contains(&"--limit=1000".to_string()));
    }

    #[test]
    fn an_unknown_argument_is_refused() {
        let r: Result<ArchiveInfoParams, _> =
            serde_json::from_value(serde_json::json!({"archive": "a", "json": true}));
        assert!(r.is_err());
    }
}
