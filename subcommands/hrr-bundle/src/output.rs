//! Where the bundle goes, and the rules that keep it out of the archive:
//! the output is checked after resolving symlinks, an existing file is kept
//! unless `--force`, and the bundle is written to a temp file in the output
//! directory and renamed into place only when complete (DESIGN §8).

use std::fs;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use anyhow::{bail, Context as _};
use tempfile::NamedTempFile;

/// The archive directory the user named, resolved (symlinks in the
/// argument itself are the user's choice and are followed).
pub fn resolve_archive(arg: &Path) -> anyhow::Result<PathBuf> {
    let path = dunce::canonicalize(arg).with_context(|| format!("archive {}", arg.display()))?;
    if !path.is_dir() {
        bail!(
            "archive {} is not a directory: give a pid-* directory or a capture root",
            arg.display()
        );
    }
    Ok(path)
}

/// The directory no output may go into: the archive itself, or, for a
/// `pid-*` directory inside a capture root (its parent holds the root
/// `manifest.json`), the whole root (DESIGN §8: nothing is written inside
/// an archive root).
pub fn protected_dir(archive: &Path) -> PathBuf {
    let is_process = archive
        .file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.starts_with("pid-"));
    match archive.parent() {
        Some(root) if is_process && root.join("manifest.json").is_file() => root.to_path_buf(),
        _ => archive.to_path_buf(),
    }
}

/// `<archive-name>-<UTC yyyymmddThhmmssZ>.hrr-bundle.tar.zst`.
pub fn default_name(archive: &Path, now: SystemTime) -> String {
    let name = archive
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("archive");
    let stamp: String = humantime::format_rfc3339_seconds(now)
        .to_string()
        .chars()
        .filter(|c| *c != '-' && *c != ':')
        .collect();
    format!("{name}-{stamp}.hrr-bundle.tar.zst")
}

/// A checked output path.
#[derive(Debug)]
pub struct Target {
    /// The final path: resolved parent directory + file name.
    pub path: PathBuf,
    dir: PathBuf,
    force: bool,
}

impl Target {
    /// Checks `requested` (relative to the current directory) before any
    /// work starts: its directory exists, it is not inside `protected` (see
    /// [`protected_dir`]) after resolving symlinks, and it does not exist
    /// unless `force`.
    pub fn plan(requested: &Path, protected: &Path, force: bool) -> anyhow::Result<Target> {
        let Some(file_name) = requested.file_name() else {
            bail!("output {} does not name a file", requested.display());
        };
        let parent = match requested.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        };
        let dir = dunce::canonicalize(parent)
            .with_context(|| format!("output directory {}", parent.display()))?;
        let path = dir.join(file_name);
        if path.starts_with(protected) {
            bail!(
                "refusing to write the bundle inside the archive: {} is under {}; choose an -o outside it",
                path.display(),
                protected.display()
            );
        }
        match fs::symlink_metadata(&path) {
            Ok(meta) if meta.is_dir() => bail!("output {} is a directory", path.display()),
            Ok(_) if !force => bail!(
                "output {} already exists; pass --force to replace it",
                path.display()
            ),
            _ => {}
        }
        Ok(Target { path, dir, force })
    }

    /// A fresh hidden temp file next to the final path; it is removed if
    /// dropped before [`Target::commit`].
    pub fn temp_file(&self) -> anyhow::Result<NamedTempFile> {
        tempfile::Builder::new()
            .prefix(".hrr-bundle-")
            .suffix(".partial")
            .tempfile_in(&self.dir)
            .with_context(|| format!("cannot create a temp file in {}", self.dir.display()))
    }

    /// Renames the finished temp file to the final path (atomically; without
    /// `--force` it fails rather than replace a file that appeared meanwhile).
    pub fn commit(&self, tmp: NamedTempFile) -> anyhow::Result<()> {
        let result = if self.force {
            tmp.persist(&self.path).map(drop)
        } else {
            tmp.persist_noclobber(&self.path).map(drop)
        };
        result
            .map_err(|e| e.error)
            .with_context(|| format!("cannot write {}", self.path.display()))
    }
}

#[cfg(test)]
mod tests {
    use super::default_name;
    use std::path::Path;
    use std::time::{Duration, UNIX_EPOCH};

    #[test]
    fn default_name_carries_archive_name_and_utc_time() {
        // 2021-01-01T00:00:00Z is 1609459200 s after the epoch; +3723 s is
        // 01:02:03.
        let t = UNIX_EPOCH + Duration::from_secs(1_609_459_200 + 3723);
        assert_eq!(
            default_name(Path::new("/x/capture.hrr"), t),
            "capture.hrr-20210101T010203Z.hrr-bundle.tar.zst"
        );
        assert_eq!(
            default_name(Path::new("/"), t),
            "archive-20210101T010203Z.hrr-bundle.tar.zst"
        );
    }
}
