//! Benchmark of `hrr classify` (DESIGN §11): generate a verbose replay log of
//! about 1 GB (millions of `[HRR] Event N:` lines with the argument, launch,
//! kernel-OK, D2H and progress lines of reference/playback-output.md §2c–§2d,
//! a GPU fault at the end), run `target/release/hrr classify --log F --format
//! json` on it and report MB/s and the child's peak RSS; then time the
//! upstream analyzer's reading strategy (tests/support/bench/upstream_analyzer.py:
//! whole file in memory, ~30 regex passes) on a prefix of the same log and
//! report the speed-up.
//!
//! Usage: cargo run --release -p hrr-testkit --bin hrr-bench-classify --
//!        [--size-mb N] [--python-mb N] [--no-build] [--keep]

#[cfg(unix)]
fn main() {
    if let Err(e) = bench::run() {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}

#[cfg(not(unix))]
fn main() {
    eprintln!("error: hrr-bench-classify measures with wait4 and needs a Unix host");
    std::process::exit(1);
}

/// The benchmark itself (Unix: the child's CPU time and peak RSS come from
/// `wait4`).
#[cfg(unix)]
mod bench {
    use std::fs::File;
    use std::io::{BufWriter, Read, Write};
    use std::path::{Path, PathBuf};
    use std::process::{Command, Stdio};
    use std::time::Instant;

    const MIB: u64 = 1 << 20;

    /// Kernel names in the shapes of real logs (hipBLASLt GEMM, ATen, custom).
    const KERNELS: [&str; 4] = [
        "Cijk_Ailk_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT128x128x64_MI16x16x1_SN_LDSB1_AFC1_AFEM1_AFEM1_ASEM1_CLR1_CADS0_DTVA0_DTVB0_EPS0_FDSI0_GRPM1_GRVWA8_GRVWB8_GSUAMB_GLS0_ISA942_IU1_K1_LBSPPA128_LBSPPB128_LBSPPM0_LPA16_LPB16_LPM0_LRVW8_LWPMn1_MIAV0_MIWT4_4_MO40_NTn1_NTA0_NTB0_NTC0_NTD0_NEPBS16_NLCA1_NLCB1_ONLL1_PGR2_PLR1_PKA1_SIA3_SS1_SPO0_SRVW0_SSO0_SVW1_SK3_TLDS1_ULSGRO0_USL1_UIOFGRO0_USFGROn1_VSn1_VWA1_VWB1_WSGRA0_WSGRB0_WS64_WG32_8_1",
        "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_11FillFunctorIfEESt5arrayIPcLm1EEEEviT0_T1_",
        "_ZN2at6native18elementwise_kernelILi128ELi4EZNS0_22gpu_kernel_impl_nocastINS0_13BinaryFunctorIfffNS0_15binary_internal10MulFunctorIfEEEEEEvRNS_18TensorIteratorBaseERKT_EUliE_EEviT1_",
        "fill_ones",
    ];

    struct Options {
        size_mb: u64,
        python_mb: u64,
        build: bool,
        keep: bool,
    }

    fn parse_args() -> Result<Options, String> {
        let mut o = Options {
            size_mb: 1024,
            python_mb: 100,
            build: true,
            keep: false,
        };
        let mut args = std::env::args().skip(1);
        while let Some(a) = args.next() {
            let mut num = |name: &str| -> Result<u64, String> {
                args.next()
                    .and_then(|v| v.parse().ok())
                    .ok_or_else(|| format!("{name} needs a number of MiB"))
            };
            match a.as_str() {
                "--size-mb" => o.size_mb = num("--size-mb")?,
                "--python-mb" => o.python_mb = num("--python-mb")?,
                "--no-build" => o.build = false,
                "--keep" => o.keep = true,
                "-h" | "--help" => {
                    println!(
                        "hrr-bench-classify [--size-mb N] [--python-mb N] [--no-build] [--keep]"
                    );
                    std::process::exit(0);
                }
                other => return Err(format!("unknown argument {other}")),
            }
        }
        Ok(o)
    }

    /// One launch's worth of verbose lines, as `hrr-playback --verbose
    /// --sync-after-launch --trace-kernels` prints them.
    fn launch_block(
        w: &mut impl Write,
        event: &mut u64,
        launch: u64,
        seq: &mut u64,
    ) -> std::io::Result<()> {
        let name = KERNELS[(launch % KERNELS.len() as u64) as usize];
        let base = 0x7f3a_2c20_0000u64 + (launch % 64) * 0x20_0000;
        writeln!(w, "[HRR] Event {}: hipMemcpyHtoDAsync", *event)?;
        writeln!(w, "[HRR] Event {}: hipModuleLaunchKernel", *event + 1)?;
        writeln!(
            w,
            "[HRR launch] seq={} kernel={launch} launch=MOD grid=[304,1,1] block=[256,1,1] shared=0 args=4 snapshots=0 name=\"{name}\"",
            *seq + 1
        )?;
        writeln!(w, "[HRR]   arg[0]: ptr 0x{base:x} -> 0x{base:x}")?;
        writeln!(
            w,
            "[HRR]   arg[1]: ptr 0x{:x} -> 0x{:x}",
            base + 0x1000,
            base + 0x1000
        )?;
        writeln!(w, "[HRR]   arg[2]: scalar 4 bytes = 00000100 (u32=65536)")?;
        writeln!(
            w,
            "[HRR]   arg[3]: embedded ptr @+8 0x{:x} -> 0x{:x} [captured]",
            base + 0x2000,
            base + 0x2000
        )?;
        writeln!(w, "[HRR] Kernel '{name}' OK")?;
        writeln!(w, "[HRR] Event {}: hipMemcpyDtoHAsync", *event + 2)?;
        writeln!(w, "[HRR] DtoHAsync D2H validate: 4096 bytes OK (exact)")?;
        writeln!(w, "[HRR] Event {}: hipStreamSynchronize", *event + 3)?;
        *event += 4;
        *seq += 4;
        Ok(())
    }

    /// Writes the log; returns its size and the number of launches.
    fn generate(path: &Path, size: u64) -> std::io::Result<(u64, u64)> {
        let file = File::create(path)?;
        let mut w = CountingWriter {
            inner: BufWriter::with_capacity(1 << 20, file),
            written: 0,
        };
        for line in [
            "[HRR] Archive : 9000000 events, 2000000 kernels, 4458 blobs, 33 code objects",
            "[HRR] Threads : 1 captured",
            "[HRR] Device  : AMD Instinct MI300X (gfx942:sramecc+:xnack-)",
            "[HRR] Runtime : /opt/rocm-7.0.0/lib/libamd_comgr.so.3.0.70000",
            "[HRR] Mode    : single-threaded",
            "[HRR] [replay] Device memory: 196284 MB free / 196592 MB total",
            "[HRR] [replay] Device state OK — beginning replay",
            "[HRR] Pre-loading 33 code objects...",
            "[HRR] All code objects pre-loaded OK.",
        ] {
            writeln!(w, "{line}")?;
        }
        let (mut event, mut seq, mut launch, mut next_progress) = (0u64, 0u64, 0u64, 2000u64);
        let started = Instant::now();
        while w.written < size {
            launch += 1;
            launch_block(&mut w, &mut event, launch, &mut seq)?;
            if launch == 1 || launch == next_progress {
                next_progress += 2000;
                let last = KERNELS[(launch % KERNELS.len() as u64) as usize];
                writeln!(
                    w,
                    "[HRR progress] elapsed_s={:.1} seq={seq} kernels={launch} d2h_pass={launch} d2h_fail=0 d2h_attempted={launch} last=\"{last}\"",
                    started.elapsed().as_secs_f64()
                )?;
            }
        }
        // the faulting launch: announced, never completed, then the runtime's report
        writeln!(w, "[HRR] Event {event}: hipModuleLaunchKernel")?;
        writeln!(w, "[HRR launch] seq={} kernel={} launch=MOD grid=[1024,1,1] block=[256,1,1] shared=0 args=3 snapshots=0 name=\"_Z9crash_oobPKiPii\"", seq + 1, launch + 1)?;
        writeln!(w, ":0:rocdevice.cpp            :3678: 3194366185 us:  Memory Fault Error [host: node01, GPU index: 0, faulting addr: 0x7f3a2c600000, kernel: _Z9crash_oobPKiPii]")?;
        writeln!(w, "Memory access fault by GPU node-2 (Agent handle: 0x55d5c2a1e6b0) on address 0x7f3a2c600000. Reason: Page not present or supervisor privilege.")?;
        writeln!(w, "[hrr] replay killed by signal 6")?;
        w.inner.flush()?;
        Ok((w.written, launch))
    }

    struct CountingWriter<W: Write> {
        inner: W,
        written: u64,
    }

    impl<W: Write> Write for CountingWriter<W> {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            let n = self.inner.write(buf)?;
            self.written += n as u64;
            Ok(n)
        }
        fn flush(&mut self) -> std::io::Result<()> {
            self.inner.flush()
        }
    }

    /// A measured child run.
    struct Run {
        /// Wall-clock seconds.
        wall: f64,
        /// User + system CPU seconds of the child.
        cpu: f64,
        /// Peak RSS in KiB.
        rss_kib: u64,
        /// What it printed.
        stdout: Vec<u8>,
    }

    /// Runs `cmd` to completion and measures it.
    /// The child's own rusage comes from wait4, so earlier children (the cargo
    /// build) do not count.
    fn measure(cmd: &mut Command) -> Result<Run, String> {
        let out = tempfile_path("out");
        let stdout = File::create(&out).map_err(|e| e.to_string())?;
        let started = Instant::now();
        let child = cmd
            .stdout(Stdio::from(stdout))
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| format!("cannot run {cmd:?}: {e}"))?;
        let pid = child.id() as libc::pid_t;
        let mut status = 0;
        // SAFETY: rusage is plain data, wait4 fills it for the child we spawned.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        let rc = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
        let secs = started.elapsed().as_secs_f64();
        if rc != pid || !libc::WIFEXITED(status) || libc::WEXITSTATUS(status) != 0 {
            return Err(format!("{cmd:?} failed (wait status {status})"));
        }
        let text = std::fs::read(&out).map_err(|e| e.to_string())?;
        let _ = std::fs::remove_file(&out);
        let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
        Ok(Run {
            wall: secs,
            cpu: tv(usage.ru_utime) + tv(usage.ru_stime),
            rss_kib: usage.ru_maxrss as u64,
            stdout: text,
        })
    }

    fn tempfile_path(what: &str) -> PathBuf {
        std::env::temp_dir().join(format!("hrr-bench-classify-{}-{what}", std::process::id()))
    }

    /// The first `bytes` of the log (whole lines) plus its five-line fault
    /// tail, streamed so this process stays small (a child's peak RSS as
    /// reported by wait4 starts from its parent's).
    fn prefix(src: &Path, dst: &Path, bytes: u64) -> std::io::Result<u64> {
        use std::io::{BufRead, BufReader, Seek, SeekFrom};
        let mut input = BufReader::with_capacity(1 << 20, File::open(src)?);
        let mut out = BufWriter::new(File::create(dst)?);
        let mut written = 0u64;
        let mut line = Vec::new();
        while written < bytes {
            line.clear();
            if input.read_until(b'\n', &mut line)? == 0 {
                break;
            }
            out.write_all(&line)?;
            written += line.len() as u64;
        }
        let len = input.get_ref().metadata()?.len();
        let mut file = input.into_inner();
        file.seek(SeekFrom::Start(len.saturating_sub(8192)))?;
        let mut end = Vec::new();
        file.read_to_end(&mut end)?;
        let lines: Vec<&[u8]> = end
            .split(|&b| b == b'\n')
            .filter(|l| !l.is_empty())
            .collect();
        for l in &lines[lines.len().saturating_sub(5)..] {
            out.write_all(l)?;
            out.write_all(b"\n")?;
            written += l.len() as u64 + 1;
        }
        out.flush()?;
        Ok(written)
    }

    fn check(json: &[u8]) -> Result<String, String> {
        let text = String::from_utf8_lossy(json);
        let field = |k: &str| {
            text.lines()
                .find(|l| l.trim_start().starts_with(&format!("\"{k}\"")))
                .map(|l| l.trim().to_string())
        };
        let summary = format!(
            "{} {} {}",
            field("outcome").unwrap_or_default(),
            field("fault_class").unwrap_or_default(),
            field("kernel_name").unwrap_or_default()
        );
        if summary.contains("\"MAF\"") && summary.contains("_Z9crash_oobPKiPii") {
            Ok(summary)
        } else {
            Err(format!("unexpected finding: {summary}"))
        }
    }

    pub fn run() -> Result<(), String> {
        let o = parse_args()?;
        let bin_dir = std::env::current_exe()
            .map_err(|e| e.to_string())?
            .parent()
            .map(Path::to_path_buf)
            .ok_or("no exe dir")?;
        if o.build {
            let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
            let ok = Command::new(cargo)
                .args(["build", "--release", "-p", "hrr", "--bin", "hrr"])
                .status()
                .map_err(|e| e.to_string())?;
            if !ok.success() {
                return Err("cargo build --release --bin hrr failed".into());
            }
        }
        let hrr = bin_dir.join("hrr");
        let log = tempfile_path("replay.log");
        eprintln!(
            "generating ~{} MiB verbose replay log at {} …",
            o.size_mb,
            log.display()
        );
        let (size, launches) = generate(&log, o.size_mb * MIB).map_err(|e| e.to_string())?;
        // warm the page cache and measure a plain read for reference
        let t = Instant::now();
        let mut f = File::open(&log).map_err(|e| e.to_string())?;
        let mut buf = vec![0u8; 1 << 20];
        while f.read(&mut buf).map_err(|e| e.to_string())? > 0 {}
        let read_mbs = size as f64 / MIB as f64 / t.elapsed().as_secs_f64();

        let h = measure(
            Command::new(&hrr)
                .args(["-q", "classify", "--format", "json", "--log"])
                .arg(&log),
        )?;
        let finding = check(&h.stdout)?;
        let mb = size as f64 / MIB as f64;
        println!("log: {mb:.0} MiB, {launches} launches (11 lines each), a GPU fault at the end");
        println!("plain read (page cache): {read_mbs:.0} MiB/s");
        println!(
            "hrr classify: {:.2} s wall = {:.0} MiB/s; {:.2} s CPU = {:.0} MiB/s per CPU-second; peak RSS {:.1} MiB  [{finding}]",
            h.wall, mb / h.wall, h.cpu, mb / h.cpu, h.rss_kib as f64 / 1024.0
        );

        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("bench/upstream_analyzer.py");
        let (py_log, py_size) = if o.python_mb == 0 || o.python_mb >= o.size_mb {
            (log.clone(), size)
        } else {
            let p = tempfile_path("prefix.log");
            let n = prefix(&log, &p, o.python_mb * MIB).map_err(|e| e.to_string())?;
            (p, n)
        };
        let py_mb = py_size as f64 / MIB as f64;
        let h2 = measure(
            Command::new(&hrr)
                .args(["-q", "classify", "--format", "json", "--log"])
                .arg(&py_log),
        )?;
        match measure(
            Command::new("python3")
                .arg(&script)
                .args(["--format", "json", "--log"])
                .arg(&py_log),
        ) {
            Ok(py) => {
                let py_finding = check(&py.stdout).unwrap_or_else(|e| e);
                println!(
                    "upstream-style analyzer on {py_mb:.0} MiB: {:.2} s wall = {:.1} MiB/s; {:.2} s CPU; peak RSS {:.0} MiB  [{py_finding}]",
                    py.wall, py_mb / py.wall, py.cpu, py.rss_kib as f64 / 1024.0
                );
                println!(
                    "hrr on the same {py_mb:.0} MiB: {:.2} s wall, {:.2} s CPU",
                    h2.wall, h2.cpu
                );
                println!(
                    "speed-up on the same file: {:.0}x wall, {:.0}x CPU",
                    py.wall / h2.wall,
                    py.cpu / h2.cpu
                );
            }
            Err(e) => println!("upstream-style analyzer: not run ({e})"),
        }
        if py_log != log {
            let _ = std::fs::remove_file(&py_log);
        }
        if o.keep {
            println!("kept {}", log.display());
        } else {
            let _ = std::fs::remove_file(&log);
        }
        Ok(())
    }
}
