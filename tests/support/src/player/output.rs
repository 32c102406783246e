//! The player's two output streams, buffered the way the C runtime of the
//! real `hrr-playback` buffers them (reference playback-output.md §2).
//!
//! glibc (Unix): stdout is line-buffered on a terminal and fully buffered
//! (one `BUFSIZ` block) on a pipe or file; stderr is unbuffered.
//!
//! The MSVC runtime (Windows): stdout and stderr are both buffered in whole
//! blocks when they are not a console ("flushed whenever they are full or,
//! if you are writing to a character device, after each library call"), and
//! only a normal `exit()` flushes them. Wine's msvcrt does neither, so on
//! Windows this player keeps its own 4 KiB buffers when a stream is not a
//! console and flushes them only on a normal exit. One shim: a null
//! standard handle (what Wine 8 gives a child started on a pseudo console,
//! where Windows gives console handles) writes to `CONOUT$`.
//!
//! `abort()` throws away whatever is still buffered, which is exactly what
//! a pipe-based runner loses.

use std::sync::Mutex;

/// glibc's buffer for a pipe or regular file (`st_blksize`, 4096 on Linux),
/// and the block this player buffers on Windows.
const BLOCK: usize = 4096;

/// stdout with C stdio buffering.
pub struct CStdout {
    buf: Vec<u8>,
    line_buffered: bool,
}

impl CStdout {
    /// Line-buffered when stdout is a terminal (console), fully buffered
    /// otherwise.
    pub fn new() -> CStdout {
        CStdout {
            buf: Vec::with_capacity(BLOCK),
            line_buffered: platform::is_console(platform::Stream::Out),
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
            platform::write(platform::Stream::Out, &self.buf);
            self.buf = rest;
        }
    }

    /// `fflush(stdout)`.
    pub fn flush(&mut self) {
        platform::write(platform::Stream::Out, &self.buf);
        self.buf.clear();
    }
}

impl Default for CStdout {
    fn default() -> Self {
        CStdout::new()
    }
}

/// stderr's block buffer (Windows, when stderr is not a console).
static ERR_BUF: Mutex<Vec<u8>> = Mutex::new(Vec::new());

/// `fprintf(stderr, "%s\n", line)`: one write, or into the block buffer
/// where the C runtime buffers stderr.
pub fn err(line: &str) {
    let mut text = Vec::with_capacity(line.len() + 1);
    text.extend_from_slice(line.as_bytes());
    text.push(b'\n');
    err_bytes(&text);
}

/// Writes `bytes` to stderr as [`err`] does, without adding a newline.
pub fn err_bytes(bytes: &[u8]) {
    if !platform::STDERR_BUFFERED || platform::is_console(platform::Stream::Err) {
        platform::write(platform::Stream::Err, bytes);
        return;
    }
    let mut buf = ERR_BUF.lock().unwrap_or_else(|e| e.into_inner());
    buf.extend_from_slice(bytes);
    while buf.len() >= BLOCK {
        let rest = buf.split_off(BLOCK);
        platform::write(platform::Stream::Err, &buf);
        *buf = rest;
    }
}

/// C `exit(code)`: flushes stdout (`out`) and stderr, then exits.
pub fn exit(out: &mut CStdout, code: i32) -> ! {
    out.flush();
    let mut buf = ERR_BUF.lock().unwrap_or_else(|e| e.into_inner());
    platform::write(platform::Stream::Err, &buf);
    buf.clear();
    std::process::exit(code)
}

/// C `abort()`: ends the process at once, every buffer lost. On Windows
/// the legacy abort's exit code 3 through `TerminateProcess`, which Wine
/// honours exactly.
pub fn abort() -> ! {
    platform::abort()
}

#[cfg(unix)]
mod platform {
    use std::io::{IsTerminal, Write};

    /// A standard output stream.
    #[derive(Clone, Copy)]
    pub enum Stream {
        Out,
        Err,
    }

    /// glibc leaves stderr unbuffered wherever it goes.
    pub const STDERR_BUFFERED: bool = false;

    pub fn is_console(stream: Stream) -> bool {
        match stream {
            Stream::Out => std::io::stdout().is_terminal(),
            Stream::Err => std::io::stderr().is_terminal(),
        }
    }

    pub fn write(stream: Stream, bytes: &[u8]) {
        if bytes.is_empty() {
            return;
        }
        let _ = match stream {
            Stream::Out => {
                let mut out = std::io::stdout().lock();
                out.write_all(bytes).and_then(|()| out.flush())
            }
            Stream::Err => std::io::stderr().lock().write_all(bytes),
        };
    }

    pub fn abort() -> ! {
        std::process::abort()
    }
}

#[cfg(windows)]
mod platform {
    use std::fs::File;
    use std::io::Write;
    use std::mem::ManuallyDrop;
    use std::os::windows::io::{FromRawHandle, RawHandle};
    use std::sync::OnceLock;

    use windows_sys::Win32::System::Console::{
        GetConsoleMode, GetStdHandle, STD_ERROR_HANDLE, STD_OUTPUT_HANDLE,
    };
    use windows_sys::Win32::System::Threading::{GetCurrentProcess, TerminateProcess};

    /// A standard output stream.
    #[derive(Clone, Copy)]
    pub enum Stream {
        Out,
        Err,
    }

    /// The MSVC runtime buffers a redirected stderr too.
    pub const STDERR_BUFFERED: bool = true;

    /// Where a stream's bytes go: its standard handle, or `CONOUT$` when
    /// that handle is null.
    fn target(stream: Stream) -> &'static Option<ManuallyDrop<File>> {
        static OUT: OnceLock<Option<ManuallyDrop<File>>> = OnceLock::new();
        static ERR: OnceLock<Option<ManuallyDrop<File>>> = OnceLock::new();
        let (cell, id) = match stream {
            Stream::Out => (&OUT, STD_OUTPUT_HANDLE),
            Stream::Err => (&ERR, STD_ERROR_HANDLE),
        };
        cell.get_or_init(|| {
            // SAFETY: reads this process's standard handle.
            let handle = unsafe { GetStdHandle(id) };
            if handle.is_null() || handle as isize == -1 {
                let console = std::fs::OpenOptions::new()
                    .read(true)
                    .write(true)
                    .open("CONOUT$");
                return console.ok().map(ManuallyDrop::new);
            }
            // SAFETY: the standard handle stays open for the process; the
            // File is never dropped, so it is never closed here.
            Some(ManuallyDrop::new(unsafe {
                File::from_raw_handle(handle as RawHandle)
            }))
        })
    }

    pub fn is_console(stream: Stream) -> bool {
        use std::os::windows::io::AsRawHandle;
        let Some(file) = target(stream) else {
            return false;
        };
        let mut mode = 0;
        // SAFETY: the handle is open; `mode` is a valid out-pointer.
        unsafe { GetConsoleMode(file.as_raw_handle(), &mut mode) != 0 }
    }

    pub fn write(stream: Stream, bytes: &[u8]) {
        if bytes.is_empty() {
            return;
        }
        if let Some(file) = target(stream) {
            let _ = (&**file).write_all(bytes);
        }
    }

    pub fn abort() -> ! {
        // SAFETY: ends this process; nothing runs afterwards.
        unsafe { TerminateProcess(GetCurrentProcess(), 3) };
        std::process::exit(3)
    }
}
