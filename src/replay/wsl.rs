//! Docker replay from Windows through WSL2, as `triage_archive.ps1` does it
//! (reference upstream-triage.md §8). Windows has no `/dev/kfd`, so a
//! docker replay cannot run on Windows itself; where `wsl.exe` exists and
//! an `hrr` installed inside WSL answers `wsl.exe hrr --version`, `hrr
//! triage --replay docker` hands the whole triage to it, `wsl.exe hrr
//! [-c key=value …] triage /mnt/c/… --replay docker --format …`, and what
//! that prints is the finding.
//!
//! The archive's path is translated as WSL mounts the drives (`C:\x` →
//! `/mnt/c/x`, the drive letter lowercased); a path on no drive letter (UNC
//! `\\server\share`, a device path) has no such mount and is refused. The
//! settings that shape the replay and are no Windows paths are passed on
//! ([`PASSED`]); the `hrr` inside WSL reads its own config for the rest.

use std::ffi::{OsStr, OsString};
use std::io::{BufRead, Read};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use anyhow::{bail, Context as _};

use crate::config::{Config, Origin};
use crate::executable::is_executable;

/// Bound on `wsl.exe hrr --version` (WSL's first start takes seconds).
const PROBE_TIMEOUT: Duration = Duration::from_secs(60);

/// The most of the inner triage's stdout that is kept (a finding is far
/// smaller); the rest is read and dropped.
const OUTPUT_LIMIT: u64 = 64 << 20;

/// The longest stderr line of the inner triage passed on whole.
const LINE_LIMIT: u64 = 64 << 10;

/// The settings passed to the `hrr` inside WSL as `-c key=value`, where one
/// is set here (a flag, a file or a variable; not a default): the image
/// and how the replay runs. Paths (the player, the workdir, a CLR build)
/// are Windows paths and are not passed.
pub const PASSED: [&str; 7] = [
    "docker.image",
    "docker.sudo",
    "replay.gpu",
    "replay.timeout",
    "replay.sync",
    "replay.trace_kernels",
    "replay.progress_seconds",
];

/// `wsl.exe`: on `path_env`, else `<system_root>\System32\wsl.exe`.
pub fn find_wsl(path_env: Option<&OsStr>, system_root: Option<&OsStr>) -> Option<PathBuf> {
    let cwd = std::env::current_dir().unwrap_or_default();
    which::which_in("wsl", path_env, cwd).ok().or_else(|| {
        let p = PathBuf::from(system_root?).join("System32").join("wsl.exe");
        is_executable(&p).then_some(p)
    })
}

/// Whether `wsl.exe hrr --version` works: the version it printed, or why
/// not, in words.
pub fn probe(wsl: &Path) -> Result<String, String> {
    let argv = [wsl.as_os_str(), "hrr".as_ref(), "--version".as_ref()];
    let opts = crate::subprocess::ExecOptions {
        timeout: Some(PROBE_TIMEOUT),
        ..Default::default()
    };
    match crate::subprocess::run(&argv, &opts) {
        Err(e) => Err(format!("`wsl.exe hrr --version` could not run: {e:#}")),
        Ok(c) if c.timed_out => Err(format!(
            "`wsl.exe hrr --version` timed out after {}s",
            PROBE_TIMEOUT.as_secs()
        )),
        Ok(c) if c.success() => Ok(c.stdout_text().lines().next().unwrap_or("").to_string()),
        Ok(c) => Err(format!(
            "`wsl.exe hrr --version` failed ({})",
            c.status
                .map_or_else(|| "no exit status".into(), |s| format!("exit status {s}"))
        )),
    }
}

/// The WSL path of the Windows path `path`: `C:\x\y` (or `\\?\C:\x\y`) is
/// `/mnt/c/x/y`. Anything not on a drive letter is an error saying what to
/// do instead.
pub fn translate(path: &str) -> anyhow::Result<String> {
    let rest = path.strip_prefix(r"\\?\").unwrap_or(path);
    let bytes = rest.as_bytes();
    let on_drive = bytes.len() >= 3
        && bytes[0].is_ascii_alphabetic()
        && bytes[1] == b':'
        && matches!(bytes[2], b'\\' | b'/');
    if !on_drive {
        bail!(
            "cannot replay {path} through WSL: it is not on a drive letter (a UNC or device path), and WSL mounts only drives under /mnt; copy the archive to a local drive and triage it there"
        );
    }
    let parts: Vec<&str> = rest[3..]
        .split(['\\', '/'])
        .filter(|p| !p.is_empty())
        .collect();
    if parts.iter().any(|p| *p == "." || *p == "..") {
        bail!("cannot replay {path} through WSL: give the archive's full path without . or ..");
    }
    let drive = (bytes[0] as char).to_ascii_lowercase();
    Ok(std::iter::once(format!("/mnt/{drive}"))
        .chain(parts.iter().map(|p| p.to_string()))
        .collect::<Vec<_>>()
        .join("/"))
}

/// `-c key=value` for each of [`PASSED`] set in `config` other than by
/// its defaults.
pub fn passed_settings(config: &Config) -> Vec<String> {
    let mut out = Vec::new();
    for key in PASSED {
        let Some(entry) = config.entry(key) else {
            continue;
        };
        if matches!(entry.origin, Origin::Default) {
            continue;
        }
        let value = match &entry.value {
            toml::Value::String(s) => s.clone(),
            toml::Value::Integer(_) | toml::Value::Boolean(_) | toml::Value::Float(_) => {
                entry.value.to_string()
            }
            _ => continue,
        };
        out.push("-c".into());
        out.push(format!("{key}={value}"));
    }
    out
}

/// `wsl.exe hrr <settings> triage <archive> --replay docker <flags>`.
pub fn triage_argv(wsl: &Path, config: &Config, archive: &str, flags: &[&str]) -> Vec<OsString> {
    let mut argv: Vec<OsString> = vec![wsl.into(), "hrr".into()];
    argv.extend(passed_settings(config).into_iter().map(OsString::from));
    argv.extend(["triage", archive, "--replay", "docker"].map(OsString::from));
    argv.extend(flags.iter().map(OsString::from));
    argv
}

/// How the triage inside WSL ended.
#[derive(Debug)]
pub struct Delegated {
    /// What it printed on stdout: the finding, as asked for (at most 64 MiB).
    pub stdout: Vec<u8>,
    /// Its exit status, when it exited.
    pub status: Option<i32>,
    /// Its `error:` lines, held back from stderr.
    pub errors: Vec<String>,
}

/// Runs `argv` (the [`triage_argv`] command line) to its end: its stdout
/// is kept, each other stderr line is handed to `line` as it comes, its
/// `error:` lines are kept for the caller, which decides what the one
/// error of the run is. On Windows `wsl.exe` runs in a kill-on-close Job
/// object, so it cannot outlive `hrr` (what it runs lives inside WSL, where
/// its end hangs up the inner `hrr`).
pub fn run(argv: &[OsString], line: &dyn Fn(&str)) -> anyhow::Result<Delegated> {
    let Some((program, args)) = argv.split_first() else {
        bail!("empty WSL command line");
    };
    let shown = Path::new(program).display();
    let spawned = crate::supervisor::spawn(program, args, &[], |cmd| {
        cmd.stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
    })
    .with_context(|| format!("cannot run {shown}"))?;
    let mut child = spawned.child;
    #[cfg(windows)]
    let _job = super::windows::job::Job::holding(&mut child)?;
    let stdout = child.stdout.take();
    let reader = std::thread::spawn(move || {
        let mut kept = Vec::new();
        if let Some(mut out) = stdout {
            let _ = (&mut out).take(OUTPUT_LIMIT).read_to_end(&mut kept);
            let _ = std::io::copy(&mut out, &mut std::io::sink());
        }
        kept
    });
    let mut errors = Vec::new();
    if let Some(err) = child.stderr.take() {
        let mut err = std::io::BufReader::new(err);
        let mut buf = Vec::new();
        loop {
            buf.clear();
            match (&mut err).take(LINE_LIMIT).read_until(b'\n', &mut buf) {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
            let text = String::from_utf8_lossy(&buf);
            let text = text.trim_end_matches(['\n', '\r']);
            match text.strip_prefix("error: ") {
                Some(e) => errors.push(e.to_string()),
                None => line(text),
            }
        }
    }
    let status = child.wait().context("cannot wait for wsl.exe")?;
    let stdout = reader.join().unwrap_or_default();
    Ok(Delegated {
        stdout,
        status: status.code(),
        errors,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn drive_paths_become_mnt_paths_and_others_are_refused() {
        assert_eq!(
            translate(r"C:\caps\crash.hrr\pid-1").unwrap(),
            "/mnt/c/caps/crash.hrr/pid-1"
        );
        assert_eq!(translate(r"\\?\D:\x\y").unwrap(), "/mnt/d/x/y");
        assert_eq!(translate("E:/a/b/").unwrap(), "/mnt/e/a/b");
        assert_eq!(translate(r"z:\").unwrap(), "/mnt/z");
        for bad in [
            r"\\server\share\caps",
            r"\\?\UNC\server\share\caps",
            r"\\.\PIPE\x",
            r"caps\crash.hrr",
            "/home/me/caps",
            "C:",
        ] {
            let e = translate(bad).unwrap_err().to_string();
            assert!(e.contains("not on a drive letter"), "{bad}: {e}");
        }
        assert!(translate(r"C:\caps\..\x").is_err());
    }
}
