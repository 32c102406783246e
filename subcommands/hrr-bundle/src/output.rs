//! Where the bundle goes, and the rules that keep it out of the archive:
//! the output is checked after resolving symlinks, an existing file is kept
//! unless `--force`, nothing that is not a regular file is ever replaced
//! ([`Target`]), and a file is written to a temp file in the output
//! directory and renamed into place only when complete (DESIGN §8).

use std::fs::{self, File};
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

/// A checked output path, and how the bundle reaches it.
///
/// The rule is `hrr`'s own for every named output (`hrr`'s `output_file`
/// module; this crate talks to `hrr` only through its command line, so it
/// keeps this copy of it):
/// - a regular file (with `--force`) or nothing yet: written to a temp file
///   in the same directory and renamed into place when complete;
/// - a character device or a pipe that already has a reader (with
///   `--force`, as for any existing path): written through, never renamed
///   over;
/// - a symlink: followed, and the rule applied to what it points at; the
///   link itself is never replaced;
/// - anything else (a directory, a socket, a block device, a pipe with no
///   reader): refused.
#[derive(Debug)]
pub struct Target {
    /// Where the bundle goes: the final target of any symlink, with its
    /// directory resolved.
    pub path: PathBuf,
    way: Way,
}

#[derive(Debug)]
enum Way {
    /// Temp file in `dir`, renamed to the path; `force` replaces a file.
    Replace { dir: PathBuf, force: bool },
    /// The open device or pipe.
    Through(File),
}

/// The open destination the bundle is written into.
pub enum Sink {
    /// A hidden temp file, removed if dropped before [`Target::commit`].
    Temp(NamedTempFile),
    /// The device or pipe itself.
    Through(File),
}

impl Sink {
    /// The file to write the bundle into.
    pub fn file(&self) -> &File {
        match self {
            Sink::Temp(tmp) => tmp.as_file(),
            Sink::Through(file) => file,
        }
    }
}

/// How many symlinks are followed before a chain counts as a loop.
const MAX_LINKS: usize = 40;

impl Target {
    /// Checks `requested` (relative to the current directory) before any
    /// work starts: its directory exists, it is not inside `protected` (see
    /// [`protected_dir`]) after resolving symlinks, it does not exist unless
    /// `force`, and it is something the rule of [`Target`] may write.
    pub fn plan(requested: &Path, protected: &Path, force: bool) -> anyhow::Result<Target> {
        let path = final_target(&resolved(requested)?)?;
        if path.starts_with(protected) {
            bail!(
                "refusing to write the bundle inside the archive: {} is under {}; choose an -o outside it",
                path.display(),
                protected.display()
            );
        }
        let meta = match fs::metadata(&path) {
            Ok(meta) => meta,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let dir = path.parent().unwrap_or(Path::new(".")).to_path_buf();
                return Ok(Target {
                    path,
                    way: Way::Replace { dir, force },
                });
            }
            Err(e) => return Err(e).with_context(|| format!("output {}", path.display())),
        };
        if meta.is_dir() {
            bail!("output {} is a directory", path.display());
        }
        if !force {
            bail!(
                "output {} already exists; pass --force to replace it",
                path.display()
            );
        }
        if meta.is_file() {
            let dir = path.parent().unwrap_or(Path::new(".")).to_path_buf();
            return Ok(Target {
                path,
                way: Way::Replace { dir, force },
            });
        }
        let file = special::open(&path, &meta)?;
        Ok(Target {
            path,
            way: Way::Through(file),
        })
    }

    /// Where to write the bundle: a fresh hidden temp file next to the final
    /// path, or the device or pipe itself.
    pub fn sink(&self) -> anyhow::Result<Sink> {
        match &self.way {
            Way::Replace { dir, .. } => tempfile::Builder::new()
                .prefix(".hrr-bundle-")
                .suffix(".partial")
                .tempfile_in(dir)
                .map(Sink::Temp)
                .with_context(|| format!("cannot create a temp file in {}", dir.display())),
            Way::Through(file) => file
                .try_clone()
                .map(Sink::Through)
                .with_context(|| format!("cannot write {}", self.path.display())),
        }
    }

    /// Syncs a finished temp file to disk and renames it to the final path
    /// (atomically; without `--force` it fails rather than replace a file
    /// that appeared meanwhile); a device or pipe is already written.
    pub fn commit(&self, sink: Sink) -> anyhow::Result<()> {
        let force = matches!(self.way, Way::Replace { force: true, .. });
        if let Sink::Temp(tmp) = &sink {
            tmp.as_file()
                .sync_all()
                .with_context(|| format!("cannot write {}", self.path.display()))?;
        }
        let result = match sink {
            Sink::Through(_) => return Ok(()),
            Sink::Temp(tmp) if force => tmp.persist(&self.path).map(drop),
            Sink::Temp(tmp) => tmp.persist_noclobber(&self.path).map(drop),
        };
        result
            .map_err(|e| e.error)
            .with_context(|| format!("cannot write {}", self.path.display()))
    }
}

/// `requested` with its directory resolved (the file name kept as given).
fn resolved(requested: &Path) -> anyhow::Result<PathBuf> {
    let Some(file_name) = requested.file_name() else {
        bail!("output {} does not name a file", requested.display());
    };
    let parent = match requested.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let dir = dunce::canonicalize(parent)
        .with_context(|| format!("output directory {}", parent.display()))?;
    Ok(dir.join(file_name))
}

/// The end of the symlink chain `path` starts, resolved (`path` itself
/// when it is no symlink): the bundle goes there, the links stay.
fn final_target(path: &Path) -> anyhow::Result<PathBuf> {
    let mut cur = path.to_path_buf();
    for _ in 0..MAX_LINKS {
        match fs::symlink_metadata(&cur) {
            Ok(meta) if meta.file_type().is_symlink() => {
                let next = fs::read_link(&cur)
                    .with_context(|| format!("cannot read the symlink {}", cur.display()))?;
                let next = match cur.parent() {
                    Some(dir) if next.is_relative() => dir.join(next),
                    _ => next,
                };
                cur = resolved(&next)?;
            }
            _ => return Ok(cur),
        }
    }
    bail!(
        "output {}: more than {MAX_LINKS} symlinks (a loop?)",
        path.display()
    )
}

#[cfg(unix)]
mod special {
    //! Existing paths that are neither files nor directories, on Unix.

    use std::fs::{File, Metadata, OpenOptions};
    use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
    use std::os::unix::io::AsRawFd;
    use std::path::Path;

    use anyhow::{bail, Context as _};

    /// Opens a character device, or a pipe that has a reader, for writing;
    /// refuses the rest.
    pub fn open(path: &Path, meta: &Metadata) -> anyhow::Result<File> {
        let kind = meta.file_type();
        let refuse = |what: &str| -> anyhow::Result<File> {
            bail!(
                "output {} is {what}; name a regular file, a character device or a pipe that has a reader",
                path.display()
            )
        };
        if kind.is_char_device() {
            return OpenOptions::new()
                .write(true)
                .open(path)
                .with_context(|| format!("cannot open {}", path.display()));
        }
        if kind.is_fifo() {
            let file = match OpenOptions::new()
                .write(true)
                .custom_flags(libc::O_NONBLOCK)
                .open(path)
            {
                Ok(file) => file,
                Err(e) if e.raw_os_error() == Some(libc::ENXIO) => {
                    return refuse("a pipe (FIFO) with no reader, so a write would wait for ever")
                }
                Err(e) => return Err(e).with_context(|| format!("cannot open {}", path.display())),
            };
            // Blocking again, so a full pipe waits for its reader.
            let fd = file.as_raw_fd();
            // SAFETY: `fd` is open for as long as `file` lives; F_GETFL and
            // F_SETFL only read and set its status flags.
            let ok = unsafe {
                let flags = libc::fcntl(fd, libc::F_GETFL);
                flags >= 0 && libc::fcntl(fd, libc::F_SETFL, flags & !libc::O_NONBLOCK) == 0
            };
            if !ok {
                return Err(std::io::Error::last_os_error())
                    .with_context(|| format!("cannot write {}", path.display()));
            }
            return Ok(file);
        }
        if kind.is_socket() {
            return refuse("a socket");
        }
        if kind.is_block_device() {
            return refuse("a block device");
        }
        refuse("not a regular file")
    }
}

#[cfg(not(unix))]
mod special {
    //! Windows has no device nodes or named pipes in the file system: an
    //! existing path that is neither a file nor a directory is a device name
    //! (`NUL`), written through.

    use std::fs::{File, Metadata, OpenOptions};
    use std::path::Path;

    use anyhow::Context as _;

    /// Opens the device for writing.
    pub fn open(path: &Path, _meta: &Metadata) -> anyhow::Result<File> {
        OpenOptions::new()
            .write(true)
            .open(path)
            .with_context(|| format!("cannot open {}", path.display()))
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
