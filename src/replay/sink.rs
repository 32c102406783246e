//! Writing the replay log: its creation (0600, never through a symlink),
//! the line sink that appends the player's output as it arrives, echoes it
//! with `-v` and feeds the progress display, and the stop markers' seconds.

use std::fs::File;
use std::io::Write;
use std::path::Path;

use anyhow::Context as _;

use super::progress;

/// `secs` as the marker prints it: whole seconds without a fraction.
pub fn seconds(secs: f64) -> String {
    if secs.fract() == 0.0 {
        format!("{secs:.0}")
    } else {
        format!("{secs}")
    }
}

/// Creates (or truncates) the log with mode 0600, refusing a symlink and
/// anything that is not a regular file.
#[cfg(unix)]
pub fn create(path: &Path) -> anyhow::Result<File> {
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
    let file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .custom_flags(nix::libc::O_NOFOLLOW | nix::libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| match e.raw_os_error() {
            // Non-blocking, a FIFO without a reader fails at once instead
            // of blocking the open until one comes.
            Some(nix::libc::ENXIO) => std::io::Error::other("a FIFO that nothing reads"),
            _ => e,
        })
        .with_context(|| format!("cannot create the replay log {}", path.display()))?;
    nix::fcntl::fcntl(
        &file,
        nix::fcntl::FcntlArg::F_SETFL(nix::fcntl::OFlag::empty()),
    )
    .with_context(|| format!("cannot create the replay log {}", path.display()))?;
    // Made private below and removed when the replay cannot start: only a
    // regular file may be, never a device node or a pipe (`/dev/null` named
    // as the log by a workflow).
    if !file
        .metadata()
        .with_context(|| format!("cannot create the replay log {}", path.display()))?
        .is_file()
    {
        anyhow::bail!(
            "cannot write the replay log to {}: it is a device or a pipe, and the replay log must be a regular file; name a file",
            path.display()
        );
    }
    file.set_permissions(std::fs::Permissions::from_mode(0o600))
        .with_context(|| format!("cannot make {} private", path.display()))?;
    Ok(file)
}

/// Creates (or truncates) the log, refusing a symbolic link or junction
/// (opened as itself, never followed) and anything that is not a regular
/// file, such as a device name (`NUL`, `CON`) or a named pipe. The file
/// inherits the ACL of its directory: the user's workdir.
#[cfg(windows)]
pub fn create(path: &Path) -> anyhow::Result<File> {
    use std::os::windows::fs::OpenOptionsExt;
    use windows_sys::Win32::Storage::FileSystem::FILE_FLAG_OPEN_REPARSE_POINT;
    let cannot = || format!("cannot create the replay log {}", path.display());
    if std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink()) {
        anyhow::bail!(
            "cannot write the replay log to {}: it is a symbolic link; name a regular file",
            path.display()
        );
    }
    let file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .custom_flags(FILE_FLAG_OPEN_REPARSE_POINT)
        .open(path)
        .with_context(cannot)?;
    if !file.metadata().with_context(cannot)?.is_file() {
        anyhow::bail!(
            "cannot write the replay log to {}: it is a device or a pipe, and the replay log must be a regular file; name a file",
            path.display()
        );
    }
    Ok(file)
}

/// Receives the player's bytes and writes complete lines to the log.
///
/// A line is held until its end, so lines of the two streams never mix;
/// but never more than [`LINE_CAP`](crate::classify::LINE_CAP) bytes of
/// it. A longer line is written as it comes (only its head is echoed and
/// looked at for progress); if the other stream ends a line meanwhile, the
/// long line is broken there and goes on in a line of its own.
pub struct LineSink {
    file: File,
    partial: [Vec<u8>; 2],
    /// The stream whose overlong line is begun in the log and not ended.
    open: Option<usize>,
    echo: bool,
    progress: Option<progress::Display>,
}

impl LineSink {
    /// A sink writing to `file`; `echo` copies each line to stderr;
    /// `progress` is the terminal display (never written to the log).
    pub fn new(file: File, echo: bool, progress: Option<progress::Display>) -> LineSink {
        LineSink {
            file,
            partial: [Vec::new(), Vec::new()],
            open: None,
            echo,
            progress,
        }
    }

    /// Appends the complete lines in `bytes` from `stream` (0 = stdout,
    /// 1 = stderr) and keeps its unfinished last line for the next call, so
    /// lines of the two streams never mix.
    pub fn feed(&mut self, stream: usize, bytes: &[u8]) -> std::io::Result<()> {
        let bytes = if self.open == Some(stream) {
            match self.continue_open(stream, bytes)? {
                Some(rest) => rest,
                None => return Ok(()),
            }
        } else {
            bytes
        };
        let Some(last) = memchr::memrchr(b'\n', bytes) else {
            self.partial[stream].extend_from_slice(bytes);
            return self.spill(stream);
        };
        self.end_open()?;
        let (complete, rest) = bytes.split_at(last + 1);
        if self.partial[stream].is_empty() {
            self.emit(complete)?;
        } else {
            let first = memchr::memchr(b'\n', complete).map_or(complete.len(), |i| i + 1);
            let mut joined = std::mem::take(&mut self.partial[stream]);
            joined.extend_from_slice(&complete[..first]);
            self.emit(&joined)?;
            self.emit(&complete[first..])?;
        }
        self.partial[stream].extend_from_slice(rest);
        self.spill(stream)
    }

    /// Writes `stream`'s held line to the log once it is longer than the
    /// cap, leaving it open there.
    fn spill(&mut self, stream: usize) -> std::io::Result<()> {
        let cap = crate::classify::LINE_CAP;
        if self.partial[stream].len() <= cap {
            return Ok(());
        }
        self.end_open()?;
        let head = std::mem::take(&mut self.partial[stream]);
        self.observe(&head[..cap]);
        self.file.write_all(&head)?;
        self.open = Some(stream);
        Ok(())
    }

    /// Writes more of the open line of `stream`: all of `bytes` when its
    /// end is not in them (`None`), else up to its end, returning the rest.
    /// A CR at the end of `bytes` waits: it may begin the line's CR LF.
    fn continue_open<'a>(
        &mut self,
        stream: usize,
        bytes: &'a [u8],
    ) -> std::io::Result<Option<&'a [u8]>> {
        let mut data = std::mem::take(&mut self.partial[stream]);
        data.extend_from_slice(bytes);
        match memchr::memchr(b'\n', &data) {
            None => {
                let keep = usize::from(data.last() == Some(&b'\r'));
                self.file.write_all(&data[..data.len() - keep])?;
                self.partial[stream] = data[data.len() - keep..].to_vec();
                Ok(None)
            }
            Some(i) => {
                let line = &data[..i];
                let line = line.strip_suffix(b"\r").unwrap_or(line);
                self.file.write_all(line)?;
                self.file.write_all(b"\n")?;
                self.open = None;
                let consumed = i + 1 - (data.len() - bytes.len());
                Ok(Some(&bytes[consumed.min(bytes.len())..]))
            }
        }
    }

    /// Ends the open overlong line, if any, before other lines are written.
    fn end_open(&mut self) -> std::io::Result<()> {
        let Some(stream) = self.open.take() else {
            return Ok(());
        };
        // At most the CR of a line end the line did not get to.
        self.partial[stream].clear();
        self.file.write_all(b"\n")
    }

    /// Writes `data` (whole lines) to the log. Lines lose a trailing `\r`
    /// (a terminal's line ending, e.g. from `docker run -t`).
    fn emit(&mut self, data: &[u8]) -> std::io::Result<()> {
        if data.is_empty() {
            return Ok(());
        }
        let plain = !self.echo && self.progress.is_none();
        if plain && memchr::memchr(b'\r', data).is_none() {
            return self.file.write_all(data);
        }
        let mut out = Vec::with_capacity(data.len());
        for line in data.split_inclusive(|b| *b == b'\n') {
            let line = line.strip_suffix(b"\n").unwrap_or(line);
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            self.observe(line);
            out.extend_from_slice(line);
            out.push(b'\n');
        }
        self.file.write_all(&out)
    }

    fn observe(&mut self, line: &[u8]) {
        if let Some(display) = &self.progress {
            if line.starts_with(progress::PREFIX.as_bytes()) {
                if let Some(p) = progress::parse(&String::from_utf8_lossy(line)) {
                    display.update(&p);
                }
            }
        }
        if self.echo {
            let text = crate::ui::inert(&String::from_utf8_lossy(line));
            match &self.progress {
                Some(display) => display.println(&text),
                None => {
                    let _ = writeln!(std::io::stderr().lock(), "{text}");
                }
            }
        }
    }

    /// Writes a last unfinished line, then `markers`, and syncs the file.
    pub fn finish(mut self, markers: &[String]) -> std::io::Result<()> {
        if let Some(display) = self.progress.take() {
            display.clear();
        }
        self.end_open()?;
        for stream in 0..2 {
            if !self.partial[stream].is_empty() {
                let mut last = std::mem::take(&mut self.partial[stream]);
                last.push(b'\n');
                self.emit(&last)?;
            }
        }
        for m in markers {
            writeln!(self.file, "{m}")?;
        }
        self.file.sync_all()
    }

    /// Drops the display without writing anything more (the replay never
    /// started).
    pub fn abandon(&mut self) {
        if let Some(display) = self.progress.take() {
            display.clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marker_seconds_drop_a_zero_fraction() {
        assert_eq!(seconds(2.0), "2");
        assert_eq!(seconds(1800.0), "1800");
        assert_eq!(seconds(0.5), "0.5");
    }

    #[test]
    fn lines_split_across_reads_and_streams_are_kept_whole() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.log");
        let mut sink = LineSink::new(create(&path).unwrap(), false, None);
        sink.feed(0, b"[HRR] Arch").unwrap();
        sink.feed(1, b"[HRR progress] elapsed_s=0.0 seq=3\n[HRR] Fat")
            .unwrap();
        sink.feed(0, b"ive : 5 events\r\n[HRR] Thr").unwrap();
        sink.feed(0, b"eads : 1 captured\nno newline at the end")
            .unwrap();
        sink.feed(1, b"al: x\n").unwrap();
        sink.finish(&["[hrr] replay exited with code 0".into()])
            .unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(
            text,
            "[HRR progress] elapsed_s=0.0 seq=3\n[HRR] Archive : 5 events\n[HRR] Threads : 1 captured\n[HRR] Fatal: x\nno newline at the end\n[hrr] replay exited with code 0\n"
        );
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
    }

    #[test]
    fn an_overlong_line_is_written_as_it_comes_and_never_held_whole() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.log");
        let mut sink = LineSink::new(create(&path).unwrap(), false, None);
        let cap = crate::classify::LINE_CAP;
        let long = vec![b'x'; 3 * cap];
        sink.feed(0, b"[HRR] ").unwrap();
        for piece in long.chunks(cap / 2) {
            sink.feed(0, piece).unwrap();
            assert!(
                sink.partial[0].len() <= cap,
                "held {}",
                sink.partial[0].len()
            );
        }
        sink.feed(0, b"\r").unwrap();
        sink.feed(0, b"\n[HRR] after\n").unwrap();
        // Broken where the other stream ends a line meanwhile.
        sink.feed(1, &long[..cap + 1]).unwrap();
        sink.feed(0, b"[HRR launch] seq=5\n").unwrap();
        sink.feed(1, b"yy\n").unwrap();
        sink.feed(1, &long[..cap + 1]).unwrap();
        sink.finish(&["[hrr] replay exited with code 0".into()])
            .unwrap();
        let text = String::from_utf8(std::fs::read(&path).unwrap()).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        let x = |n: usize| "x".repeat(n);
        assert_eq!(
            lines,
            [
                format!("[HRR] {}", x(3 * cap)).as_str(),
                "[HRR] after",
                x(cap + 1).as_str(),
                "[HRR launch] seq=5",
                "yy",
                x(cap + 1).as_str(),
                "[hrr] replay exited with code 0",
            ]
        );
    }

    #[cfg(unix)]
    #[test]
    fn a_symlinked_log_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("real");
        std::fs::write(&real, "keep").unwrap();
        let link = dir.path().join("link.log");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        assert!(create(&link).is_err());
        assert_eq!(std::fs::read_to_string(&real).unwrap(), "keep");
    }
}
