//! Which `hrr-playback` a replay uses, and how it was found (reference
//! upstream-triage.md §5): `playback.path` (legacy `HRR_PLAYBACK`), then
//! `<rocm.path>/bin/hrr-playback`, then `PATH`; with `build`, one cmake
//! build from `playback.source`. On Windows, as `ensure_playback.ps1` does,
//! the ROCm roots are an explicit `rocm.path` alone, else `HIP_PATH`,
//! `ROCM_PATH` and the default root, each searched in `bin`, `hip\bin` and
//! `tools\bin` for `hrr-playback.exe`, then `hrr-playback`.

mod build;

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::anyhow;
use serde::Serialize;

use crate::config::{Config, Origin};
use crate::context::Context;
use crate::executable::is_executable;
use crate::subprocess::{self, ExecOptions};

/// Time limit of `hrr-playback --version` (it never touches the GPU).
const VERSION_TIMEOUT: Duration = Duration::from_secs(10);

/// How the player was found.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum FoundBy {
    /// `playback.path` (config, or the legacy `HRR_PLAYBACK`).
    Config,
    /// Under `rocm.path`.
    Rocm,
    /// On `PATH`.
    Path,
    /// In `playback.build_dir`, built now or by an earlier `--build`.
    Built,
}

/// The player a replay would use.
#[derive(Clone, Debug, Serialize)]
pub struct PlayerLocation {
    /// Its absolute path.
    pub path: PathBuf,
    /// How it was found.
    pub how: FoundBy,
    /// `true` when this run compiled it (triage reports BUILD-NEEDED); an
    /// earlier build that was reused is `how: built`, `built: false`.
    pub built: bool,
    /// What `hrr-playback --version` says, when it answers.
    pub version: Option<PlayerVersion>,
}

/// The build identity `hrr-playback --version` prints (reference
/// playback-output.md §2k). `unknown` / `unavailable` values are `None`.
#[derive(Clone, Debug, Default, Serialize, PartialEq, Eq)]
pub struct PlayerVersion {
    /// The one archive format version this player reads.
    pub format_version: Option<u32>,
    /// `source revision`.
    pub source_revision: Option<String>,
    /// `source branch`.
    pub source_branch: Option<String>,
    /// `build type`.
    pub build_type: Option<String>,
    /// `hip runtime version` (the HIP_VERSION integer it was built against).
    pub hip_runtime_version: Option<String>,
    /// How `--version` ended when it did not exit 0 after printing its
    /// identity (`killed by signal 6`, `exit status 1`): the player flushes
    /// the lines above before it loads the HIP runtime, which can abort, so
    /// they are kept and this says how it ended.
    pub ended: Option<String>,
}

/// The player's file name on this platform.
fn player_name() -> String {
    format!("hrr-playback{}", std::env::consts::EXE_SUFFIX)
}

/// Finds the player per the search order; with `build` and none found,
/// builds it once from `playback.source` (reusing an existing build). The
/// error when none is found lists the three ways to get one and points at
/// `--no-replay`.
pub fn locate(ctx: &Context, build: bool) -> anyhow::Result<PlayerLocation> {
    let found = search(&ctx.config, std::env::var_os("PATH").as_deref(), &|m| {
        ctx.ui.warn(m)
    });
    let (path, how, built) = match found {
        Some((path, how)) => (path, how, false),
        None if build => {
            let (path, built) = build::build(ctx)?;
            (path, FoundBy::Built, built)
        }
        None => return Err(not_found(&ctx.config)),
    };
    let path = std::path::absolute(&path).unwrap_or(path);
    let version = match version_of(&path) {
        Ok(v) => {
            if let Some(how) = &v.ended {
                ctx.ui.warn(&format!(
                    "`{} --version` printed its build identity, then ended ({how}); \
                     loading the HIP runtime (its last line) can abort like this, and a replay may fail the same way",
                    path.display()
                ));
            }
            Some(v)
        }
        Err(e) => {
            ctx.ui.warn(&format!("{e:#}"));
            None
        }
    };
    Ok(PlayerLocation {
        path,
        how,
        built,
        version,
    })
}

/// The first executable of the search order, without building. A
/// `playback.path` that is not an executable file is reported through
/// `warn` and skipped.
pub fn search(
    config: &Config,
    path_env: Option<&std::ffi::OsStr>,
    warn: &dyn Fn(&str),
) -> Option<(PathBuf, FoundBy)> {
    if let Some(p) = config.str("playback.path").filter(|s| !s.is_empty()) {
        if is_executable(Path::new(p)) {
            return Some((PathBuf::from(p), FoundBy::Config));
        }
        warn(&format!(
            "playback.path = {p} is not an executable file; searching elsewhere"
        ));
    }
    if let Some(p) = rocm_roots(config)
        .iter()
        .flat_map(|root| rocm_candidates(root))
        .find(|p| is_executable(p))
    {
        return Some((p, FoundBy::Rocm));
    }
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/"));
    which::which_in("hrr-playback", path_env, cwd)
        .ok()
        .map(|p| (p, FoundBy::Path))
}

/// The ROCm roots the player is searched under, in order. On Windows an
/// explicit `rocm.path` (a config file or `-c`) is searched alone;
/// otherwise `HIP_PATH`, `ROCM_PATH`, then the default root. Elsewhere the
/// one `rocm.path`.
pub fn rocm_roots(config: &Config) -> Vec<PathBuf> {
    if !cfg!(windows) {
        return vec![config.rocm_path()];
    }
    let explicit = config
        .entry("rocm.path")
        .filter(|e| matches!(e.origin, Origin::File { .. } | Origin::Flag(_)))
        .map(|_| config.rocm_path());
    windows_roots(
        explicit,
        std::env::var_os("HIP_PATH"),
        std::env::var_os("ROCM_PATH"),
    )
}

/// The Windows search order of [`rocm_roots`]: `explicit` alone, else the
/// set ones of `hip_path` and `rocm_path`, then the default root, without
/// repeats.
fn windows_roots(
    explicit: Option<PathBuf>,
    hip_path: Option<std::ffi::OsString>,
    rocm_path: Option<std::ffi::OsString>,
) -> Vec<PathBuf> {
    if let Some(root) = explicit {
        return vec![root];
    }
    let mut roots: Vec<PathBuf> = Vec::new();
    let found = [hip_path, rocm_path]
        .into_iter()
        .flatten()
        .filter(|v| !v.is_empty())
        .map(PathBuf::from);
    for root in found.chain([PathBuf::from(DEFAULT_WINDOWS_ROOT)]) {
        if !roots.contains(&root) {
            roots.push(root);
        }
    }
    roots
}

/// Where the AMD HIP SDK installs by default.
const DEFAULT_WINDOWS_ROOT: &str = r"C:\Program Files\AMD\ROCm\6.2";

/// `<rocm>/bin/hrr-playback`; on Windows `<rocm>\bin`, `hip\bin`,
/// `tools\bin`, each with `hrr-playback.exe` then `hrr-playback`.
fn rocm_candidates(rocm: &Path) -> Vec<PathBuf> {
    if cfg!(windows) {
        let dirs = [
            rocm.join("bin"),
            rocm.join("hip").join("bin"),
            rocm.join("tools").join("bin"),
        ];
        dirs.iter()
            .flat_map(|d| [d.join("hrr-playback.exe"), d.join("hrr-playback")])
            .collect()
    } else {
        vec![rocm.join("bin").join(player_name())]
    }
}

fn not_found(config: &Config) -> anyhow::Error {
    let rocm_bin = config.rocm_path().join("bin").join(player_name());
    anyhow!(
        "hrr-playback not found. Get one of three ways: set playback.path (or HRR_PLAYBACK) to an \
         hrr-playback binary; install it as {} or put it on PATH; or run `hrr playback --build` \
         with playback.source set to a projects/hrr tree. Without a player, \
         `hrr triage --no-replay <archive>` still decodes and triages the archive (metadata-only)",
        rocm_bin.display()
    )
}

/// Runs `<player> --version` and reads its build identity. The lines it
/// printed before a non-zero exit or a signal are kept (reference
/// playback-output.md §10.5), with [`PlayerVersion::ended`] saying how it
/// ended; only output without a format version is an error.
pub fn version_of(player: &Path) -> anyhow::Result<PlayerVersion> {
    let argv = [player.display().to_string(), "--version".into()];
    let opts = ExecOptions {
        timeout: Some(VERSION_TIMEOUT),
        ..ExecOptions::default()
    };
    let c = subprocess::run(&argv, &opts)?;
    let mut v = parse_version(&c.stdout_text());
    let ended = match (c.timed_out, c.status, c.signal) {
        (true, _, _) => Some(format!("timed out after {}s", VERSION_TIMEOUT.as_secs())),
        (false, Some(0), _) => None,
        (false, _, Some(sig)) => Some(format!("killed by signal {sig}")),
        (false, Some(code), None) => Some(format!("exit status {code}")),
        (false, None, None) => Some("no exit status".into()),
    };
    if v.format_version.is_none() {
        return Err(anyhow!(
            "`{} --version` did not print an archive format version ({}); \
             its format cannot be checked before replay",
            player.display(),
            ended.as_deref().unwrap_or("exit status 0")
        ));
    }
    v.ended = ended;
    Ok(v)
}

/// Reads the `  <key> : <value>` lines of `--version` output.
pub fn parse_version(text: &str) -> PlayerVersion {
    let mut v = PlayerVersion::default();
    for line in text.lines() {
        let Some((key, value)) = line.split_once(':') else {
            continue;
        };
        let value = value.trim();
        let known = (!value.is_empty() && value != "unknown" && value != "unavailable")
            .then(|| value.to_string());
        match key.trim() {
            "archive format version" => v.format_version = value.parse().ok(),
            "source revision" => v.source_revision = known,
            "source branch" => v.source_branch = known,
            "build type" => v.build_type = known,
            "hip runtime version" => v.hip_runtime_version = known,
            _ => {}
        }
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_roots_follow_ensure_playback() {
        let hip = Some(std::ffi::OsString::from(r"D:\hip"));
        let rocm = Some(std::ffi::OsString::from(r"E:\rocm"));
        assert_eq!(
            windows_roots(None, hip.clone(), rocm.clone()),
            [
                PathBuf::from(r"D:\hip"),
                PathBuf::from(r"E:\rocm"),
                PathBuf::from(DEFAULT_WINDOWS_ROOT)
            ]
        );
        assert_eq!(
            windows_roots(Some(PathBuf::from(r"F:\mine")), hip, rocm),
            [PathBuf::from(r"F:\mine")]
        );
        assert_eq!(
            windows_roots(None, Some("".into()), Some(DEFAULT_WINDOWS_ROOT.into())),
            [PathBuf::from(DEFAULT_WINDOWS_ROOT)]
        );
    }

    #[test]
    fn reads_the_reference_version_output() {
        let text = "hrr-playback (HIP Record & Replay)\n  archive format version : 8\n  source revision        : 3f2a9c1\n  source branch          : develop\n  build type             : Release\n  hip runtime version    : 70051831\n";
        let v = parse_version(text);
        assert_eq!(v.format_version, Some(8));
        assert_eq!(v.source_revision.as_deref(), Some("3f2a9c1"));
        assert_eq!(v.source_branch.as_deref(), Some("develop"));
        assert_eq!(v.build_type.as_deref(), Some("Release"));
        assert_eq!(v.hip_runtime_version.as_deref(), Some("70051831"));
        let v = parse_version("  archive format version : 7\n  source revision        : unknown\n  hip runtime version    : unavailable\n");
        assert_eq!(
            (v.format_version, v.source_revision, v.hip_runtime_version),
            (Some(7), None, None)
        );
    }
}
