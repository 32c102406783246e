//! The bundle file, handed to the disk as it is written (Linux), so that the
//! fsync making the bundle durable before it is renamed into place waits
//! for the last few MiB only, not for the whole file after compression.

use std::fs::File;
use std::io::{self, Write};

/// Bytes written between two requests to start writing them back.
const STEP: u64 = 8 << 20;

/// A [`Write`] to the bundle file that starts the write-back of every
/// [`STEP`] bytes it has written, without waiting for it.
pub struct Writeback<'a> {
    file: &'a File,
    written: u64,
    started: u64,
}

impl<'a> Writeback<'a> {
    /// Writes to `file` from its start.
    pub fn new(file: &'a File) -> Writeback<'a> {
        Writeback {
            file,
            written: 0,
            started: 0,
        }
    }
}

impl Write for Writeback<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = (&*self.file).write(buf)?;
        self.written += n as u64;
        if self.written - self.started >= STEP {
            start_writeback(self.file, self.started, self.written - self.started);
            self.started = self.written;
        }
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        (&*self.file).flush()
    }
}

/// Asks the kernel to start writing `len` bytes at `offset` back to disk
/// (`sync_file_range` with `SYNC_FILE_RANGE_WRITE`: it does not wait). A
/// failure only leaves more for the final fsync.
#[cfg(target_os = "linux")]
fn start_writeback(file: &File, offset: u64, len: u64) {
    use std::os::fd::AsRawFd;
    let (Ok(offset), Ok(len)) = (i64::try_from(offset), i64::try_from(len)) else {
        return;
    };
    // SAFETY: a plain system call on an open descriptor owned by `file`.
    let _ = unsafe {
        libc::sync_file_range(file.as_raw_fd(), offset, len, libc::SYNC_FILE_RANGE_WRITE)
    };
}

/// Elsewhere the final fsync writes everything.
#[cfg(not(target_os = "linux"))]
fn start_writeback(_file: &File, _offset: u64, _len: u64) {}
