//! Opening a path the user named for reading (`--log`, `--archive-info`,
//! `hrr bundle verify`, `hrr.fs.read`), so that every such read ends, and
//! [`FileKind`], which names what a path is for settings that are checked
//! rather than read (`replay.kfd`) and for messages about archive files.
//!
//! - A directory, a socket or a block device is refused where a file is
//!   expected, before anything is opened.
//! - A pipe is accepted (`--log /dev/stdin`, `--log <(…)`), but a named FIFO
//!   is opened non-blocking first: when nothing has it open for writing
//!   within [`FIFO_WRITER_WAIT`], that is an error instead of a wait for
//!   ever. Once a writer is there, reads block as on any pipe.
//! - A character device (`/dev/zero`, `/dev/urandom`) may never end, so at
//!   most [`DEVICE_READ_LIMIT`] bytes are read from one; a device with more
//!   to give is an error saying so.
//!
//! The errors are `io::Error`s whose message says what was found, so a
//! caller's "cannot read replay log FILE" context reads as one sentence.
//! This file is also compiled into `hrr-bundle` (by `#[path]`), so it uses
//! only `std` and, on Unix, `nix`.

use std::fs::File;
use std::io::{self, Read};
use std::path::Path;
use std::time::Duration;

/// The most bytes read from a character device.
pub const DEVICE_READ_LIMIT: u64 = 1 << 30;

/// How long a FIFO that nothing writes to is given to get a writer.
pub const FIFO_WRITER_WAIT: Duration = Duration::from_secs(3);

/// A file the user named, open for reading.
#[derive(Debug)]
pub struct UserFile {
    file: File,
    /// Bytes read while waiting for a FIFO's writer, returned first.
    pending: Vec<u8>,
    /// For a character device: the bytes it may still give.
    left: Option<u64>,
}

impl Read for UserFile {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if !self.pending.is_empty() {
            let n = self.pending.len().min(buf.len());
            buf[..n].copy_from_slice(&self.pending[..n]);
            self.pending.drain(..n);
            return Ok(n);
        }
        let Some(left) = self.left else {
            return self.file.read(buf);
        };
        if left == 0 {
            let mut probe = [0u8; 1];
            return match self.file.read(&mut probe)? {
                0 => Ok(0),
                _ => Err(io::Error::other(format!(
                    "a character device that gives more than {} GiB; hrr reads at most that much from a device",
                    DEVICE_READ_LIMIT >> 30
                ))),
            };
        }
        let room = usize::try_from(left).unwrap_or(usize::MAX).min(buf.len());
        let n = self.file.read(&mut buf[..room])?;
        self.left = Some(left - n as u64);
        Ok(n)
    }
}

/// Opens `path` for reading under the rules of this module.
pub fn open(path: &Path) -> io::Result<UserFile> {
    let meta = std::fs::metadata(path)?;
    if meta.is_dir() {
        return Err(refused(io::ErrorKind::IsADirectory, "Is a directory"));
    }
    platform::open(path, &meta)
}

/// Reads all of `path` (opened by [`open`]); see [`read_capped`].
pub fn read_all(path: &Path, limit: u64) -> io::Result<Vec<u8>> {
    read_capped(open(path)?, limit)
}

/// A UTF-8 text file of at most `limit` bytes, read under the rules of this
/// module; `-` is stdin.
pub fn read_text(path: &Path, limit: u64) -> anyhow::Result<String> {
    let bytes = if path == Path::new("-") {
        read_capped(io::stdin().lock(), limit)?
    } else {
        read_all(path, limit)?
    };
    anyhow::Context::context(String::from_utf8(bytes), "not UTF-8 text")
}

/// Reads `reader` to its end, refusing more than `limit` bytes with an
/// error naming the limit in MiB.
pub fn read_capped(reader: impl Read, limit: u64) -> io::Result<Vec<u8>> {
    let mut bytes = Vec::new();
    reader
        .take(limit.saturating_add(1))
        .read_to_end(&mut bytes)?;
    if bytes.len() as u64 > limit {
        return Err(io::Error::other(format!("larger than {} MiB", limit >> 20)));
    }
    Ok(bytes)
}

/// What a path is, for messages that must name the real cause ("events.bin
/// is a directory", not "nothing recorded").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FileKind {
    /// A regular file.
    File,
    /// A directory.
    Directory,
    /// A named pipe or a pipe.
    Fifo,
    /// A Unix socket.
    Socket,
    /// A block device (a disk).
    BlockDevice,
    /// A character device (`/dev/zero`, `/dev/kfd`).
    CharDevice,
}

impl FileKind {
    /// The kind of `path`, following symlinks; `None` when it cannot be
    /// examined (opening it will say why).
    pub fn of(path: &Path) -> Option<FileKind> {
        let kind = std::fs::metadata(path).ok()?.file_type();
        Some(if kind.is_dir() {
            FileKind::Directory
        } else if kind.is_file() {
            FileKind::File
        } else {
            platform::special(kind)?
        })
    }

    /// "a directory", "a FIFO", … for messages.
    pub fn describe(self) -> &'static str {
        match self {
            FileKind::File => "a file",
            FileKind::Directory => "a directory",
            FileKind::Fifo => "a FIFO",
            FileKind::Socket => "a socket",
            FileKind::BlockDevice => "a block device",
            FileKind::CharDevice => "a character device",
        }
    }
}

fn refused(kind: io::ErrorKind, what: &str) -> io::Error {
    io::Error::new(kind, format!("{what}, not a file"))
}

#[cfg(unix)]
mod platform {
    //! File types, non-blocking FIFO opens and device caps.

    use std::fs::{File, FileType, Metadata, OpenOptions};
    use std::io::{self, Read};
    use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
    use std::path::Path;
    use std::time::Instant;

    use nix::fcntl::{fcntl, FcntlArg, OFlag};

    use super::{refused, FileKind, UserFile, DEVICE_READ_LIMIT, FIFO_WRITER_WAIT};

    pub fn open(path: &Path, meta: &Metadata) -> io::Result<UserFile> {
        refuse_special(meta.file_type())?;
        // Non-blocking, so a FIFO without a writer does not block the open;
        // the file type is taken again from the open file, which is what
        // will be read.
        let file = OpenOptions::new()
            .read(true)
            .custom_flags(OFlag::O_NONBLOCK.bits())
            .open(path)?;
        let kind = file.metadata()?.file_type();
        if kind.is_dir() {
            return Err(refused(io::ErrorKind::IsADirectory, "Is a directory"));
        }
        refuse_special(kind)?;
        let pending = if kind.is_fifo() && !anonymous_pipe(&file) {
            await_writer(&file)?
        } else {
            Vec::new()
        };
        fcntl(&file, FcntlArg::F_SETFL(OFlag::empty())).map_err(io::Error::from)?;
        let left = kind.is_char_device().then_some(DEVICE_READ_LIMIT);
        Ok(UserFile {
            file,
            pending,
            left,
        })
    }

    /// A socket or a block device is refused; a FIFO is read.
    fn refuse_special(kind: FileType) -> io::Result<()> {
        match special(kind) {
            Some(what @ (FileKind::Socket | FileKind::BlockDevice)) => {
                Err(refused(io::ErrorKind::InvalidInput, what.describe()))
            }
            _ => Ok(()),
        }
    }

    /// The kind of a file that is neither a directory nor a regular file.
    pub fn special(kind: FileType) -> Option<FileKind> {
        if kind.is_fifo() {
            Some(FileKind::Fifo)
        } else if kind.is_socket() {
            Some(FileKind::Socket)
        } else if kind.is_block_device() {
            Some(FileKind::BlockDevice)
        } else if kind.is_char_device() {
            Some(FileKind::CharDevice)
        } else {
            None
        }
    }

    /// `file` is a pipe without a name (`/dev/stdin` of `… | hrr`, or
    /// `<(…)`): its writer was there from the start, so its end is final.
    /// Such pipes live on the file system of a fresh pipe.
    fn anonymous_pipe(file: &File) -> bool {
        use std::os::unix::fs::MetadataExt;
        let Ok((probe, _writer)) = nix::unistd::pipe() else {
            return false;
        };
        match (File::from(probe).metadata(), file.metadata()) {
            (Ok(pipe), Ok(ours)) => pipe.dev() == ours.dev(),
            _ => false,
        }
    }

    /// Waits (at most [`FIFO_WRITER_WAIT`]) until the FIFO `file` has a
    /// writer, and returns what was read on the way. A non-blocking read
    /// says which: "would block" means a writer is there with nothing to
    /// say yet, 0 bytes means nothing has the FIFO open for writing.
    fn await_writer(mut file: &File) -> io::Result<Vec<u8>> {
        let deadline = Instant::now() + FIFO_WRITER_WAIT;
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            match file.read(&mut buf) {
                Ok(0) if Instant::now() >= deadline => {
                    return Err(io::Error::new(
                        io::ErrorKind::TimedOut,
                        format!(
                            "a FIFO that nothing opened for writing within {} s; start the program that writes it first, or name a file",
                            FIFO_WRITER_WAIT.as_secs()
                        ),
                    ))
                }
                Ok(0) => std::thread::sleep(std::time::Duration::from_millis(20)),
                Ok(n) => {
                    buf.truncate(n);
                    return Ok(buf);
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(Vec::new()),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }
}

#[cfg(not(unix))]
mod platform {
    //! Without FIFOs or device nodes only the directory rule applies.

    use std::fs::{File, Metadata};
    use std::io;
    use std::path::Path;

    use super::{FileKind, UserFile};

    /// Without device nodes every other file type is a plain file.
    pub fn special(_kind: std::fs::FileType) -> Option<FileKind> {
        Some(FileKind::File)
    }

    pub fn open(path: &Path, _meta: &Metadata) -> io::Result<UserFile> {
        Ok(UserFile {
            file: File::open(path)?,
            pending: Vec::new(),
            left: None,
        })
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    fn fifo(dir: &Path) -> std::path::PathBuf {
        let path = dir.join("fifo");
        nix::unistd::mkfifo(&path, nix::sys::stat::Mode::S_IRWXU).unwrap();
        path
    }

    #[test]
    fn a_fifo_nothing_writes_to_is_an_error_not_a_hang() {
        let dir = tempfile::tempdir().unwrap();
        let path = fifo(dir.path());
        let start = std::time::Instant::now();
        let err = open(&path).unwrap_err().to_string();
        assert!(
            err.contains("a FIFO that nothing opened for writing"),
            "{err}"
        );
        assert!(start.elapsed() < FIFO_WRITER_WAIT + Duration::from_secs(2));
    }

    #[test]
    fn a_fifo_with_a_writer_is_read_to_its_end() {
        let dir = tempfile::tempdir().unwrap();
        let path = fifo(dir.path());
        let writer_path = path.clone();
        let writer = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(300));
            std::fs::write(writer_path, b"[HRR] PASS\n").unwrap();
        });
        let mut text = String::new();
        open(&path).unwrap().read_to_string(&mut text).unwrap();
        writer.join().unwrap();
        assert_eq!(text, "[HRR] PASS\n");
    }

    #[test]
    #[cfg(target_os = "linux")]
    fn an_empty_pipe_whose_writer_is_gone_is_empty_at_once() {
        let (reader, writer) = nix::unistd::pipe().unwrap();
        drop(writer);
        let path = format!("/proc/self/fd/{}", std::os::fd::AsRawFd::as_raw_fd(&reader));
        let start = std::time::Instant::now();
        let mut bytes = Vec::new();
        open(Path::new(&path))
            .unwrap()
            .read_to_end(&mut bytes)
            .unwrap();
        assert!(bytes.is_empty());
        assert!(start.elapsed() < Duration::from_secs(1));
    }

    #[test]
    fn directories_and_sockets_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let err = open(dir.path()).unwrap_err().to_string();
        assert_eq!(err, "Is a directory, not a file");
        let sock = dir.path().join("s.sock");
        let _listener = std::os::unix::net::UnixListener::bind(&sock).unwrap();
        let err = open(&sock).unwrap_err().to_string();
        assert_eq!(err, "a socket, not a file");
    }

    #[test]
    fn a_device_is_read_up_to_the_cap_then_refused() {
        let mut f = open(Path::new("/dev/zero")).unwrap();
        f.left = Some(10);
        let mut bytes = Vec::new();
        let err = f.read_to_end(&mut bytes).unwrap_err().to_string();
        assert_eq!(bytes.len(), 10);
        assert!(err.contains("gives more than 1 GiB"), "{err}");
        let mut empty = Vec::new();
        open(Path::new("/dev/null"))
            .unwrap()
            .read_to_end(&mut empty)
            .unwrap();
        assert!(empty.is_empty());
    }
}
