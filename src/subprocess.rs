//! Running a helper program from an argv vector (never a shell), with a time
//! limit, capturing its output. Used by `hrr.exec`, the host probes and the
//! docker probes.

use std::ffi::OsStr;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{bail, Context as _};

/// The most output kept per stream; the rest is read and dropped.
const CAPTURE_LIMIT: usize = 64 << 20;

/// How long the output is still read after the program exits. A background
/// child that inherited the pipes can hold them open for ever; what arrived
/// by then is returned and the rest is not waited for.
const DRAIN_AFTER_EXIT: Duration = Duration::from_secs(2);

/// How a captured run is set up.
#[derive(Clone, Debug, Default)]
pub struct ExecOptions {
    /// Kill the program (its whole process group on Unix) after this long.
    pub timeout: Option<Duration>,
    /// Extra environment variables.
    pub env: Vec<(String, String)>,
    /// Working directory.
    pub cwd: Option<PathBuf>,
    /// On Unix, pass an interrupt of `hrr` (SIGINT, SIGTERM or SIGHUP, as
    /// [`crate::interrupt`]'s handlers record it; the caller installs
    /// them) on to the program, so it can end as it would at the terminal,
    /// then stop its whole process group after this long. The signal goes
    /// to the program alone, as Ctrl-C at the terminal would: signalling
    /// its group would also wake its supervisor, which kills at once
    /// whatever the program started outside the group (its own replay).
    pub interrupt_grace: Option<Duration>,
}

/// What a captured run produced and how it ended.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct Captured {
    /// Exit status, when it exited normally.
    pub status: Option<i32>,
    /// The signal that killed it (Unix).
    pub signal: Option<i32>,
    /// Its stdout (at most 64 MiB).
    #[serde(with = "lossy")]
    pub stdout: Vec<u8>,
    /// Its stderr (at most 64 MiB).
    #[serde(with = "lossy")]
    pub stderr: Vec<u8>,
    /// It was killed because the time limit ran out.
    pub timed_out: bool,
}

impl Captured {
    /// It exited with status 0.
    pub fn success(&self) -> bool {
        self.status == Some(0)
    }

    /// stdout as text (invalid UTF-8 replaced).
    pub fn stdout_text(&self) -> String {
        String::from_utf8_lossy(&self.stdout).into_owned()
    }
}

mod lossy {
    pub fn serialize<S: serde::Serializer>(bytes: &[u8], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&String::from_utf8_lossy(bytes))
    }
}

/// Runs `argv` with stdin closed and stdout/stderr captured. An empty argv or
/// a program that cannot be started is an error; a non-zero exit is not.
pub fn run<S: AsRef<OsStr>>(argv: &[S], opts: &ExecOptions) -> anyhow::Result<Captured> {
    let Some((program, args)) = argv.split_first() else {
        bail!("empty command line");
    };
    let program = program.as_ref();
    let shown = Path::new(program).display();
    if let Some(dir) = &opts.cwd {
        match std::fs::metadata(dir) {
            Ok(m) if m.is_dir() => {}
            Ok(_) => bail!(
                "cannot run '{shown}' in the working directory {}: it is not a directory",
                dir.display()
            ),
            Err(e) => bail!(
                "cannot run '{shown}' in the working directory {}: {e}",
                dir.display()
            ),
        }
    }
    let spawned = crate::supervisor::spawn(program, args, &[], |cmd| {
        cmd.stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        cmd.envs(opts.env.iter().map(|(k, v)| (k, v)));
        if let Some(dir) = &opts.cwd {
            cmd.current_dir(dir);
        }
        #[cfg(unix)]
        std::os::unix::process::CommandExt::process_group(cmd, 0);
    })
    .with_context(|| format!("cannot run '{shown}'"))?;
    let mut child = spawned.child;
    let out = drain(child.stdout.take());
    let err = drain(child.stderr.take());
    let (status, timed_out) = wait(&mut child, spawned.pid, opts)?;
    let until = Instant::now() + DRAIN_AFTER_EXIT;
    let mut captured = Captured {
        timed_out,
        stdout: out.collect(until),
        stderr: err.collect(until),
        ..Captured::default()
    };
    captured.status = status.code();
    #[cfg(unix)]
    {
        captured.signal = std::os::unix::process::ExitStatusExt::signal(&status);
    }
    Ok(captured)
}

/// One output stream being read on its own thread.
struct Drain {
    kept: Arc<Mutex<Vec<u8>>>,
    ended: mpsc::Receiver<()>,
}

impl Drain {
    /// What was read when the stream ended, or by `until` if it had not.
    fn collect(self, until: Instant) -> Vec<u8> {
        let _ = self
            .ended
            .recv_timeout(until.saturating_duration_since(Instant::now()));
        std::mem::take(&mut *self.kept.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

fn drain<R: Read + Send + 'static>(stream: Option<R>) -> Drain {
    let (tx, ended) = mpsc::channel();
    let kept = Arc::new(Mutex::new(Vec::new()));
    if let Some(mut stream) = stream {
        let kept = Arc::clone(&kept);
        std::thread::spawn(move || {
            let mut buf = [0u8; 64 * 1024];
            loop {
                // A signal handled by `hrr` (an interrupt passed on to
                // the program) may interrupt the read: read on.
                let n = match stream.read(&mut buf) {
                    Ok(0) => break,
                    Ok(n) => n,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                    Err(_) => break,
                };
                let mut kept = kept.lock().unwrap_or_else(|e| e.into_inner());
                let room = CAPTURE_LIMIT.saturating_sub(kept.len());
                kept.extend_from_slice(&buf[..n.min(room)]);
            }
            let _ = tx.send(());
        });
    }
    Drain { kept, ended }
}

/// Waits for `child` (leading the process group `group`) as `opts` says;
/// returns how it ended and whether the time limit ran out.
fn wait(
    child: &mut Child,
    group: u32,
    opts: &ExecOptions,
) -> anyhow::Result<(std::process::ExitStatus, bool)> {
    let start = Instant::now();
    let mut passed_on: Option<Instant> = None;
    loop {
        if let Some(status) = child.try_wait()? {
            return Ok((status, false));
        }
        if opts.timeout.is_some_and(|t| start.elapsed() >= t) {
            kill_group(child, group);
            return Ok((child.wait()?, true));
        }
        if let Some(grace) = opts.interrupt_grace {
            match passed_on {
                Some(at) if at.elapsed() >= grace => {
                    kill_group(child, group);
                    return Ok((child.wait()?, false));
                }
                Some(_) => {}
                None => {
                    if pass_on_interrupt(group) {
                        passed_on = Some(Instant::now());
                    }
                }
            }
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Sends the signal that interrupted `hrr`, if one did, to the program
/// `pid`; whether one did.
fn pass_on_interrupt(pid: u32) -> bool {
    #[cfg(unix)]
    {
        use nix::sys::signal::{kill, Signal};
        let Some(sig) = crate::interrupt::pending() else {
            return false;
        };
        if let Ok(sig) = Signal::try_from(sig) {
            let _ = kill(nix::unistd::Pid::from_raw(pid as i32), sig);
        }
        true
    }
    #[cfg(not(unix))]
    {
        let _ = pid;
        false
    }
}

/// Stops `child` and, on Unix, the process group `group` it runs in: TERM,
/// then KILL after a second.
pub fn kill_group(child: &mut Child, group: u32) {
    #[cfg(unix)]
    {
        use nix::sys::signal::{killpg, Signal};
        use nix::unistd::Pid;
        let pgid = Pid::from_raw(group as i32);
        let _ = killpg(pgid, Signal::SIGTERM);
        let deadline = Instant::now() + Duration::from_secs(1);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = child.try_wait() {
                let _ = killpg(pgid, Signal::SIGKILL);
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = killpg(pgid, Signal::SIGKILL);
    }
    #[cfg(not(unix))]
    let _ = group;
    let _ = child.kill();
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    fn argv(words: &[&str]) -> Vec<String> {
        words.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn captures_status_and_output_without_a_shell() {
        let r = run(&argv(&["echo", "a;b", "$(id)"]), &ExecOptions::default()).unwrap();
        assert_eq!(r.stdout_text(), "a;b $(id)\n");
        assert!(r.success());
        let r = run(
            &argv(&["sh", "-c", "echo oops >&2; exit 3"]),
            &ExecOptions::default(),
        )
        .unwrap();
        assert_eq!((r.status, r.stderr.as_slice()), (Some(3), &b"oops\n"[..]));
    }

    #[test]
    fn times_out_and_kills_the_group() {
        let opts = ExecOptions {
            timeout: Some(Duration::from_millis(200)),
            ..Default::default()
        };
        let start = Instant::now();
        let r = run(&argv(&["sh", "-c", "trap '' TERM; sleep 30 & wait"]), &opts).unwrap();
        assert!(r.timed_out);
        assert_eq!(r.signal, Some(9));
        assert!(start.elapsed() < Duration::from_secs(5));
    }

    #[test]
    fn output_held_open_by_a_background_child_is_not_lost() {
        let start = Instant::now();
        let r = run(
            &argv(&["sh", "-c", "echo printed; sleep 8 &"]),
            &ExecOptions::default(),
        )
        .unwrap();
        assert_eq!(r.stdout_text(), "printed\n");
        assert!(r.success());
        assert!(start.elapsed() < Duration::from_secs(6));
    }

    #[test]
    fn a_missing_working_directory_is_named() {
        let opts = ExecOptions {
            cwd: Some("/nonexistent/workdir".into()),
            ..Default::default()
        };
        let err = run(&argv(&["true"]), &opts).unwrap_err().to_string();
        assert!(
            err.contains("in the working directory /nonexistent/workdir: No such file"),
            "{err}"
        );
    }

    #[test]
    fn a_missing_program_is_an_error() {
        let err = run(&argv(&["/nonexistent/rocm-smi"]), &ExecOptions::default()).unwrap_err();
        assert!(err
            .to_string()
            .contains("cannot run '/nonexistent/rocm-smi'"));
    }
}
