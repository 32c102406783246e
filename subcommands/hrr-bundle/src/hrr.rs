//! `hrr` through its command line only: `archive info --json` and
//! `triage --no-replay --format json` (DESIGN §3.2, §6, §9).

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use anyhow::{bail, Context as _};

use crate::term::Ui;

/// The `hrr` binary to call: `$HRR` (set by the dispatcher), else `hrr` on
/// `PATH` when `hrr-bundle` is run directly.
pub struct Hrr {
    program: PathBuf,
}

impl Hrr {
    /// The `hrr` named by the environment.
    pub fn from_env() -> Hrr {
        let program = std::env::var_os("HRR")
            .filter(|p| !p.is_empty())
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from("hrr"));
        Hrr { program }
    }

    /// `hrr archive info --json --no-memory <archive>` as parsed JSON: the
    /// summary a recipient reads first. The allocation map and pointer
    /// audit are left to whoever unpacks it (`hrr archive info` on the
    /// bundled archive, or the `--triage` finding), as they add a quarter
    /// to a half to the summary's time. A non-zero exit with a JSON report
    /// (e.g. an unsupported format version) is kept with a warning: such an
    /// archive is exactly what a developer may need.
    pub fn archive_info(&self, archive: &Path, ui: &Ui) -> anyhow::Result<serde_json::Value> {
        let args = [
            "archive".into(),
            "info".into(),
            "--json".into(),
            "--no-memory".into(),
            archive.into(),
        ];
        let out = self.run(&args)?;
        let parsed = serde_json::from_slice::<serde_json::Value>(&out.stdout)
            .ok()
            .filter(|v| v.get("kind").is_some_and(|k| k.is_string()));
        match (parsed, out.status.success()) {
            (Some(info), true) => Ok(info),
            (Some(info), false) => {
                ui.warn(&format!(
                    "{} exited with {}{}; its report is kept in BUNDLE.json",
                    self.describe(&args),
                    exit_text(&out),
                    stderr_tail(&out),
                ));
                Ok(info)
            }
            (None, _) => bail!(
                "{} did not print an archive report (exit {}){}",
                self.describe(&args),
                exit_text(&out),
                stderr_tail(&out)
            ),
        }
    }

    /// `hrr triage <archive> --no-replay --format json`: the finding JSON,
    /// checked to be a JSON object.
    pub fn triage_finding(&self, archive: &Path) -> anyhow::Result<Vec<u8>> {
        let args = [
            "triage".into(),
            archive.into(),
            "--no-replay".into(),
            "--format".into(),
            "json".into(),
        ];
        let out = self.run(&args)?;
        if !out.status.success() {
            bail!(
                "{} failed (exit {}){}",
                self.describe(&args),
                exit_text(&out),
                stderr_tail(&out)
            );
        }
        match serde_json::from_slice::<serde_json::Value>(&out.stdout) {
            Ok(v) if v.is_object() => Ok(out.stdout),
            _ => bail!(
                "{} did not print a JSON finding on stdout",
                self.describe(&args)
            ),
        }
    }

    fn run(&self, args: &[OsString]) -> anyhow::Result<Output> {
        Command::new(&self.program)
            .args(args)
            .stdin(Stdio::null())
            .output()
            .with_context(|| {
                format!(
                    "cannot run {} (run this as `hrr bundle`, or set HRR to the hrr binary)",
                    self.program.display()
                )
            })
    }

    fn describe(&self, args: &[OsString]) -> String {
        let mut text = format!("`{}", self.program.display());
        for a in args {
            text.push(' ');
            text.push_str(&a.to_string_lossy());
        }
        text.push('`');
        text
    }
}

fn exit_text(out: &Output) -> String {
    match out.status.code() {
        Some(code) => code.to_string(),
        None => "by a signal".to_string(),
    }
}

/// `: <last stderr line>` when the program said something, so the one
/// `error:` line carries `hrr`'s own reason.
fn stderr_tail(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr)
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .map(|l| format!(": {}", l.trim()))
        .unwrap_or_default()
}
