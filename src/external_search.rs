//! Finding external subcommands: `hrr <name>` runs the first `hrr-<name>`
//! in the user's config dir `bin/`, then on `PATH` (DESIGN §9). This module
//! only looks; the binary's front end runs what it finds.

use std::collections::BTreeMap;
use std::path::PathBuf;

use crate::executable::is_executable;

const PREFIX: &str = "hrr-";

/// An `hrr-<name>` program, as `hrr <name>` would find it.
#[derive(Clone, Debug)]
pub struct External {
    /// The command name: the file name without `hrr-` and the platform's
    /// executable suffix.
    pub name: String,
    /// The program `hrr <name>` runs: the first found in search order.
    pub path: PathBuf,
    /// Programs of the same name further down the search order, which this
    /// one hides.
    pub shadows: Vec<PathBuf>,
}

/// The directories searched for externals, in order: the user config dir's
/// `bin/`, then each non-empty `PATH` entry.
fn search_dirs() -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = crate::config::user_dir()
        .map(|d| d.join("bin"))
        .into_iter()
        .collect();
    if let Some(path) = std::env::var_os("PATH") {
        dirs.extend(std::env::split_paths(&path).filter(|p| !p.as_os_str().is_empty()));
    }
    dirs
}

/// The command name a file in a search directory provides: `hrr-<name>`
/// followed by the platform's executable suffix (`.exe` on Windows, none
/// elsewhere), with a non-empty UTF-8 `<name>`.
fn command_name(file: &std::ffi::OsStr) -> Option<&str> {
    let name = file
        .to_str()?
        .strip_prefix(PREFIX)?
        .strip_suffix(std::env::consts::EXE_SUFFIX)?;
    (!name.is_empty()).then_some(name)
}

/// Every external found, sorted by name, each with the programs it shadows.
/// Only files this user may run count ([`is_executable`]).
pub fn all() -> Vec<External> {
    let mut found: BTreeMap<String, External> = BTreeMap::new();
    for dir in search_dirs() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let file = entry.file_name();
            let Some(name) = command_name(&file) else {
                continue;
            };
            let path = entry.path();
            if !is_executable(&path) {
                continue;
            }
            match found.get_mut(name) {
                Some(e) if e.path != path && !e.shadows.contains(&path) => e.shadows.push(path),
                Some(_) => {}
                None => {
                    let external = External {
                        name: name.to_string(),
                        path,
                        shadows: Vec::new(),
                    };
                    found.insert(external.name.clone(), external);
                }
            }
        }
    }
    found.into_values().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_command_is_named_by_the_prefix_and_the_platform_suffix() {
        let suffix = std::env::consts::EXE_SUFFIX;
        let file = |s: &str| std::ffi::OsString::from(format!("{s}{suffix}"));
        assert_eq!(command_name(&file("hrr-bundle")), Some("bundle"));
        assert_eq!(command_name(&file("hrr-")), None);
        assert_eq!(command_name(&file("bundle")), None);
        if !suffix.is_empty() {
            assert_eq!(command_name("hrr-notes.txt".as_ref()), None);
        }
    }
}
