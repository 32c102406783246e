//! The replay scenarios: what the real `hrr-playback` prints, on which
//! stream, and how it ends, for each way a replay can go (reference
//! playback-output.md §2b–§2j, §3).

use std::io::Write;
use std::time::Instant;

use super::model::{Archive, Launch, CLEAN, CRASH, THREAD};
use super::output::{err, CStdout};
use super::Options;

/// The archive a scenario replays: the crash capture for the GPU-fault
/// scenarios, the clean one otherwise.
pub fn model(scenario: &str) -> &'static Archive {
    match scenario {
        "fault_abort" | "fault_error" => &CRASH,
        _ => &CLEAN,
    }
}

const ILLEGAL: &str = "700 (an illegal memory access was encountered)";

/// Runs `scenario` and ends the process the way the real player would.
pub fn run(scenario: &str, opts: &Options, archive: &'static Archive, out: &mut CStdout) -> ! {
    let mut replay = Replay::start(opts, archive, out);
    match scenario {
        "pass" => {
            replay.launch_all();
            replay.summary(out, 3, 0, "PASS");
            finish(out, 0)
        }
        "d2h_fail" => {
            replay.launch_all();
            err("[HRR] kernarg D2H FAIL seq=21: 4096 bytes, 2048/4096 bytes differ (50.00%), first@2 (got 0x00 exp 0x80); best fit f32: 1024/1024 elems exceed tol (atol=0.001 rtol=0.001), max|d|=1 maxrel=1");
            replay.summary(out, 2, 1, "FAIL");
            finish(out, 1)
        }
        "fault_abort" => {
            replay.begin(&archive.kernels[0]);
            err(&format!(":0:rocdevice.cpp            :3678: 3194366185 us:  Memory Fault Error [host: node01, GPU index: 0, faulting addr: 0x7f3a2c600000, kernel: {}]", archive.kernels[0].name));
            err("Memory access fault by GPU node-2 (Agent handle: 0x55d5c2a1e6b0) on address 0x7f3a2c600000. Reason: Page not present or supervisor privilege.");
            std::process::abort()
        }
        "fault_error" => {
            let k = &archive.kernels[0];
            replay.begin(k);
            if opts.sync_event {
                err(&format!(
                    "[HRR] Fatal: GPU error after T{THREAD} Event {} ({}): {ILLEGAL} — aborting",
                    k.event, archive.launch_api
                ));
            } else if opts.sync_launch {
                err(&format!(
                    "[HRR] GPU error after '{}': {ILLEGAL} last={ILLEGAL}",
                    k.name
                ));
                err(&format!(
                    "[HRR] Fatal: T{THREAD} Event {} ({}) returned {ILLEGAL} — aborting replay",
                    k.event, archive.launch_api
                ));
            } else {
                err(&format!(
                    "[HRR] Fatal: hipDeviceSynchronize after pass failed: {ILLEGAL}"
                ));
            }
            err("[HRR] Replay aborted due to fatal HIP error — exiting");
            finish(out, 1)
        }
        "queue_abort" => {
            replay.complete(&archive.kernels[0]);
            replay.begin(&archive.kernels[1]);
            err(":0:rocdevice.cpp            :3594: 34648731232 us:  Callback: Queue 0x7f745c100000 aborting with error : HSA_STATUS_ERROR_EXCEPTION: An HSAIL operation resulted in a hardware exception. code: 0x1016");
            std::process::abort()
        }
        "fatal_api" => {
            replay.complete(&archive.kernels[0]);
            err(&format!("[HRR] Fatal: T{THREAD} Event 12 (hipMalloc) returned 2 (out of memory) — aborting replay"));
            err("[HRR] Replay aborted due to fatal HIP error — exiting");
            finish(out, 1)
        }
        "hang" => {
            replay.complete(&archive.kernels[0]);
            replay.begin(&archive.kernels[1]);
            hang()
        }
        "segv" => {
            replay.complete(&archive.kernels[0]);
            replay.begin(&archive.kernels[1]);
            die_by(nix::sys::signal::Signal::SIGSEGV)
        }
        "watchdog" => {
            replay.complete(&archive.kernels[0]);
            let k = &archive.kernels[1];
            replay.begin(k);
            out.flush();
            let ms = if opts.watchdog_ms > 0 {
                opts.watchdog_ms
            } else {
                60000
            };
            err("");
            err(&format!("[HRR][WATCHDOG] GPU sync did not complete within {ms} ms at: kernel #2 \"{}\" (seq={}, grid=[{},1,1] block=[{},1,1])", k.name, k.seq, k.grid, k.block));
            err("[HRR][WATCHDOG] Treating this as a hung/deadlocked kernel (e.g. a StreamK");
            err("[HRR][WATCHDOG] producer/consumer flag spin-wait). Re-run with --trace-kernels");
            err("[HRR][WATCHDOG] to see the last launch, or attach rocgdb to inspect wavefronts.");
            std::process::exit(124)
        }
        "divergence" => {
            replay.launch_all();
            err("[HRR] replay DIVERGED at recorded event seq 21: 20/64 D2H validations failed (31.2% >= 25.0% threshold). Aborting cleanly before a downstream GPU fault. This is a replay-fidelity divergence (e.g. nondeterministic GPU reductions in an unstable model state), not an HRR translation/memory bug. Set HIP_HRR_REPLAY_DIVERGENCE_ABORT=0 to disable this guard.");
            err("[HRR] Replay stopped: data divergence exceeded threshold (20/64 D2H validations failed). This is a replay-fidelity limit (nondeterministic GPU reductions in an unstable workload), not an HRR bug — see the [HRR] replay DIVERGED message above.");
            finish(out, 2)
        }
        "flood" => {
            flood();
            replay.launch_all();
            replay.summary(out, 3, 0, "PASS");
            finish(out, 0)
        }
        other => {
            err(&format!(
                "hrr-test-player: unknown HRR_TEST_SCENARIO '{other}'"
            ));
            std::process::exit(99)
        }
    }
}

/// Replay state: the start lines are printed, launches are counted.
struct Replay<'a> {
    opts: &'a Options,
    archive: &'static Archive,
    started: Instant,
    last_progress: Option<Instant>,
    launched: usize,
}

impl<'a> Replay<'a> {
    /// Reader diagnostics for a crashed archive (stderr), then the start
    /// lines of §2b (stdout).
    fn start(opts: &'a Options, a: &'static Archive, out: &mut CStdout) -> Replay<'a> {
        if a.crashed {
            err(&format!("[HRR] Archive has no clean-shutdown trailer (capture likely crashed); recovered {} events", a.events));
        }
        let kernels = a.kernels.len();
        out.line(&format!(
            "[HRR] Archive : {} events, {kernels} kernels, {} blobs, {} code objects",
            a.events, a.blobs, a.code_objects
        ));
        out.line("[HRR] Threads : 1 captured");
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
        }
    }

    /// What is printed before launch `k` runs (`--verbose`, `--trace-kernels`).
    fn begin(&mut self, k: &Launch) {
        if self.opts.verbose {
            err(&format!(
                "[HRR] Event {}: {}",
                k.event, self.archive.launch_api
            ));
        }
        if self.opts.trace_kernels {
            err(&format!("[HRR launch] seq={} kernel={} launch=MOD grid=[{},1,1] block=[{},1,1] shared=0 args=3 snapshots=0 name=\"{}\"", k.seq, self.launched + 1, k.grid, k.block, k.name));
        }
    }

    /// Launch `k` runs and completes: the `Kernel … OK` line under
    /// `--verbose --sync-after-launch`, and a progress line when one is due.
    fn complete(&mut self, k: &Launch) {
        self.begin(k);
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
            err(&format!("[HRR progress] elapsed_s={:.1} seq={} kernels={} d2h_pass=0 d2h_fail=0 d2h_attempted=0 last=\"{}\"", first.elapsed().as_secs_f64(), k.seq, self.launched, k.name));
        }
    }

    fn launch_all(&mut self) {
        for k in self.archive.kernels {
            self.complete(k);
        }
    }

    /// The end-of-run summary block (§2g) and the verdict.
    fn summary(&self, out: &mut CStdout, pass: u64, fail: u64, verdict: &str) {
        out.line("");
        out.line("[HRR] -- Replay summary ------------------------------");
        out.line(&format!(
            "[HRR]   Wall time      : {:.1} ms",
            self.started.elapsed().as_secs_f64() * 1000.0
        ));
        out.line("[HRR]   Threads used   : 1");
        out.line(&format!("[HRR]   Kernels launched: {}", self.launched));
        out.line("[HRR]   Graphs launched : 0");
        out.line(&format!("[HRR]   D2H checks     : {pass} pass ({pass} exact, 0 within tol), {fail} fail, 0 skipped"));
        out.line(&format!("[HRR] {verdict}"));
    }
}

/// Normal end: C `exit()` flushes stdout.
fn finish(out: &mut CStdout, code: i32) -> ! {
    out.flush();
    std::process::exit(code)
}

/// No progress, ever: SIGTERM ignored (inherited by the child), one child
/// process whose pid goes to `HRR_TEST_CHILD_PID_FILE`.
fn hang() -> ! {
    use nix::sys::signal::{signal, SigHandler, Signal};
    // SAFETY: SIG_IGN installs no handler code; nothing else touches SIGTERM.
    unsafe { signal(Signal::SIGTERM, SigHandler::SigIgn) }.expect("ignore SIGTERM");
    let child = std::process::Command::new("sleep")
        .arg("1000")
        .stdin(std::process::Stdio::null())
        .spawn();
    match (child, std::env::var("HRR_TEST_CHILD_PID_FILE")) {
        (Ok(c), Ok(path)) => {
            super::write_atomically(std::path::Path::new(&path), &c.id().to_string())
        }
        (Err(e), _) => err(&format!(
            "hrr-test-player: cannot start the hang child: {e}"
        )),
        _ => {}
    }
    loop {
        std::thread::sleep(std::time::Duration::from_secs(3600));
    }
}

/// Dies by `sig` with the default action (Rust's own SIGSEGV handler is
/// removed first).
fn die_by(sig: nix::sys::signal::Signal) -> ! {
    use nix::sys::signal::{raise, signal, SigHandler};
    // SAFETY: restoring the default disposition runs no handler code.
    let _ = unsafe { signal(sig, SigHandler::SigDfl) };
    let _ = raise(sig);
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
