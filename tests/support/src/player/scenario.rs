//! The replay scenarios: what the real `hrr-playback` prints, on which
//! stream, and how it ends, for each way a replay can go (reference
//! playback-output.md §2b–§2j, §3), over the events of the archive it was
//! given. Every scenario works for any number of launches: a GPU fault,
//! hang, crash or watchdog happens at the LAST launch (every launch before
//! it completes); with no launch at all the fault comes without a kernel and
//! the hang or watchdog at the end-of-pass synchronize. The runtime's
//! addresses and the bytes of a failed D2H check are invented (no GPU runs);
//! kernel names, sequence ids, event indices, threads and sizes are not.

use std::io::Write;
use std::time::Instant;

use super::model::{dims_text, Action, Archive, Launch, Step};
use super::output::{self, err, CStdout};
use super::Options;

const ILLEGAL: &str = "700 (an illegal memory access was encountered)";

/// Runs `scenario` and ends the process the way the real player would.
pub fn run(scenario: &str, opts: &Options, archive: &Archive, out: &mut CStdout) -> ! {
    let steps = archive.steps.as_slice();
    let mut replay = Replay::start(opts, archive, out);
    match scenario {
        "pass" => {
            replay.through(steps);
            replay.summary(out)
        }
        "d2h_fail" => {
            let target = last_d2h(archive).unwrap_or_else(|| unsupported(scenario, archive));
            for (i, s) in steps.iter().enumerate() {
                replay.step(s, i == target);
            }
            replay.summary(out)
        }
        "divergence" => {
            let target = last_d2h(archive).unwrap_or_else(|| unsupported(scenario, archive));
            for s in &steps[..=target] {
                replay.step(s, true);
            }
            let (seq, n) = (steps[target].seq, replay.d2h.fail);
            err(&format!("[HRR] replay DIVERGED at recorded event seq {seq}: {n}/{n} D2H validations failed (100.0% >= 25.0% threshold). Aborting cleanly before a downstream GPU fault. This is a replay-fidelity divergence (e.g. nondeterministic GPU reductions in an unstable model state), not an HRR translation/memory bug. Set HIP_HRR_REPLAY_DIVERGENCE_ABORT=0 to disable this guard."));
            err(&format!("[HRR] Replay stopped: data divergence exceeded threshold ({n}/{n} D2H validations failed). This is a replay-fidelity limit (nondeterministic GPU reductions in an unstable workload), not an HRR bug — see the [HRR] replay DIVERGED message above."));
            finish(out, 2)
        }
        "fault_abort" => fault_abort(&mut replay),
        "long_line_fault" => {
            long_line(out);
            fault_abort(&mut replay)
        }
        "fault_error" => {
            fault_error(&mut replay, opts);
            err("[HRR] Replay aborted due to fatal HIP error — exiting");
            finish(out, 1)
        }
        "queue_abort" => {
            replay.up_to_last_launch();
            err(":0:rocdevice.cpp            :3594: 34648731232 us:  Callback: Queue 0x7f745c100000 aborting with error : HSA_STATUS_ERROR_EXCEPTION: An HSAIL operation resulted in a hardware exception. code: 0x1016");
            output::abort()
        }
        "fatal_api" => {
            // The API-error Fatal line of reference §2e, in its example's
            // shape: the first copy (else the last event) returns invalid
            // argument. Not an allocation: out of memory is a different
            // finding (replay OOM, §2i).
            let target = steps
                .iter()
                .position(|s| s.api.starts_with("hipMemcpy"))
                .or_else(|| steps.len().checked_sub(1))
                .unwrap_or_else(|| unsupported(scenario, archive));
            let code = "1 (invalid argument)";
            replay.through(&steps[..target]);
            let s = &steps[target];
            replay.begin(s);
            err(&format!(
                "[HRR] Fatal: T{} Event {} ({}) returned {code} — aborting replay",
                s.thread, s.index, s.api
            ));
            err("[HRR] Replay aborted due to fatal HIP error — exiting");
            finish(out, 1)
        }
        "hang" => {
            replay.up_to_last_launch();
            hang(opts.max_wall_s)
        }
        "segv" => {
            replay.up_to_last_launch();
            crash()
        }
        "watchdog" => {
            let ms = if opts.watchdog_ms > 0 {
                opts.watchdog_ms
            } else {
                60000
            };
            let at = match replay.last_launch().filter(|_| opts.sync_launch) {
                Some(_) => {
                    let k = replay.up_to_last_launch().expect("a launch");
                    // every earlier launch completed; this one is the next
                    let ordinal = replay.launched + 1;
                    let seq = steps[archive.last_launch().expect("a launch")].seq;
                    format!(
                        "kernel #{ordinal} \"{}\" (seq={seq}, grid={} block={})",
                        k.name,
                        dims_text(k.grid),
                        dims_text(k.block)
                    )
                }
                None => {
                    replay.through(steps);
                    "end-of-pass device synchronize".to_string()
                }
            };
            out.flush();
            err("");
            err(&format!(
                "[HRR][WATCHDOG] GPU sync did not complete within {ms} ms at: {at}"
            ));
            err("[HRR][WATCHDOG] Treating this as a hung/deadlocked kernel (e.g. a StreamK");
            err("[HRR][WATCHDOG] producer/consumer flag spin-wait). Re-run with --trace-kernels");
            err("[HRR][WATCHDOG] to see the last launch, or attach rocgdb to inspect wavefronts.");
            std::process::exit(124)
        }
        "hang_grandchild" => {
            replay.through(steps);
            escape_with_the_streams();
            replay.summary(out)
        }
        "flood_hang" => {
            flood();
            replay.up_to_last_launch();
            hang(opts.max_wall_s)
        }
        "flood" => {
            flood();
            replay.through(steps);
            replay.summary(out)
        }
        other => {
            err(&format!(
                "hrr-test-player: unknown HRR_TEST_SCENARIO '{other}'"
            ));
            output::exit(out, 99)
        }
    }
}

/// A GPU memory fault at the last launch, which the runtime reports by
/// name (the recorded name's bytes) and ends with `abort()` (§2d).
fn fault_abort(replay: &mut Replay<'_>) -> ! {
    if let Some(k) = replay.up_to_last_launch() {
        let mut line = b":0:rocdevice.cpp            :3678: 3194366185 us:  Memory Fault Error [host: node01, GPU index: 0, faulting addr: 0x7f3a2c600000, kernel: ".to_vec();
        line.extend_from_slice(&k.raw_name);
        line.extend_from_slice(b"]\n");
        output::err_bytes(&line);
    }
    err("Memory access fault by GPU node-2 (Agent handle: 0x55d5c2a1e6b0) on address 0x7f3a2c600000. Reason: Page not present or supervisor privilege.");
    output::abort()
}

/// Bytes of the one line [`long_line`] prints.
const LONG_LINE: usize = 5 << 20;

/// One 5 MiB stdout line, flushed: a runaway debug print, which a runner
/// must take in bounded memory without losing the lines after it.
fn long_line(out: &mut CStdout) {
    let mut line = String::with_capacity(LONG_LINE);
    line.push_str("[HRR] debug: ");
    while line.len() < LONG_LINE {
        line.push_str("0123456789abcdef");
    }
    line.truncate(LONG_LINE);
    out.line(&line);
    out.flush();
}

/// A GPU fault the runtime returns as a HIP error (reference §2j item 6):
/// caught after the last launch under a sync flag, else by the end-of-pass
/// synchronize.
fn fault_error(replay: &mut Replay<'_>, opts: &Options) {
    let synced = opts.sync_event || opts.sync_launch;
    let at = replay.last_launch().filter(|_| synced);
    let Some(at) = at else {
        replay.through(&replay.archive.steps);
        err(&format!(
            "[HRR] Fatal: hipDeviceSynchronize after pass failed: {ILLEGAL}"
        ));
        return;
    };
    let s = &replay.archive.steps[at];
    let k = replay.up_to_last_launch().expect("a launch");
    if opts.sync_event {
        err(&format!(
            "[HRR] Fatal: GPU error after T{} Event {} ({}): {ILLEGAL} — aborting",
            s.thread, s.index, s.api
        ));
    } else {
        err(&format!(
            "[HRR] GPU error after '{}': {ILLEGAL} last={ILLEGAL}",
            k.name
        ));
        err(&format!(
            "[HRR] Fatal: T{} Event {} ({}) returned {ILLEGAL} — aborting replay",
            s.thread, s.index, s.api
        ));
    }
}

/// Index of the last D2H check of the archive.
fn last_d2h(archive: &Archive) -> Option<usize> {
    archive
        .steps
        .iter()
        .rposition(|s| matches!(s.action, Action::D2hCheck { .. }))
}

/// The archive has nothing the scenario could happen at: a test setup
/// error, reported like an unknown scenario.
fn unsupported(scenario: &str, archive: &Archive) -> ! {
    let needs = match scenario {
        "fatal_api" => "an event",
        _ => "a D2H copy with an expected-output blob",
    };
    err(&format!(
        "hrr-test-player: scenario '{scenario}' needs {needs}, and {} has none",
        archive.path.display()
    ));
    output::exit(&mut CStdout::new(), 99)
}

/// Running D2H counters (reference §2c, §2g).
#[derive(Default)]
struct D2h {
    pass: u64,
    fail: u64,
}

/// Replay state: the start lines are printed, launches and D2H checks are
/// counted.
struct Replay<'a> {
    opts: &'a Options,
    archive: &'a Archive,
    started: Instant,
    last_progress: Option<Instant>,
    launched: usize,
    d2h: D2h,
}

impl<'a> Replay<'a> {
    /// Reader diagnostics (stderr), then the start lines of §2b (stdout).
    fn start(opts: &'a Options, a: &'a Archive, out: &mut CStdout) -> Replay<'a> {
        for line in a.reader_diagnostics() {
            err(&line);
        }
        out.line(&format!(
            "[HRR] Archive : {} events, {} kernels, {} blobs, {} code objects",
            a.events,
            a.counted_launches().count(),
            a.blobs,
            a.code_objects
        ));
        out.line(&format!("[HRR] Threads : {} captured", a.threads));
        out.line("[HRR] Device  : AMD Instinct MI300X (gfx942:sramecc+:xnack-)");
        out.line("[HRR] Runtime : /opt/rocm-7.0.0/lib/libamd_comgr.so.3.0.70000");
        out.line("[HRR]         : /opt/rocm-7.0.0/lib/libamdhip64.so.7.0.70000");
        out.line("[HRR]         : /opt/rocm-7.0.0/lib/libhsa-runtime64.so.1.16.70000");
        out.line("[HRR] Mode    : single-threaded");
        out.line("[HRR] [replay] Device memory: 196284 MB free / 196592 MB total");
        out.line("[HRR] [replay] Device state OK — beginning replay");
        out.line(&format!(
            "[HRR] Pre-loading {} code objects...",
            a.code_objects
        ));
        out.line("[HRR] All code objects pre-loaded OK.");
        Replay {
            opts,
            archive: a,
            started: Instant::now(),
            last_progress: None,
            launched: 0,
            d2h: D2h::default(),
        }
    }

    /// Index in the archive's steps of its last launch.
    fn last_launch(&self) -> Option<usize> {
        self.archive.last_launch()
    }

    /// What is printed before event `s` is handled: `Event N:` under
    /// `--verbose`, and for a launch the `[HRR launch]` line under
    /// `--trace-kernels` with the ordinal it will get.
    fn begin(&self, s: &Step) {
        if self.opts.verbose {
            err(&format!("[HRR] Event {}: {}", s.index, s.api));
        }
        if let (Some(k), true) = (s.launch(), self.opts.trace_kernels) {
            let mut line = format!(
                "[HRR launch] seq={} kernel={} launch={} grid={} block={} shared={} args={} snapshots={} name=\"",
                s.seq,
                self.launched + 1,
                if k.ext { "EXT" } else { "MOD" },
                dims_text(k.grid),
                dims_text(k.block),
                k.shared,
                k.args,
                k.snapshots,
            )
            .into_bytes();
            line.extend_from_slice(&k.raw_name);
            line.extend_from_slice(b"\"\n");
            output::err_bytes(&line);
        }
    }

    /// Event `s` is replayed and completes; a D2H check fails when `fail`.
    fn step(&mut self, s: &Step, fail: bool) {
        self.begin(s);
        match &s.action {
            Action::Launch(k) => self.completed(s.seq, k),
            Action::D2hCheck { tag, size } if fail => {
                self.d2h.fail += 1;
                let (bytes, elems) = (*size, size / 4);
                err(&format!("[HRR] {tag} D2H FAIL seq={}: {bytes} bytes, {}/{bytes} bytes differ (50.00%), first@2 (got 0x00 exp 0x80); best fit f32: {elems}/{elems} elems exceed tol (atol=0.001 rtol=0.001), max|d|=1 maxrel=1", s.seq, bytes / 2));
            }
            Action::D2hCheck { .. } => self.d2h.pass += 1,
            Action::Other => {}
        }
    }

    /// Replays `steps`, every D2H check passing.
    fn through(&mut self, steps: &[Step]) {
        for s in steps {
            self.step(s, false);
        }
    }

    /// Replays every event before the last launch and begins that launch,
    /// which never completes; returns it. Without a launch, replays every
    /// event and returns `None`.
    fn up_to_last_launch(&mut self) -> Option<&'a Launch> {
        let steps = &self.archive.steps;
        let Some(at) = self.last_launch() else {
            self.through(steps);
            return None;
        };
        self.through(&steps[..at]);
        self.begin(&steps[at]);
        steps[at].launch()
    }

    /// Launch `k` completed: the `Kernel … OK` line under `--verbose
    /// --sync-after-launch`, and a progress line when one is due (§2c).
    fn completed(&mut self, seq: u64, k: &Launch) {
        self.launched += 1;
        if self.opts.verbose && self.opts.sync_launch {
            err(&format!("[HRR] Kernel '{}' OK", k.name));
        }
        if self.opts.progress_seconds <= 0.0 {
            return;
        }
        let due = self
            .last_progress
            .is_none_or(|t| t.elapsed().as_secs_f64() >= self.opts.progress_seconds);
        if due {
            let first = *self.last_progress.get_or_insert(Instant::now());
            self.last_progress = Some(Instant::now());
            let d = &self.d2h;
            err(&format!("[HRR progress] elapsed_s={:.1} seq={seq} kernels={} d2h_pass={} d2h_fail={} d2h_attempted={} last=\"{}\"", first.elapsed().as_secs_f64(), self.launched, d.pass, d.fail, d.pass + d.fail, progress_name(&k.name)));
        }
    }

    /// The end-of-run summary block (§2g), the verdict, and exit 0 (PASS)
    /// or 1 (FAIL).
    fn summary(&self, out: &mut CStdout) -> ! {
        let d = &self.d2h;
        out.line("");
        out.line("[HRR] -- Replay summary ------------------------------");
        out.line(&format!(
            "[HRR]   Wall time      : {:.1} ms",
            self.started.elapsed().as_secs_f64() * 1000.0
        ));
        out.line("[HRR]   Threads used   : 1");
        out.line(&format!("[HRR]   Kernels launched: {}", self.launched));
        out.line("[HRR]   Graphs launched : 0");
        out.line(&format!(
            "[HRR]   D2H checks     : {} pass ({} exact, 0 within tol), {} fail, 0 skipped",
            d.pass, d.pass, d.fail
        ));
        if d.pass + d.fail == 0 {
            out.line("[HRR]   (no D2H validation blobs in archive -- re-capture to enable)");
        }
        let failed = d.fail > 0;
        out.line(if failed { "[HRR] FAIL" } else { "[HRR] PASS" });
        finish(out, i32::from(failed))
    }
}

/// The `last="…"` name of a progress line: longer than 120 characters →
/// first 96, `...`, last 21 (§2c).
fn progress_name(name: &str) -> String {
    let chars: Vec<char> = name.chars().collect();
    if chars.len() <= 120 {
        return name.to_string();
    }
    let head: String = chars[..96].iter().collect();
    let tail: String = chars[chars.len() - 21..].iter().collect();
    format!("{head}...{tail}")
}

/// Normal end: C `exit()` flushes stdout.
fn finish(out: &mut CStdout, code: i32) -> ! {
    output::exit(out, code)
}

/// No progress: SIGTERM ignored (inherited by the child; Unix), one child
/// process whose pid goes to `HRR_TEST_CHILD_PID_FILE` (on Windows another
/// copy of this player, sleeping). After `max_wall_s` seconds (`0`: never)
/// the player's wall-clock limit ends it with its line and exit 124
/// (reference playback-output.md §10.1).
fn hang(max_wall_s: u64) -> ! {
    #[cfg(unix)]
    {
        use nix::sys::signal::{signal, SigHandler, Signal};
        // SAFETY: SIG_IGN installs no handler code; nothing else touches SIGTERM.
        unsafe { signal(Signal::SIGTERM, SigHandler::SigIgn) }.expect("ignore SIGTERM");
    }
    let child = sleeper().stdin(std::process::Stdio::null()).spawn();
    match (child, std::env::var("HRR_TEST_CHILD_PID_FILE")) {
        (Ok(c), Ok(path)) => {
            super::write_atomically(std::path::Path::new(&path), &c.id().to_string())
        }
        (Err(e), _) => err(&format!(
            "hrr-test-player: cannot start the hang child: {e}"
        )),
        _ => {}
    }
    if max_wall_s == 0 {
        loop {
            std::thread::sleep(std::time::Duration::from_secs(3600));
        }
    }
    std::thread::sleep(std::time::Duration::from_secs(max_wall_s));
    err(&format!(
        "[HRR] Fatal: replay still running after {max_wall_s} s (--max-wall-seconds); ending it"
    ));
    std::process::exit(124)
}

/// A child that sleeps 1000 s: `sleep` on Unix, this player on Windows.
fn sleeper() -> std::process::Command {
    if cfg!(windows) {
        let me = std::env::current_exe().unwrap_or_else(|_| "hrr-test-player.exe".into());
        let mut cmd = std::process::Command::new(me);
        cmd.env("HRR_TEST_SLEEP", "1000");
        cmd
    } else {
        let mut cmd = std::process::Command::new("sleep");
        cmd.arg("1000");
        cmd
    }
}

/// Starts a daemon that leaves the player's process group and session
/// (`setsid`), ignores SIGTERM and keeps the player's stdout (the pty) and
/// stderr open; its pid goes to `HRR_TEST_CHILD_PID_FILE`. On Windows, a
/// child sharing the player's console.
fn escape_with_the_streams() {
    let mut cmd = sleeper();
    cmd.stdin(std::process::Stdio::null());
    #[cfg(unix)]
    // SAFETY: setsid and signal are async-signal-safe; nothing else runs
    // between fork and exec.
    unsafe {
        use std::os::unix::process::CommandExt;
        cmd.pre_exec(|| {
            use nix::sys::signal::{signal, SigHandler, Signal};
            nix::unistd::setsid()?;
            signal(Signal::SIGTERM, SigHandler::SigIgn)?;
            Ok(())
        });
    }
    match (cmd.spawn(), std::env::var("HRR_TEST_CHILD_PID_FILE")) {
        (Ok(c), Ok(path)) => {
            super::write_atomically(std::path::Path::new(&path), &c.id().to_string())
        }
        (Err(e), _) => err(&format!("hrr-test-player: cannot start the daemon: {e}")),
        _ => {}
    }
}

/// Dies the way a segmentation fault kills the player: SIGSEGV with the
/// default action (Rust's own handler removed first) on Unix, an
/// unhandled access violation (`0xC0000005`) on Windows.
fn crash() -> ! {
    #[cfg(unix)]
    {
        use nix::sys::signal::{raise, signal, SigHandler, Signal};
        // SAFETY: restoring the default disposition runs no handler code.
        let _ = unsafe { signal(Signal::SIGSEGV, SigHandler::SigDfl) };
        let _ = raise(Signal::SIGSEGV);
    }
    #[cfg(windows)]
    // SAFETY: none: this write faults on purpose, which is the scenario.
    unsafe {
        std::ptr::null_mut::<u8>().write_volatile(1);
    }
    std::process::abort()
}

/// `HRR_TEST_FLOOD_MB` megabytes of `--verbose` per-event lines on stderr,
/// written as fast as the reader takes them (1 MiB writes; the event number
/// is counted in ASCII so even a debug build outruns the runner).
fn flood() {
    let mb: u64 = std::env::var("HRR_TEST_FLOOD_MB")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1);
    let total = (mb << 20) as usize;
    let apis: [&[u8]; 4] = [
        b": hipMemcpyAsync\n",
        b": hipModuleLaunchKernel\n",
        b": hipStreamSynchronize\n",
        b": hipMalloc\n",
    ];
    let mut digits = vec![b'0'];
    let mut event = 0usize;
    let mut written = 0usize;
    let mut chunk = Vec::with_capacity(1 << 20);
    let mut stderr = std::io::stderr().lock();
    while written < total {
        chunk.clear();
        while chunk.len() < (1 << 20) - 64 && written + chunk.len() < total {
            chunk.extend_from_slice(b"[HRR] Event ");
            chunk.extend_from_slice(&digits);
            chunk.extend_from_slice(apis[event % 4]);
            event += 1;
            increment(&mut digits);
        }
        if stderr.write_all(&chunk).is_err() {
            break;
        }
        written += chunk.len();
    }
}

/// Adds one to a decimal number held as ASCII digits.
fn increment(digits: &mut Vec<u8>) {
    for d in digits.iter_mut().rev() {
        if *d == b'9' {
            *d = b'0';
        } else {
            *d += 1;
            return;
        }
    }
    digits.insert(0, b'1');
}
