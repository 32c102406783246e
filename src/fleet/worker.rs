//! One worker of a run over many archives: `hrr` re-run as `hrr triage
//! <archive> --format json …` on one archive, in a process group of its
//! own under the supervisor ([`crate::subprocess::run`]), so that it and
//! its replay die with the `hrr` that started it. Whatever happens to it,
//! the archive gets a finding: the worker's own, or an UNKNOWN one whose
//! `error` says what went wrong.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use anyhow::bail;

use crate::finding::Finding;
use crate::subprocess::{Captured, ExecOptions};

/// `--exit-code`'s code for an UNKNOWN outcome (DESIGN §3.1), which a
/// worker that printed no finding gets.
const UNKNOWN_EXIT: i32 = 14;

/// How to start a worker.
#[derive(Clone, Debug)]
pub struct Worker {
    /// The `hrr` executable.
    pub program: PathBuf,
    /// Global flags, before `triage` (`--config`, `--profile`, `-c`, `-q`).
    pub global: Vec<OsString>,
    /// Flags of `hrr triage`, after the archive.
    pub flags: Vec<OsString>,
    /// The run's workdir; each archive's worker works in a directory of
    /// its own below it, named by [`super::names::root_stem`].
    pub workdir: PathBuf,
}

/// What triaging one archive gave.
#[derive(Debug)]
pub struct Triaged {
    /// The archive.
    pub archive: PathBuf,
    /// Its findings: one per process triaged, or the one that says why
    /// there is none.
    pub findings: Vec<Finding>,
    /// The worker's exit code (its `--exit-code` code when it was given
    /// one); UNKNOWN's code when it printed no finding.
    pub exit_code: i32,
}

impl Worker {
    /// The worker's command line for `archive`, replaying on visible GPU
    /// `gpu` when given.
    pub fn argv(&self, archive: &Path, gpu: Option<u32>) -> Vec<OsString> {
        let mut argv: Vec<OsString> = vec![self.program.clone().into()];
        argv.extend(self.global.iter().cloned());
        argv.extend(["triage".into(), archive.as_os_str().to_owned()]);
        argv.extend(self.flags.iter().cloned());
        argv.extend(["--workdir".into(), self.workdir_of(archive).into()]);
        if let Some(gpu) = gpu {
            argv.extend(["--gpu".into(), gpu.to_string().into()]);
        }
        argv
    }

    /// The directory the worker for `archive` writes its findings and
    /// replay logs to.
    pub fn workdir_of(&self, archive: &Path) -> PathBuf {
        self.workdir.join(super::names::root_stem(archive))
    }

    /// Triages `archive` in a worker and waits for it.
    pub fn run(&self, archive: &Path, gpu: Option<u32>) -> Triaged {
        let argv = self.argv(archive, gpu);
        let opts = ExecOptions {
            interrupt_grace: Some(super::triage::WORKER_GRACE),
            ..ExecOptions::default()
        };
        let result =
            crate::subprocess::run(&argv, &opts).and_then(|out| findings(&out).map(|f| (f, out)));
        match result {
            Ok((findings, out)) => Triaged {
                archive: archive.to_path_buf(),
                findings,
                exit_code: out.status.unwrap_or(UNKNOWN_EXIT),
            },
            Err(e) => Triaged {
                archive: archive.to_path_buf(),
                findings: vec![failed(archive, format!("{e:#}"))],
                exit_code: UNKNOWN_EXIT,
            },
        }
    }
}

impl Triaged {
    /// `archive`, not triaged because signal `sig` interrupted the run
    /// before its turn.
    pub fn not_started(archive: PathBuf, sig: i32) -> Triaged {
        let why =
            format!("not triaged: hrr was interrupted by signal {sig} before this archive's turn");
        Triaged {
            findings: vec![failed(&archive, why)],
            archive,
            exit_code: UNKNOWN_EXIT,
        }
    }
}

/// The findings a worker printed: one JSON finding, or a list of them
/// (`--all`). When there is none, the error is the worker's last `error:`
/// line, else how it ended.
fn findings(out: &Captured) -> anyhow::Result<Vec<Finding>> {
    let parsed = parse(&out.stdout);
    if parsed.is_ok() {
        return parsed;
    }
    let stderr = String::from_utf8_lossy(&out.stderr);
    if let Some(line) = stderr.lines().rev().find_map(|l| l.strip_prefix("error: ")) {
        bail!("{line}");
    }
    let ending = match (out.status, out.signal) {
        (Some(code), _) => format!("exit status {code}"),
        (None, Some(sig)) => format!("signal {sig}"),
        (None, None) => "an unknown status".to_string(),
    };
    match parsed {
        Err(e) => bail!("the triage worker ended with {ending} and printed no finding ({e:#})"),
        Ok(f) => Ok(f),
    }
}

fn parse(stdout: &[u8]) -> anyhow::Result<Vec<Finding>> {
    let text = String::from_utf8_lossy(stdout);
    if text.trim().is_empty() {
        bail!("its output was empty");
    }
    let items = match serde_json::from_str::<serde_json::Value>(&text)? {
        serde_json::Value::Array(items) => items,
        one => vec![one],
    };
    if items.is_empty() {
        bail!("it printed an empty list");
    }
    items
        .iter()
        .map(|item| Finding::from_json(&item.to_string()))
        .collect()
}

/// The UNKNOWN finding of an archive that could not be triaged, with
/// `error` saying why.
pub fn failed(archive: &Path, error: String) -> Finding {
    let mut f = Finding::new(Some(archive.display().to_string()));
    f.error = Some(error);
    f.add_next_step(format!(
        "triage this archive on its own to see all of its output: hrr triage {}",
        archive.display()
    ));
    f
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    fn captured(status: Option<i32>, signal: Option<i32>, stdout: &str, stderr: &str) -> Captured {
        Captured {
            status,
            signal,
            stdout: stdout.as_bytes().to_vec(),
            stderr: stderr.as_bytes().to_vec(),
            timed_out: false,
        }
    }

    #[test]
    fn one_finding_or_a_list_is_read() {
        let f = Finding::new(Some("/a/capture.hrr/pid-1".into())).to_json_pretty();
        assert_eq!(findings(&captured(Some(0), None, &f, "")).unwrap().len(), 1);
        let list = format!("[{f},{f}]");
        assert_eq!(
            findings(&captured(Some(1), None, &list, "")).unwrap().len(),
            2
        );
    }

    #[test]
    fn no_finding_gives_the_workers_error_or_how_it_ended() {
        let err = findings(&captured(
            Some(1),
            None,
            "",
            "[hrr] archive=/x\nerror: archive not found: /x (give a pid-* directory or a capture root)\n",
        ))
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "archive not found: /x (give a pid-* directory or a capture root)"
        );
        let err = findings(&captured(None, Some(9), "{\"schema_vers", "")).unwrap_err();
        assert!(
            err.to_string()
                .starts_with("the triage worker ended with signal 9 and printed no finding"),
            "{err}"
        );
        let err = findings(&captured(Some(0), None, "[]", "")).unwrap_err();
        assert!(err.to_string().contains("empty list"), "{err}");
    }

    #[test]
    fn a_worker_that_cannot_start_still_gives_a_finding() {
        let w = Worker {
            program: "/nonexistent/hrr".into(),
            global: Vec::new(),
            flags: Vec::new(),
            workdir: "/tmp/unused".into(),
        };
        let t = w.run(Path::new("/data/capture.hrr"), None);
        assert_eq!(t.findings.len(), 1);
        let f = &t.findings[0];
        assert_eq!(f.outcome, crate::finding::Outcome::Unknown);
        assert_eq!(f.archive.as_deref(), Some("/data/capture.hrr"));
        assert!(f
            .error
            .as_deref()
            .unwrap()
            .contains("cannot run '/nonexistent/hrr'"));
        assert_eq!(t.exit_code, UNKNOWN_EXIT);
    }
}
