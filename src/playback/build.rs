//! `hrr playback --build`: one cmake build of `hrr-playback` from a
//! `projects/hrr` tree (reference upstream-triage.md §5.2, §5.3), its log
//! streamed to `<workdir>/hrr-playback-build-<ts>.log`. At most one attempt
//! per run: a failure is remembered and never retried.
//!
//! The same on Linux and Windows: `-DROCM_PATH` is the first ROCm root of
//! the player search ([`super::rocm_roots`]: on Windows `HIP_PATH` before
//! `ROCM_PATH`), `CMAKE_PREFIX_PATH` from the environment is handed to cmake
//! as a cmake list (`;`, whatever the platform's path separator), and the
//! build asks for the Release configuration, which a multi-config generator
//! (Visual Studio, the Windows default; Ninja Multi-Config) puts in a
//! `Release` directory of its own.

use std::fs::File;
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

use anyhow::{anyhow, bail, Context as _};

use super::player_name;
use crate::context::Context;
use crate::executable::is_executable;

/// The failure of this run's build attempt, if one failed.
static FAILED: Mutex<Option<String>> = Mutex::new(None);

/// How many log lines a failure shows.
const TAIL_LINES: usize = 20;

/// Returns the player in the build dir, building it first when it is not
/// there; the flag says whether this call compiled it.
pub(super) fn build(ctx: &Context) -> anyhow::Result<(PathBuf, bool)> {
    let mut failed = FAILED.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(why) = failed.as_ref() {
        bail!(
            "hrr-playback was already built once in this run and that failed ({why}); not retrying"
        );
    }
    let source = source_tree(ctx)?;
    let build_dir = ctx
        .config
        .str("playback.build_dir")
        .filter(|s| !s.is_empty())
        .map_or_else(|| source.join("build-playback"), PathBuf::from);
    if let Some(existing) = built_player(&build_dir) {
        ctx.ui.status(&format!(
            "reusing the hrr-playback built in {}",
            build_dir.display()
        ));
        return Ok((existing, false));
    }
    let result = run_build(ctx, &source, &build_dir);
    if let Err(e) = &result {
        *failed = Some(format!("{e:#}"));
    }
    result.map(|p| (p, true))
}

/// The `projects/hrr` tree: `playback.source` itself, or its
/// `projects/hrr` when it is a rocm-systems checkout.
fn source_tree(ctx: &Context) -> anyhow::Result<PathBuf> {
    let Some(src) = ctx.config.str("playback.source").filter(|s| !s.is_empty()) else {
        bail!(
            "cannot build hrr-playback: playback.source is not set (set it to a projects/hrr \
             tree or a rocm-systems checkout, e.g. hrr -c playback.source=/src/rocm-systems playback --build)"
        );
    };
    let src = PathBuf::from(src);
    let nested = src.join("projects").join("hrr");
    if nested.join("CMakeLists.txt").is_file() {
        return Ok(nested);
    }
    if src.join("CMakeLists.txt").is_file() {
        return Ok(src);
    }
    bail!(
        "cannot build hrr-playback: {} has no CMakeLists.txt (nor projects/hrr/CMakeLists.txt); \
         playback.source must be a projects/hrr tree or a rocm-systems checkout",
        src.display()
    )
}

/// An already built player in `build_dir`: `playback/`, then `bin/`, each
/// directly (a single-config generator) or in `Release/` (a multi-config
/// one).
fn built_player(build_dir: &Path) -> Option<PathBuf> {
    ["playback", "bin"]
        .iter()
        .flat_map(|d| [build_dir.join(d), build_dir.join(d).join(CONFIGURATION)])
        .map(|d| d.join(player_name()))
        .find(|p| is_executable(p))
}

/// The configuration built (`CMAKE_BUILD_TYPE`, and `--config` for a
/// multi-config generator).
const CONFIGURATION: &str = "Release";

/// `CMAKE_PREFIX_PATH` from the environment as a cmake list, its entries
/// joined with `;`; `rocm` when it is unset or empty.
fn prefix_path(env: Option<&std::ffi::OsStr>, rocm: &str) -> String {
    let entries: Vec<String> = env
        .map(|v| {
            std::env::split_paths(v)
                .filter(|p| !p.as_os_str().is_empty())
                .map(|p| p.display().to_string())
                .collect()
        })
        .unwrap_or_default();
    if entries.is_empty() {
        rocm.to_string()
    } else {
        entries.join(";")
    }
}

fn run_build(ctx: &Context, source: &Path, build_dir: &Path) -> anyhow::Result<PathBuf> {
    let cmake = which::which("cmake").map_err(|_| {
        anyhow!("cannot build hrr-playback: cmake is not on PATH (install cmake, or build projects/hrr yourself and set playback.path)")
    })?;
    let cmake = cmake.display().to_string();
    let rocm = super::rocm_roots(&ctx.config)
        .into_iter()
        .next()
        .unwrap_or_else(|| ctx.config.rocm_path())
        .display()
        .to_string();
    let prefix = prefix_path(std::env::var_os("CMAKE_PREFIX_PATH").as_deref(), &rocm);
    let jobs = std::thread::available_parallelism().map_or(1, |n| n.get());
    let configure: Vec<String> = vec![
        cmake.clone(),
        "-S".into(),
        source.display().to_string(),
        "-B".into(),
        build_dir.display().to_string(),
        format!("-DROCM_PATH={rocm}"),
        format!("-DCMAKE_PREFIX_PATH={prefix}"),
        "-DHRR_BUILD_PLAYBACK=ON".into(),
        "-DHRR_BUILD_TESTS=OFF".into(),
        format!("-DCMAKE_BUILD_TYPE={CONFIGURATION}"),
    ];
    let compile: Vec<String> = vec![
        cmake,
        "--build".into(),
        build_dir.display().to_string(),
        "--target".into(),
        "hrr-playback".into(),
        "--config".into(),
        CONFIGURATION.into(),
        format!("-j{jobs}"),
    ];
    let workdir = crate::workdir::ensure(&ctx.config, &|m| ctx.ui.warn(m))?;
    let (log_path, mut log) = create_log(&workdir)?;
    ctx.ui.status(&format!(
        "building hrr-playback from {} into {} (log: {})",
        source.display(),
        build_dir.display(),
        log_path.display()
    ));
    let spinner = spinner(ctx);
    for (step, argv) in [("configure", &configure), ("build", &compile)] {
        if let Some(s) = &spinner {
            s.set_message(format!("hrr-playback: cmake {step}"));
        }
        let status = run_logged(argv, &mut log, spinner.as_ref())
            .with_context(|| format!("cannot run cmake (log: {})", log_path.display()))?;
        if !status.success() {
            if let Some(s) = &spinner {
                s.finish_and_clear();
            }
            print_tail(&log_path);
            let how = status.code().map_or_else(
                || "was killed".into(),
                |c| format!("exited with status {c}"),
            );
            bail!(
                "building hrr-playback failed: cmake {step} {how}; full build log: {}",
                log_path.display()
            );
        }
    }
    if let Some(s) = &spinner {
        s.finish_and_clear();
    }
    built_player(build_dir).ok_or_else(|| {
        anyhow!(
            "cmake finished but {} was not produced; build log: {}",
            build_dir.join("playback").join(player_name()).display(),
            log_path.display()
        )
    })
}

/// `<workdir>/hrr-playback-build-<UTC timestamp>.log`, created 0600.
fn create_log(workdir: &Path) -> anyhow::Result<(PathBuf, File)> {
    let stamp: String = humantime::format_rfc3339_seconds(SystemTime::now())
        .to_string()
        .chars()
        .filter(|c| c.is_ascii_alphanumeric())
        .collect();
    let mut path = workdir.join(format!("hrr-playback-build-{stamp}.log"));
    if path.exists() {
        path = workdir.join(format!(
            "hrr-playback-build-{stamp}-{}.log",
            std::process::id()
        ));
    }
    let mut opts = std::fs::OpenOptions::new();
    opts.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut opts, 0o600);
    let file = opts
        .open(&path)
        .with_context(|| format!("cannot create the build log {}", path.display()))?;
    Ok((path, file))
}

/// Runs `argv` with stdout and stderr appended to `log`, ticking the
/// spinner until it ends. No time limit: a build takes what it takes, and
/// Ctrl-C reaches cmake (same process group, or console); when `hrr` dies,
/// the supervisor stops what is left of the build on Linux, and a
/// kill-on-close Job object does on Windows.
fn run_logged(
    argv: &[String],
    log: &mut File,
    spinner: Option<&indicatif::ProgressBar>,
) -> anyhow::Result<std::process::ExitStatus> {
    writeln!(log, "$ {}", argv.join(" "))?;
    log.flush()?;
    let (out, err) = (log.try_clone()?, log.try_clone()?);
    let mut child = crate::supervisor::spawn(argv[0].as_ref(), &argv[1..], &[], |cmd| {
        cmd.stdin(Stdio::null()).stdout(out).stderr(err);
    })?
    .child;
    #[cfg(windows)]
    let _job = crate::replay::windows::job::Job::holding(&mut child)?;
    loop {
        if let Some(status) = child.try_wait()? {
            return Ok(status);
        }
        if let Some(s) = spinner {
            s.tick();
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// A spinner on stderr, only when stderr is a terminal and not `-q`.
fn spinner(ctx: &Context) -> Option<indicatif::ProgressBar> {
    if !ctx.ui.stderr_is_tty() || ctx.ui.quiet() {
        return None;
    }
    let s = indicatif::ProgressBar::new_spinner();
    Some(s)
}

/// Prints the last lines of the build log on stderr.
fn print_tail(log: &Path) {
    let Ok(file) = File::open(log) else { return };
    let mut tail = std::collections::VecDeque::with_capacity(TAIL_LINES);
    for line in std::io::BufReader::new(file)
        .split(b'\n')
        .map_while(Result::ok)
    {
        if tail.len() == TAIL_LINES {
            tail.pop_front();
        }
        tail.push_back(String::from_utf8_lossy(&line).into_owned());
    }
    let mut err = std::io::stderr().lock();
    let _ = writeln!(
        err,
        "--- last {} lines of {} ---",
        tail.len(),
        log.display()
    );
    for line in tail {
        let _ = writeln!(err, "{}", crate::ui::inert(&line));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_prefix_path_reaches_cmake_as_a_cmake_list() {
        let two = std::env::join_paths(["/opt/a", "/opt/b"]).unwrap();
        assert_eq!(prefix_path(Some(&two), "/opt/rocm"), "/opt/a;/opt/b");
        assert_eq!(prefix_path(Some("".as_ref()), "/opt/rocm"), "/opt/rocm");
        assert_eq!(prefix_path(None, "/opt/rocm"), "/opt/rocm");
    }
}
