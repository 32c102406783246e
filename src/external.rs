//! External subcommands: `hrr foo` runs the first `hrr-foo` in the user's
//! config dir `bin/`, then on `PATH` (DESIGN §9).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::Context as _;

use hrr::context::Context;
use hrr::executable::is_executable;

const PREFIX: &str = "hrr-";

fn exe_name(name: &str) -> String {
    format!("{PREFIX}{name}{}", std::env::consts::EXE_SUFFIX)
}

/// The directories searched for externals, in order: the user config dir's
/// `bin/`, then each `PATH` entry.
pub fn search_dirs() -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = hrr::config::user_dir()
        .map(|d| d.join("bin"))
        .into_iter()
        .collect();
    if let Some(path) = std::env::var_os("PATH") {
        dirs.extend(std::env::split_paths(&path).filter(|p| !p.as_os_str().is_empty()));
    }
    dirs
}

/// The `hrr-<name>` that `hrr <name>` would run.
pub fn find(name: &str) -> Option<PathBuf> {
    if name.is_empty() || name.contains(['/', '\\']) {
        return None;
    }
    let file = exe_name(name);
    search_dirs()
        .into_iter()
        .map(|d| d.join(&file))
        .find(|p| is_executable(p))
}

/// Every external found, name → all paths in search order (the first wins).
pub fn all() -> BTreeMap<String, Vec<PathBuf>> {
    let mut found: BTreeMap<String, Vec<PathBuf>> = BTreeMap::new();
    for dir in search_dirs() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let file = entry.file_name();
            let Some(file) = file.to_str() else { continue };
            let Some(name) = file.strip_prefix(PREFIX) else {
                continue;
            };
            let name = name
                .strip_suffix(std::env::consts::EXE_SUFFIX)
                .unwrap_or(name);
            if name.is_empty() || !is_executable(&entry.path()) {
                continue;
            }
            let paths = found.entry(name.to_string()).or_default();
            if !paths.contains(&entry.path()) {
                paths.push(entry.path());
            }
        }
    }
    found
}

/// Runs the external with argv `[path, name, args…]` and the environment
/// `HRR`, `HRR_CONFIG_FILES`, `HRR_PROFILE`. On Unix the process is replaced
/// (exec), so its exit status is `hrr`'s; elsewhere the status is returned.
pub fn run(ctx: &Context, path: &Path, name: &str, args: &[String]) -> anyhow::Result<i32> {
    let mut cmd = std::process::Command::new(path);
    cmd.arg(name).args(args);
    cmd.env("HRR", crate::dispatch::self_path());
    let files: Vec<&Path> = ctx
        .config
        .files()
        .iter()
        .filter(|f| f.exists)
        .map(|f| f.path.as_path())
        .collect();
    cmd.env(
        "HRR_CONFIG_FILES",
        std::env::join_paths(files).unwrap_or_default(),
    );
    match ctx.config.profile() {
        Some(p) => cmd.env("HRR_PROFILE", p),
        None => cmd.env_remove("HRR_PROFILE"),
    };
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        let err = cmd.exec();
        Err(err).with_context(|| format!("cannot run {}", path.display()))
    }
    #[cfg(not(unix))]
    {
        let status = cmd
            .status()
            .with_context(|| format!("cannot run {}", path.display()))?;
        Ok(status.code().unwrap_or(1))
    }
}
