//! The player's two output streams, buffered the way C stdio buffers them in
//! the real `hrr-playback` (reference playback-output.md §2): stdout is
//! line-buffered on a terminal and fully buffered (one `BUFSIZ` block) on a
//! pipe or file; stderr is unbuffered. `abort()` throws away whatever stdout
//! still holds, which is exactly what a pipe-based runner loses.

use std::io::{IsTerminal, Write};

/// glibc's buffer for a pipe or regular file: `st_blksize`, 4096 on Linux.
const BLOCK: usize = 4096;

/// stdout with C stdio buffering.
pub struct CStdout {
    buf: Vec<u8>,
    line_buffered: bool,
}

impl CStdout {
    /// Line-buffered when stdout is a terminal, fully buffered otherwise.
    pub fn new() -> CStdout {
        CStdout {
            buf: Vec::with_capacity(BLOCK),
            line_buffered: std::io::stdout().is_terminal(),
        }
    }

    /// `printf("%s\n", line)`.
    pub fn line(&mut self, line: &str) {
        self.buf.extend_from_slice(line.as_bytes());
        self.buf.push(b'\n');
        if self.line_buffered {
            self.flush();
            return;
        }
        while self.buf.len() >= BLOCK {
            let rest = self.buf.split_off(BLOCK);
            write_fd1(&self.buf);
            self.buf = rest;
        }
    }

    /// `fflush(stdout)`.
    pub fn flush(&mut self) {
        write_fd1(&self.buf);
        self.buf.clear();
    }
}

impl Default for CStdout {
    fn default() -> Self {
        CStdout::new()
    }
}

fn write_fd1(bytes: &[u8]) {
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(bytes).and_then(|()| out.flush());
}

/// `fprintf(stderr, "%s\n", line)`: unbuffered, one write.
pub fn err(line: &str) {
    let mut text = String::with_capacity(line.len() + 1);
    text.push_str(line);
    text.push('\n');
    let _ = std::io::stderr().lock().write_all(text.as_bytes());
}
