//! Project discovery: the `.hrr/` directory whose `config.toml` and
//! `scripts/` belong to the project the user works in (DESIGN §4, §8).
//!
//! The nearest `.hrr/` directory in the current directory or a parent is
//! the project, with two exceptions that keep an archive from running code
//! or choosing a player:
//! - when the current directory is at or below a directory shaped like a
//!   capture archive, no `.hrr/` is used at all, neither inside the archive
//!   nor above it;
//! - a `.hrr/` the invoking user does not own is skipped (git's
//!   `safe.directory` idea). Windows has no such check in this version: only
//!   the archive rule applies there.
//!
//! Every `.hrr/` passed over is kept with the reason, for `hrr config path`
//! and `hrr --list -v`.

use std::path::{Path, PathBuf};

/// A `.hrr/` directory discovery did not use, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Skipped {
    /// The `.hrr/` directory.
    pub dir: PathBuf,
    /// Why it was not used, as a phrase (`owned by uid 1, not by you`).
    pub why: String,
}

/// What discovery found from one current directory.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Project {
    /// The `.hrr/` directory in use, if any.
    pub dir: Option<PathBuf>,
    /// The archive the current directory is in, which turned discovery off.
    pub inside_archive: Option<PathBuf>,
    /// Every `.hrr/` directory passed over, nearest first.
    pub skipped: Vec<Skipped>,
}

impl Project {
    /// Discovers the project `.hrr/` from `cwd` (see the module doc).
    pub fn discover(cwd: &Path) -> Project {
        let candidates: Vec<PathBuf> = cwd
            .ancestors()
            .map(|d| d.join(".hrr"))
            .filter(|d| d.is_dir())
            .collect();
        let mut project = Project::default();
        if let Some(archive) = crate::safety::enclosing_archive(cwd) {
            let why = format!(
                "the current directory is inside the capture archive {}, so no .hrr/ is read (nothing in an archive is executed or read as configuration)",
                archive.display()
            );
            project.skipped = candidates
                .into_iter()
                .map(|dir| Skipped {
                    dir,
                    why: why.clone(),
                })
                .collect();
            project.inside_archive = Some(archive);
            return project;
        }
        for dir in candidates {
            match not_owned(&dir) {
                Some(why) => project.skipped.push(Skipped { dir, why }),
                None => {
                    project.dir = Some(dir);
                    break;
                }
            }
        }
        project
    }

    /// `.hrr/config.toml` of the project in use.
    pub fn config_file(&self) -> Option<PathBuf> {
        self.dir.as_ref().map(|d| d.join("config.toml"))
    }

    /// `.hrr/scripts/` of the project in use.
    pub fn scripts_dir(&self) -> Option<PathBuf> {
        self.dir.as_ref().map(|d| d.join("scripts"))
    }
}

/// Why `dir` is not the invoking user's, or `None` when it is.
#[cfg(unix)]
fn not_owned(dir: &Path) -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    let me = nix::unistd::geteuid().as_raw();
    match std::fs::metadata(dir) {
        Ok(meta) if meta.uid() == me => None,
        Ok(meta) => Some(format!(
            "it belongs to uid {}, not to you (uid {me}); hrr reads only your own .hrr/",
            meta.uid()
        )),
        Err(e) => Some(format!("cannot check its owner: {e}")),
    }
}

/// Windows: ownership is not checked (see the module doc).
#[cfg(not(unix))]
fn not_owned(_dir: &Path) -> Option<String> {
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_nearest_hrr_is_the_project_unless_an_archive_encloses_the_cwd() {
        let dir = tempfile::tempdir().unwrap();
        let top = dir.path().join(".hrr");
        let cwd = dir.path().join("a/b");
        std::fs::create_dir_all(&top).unwrap();
        std::fs::create_dir_all(dir.path().join("a/.hrr")).unwrap();
        std::fs::create_dir_all(&cwd).unwrap();
        let p = Project::discover(&cwd);
        assert_eq!(p.dir, Some(dir.path().join("a/.hrr")));
        assert!(p.skipped.is_empty());

        std::fs::write(dir.path().join("a/manifest.json"), "{}").unwrap();
        let p = Project::discover(&cwd);
        assert_eq!(p.dir, None, "no resuming above the archive");
        assert_eq!(p.inside_archive, Some(dir.path().join("a")));
        let skipped: Vec<_> = p.skipped.iter().map(|s| s.dir.clone()).collect();
        assert_eq!(skipped, [dir.path().join("a/.hrr"), top]);
    }
}
