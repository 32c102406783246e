//! Writing to a path the user or a workflow named (`-o`, `hrr replay --log`,
//! `hrr.fs.write`) without ever destroying what is there (DESIGN §8).
//!
//! The rule, by what the path names once symlinks are followed:
//! - a regular file, or nothing yet: written atomically, through a 0600
//!   temp file in the same directory renamed into place, so a reader never
//!   sees half a file;
//! - a character device (`/dev/null`, a terminal) or a pipe that already has
//!   a reader: written through, never renamed over;
//! - a symlink: followed, and the rule applied to what it points at (a
//!   dangling one is followed to the file it names); the link itself is
//!   never replaced;
//! - anything else (a directory, a socket, a block device, a pipe with no
//!   reader, which would block for ever): refused with an error naming it.
//!
//! Before any of that, a target inside a directory shaped like a capture
//! archive is refused ([`crate::safety::ensure_not_in_archive`]).
//!
//! Windows has no device nodes or named pipes in the file system: a regular
//! file or nothing is written atomically, a directory is refused, and any
//! other existing path (a device name such as `NUL`) is written through.

use std::fs::File;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context as _};

/// How many symlinks are followed before a dangling chain counts as a loop
/// (Linux's own limit).
const MAX_LINKS: usize = 40;

/// Where a write goes, decided by [`open`].
#[derive(Debug)]
pub enum Destination {
    /// A regular file or a new one, replaced atomically at this path (the
    /// final target of any symlink).
    File(PathBuf),
    /// A character device or a pipe with a reader, already open for writing.
    Stream {
        /// The path as named.
        path: PathBuf,
        /// The open device or pipe; keeping it open keeps the pipe's reader
        /// from seeing the end of its input.
        file: File,
    },
}

impl Destination {
    /// The path the bytes go to.
    pub fn path(&self) -> &Path {
        match self {
            Destination::File(p) | Destination::Stream { path: p, .. } => p,
        }
    }

    /// Writes all of `bytes` (see the module doc for how).
    pub fn write(self, bytes: &[u8]) -> anyhow::Result<()> {
        match self {
            Destination::File(path) => write_atomically(&path, bytes),
            Destination::Stream { path, mut file } => file
                .write_all(bytes)
                .and_then(|()| file.flush())
                .with_context(|| format!("cannot write {}", path.display())),
        }
    }
}

/// Writes `bytes` to `path` by the rule of the module doc.
pub fn write(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    open(path)?.write(bytes)
}

/// Decides where a write to `path` goes, refusing what must not be written
/// (see the module doc); opens a device or pipe already.
pub fn open(path: &Path) -> anyhow::Result<Destination> {
    crate::safety::ensure_not_in_archive(path)?;
    match std::fs::metadata(path) {
        Ok(meta) if meta.is_file() => {
            let real = dunce::canonicalize(path)
                .with_context(|| format!("cannot resolve {}", path.display()))?;
            crate::safety::ensure_not_in_archive(&real)?;
            Ok(Destination::File(real))
        }
        Ok(meta) if meta.is_dir() => bail!(
            "cannot write {}: it is a directory; name a file",
            path.display()
        ),
        Ok(meta) => special(path, &meta),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let target = dangling_target(path)?;
            crate::safety::ensure_not_in_archive(&target)?;
            Ok(Destination::File(target))
        }
        Err(e) => Err(e).with_context(|| format!("cannot write {}", path.display())),
    }
}

/// The path a write to a missing `path` creates: `path` itself, or the end
/// of the symlink chain it starts (never the link).
fn dangling_target(path: &Path) -> anyhow::Result<PathBuf> {
    let mut cur = path.to_path_buf();
    for _ in 0..MAX_LINKS {
        match std::fs::symlink_metadata(&cur) {
            Ok(meta) if meta.file_type().is_symlink() => {
                let next = std::fs::read_link(&cur)
                    .with_context(|| format!("cannot read the symlink {}", cur.display()))?;
                cur = match cur.parent() {
                    Some(dir) if next.is_relative() => dir.join(next),
                    _ => next,
                };
            }
            _ => return Ok(cur),
        }
    }
    bail!(
        "cannot write {}: more than {MAX_LINKS} symlinks (a loop?)",
        path.display()
    )
}

/// A path that exists and is neither a regular file nor a directory.
#[cfg(unix)]
fn special(path: &Path, meta: &std::fs::Metadata) -> anyhow::Result<Destination> {
    use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
    let kind = meta.file_type();
    let refuse = |what: &str| -> anyhow::Result<Destination> {
        bail!(
            "cannot write {}: it is {what}; name a regular file, a character device or a pipe that has a reader",
            path.display()
        )
    };
    if kind.is_char_device() {
        let file = std::fs::OpenOptions::new()
            .write(true)
            .open(path)
            .with_context(|| format!("cannot open {}", path.display()))?;
        return Ok(Destination::Stream {
            path: path.to_path_buf(),
            file,
        });
    }
    if kind.is_fifo() {
        let opened = std::fs::OpenOptions::new()
            .write(true)
            .custom_flags(nix::libc::O_NONBLOCK)
            .open(path);
        let file = match opened {
            Ok(file) => file,
            Err(e) if e.raw_os_error() == Some(nix::libc::ENXIO) => {
                return refuse("a pipe (FIFO) with no reader, so a write would wait for ever")
            }
            Err(e) => return Err(e).with_context(|| format!("cannot open {}", path.display())),
        };
        blocking(&file).with_context(|| format!("cannot write {}", path.display()))?;
        return Ok(Destination::Stream {
            path: path.to_path_buf(),
            file,
        });
    }
    if kind.is_socket() {
        return refuse("a socket");
    }
    if kind.is_block_device() {
        return refuse("a block device");
    }
    refuse("not a regular file")
}

/// Windows: an existing path that is neither a file nor a directory is a
/// device name (`NUL`, `CON`), written through.
#[cfg(not(unix))]
fn special(path: &Path, _meta: &std::fs::Metadata) -> anyhow::Result<Destination> {
    let file = std::fs::OpenOptions::new()
        .write(true)
        .open(path)
        .with_context(|| format!("cannot open {}", path.display()))?;
    Ok(Destination::Stream {
        path: path.to_path_buf(),
        file,
    })
}

/// Clears `O_NONBLOCK` again once the pipe is known to have a reader, so a
/// full pipe waits for its reader instead of failing.
#[cfg(unix)]
fn blocking(file: &File) -> nix::Result<()> {
    use nix::fcntl::{fcntl, FcntlArg, OFlag};
    let flags = OFlag::from_bits_truncate(fcntl(file, FcntlArg::F_GETFL)?);
    fcntl(file, FcntlArg::F_SETFL(flags - OFlag::O_NONBLOCK)).map(drop)
}

/// Writes `bytes` to the regular (or new) file `path` with mode 0600,
/// atomically: a temp file in the same directory renamed into place.
fn write_atomically(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let mut tmp = tempfile::Builder::new()
        .prefix(".hrr-tmp-")
        .tempfile_in(dir)
        .with_context(|| format!("cannot write in {}", dir.display()))?;
    tmp.write_all(bytes)
        .and_then(|()| tmp.as_file().sync_all())
        .with_context(|| format!("cannot write {}", path.display()))?;
    tmp.persist(path)
        .map_err(|e| anyhow::anyhow!("cannot write {}: {}", path.display(), e.error))?;
    Ok(())
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn a_new_or_regular_file_is_replaced_atomically_and_private() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("x.finding.md");
        write(&f, b"hello").unwrap();
        write(&f, b"again").unwrap();
        assert_eq!(std::fs::read(&f).unwrap(), b"again");
        assert_eq!(
            std::fs::metadata(&f).unwrap().permissions().mode() & 0o777,
            0o600
        );
        let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().flatten().collect();
        assert_eq!(names.len(), 1, "no temp file left behind");
    }

    #[test]
    fn a_dangling_symlink_is_followed_to_the_file_it_names() {
        let dir = tempfile::tempdir().unwrap();
        let link = dir.path().join("latest.md");
        std::os::unix::fs::symlink("runs/one.md", &link).unwrap();
        std::fs::create_dir(dir.path().join("runs")).unwrap();
        write(&link, b"finding").unwrap();
        assert!(std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(
            std::fs::read(dir.path().join("runs/one.md")).unwrap(),
            b"finding"
        );
        let looped = dir.path().join("loop");
        std::os::unix::fs::symlink("loop", &looped).unwrap();
        let err = write(&looped, b"x").unwrap_err();
        assert!(format!("{err:#}").contains("cannot write"), "{err:#}");
    }
}
