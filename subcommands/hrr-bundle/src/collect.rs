//! What goes into a bundle: the archive's files (walked without following
//! any symlink) and the finding and log the user named.

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context as _};

use crate::manifest::{Role, Skipped};
use crate::term::Ui;

/// Where an item's bytes come from.
pub enum Source {
    /// A file on disk, hashed as it streams into the bundle.
    File(PathBuf),
    /// Bytes produced by `hrr` (the `--triage` finding, a few KiB).
    Bytes(Vec<u8>),
}

/// One file to pack.
pub struct Item {
    /// Path inside the bundle.
    pub path: String,
    /// Why it is packed.
    pub role: Role,
    /// Its content.
    pub source: Source,
}

impl Item {
    /// Its size as it stands now (for the progress bar; a file that cannot
    /// be read counts 0 and fails when packed).
    pub fn size_now(&self) -> u64 {
        match &self.source {
            Source::File(p) => fs::metadata(p).map_or(0, |m| m.len()),
            Source::Bytes(b) => b.len() as u64,
        }
    }
}

/// Every regular file under `archive`, in name order, as `prefix/<rel>`.
/// Symlinks are never followed: a `pid-*` symlink in a root (or any other
/// symlink) and special files are left out with a warning and listed in the
/// returned skips.
pub fn archive_items(
    archive: &Path,
    prefix: &str,
    ui: &Ui,
) -> anyhow::Result<(Vec<Item>, Vec<Skipped>)> {
    let mut walk = Walk {
        items: Vec::new(),
        skipped: Vec::new(),
        ui,
    };
    walk.dir(archive, prefix, true)?;
    Ok((walk.items, walk.skipped))
}

struct Walk<'a> {
    items: Vec<Item>,
    skipped: Vec<Skipped>,
    ui: &'a Ui,
}

impl Walk<'_> {
    fn dir(&mut self, dir: &Path, prefix: &str, top: bool) -> anyhow::Result<()> {
        let mut entries = fs::read_dir(dir)
            .with_context(|| format!("cannot read directory {}", dir.display()))?
            .collect::<Result<Vec<_>, _>>()
            .with_context(|| format!("cannot read directory {}", dir.display()))?;
        entries.sort_by_key(|e| e.file_name());
        for entry in entries {
            let source = entry.path();
            let Some(name) = entry.file_name().to_str().map(str::to_owned) else {
                bail!(
                    "{} has a name that is not UTF-8; rename it to pack this archive",
                    source.display()
                );
            };
            let path = format!("{prefix}/{name}");
            // file_type() does not follow symlinks.
            let kind = entry
                .file_type()
                .with_context(|| format!("cannot stat {}", source.display()))?;
            if kind.is_symlink() {
                let reason = if top && name.starts_with("pid-") {
                    "symlinked process directory, not followed"
                } else {
                    "symlink, not followed"
                };
                self.skip(&source, path, reason);
            } else if kind.is_dir() {
                self.dir(&source, &path, false)?;
            } else if kind.is_file() {
                self.items.push(Item {
                    path,
                    role: Role::Archive,
                    source: Source::File(source),
                });
            } else {
                self.skip(&source, path, "not a regular file");
            }
        }
        Ok(())
    }

    fn skip(&mut self, source: &Path, path: String, reason: &str) {
        self.ui
            .warn(&format!("skipping {}: {reason}", source.display()));
        self.skipped.push(Skipped {
            path,
            reason: reason.to_string(),
        });
    }
}

/// The user-named `--finding`/`--log` file as `<dir>/<file name>`. It must
/// be a regular file (a symlink to one is fine: the user named it).
pub fn input_item(file: &Path, role: Role, dir: &str) -> anyhow::Result<Item> {
    let what = format!("--{dir}");
    let meta =
        fs::metadata(file).with_context(|| format!("cannot read {what} {}", file.display()))?;
    if !meta.is_file() {
        bail!("{what} {} is not a regular file", file.display());
    }
    let Some(name) = file.file_name().and_then(|n| n.to_str()) else {
        bail!("{what} {} has no UTF-8 file name", file.display());
    };
    Ok(Item {
        path: format!("{dir}/{name}"),
        role,
        source: Source::File(file.to_path_buf()),
    })
}
