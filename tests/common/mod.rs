//! Shared helpers for the integration tests: a hermetic `hrr` command and
//! the test player.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

/// A temp home for one test: user config dir, site file, cwd.
pub struct Sandbox {
    /// The temp directory (removed on drop).
    pub dir: tempfile::TempDir,
}

impl Sandbox {
    /// A fresh sandbox.
    pub fn new() -> Sandbox {
        Sandbox {
            dir: tempfile::tempdir().expect("tempdir"),
        }
    }

    /// The sandbox root.
    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// `~/.config/hrr` inside the sandbox.
    pub fn user_dir(&self) -> PathBuf {
        self.path().join("xdg").join("hrr")
    }

    /// The site config file the sandboxed `hrr` reads.
    pub fn site_file(&self) -> PathBuf {
        self.path().join("site.toml")
    }

    /// Writes `text` to `rel` under the sandbox, creating directories.
    pub fn write(&self, rel: &str, text: &str) -> PathBuf {
        let p = self.path().join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, text).unwrap();
        p
    }

    /// `hrr` with a hermetic environment: no HRR_*/legacy variables, HOME and
    /// XDG dirs inside the sandbox, the site file inside the sandbox, cwd the
    /// sandbox, the workdir inside the sandbox, PATH limited to system dirs.
    pub fn hrr(&self) -> assert_cmd::Command {
        assert_cmd::Command::from_std(self.hrr_process())
    }

    /// The same hermetic `hrr` as [`Sandbox::hrr`], as a plain
    /// `std::process::Command` for tests that spawn it in the background
    /// and signal it.
    pub fn hrr_process(&self) -> std::process::Command {
        let mut cmd = std::process::Command::new(assert_cmd::cargo::cargo_bin("hrr"));
        cmd.env_clear()
            .env("PATH", "/usr/bin:/bin")
            .env("HOME", self.path().join("home"))
            .env("XDG_CONFIG_HOME", self.path().join("xdg"))
            .env("HRR_SITE_CONFIG", self.site_file())
            .env("HRR_TRIAGE_WORKDIR", self.path().join("work"))
            .env("TMPDIR", std::env::temp_dir())
            .current_dir(self.path());
        cmd
    }
}

/// Makes an executable script `name` in `dir` with `body`.
#[cfg(unix)]
pub fn script(dir: &Path, name: &str, body: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    std::fs::create_dir_all(dir).unwrap();
    let p = dir.join(name);
    std::fs::write(&p, body).unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    p
}

#[cfg(unix)]
/// `(pid, ppid, pgid, state)` of every process, from /proc.
pub fn processes() -> Vec<(i32, i32, i32, char)> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| {
            let pid: i32 = e.file_name().to_str()?.parse().ok()?;
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            let mut f = stat.rsplit_once(')')?.1.split_whitespace();
            let state = f.next()?.chars().next()?;
            let ppid = f.next()?.parse().ok()?;
            let pgid = f.next()?.parse().ok()?;
            Some((pid, ppid, pgid, state))
        })
        .collect()
}

/// stdout of a finished command as text.
pub fn stdout(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// stderr of a finished command as text.
pub fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The test player (`hrr-test-player`, standing in for `hrr-playback`) next
/// to the `hrr` binary; built once with cargo if it is missing.
pub fn test_player() -> PathBuf {
    static BUILD: std::sync::Once = std::sync::Once::new();
    let hrr = assert_cmd::cargo::cargo_bin("hrr");
    let player = hrr
        .parent()
        .expect("target dir")
        .join(format!("hrr-test-player{}", std::env::consts::EXE_SUFFIX));
    // Always ask cargo (a no-op when it is up to date): `cargo test` does
    // not build the binaries of a package without integration tests, so an
    // existing player may be stale.
    BUILD.call_once(|| {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let mut build = std::process::Command::new(cargo);
        build.args([
            "build",
            "-q",
            "-p",
            "hrr-testkit",
            "--bin",
            "hrr-test-player",
        ]);
        if player.parent().and_then(|d| d.file_name()) == Some("release".as_ref()) {
            build.arg("--release");
        }
        let status = build.status().expect("run cargo build for the test player");
        assert!(status.success(), "building hrr-test-player failed");
    });
    player
}

/// The hrr-testkit binary `name` built for Windows, next to `hrr.exe`.
/// Cargo does not run under Wine, so it is built beforehand (`cargo build
/// --target x86_64-pc-windows-gnu -p hrr-testkit --bin <name>`).
#[cfg(windows)]
pub fn windows_test_bin(name: &str) -> PathBuf {
    let bin = assert_cmd::cargo::cargo_bin("hrr")
        .parent()
        .expect("target dir")
        .join(format!("{name}.exe"));
    assert!(
        bin.is_file(),
        "build it first: cargo build --target x86_64-pc-windows-gnu -p hrr-testkit --bin {name}"
    );
    bin
}

/// `hrr-test-tool.exe` copied into `dir` as `<name>.exe`, where it acts as
/// that program (see its doc); returns the copy.
#[cfg(windows)]
pub fn windows_tool(dir: &Path, name: &str) -> PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    let copy = dir.join(format!("{name}.exe"));
    std::fs::copy(windows_test_bin("hrr-test-tool"), &copy).unwrap();
    copy
}

/// Whether process `pid` has ended (or never existed).
#[cfg(windows)]
pub fn gone(pid: u32) -> bool {
    use windows_sys::Win32::Foundation::{CloseHandle, WAIT_OBJECT_0};
    use windows_sys::Win32::System::Threading::{
        OpenProcess, WaitForSingleObject, PROCESS_SYNCHRONIZE,
    };
    // SAFETY: a handle opened here is waited on and closed here.
    unsafe {
        let handle = OpenProcess(PROCESS_SYNCHRONIZE, 0, pid);
        if handle.is_null() {
            return true;
        }
        let ended = WaitForSingleObject(handle, 0) == WAIT_OBJECT_0;
        CloseHandle(handle);
        ended
    }
}

/// Waits up to 10 s for `pids` to end.
#[cfg(windows)]
pub fn all_gone(pids: &[u32]) -> bool {
    let started = std::time::Instant::now();
    while started.elapsed() < std::time::Duration::from_secs(10) {
        if pids.iter().all(|p| gone(*p)) {
            return true;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    false
}

/// The variables a Windows process needs from the test's environment
/// (`SystemRoot`, the temp dirs, `PATHEXT`), added to a sandboxed `hrr`.
#[cfg(windows)]
pub fn windows_env(cmd: &mut std::process::Command) -> &mut std::process::Command {
    for key in ["SystemRoot", "TEMP", "TMP", "PATHEXT"] {
        if let Some(v) = std::env::var_os(key) {
            cmd.env(key, v);
        }
    }
    cmd
}

/// Every file under `root` with its bytes, mode and mtime, for proving an
/// archive is left exactly as it was.
pub fn tree_snapshot(
    root: &Path,
) -> std::collections::BTreeMap<PathBuf, (Vec<u8>, u32, std::time::SystemTime)> {
    let mut out = std::collections::BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let entry = entry.unwrap();
            let meta = std::fs::symlink_metadata(entry.path()).unwrap();
            let rel = entry.path().strip_prefix(root).unwrap().to_path_buf();
            #[cfg(unix)]
            let mode = std::os::unix::fs::PermissionsExt::mode(&meta.permissions());
            #[cfg(not(unix))]
            let mode = 0;
            let bytes = if meta.is_file() {
                std::fs::read(entry.path()).unwrap()
            } else {
                Vec::new()
            };
            out.insert(rel, (bytes, mode, meta.modified().unwrap()));
            if meta.is_dir() {
                stack.push(entry.path());
            }
        }
    }
    out
}

/// One launch written into a [`ReplayArchive`].
pub struct RecordedLaunch {
    /// Its sequence id, which is also its 0-based event index (one thread,
    /// sequence ids from 0 in file order).
    pub seq: u64,
    /// The recorded kernel name (invalid UTF-8 as U+FFFD, as hrr reads it).
    pub name: String,
    /// grid.
    pub grid: [u32; 3],
    /// block.
    pub block: [u32; 3],
}

/// A process archive written for replay tests, with the facts the tests
/// derive their expectations from (never the player's output).
pub struct ReplayArchive {
    /// The `pid-*` directory.
    pub dir: PathBuf,
    /// Events before the trailer.
    pub events: u64,
    /// Blob files.
    pub blobs: usize,
    /// Code-object files.
    pub code_objects: usize,
    /// The recorded thread id.
    pub thread: u64,
    /// Launches in stream order (all `hipModuleLaunchKernel`).
    pub launches: Vec<RecordedLaunch>,
    /// (sequence id, bytes) of each `hipMemcpy` D2H copy with an expected blob.
    pub d2h: Vec<(u64, u64)>,
}

impl ReplayArchive {
    /// The last launch.
    pub fn last_launch(&self) -> &RecordedLaunch {
        self.launches.last().expect("launches")
    }
}

/// Writes `root/pid-<pid>/` with hrr's synthetic writer: a module load,
/// two allocations, an H2D input, `kernels` launched in order with a D2H
/// check after the second and after the last, frees, a synchronize and a
/// clean-shutdown trailer.
pub fn write_replay_archive(root: &Path, pid: u64, kernels: &[&str]) -> ReplayArchive {
    let names: Vec<&[u8]> = kernels.iter().map(|k| k.as_bytes()).collect();
    write_replay_archive_bytes(root, pid, &names)
}

/// [`write_replay_archive`] with kernel names recorded as raw bytes, which
/// a capture takes from the program as they are (not necessarily UTF-8).
pub fn write_replay_archive_bytes(root: &Path, pid: u64, kernels: &[&[u8]]) -> ReplayArchive {
    use hrr_testkit::archive::ProcessArchive;
    use hrr_testkit::events::{api, kind, Arg, EventsFile, Launch};
    let mut p = ProcessArchive::new(pid, EventsFile::v7());
    p.events.thread = 48213;
    let co = p.add_code_object(b"\x7fELF replay-test code object");
    let input = p.add_blob(&[1u8; 4096]);
    let (a, b) = (0x7f10_0000_0000u64, 0x7f10_0010_0000u64);
    p.events
        .module_load(0x5a5a_0000_1000, co)
        .malloc(a, 4096)
        .malloc(b, 4096)
        .memcpy(a, 0x55d0_0000_4000, 4096, kind::HOST_TO_DEVICE, input);
    let mut launches = Vec::new();
    let mut d2h = Vec::new();
    for (i, name) in kernels.iter().enumerate() {
        let (grid, block) = ([64 * (i as u32 + 1), 1, 1], [256, 1, 1]);
        let mut launch = Launch::new("", grid, block);
        launch.name = name.to_vec();
        launch.code_object = co;
        launch.args = vec![Arg::Pointer(a), Arg::Pointer(b)];
        launches.push(RecordedLaunch {
            seq: p.events.events(),
            name: String::from_utf8_lossy(name).into_owned(),
            grid,
            block,
        });
        p.events.launch(api::HIP_MODULE_LAUNCH_KERNEL, &launch);
        if i == 1 || i + 1 == kernels.len() {
            let expected = p.add_blob(&[i as u8 + 2; 4096]);
            d2h.push((p.events.events(), 4096));
            p.events
                .memcpy(0x55d0_0000_8000, b, 4096, kind::DEVICE_TO_HOST, expected);
        }
    }
    p.events.free(a).free(b).device_synchronize().trailer();
    let dir = p.write(root).expect("write the replay archive");
    ReplayArchive {
        dir,
        events: p.events.events(),
        blobs: p.blobs.len(),
        code_objects: p.code_objects.len(),
        thread: 48213,
        launches,
        d2h,
    }
}

/// Restores the default action of the signals tests send to `hrr` (SIGINT,
/// SIGTERM, SIGHUP) in the child. A harness started in the background
/// (`cmd &`, nohup) ignores SIGINT; a child inherits that, and `hrr` rightly
/// leaves an ignored signal ignored — so without this a Ctrl-C test would
/// wait forever under such a harness.
#[cfg(unix)]
pub fn default_signals(cmd: &mut std::process::Command) -> &mut std::process::Command {
    use nix::sys::signal::{signal, SigHandler, Signal};
    use std::os::unix::process::CommandExt;
    // SAFETY: between fork and exec only async-signal-safe calls are made
    // (signal(2)), and nothing is allocated.
    unsafe {
        cmd.pre_exec(|| {
            for sig in [Signal::SIGINT, Signal::SIGTERM, Signal::SIGHUP] {
                signal(sig, SigHandler::SigDfl).map_err(std::io::Error::from)?;
            }
            Ok(())
        })
    }
}

/// The output of `child`, which must end within `limit`: past it the child is
/// killed and the test fails, instead of hanging the suite.
#[cfg(unix)]
pub fn wait_bounded(
    child: std::process::Child,
    limit: std::time::Duration,
) -> std::process::Output {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    let pid = nix::unistd::Pid::from_raw(child.id() as i32);
    let done = Arc::new(AtomicBool::new(false));
    let fired = Arc::new(AtomicBool::new(false));
    let (d, f) = (Arc::clone(&done), Arc::clone(&fired));
    std::thread::spawn(move || {
        let until = std::time::Instant::now() + limit;
        while std::time::Instant::now() < until {
            if d.load(Ordering::SeqCst) {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        if !d.load(Ordering::SeqCst) {
            f.store(true, Ordering::SeqCst);
            let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGKILL);
        }
    });
    let out = child.wait_with_output().expect("wait for hrr");
    done.store(true, Ordering::SeqCst);
    assert!(
        !fired.load(Ordering::SeqCst),
        "hrr did not end within {limit:?} and was killed"
    );
    out
}

/// Copies the example capture root `examples/crash.hrr` to `to`, every file
/// and directory, so a test can work on a copy under a name of its own.
pub fn copy_example(to: &Path) {
    copy_tree(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/crash.hrr"),
        to,
    );
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let dest = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_tree(&e.path(), &dest);
        } else {
            std::fs::copy(e.path(), dest).unwrap();
        }
    }
}
