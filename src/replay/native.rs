//! Native replay: `hrr-playback [sync flag] [--trace-kernels]
//! [--max-wall-seconds N] [extra…] <pid-dir>` on this host, with `HIP_VISIBLE_DEVICES`,
//! `HIP_HRR_REPLAY_PROGRESS_SECONDS` and a library path that never holds an
//! empty entry (DESIGN §7, reference upstream-triage.md §2.9).

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail};

use super::{Launch, ReplayRequest};
use crate::context::Context;

/// The command and environment of a native replay of `pid_dir` on `gpu`.
/// Fails before anything runs when the GPU device node (`replay.kfd`) is
/// not readable or the player is missing.
pub fn launch(
    ctx: &Context,
    req: &ReplayRequest,
    pid_dir: &Path,
    gpu: u32,
) -> anyhow::Result<Launch> {
    check_device_node(ctx.config.str("replay.kfd").unwrap_or("/dev/kfd"))?;
    let player = host_player(req.player.as_deref())?;
    let mut argv: Vec<OsString> = vec![player.clone().into()];
    argv.extend(req.player_args(pid_dir.into())?);
    let libraries = if cfg!(windows) {
        let roots = crate::playback::rocm_roots(&ctx.config);
        let rocm = roots
            .iter()
            .find(|r| r.join("bin").is_dir())
            .or(roots.first())
            .cloned()
            .unwrap_or_default();
        let path = dll_path(&player, &rocm, std::env::var_os("PATH").as_deref());
        ("PATH".into(), path)
    } else {
        let ld = library_path(
            &player,
            ctx.config.str("playback.rocr_lib").map(Path::new),
            std::env::var_os("LD_LIBRARY_PATH").as_deref(),
            &ctx.config.rocm_path(),
        );
        ("LD_LIBRARY_PATH".into(), ld)
    };
    Ok(Launch {
        argv,
        env: vec![
            ("HIP_VISIBLE_DEVICES".into(), Some(gpu.to_string().into())),
            (
                super::command::PROGRESS_ENV.into(),
                Some(req.progress_env().into()),
            ),
            libraries,
        ],
        stop_command: None,
        status_source: super::StatusSource::Player,
    })
}

/// The host player for a replay: `playback.path` (or `HRR_PLAYBACK`) when
/// set, which must then exist; otherwise the first one
/// [`crate::playback::locate`] finds (under `rocm.path`, then on PATH),
/// without building.
pub fn configured_player(ctx: &Context) -> anyhow::Result<PathBuf> {
    match ctx.config.str("playback.path").filter(|p| !p.is_empty()) {
        Some(path) => host_player(Some(Path::new(path))),
        None => Ok(crate::playback::locate(ctx, false)?.path),
    }
}

/// The host player as an absolute path: a bare name is looked up on PATH.
pub fn host_player(player: Option<&Path>) -> anyhow::Result<PathBuf> {
    let Some(player) = player else {
        bail!("no hrr-playback to run: set playback.path (or HRR_PLAYBACK) to the player, or put hrr-playback on PATH");
    };
    let found = if player.components().count() == 1 && !player.is_absolute() {
        which::which(player).map_err(|_| {
            anyhow!(
                "hrr-playback '{}' is not on PATH; set playback.path to its full path",
                player.display()
            )
        })?
    } else {
        std::path::absolute(player)?
    };
    if !found.is_file() {
        bail!(
            "hrr-playback not found at {}: set playback.path to the player's path",
            found.display()
        );
    }
    Ok(found)
}

/// Refuses a native replay when the GPU device node `node` (`replay.kfd`,
/// normally `/dev/kfd`) cannot be read; `""` skips the check.
pub fn check_device_node(node: &str) -> anyhow::Result<()> {
    if node.is_empty() {
        return Ok(());
    }
    #[cfg(unix)]
    {
        use crate::user_input::FileKind;
        let kind = FileKind::of(std::path::Path::new(node));
        if let Some(kind) = kind.filter(|k| !matches!(k, FileKind::CharDevice | FileKind::File)) {
            bail!(
                "cannot replay natively: replay.kfd {node} is {}, not the GPU device node; set replay.kfd to /dev/kfd",
                kind.describe()
            );
        }
    }
    #[cfg(unix)]
    if let Err(e) = nix::unistd::access(node, nix::unistd::AccessFlags::R_OK) {
        bail!(
            "cannot replay natively: {node} is not readable ({}); add your user to the render and video groups (`sudo usermod -aG render,video $USER`, then log in again), or replay in docker with --replay docker",
            e.desc()
        );
    }
    Ok(())
}

/// `LD_LIBRARY_PATH` for the player: its own `lib`/`runtime-lib` dirs (next
/// to it, and beside its `bin` dir), `rocr_lib`, the caller's `inherited`
/// entries, then `<rocm>/lib`. Only existing dirs for the first two, no
/// duplicates, never an empty entry (an empty entry means the current
/// directory, which may be a customer archive); `None` = leave it unset.
pub fn library_path(
    player: &Path,
    rocr_lib: Option<&Path>,
    inherited: Option<&OsStr>,
    rocm: &Path,
) -> Option<OsString> {
    let mut dirs: Vec<PathBuf> = Vec::new();
    let mut add = |dir: PathBuf| {
        let text = dir.as_os_str();
        let representable = !text.is_empty() && std::env::join_paths([&dir]).is_ok();
        if representable && !dirs.contains(&dir) {
            dirs.push(dir);
        }
    };
    if let Some(bin) = player.parent() {
        let mut own = vec![bin.join("lib"), bin.join("runtime-lib")];
        if bin.file_name() == Some(OsStr::new("bin")) {
            if let Some(prefix) = bin.parent() {
                own.insert(0, prefix.join("lib"));
                own.insert(1, prefix.join("runtime-lib"));
            }
        }
        own.into_iter().filter(|d| d.is_dir()).for_each(&mut add);
    }
    if let Some(dir) = rocr_lib.filter(|d| d.is_dir()) {
        add(dir.to_path_buf());
    }
    if let Some(value) = inherited {
        std::env::split_paths(value).for_each(&mut add);
    }
    if !rocm.as_os_str().is_empty() {
        add(rocm.join("lib"));
    }
    if dirs.is_empty() {
        None
    } else {
        std::env::join_paths(dirs).ok()
    }
}

/// `PATH` for a Windows player, which finds its DLLs through it: the
/// player's own directory, `<rocm>\bin`, then the `inherited` entries; no
/// duplicates and never an empty entry; `None` = leave it unset.
pub fn dll_path(player: &Path, rocm: &Path, inherited: Option<&OsStr>) -> Option<OsString> {
    let mut dirs: Vec<PathBuf> = Vec::new();
    let first = [
        player.parent().map(Path::to_path_buf),
        (!rocm.as_os_str().is_empty()).then(|| rocm.join("bin")),
    ];
    let rest = inherited.into_iter().flat_map(std::env::split_paths);
    for dir in first.into_iter().flatten().chain(rest) {
        let representable = !dir.as_os_str().is_empty() && std::env::join_paths([&dir]).is_ok();
        if representable && !dirs.contains(&dir) {
            dirs.push(dir);
        }
    }
    if dirs.is_empty() {
        None
    } else {
        std::env::join_paths(dirs).ok()
    }
}

#[cfg(test)]
mod dll_path_tests {
    use super::*;

    #[test]
    fn the_players_dir_and_rocm_bin_come_first_once() {
        let player = Path::new("/opt/player/hrr-playback.exe");
        let inherited = std::env::join_paths(["/usr/bin", "/opt/rocm/bin", "/opt/player"]).unwrap();
        let path = dll_path(player, Path::new("/opt/rocm"), Some(&inherited)).unwrap();
        let got: Vec<PathBuf> = std::env::split_paths(&path).collect();
        assert_eq!(
            got,
            ["/opt/player", "/opt/rocm/bin", "/usr/bin"].map(PathBuf::from)
        );
        assert_eq!(
            dll_path(Path::new("hrr-playback.exe"), Path::new(""), None),
            None
        );
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    fn entries(v: &Option<OsString>) -> Vec<String> {
        v.as_ref()
            .map(|s| s.to_string_lossy().split(':').map(String::from).collect())
            .unwrap_or_default()
    }

    #[test]
    fn library_path_never_has_an_empty_entry() {
        let dir = tempfile::tempdir().unwrap();
        let player = dir.path().join("bin/hrr-playback");
        let rocm = Path::new("/opt/rocm");
        for inherited in [None, Some(""), Some("::"), Some(":"), Some("/x::/y:")] {
            let ld = library_path(&player, None, inherited.map(OsStr::new), rocm);
            let got = entries(&ld);
            assert!(
                got.iter().all(|e| !e.is_empty()),
                "{inherited:?} gave {ld:?}"
            );
            assert_eq!(got.last().map(String::as_str), Some("/opt/rocm/lib"));
        }
        let ld = library_path(&player, None, Some(OsStr::new("/x::/y:")), rocm);
        assert_eq!(entries(&ld), ["/x", "/y", "/opt/rocm/lib"]);
        assert_eq!(
            library_path(&player, None, Some(OsStr::new("::")), Path::new("")),
            None
        );
    }

    #[test]
    fn own_dirs_and_rocr_come_first_and_only_when_they_exist() {
        let dir = tempfile::tempdir().unwrap();
        let prefix = dir.path();
        std::fs::create_dir_all(prefix.join("bin")).unwrap();
        std::fs::create_dir_all(prefix.join("lib")).unwrap();
        std::fs::create_dir_all(prefix.join("rocr")).unwrap();
        let player = prefix.join("bin/hrr-playback");
        let ld = library_path(
            &player,
            Some(&prefix.join("rocr")),
            Some(OsStr::new("/opt/rocm/lib:/usr/local/lib")),
            Path::new("/opt/rocm"),
        );
        let want = [
            prefix.join("lib").display().to_string(),
            prefix.join("rocr").display().to_string(),
            "/opt/rocm/lib".into(),
            "/usr/local/lib".into(),
        ];
        assert_eq!(entries(&ld), want);
    }

    #[test]
    fn an_unreadable_device_node_is_refused_before_anything_runs() {
        let err = check_device_node("/nonexistent/kfd")
            .unwrap_err()
            .to_string();
        assert!(err.contains("/nonexistent/kfd is not readable"), "{err}");
        assert!(err.contains("render"), "{err}");
        check_device_node("").unwrap();
        let f = tempfile::NamedTempFile::new().unwrap();
        check_device_node(f.path().to_str().unwrap()).unwrap();
    }
}
