//! Docker replay (Linux): the player runs in `docker.image` with the GPU
//! devices passed through and the capture root mounted read-only at
//! `/arch` (reference upstream-triage.md §6, DESIGN §7). Unlike upstream it
//! gets the same sync flags, progress, timeout and stop markers as a native
//! replay, and the container is named so a timeout can `docker kill` it,
//! and so can the supervisor when `hrr` itself dies (a killed `docker run`
//! client leaves its container running).

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{anyhow, bail};

use super::{Launch, ReplayRequest};
use crate::context::Context;

/// Where the capture root appears inside the container.
const ARCH: &str = "/arch";
/// The in-image player locations tried by the probe, in order.
const IMAGE_PLAYERS: [&str; 2] = ["hrr-playback", "/opt/rocm/bin/hrr-playback"];
/// Where `docker.mount_clr` puts the host player, CLR and ROCr libraries.
const OVERLAY_PLAYER: &str = "/opt/hrr/bin/hrr-playback";
const OVERLAY_CLR: &str = "/opt/hrr/lib";
const OVERLAY_ROCR: &str = "/opt/hrr/rocr";
/// The extra library dir upstream uses for `rocm/vllm:*` images.
const VLLM_EXTRA_LD: &str = "/opt/python/lib/python3.13/site-packages/_rocm_sdk_core/lib";
/// Bound on `docker info` / `sudo -n docker info`.
const INFO_TIMEOUT: Duration = Duration::from_secs(30);
/// Bound on the probe run (it may pull the image).
const PROBE_TIMEOUT: Duration = Duration::from_secs(600);

/// The `docker run` command of a replay of `pid_dir` (under `capture_root`)
/// on `gpu`, and the `docker kill` that stops it.
pub fn launch(
    ctx: &Context,
    req: &ReplayRequest,
    capture_root: &Path,
    pid_dir: &Path,
    gpu: u32,
) -> anyhow::Result<Launch> {
    let config = &ctx.config;
    let image = config
        .str("docker.image")
        .filter(|i| !i.is_empty())
        .ok_or_else(|| anyhow!("docker replay needs an image: set docker.image (or HRR_DOCKER_IMAGE), e.g. -c docker.image=rocm/vllm:latest"))?;
    let docker = which::which("docker")
        .map_err(|_| anyhow!("docker replay needs the docker CLI, and it is not on PATH"))?;
    let prefix = client(&docker, config.get("docker.sudo"))?;
    let extra_ld = match config.str("docker.extra_ld") {
        Some(e) if !e.is_empty() => Some(e.to_string()),
        _ => image
            .starts_with("rocm/vllm:")
            .then(|| VLLM_EXTRA_LD.to_string()),
    };
    let mut mounts = vec![volume(capture_root, ARCH)?];
    let (player, ld) = if config.bool("docker.mount_clr") {
        let (overlay, ld) = overlay(ctx, req, extra_ld.as_deref())?;
        mounts.extend(overlay);
        (OVERLAY_PLAYER.to_string(), ld)
    } else {
        let ld = join_ld(&[extra_ld.as_deref(), Some("/opt/rocm/lib")]);
        (image_player(&prefix, image, &ld)?, ld)
    };
    let name = container_name();
    let pid_name = pid_dir
        .file_name()
        .ok_or_else(|| anyhow!("{} has no directory name", pid_dir.display()))?;
    let mut in_container = OsString::from(format!("{ARCH}/"));
    in_container.push(pid_name);
    let own = [
        ("HIP_VISIBLE_DEVICES", gpu.to_string()),
        (super::command::PROGRESS_ENV, req.progress_env()),
        ("LD_LIBRARY_PATH", ld),
    ];
    let mut env = passed_through(
        std::env::vars_os(),
        &config.strings("docker.env"),
        &own.each_ref().map(|(k, _)| *k),
    )?;
    env.extend(own.map(|(k, v)| format!("{k}={v}")));
    let mut command: Vec<OsString> = vec![player.into()];
    command.extend(req.player_args(in_container)?);
    let mut argv: Vec<OsString> = prefix.iter().map(OsString::from).collect();
    argv.extend(run_args(&name, &mounts, &env, image, command));
    let mut stop: Vec<String> = prefix;
    stop.extend(["kill".to_string(), name]);
    Ok(Launch {
        argv,
        env: Vec::new(),
        stop_command: Some(stop),
        status_source: super::StatusSource::DockerClient,
    })
}

/// The replay-relevant variables of hrr's environment (`vars`), as `-e`
/// values `NAME=value`, so a docker replay gets what a native one inherits:
/// every `HIP_HRR_*` and `HSA_*`, `AMD_LOG_LEVEL`, `ROCR_VISIBLE_DEVICES`
/// (the device mask the GPU ordinal is chosen within), and the names listed
/// in `docker.env` (`listed`). The value is written out rather than left
/// for docker to copy (`-e NAME`) because `sudo -n docker` runs the client
/// with a reset environment. Names hrr sets itself (`own`) are left out, as
/// are non-Unicode names and values; sorted by name. A listed name that
/// cannot be a variable name is an error.
pub fn passed_through(
    vars: impl Iterator<Item = (OsString, OsString)>,
    listed: &[String],
    own: &[&str],
) -> anyhow::Result<Vec<String>> {
    if let Some(bad) = listed.iter().find(|n| n.is_empty() || n.contains('=')) {
        bail!("docker.env: \"{bad}\" is not an environment variable name");
    }
    let relevant = |n: &str| {
        n.starts_with("HIP_HRR_")
            || n.starts_with("HSA_")
            || n == "AMD_LOG_LEVEL"
            || n == "ROCR_VISIBLE_DEVICES"
            || listed.iter().any(|l| l == n)
    };
    let mut out: Vec<(String, String)> = vars
        .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
        .filter(|(k, _)| relevant(k) && !own.contains(&k.as_str()))
        .collect();
    out.sort();
    out.dedup_by(|a, b| a.0 == b.0);
    Ok(out.into_iter().map(|(k, v)| format!("{k}={v}")).collect())
}

/// `docker run` and its options, in the order of the issue: `--rm --init -t
/// --name … --device=/dev/kfd --device=/dev/dri -v … -e … <image> <command>`.
/// `-t` gives the player a terminal inside the container, so its stdout is
/// line-buffered there too and survives `abort()`. Each `env` entry is one
/// `-e` value, `NAME=value`.
pub fn run_args(
    name: &str,
    mounts: &[OsString],
    env: &[String],
    image: &str,
    command: Vec<OsString>,
) -> Vec<OsString> {
    let mut args: Vec<OsString> = ["run", "--rm", "--init", "-t", "--name", name]
        .into_iter()
        .map(OsString::from)
        .collect();
    args.push("--device=/dev/kfd".into());
    args.push("--device=/dev/dri".into());
    for m in mounts {
        args.push("-v".into());
        args.push(m.clone());
    }
    for e in env {
        args.push("-e".into());
        args.push(e.into());
    }
    args.push(image.into());
    args.extend(command);
    args
}

/// `-v` value `<host>:<container>:ro`; a host path with `:` or `,` cannot be
/// expressed there and is refused.
fn volume(host: &Path, container: &str) -> anyhow::Result<OsString> {
    let text = host.to_string_lossy();
    if text.contains([':', ',']) {
        bail!(
            "cannot mount {} into the container: docker -v paths must not contain ':' or ','; move or link it to a plain path",
            host.display()
        );
    }
    let mut v = host.as_os_str().to_os_string();
    v.push(format!(":{container}:ro"));
    Ok(v)
}

/// `a:b:c` of the present entries.
fn join_ld(parts: &[Option<&str>]) -> String {
    parts
        .iter()
        .flatten()
        .filter(|p| !p.is_empty())
        .copied()
        .collect::<Vec<_>>()
        .join(":")
}

/// The docker client argv prefix: `docker`, or `sudo -n docker` per
/// `docker.sudo` (`auto`: only when plain `docker info` fails and
/// `sudo -n docker info` works).
fn client(docker: &Path, sudo: Option<&toml::Value>) -> anyhow::Result<Vec<String>> {
    let plain = vec![docker.display().to_string()];
    let with_sudo = vec!["sudo".into(), "-n".into(), docker.display().to_string()];
    let works = |prefix: &[String]| {
        let mut argv = prefix.to_vec();
        argv.push("info".into());
        let opts = crate::subprocess::ExecOptions {
            timeout: Some(INFO_TIMEOUT),
            ..Default::default()
        };
        crate::subprocess::run(&argv, &opts).is_ok_and(|c| c.success())
    };
    Ok(match sudo {
        Some(toml::Value::Boolean(true)) => with_sudo,
        Some(toml::Value::Boolean(false)) => plain,
        _ if works(&plain) => plain,
        _ if which::which("sudo").is_ok() && works(&with_sudo) => with_sudo,
        _ => plain,
    })
}

/// The image's own player, found by a throwaway run of each candidate with
/// `--version` (argv only, no shell in the container).
fn image_player(prefix: &[String], image: &str, ld: &str) -> anyhow::Result<String> {
    for candidate in IMAGE_PLAYERS {
        let mut argv = prefix.to_vec();
        argv.extend([
            "run".into(),
            "--rm".into(),
            "-e".into(),
            format!("LD_LIBRARY_PATH={ld}"),
            image.into(),
            candidate.into(),
            "--version".into(),
        ]);
        let opts = crate::subprocess::ExecOptions {
            timeout: Some(PROBE_TIMEOUT),
            ..Default::default()
        };
        match crate::subprocess::run(&argv, &opts) {
            Ok(c) if c.success() => return Ok(candidate.to_string()),
            Ok(c) => {
                // Docker itself failed: the image was never asked.
                let stderr = String::from_utf8_lossy(&c.stderr);
                if let Some(line) = stderr
                    .lines()
                    .find(|l| l.contains("Cannot connect to the Docker daemon"))
                {
                    bail!("docker is not running: {}; start the docker daemon (e.g. `sudo systemctl start docker`) and try again", line.trim());
                }
            }
            Err(_) => {}
        }
    }
    bail!(
        "hrr-playback not found in image {image} (tried {}); set docker.mount_clr = true (with docker.clr_build) to mount the host player and CLR libraries",
        IMAGE_PLAYERS.join(", ")
    )
}

/// The read-only mounts and library path of `docker.mount_clr`: the host
/// player, `<docker.clr_build>/hipamd/lib`, and `playback.rocr_lib` if set.
fn overlay(
    ctx: &Context,
    req: &ReplayRequest,
    extra_ld: Option<&str>,
) -> anyhow::Result<(Vec<OsString>, String)> {
    let player = super::native::host_player(req.player.as_deref())?;
    let clr_build = ctx
        .config
        .str("docker.clr_build")
        .filter(|s| !s.is_empty())
        .ok_or_else(|| anyhow!("docker.mount_clr needs docker.clr_build (or CLR_BUILD): the CLR build whose hipamd/lib is mounted"))?;
    let clr: PathBuf = Path::new(clr_build).join("hipamd/lib");
    if !clr.is_dir() {
        bail!(
            "docker.mount_clr: {} is not a directory; set docker.clr_build to a CLR build directory",
            clr.display()
        );
    }
    let mut mounts = vec![volume(&player, OVERLAY_PLAYER)?, volume(&clr, OVERLAY_CLR)?];
    let rocr = ctx
        .config
        .str("playback.rocr_lib")
        .filter(|s| !s.is_empty());
    if let Some(rocr) = rocr {
        mounts.push(volume(Path::new(rocr), OVERLAY_ROCR)?);
    }
    let ld = join_ld(&[
        Some(OVERLAY_CLR),
        rocr.map(|_| OVERLAY_ROCR),
        extra_ld,
        Some("/opt/rocm/lib"),
    ]);
    Ok((mounts, ld))
}

/// `hrr-replay-<hrr pid>-<time in ms, hex>`: unique per run, so a timeout
/// kills exactly this container.
fn container_name() -> String {
    let millis = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis());
    format!("hrr-replay-{}-{millis:x}", std::process::id())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_args_mount_read_only_and_pass_the_player_command_verbatim() {
        let root = volume(Path::new("/data/cap.hrr"), ARCH).unwrap();
        let env = ["HIP_VISIBLE_DEVICES=1".to_string()];
        let cmd = vec!["hrr-playback".into(), "$(id)".into(), "/arch/pid-1".into()];
        let args = run_args("hrr-replay-1-a", &[root], &env, "img:1", cmd);
        let text: Vec<String> = args.iter().map(|a| a.to_string_lossy().into()).collect();
        assert_eq!(
            text,
            [
                "run",
                "--rm",
                "--init",
                "-t",
                "--name",
                "hrr-replay-1-a",
                "--device=/dev/kfd",
                "--device=/dev/dri",
                "-v",
                "/data/cap.hrr:/arch:ro",
                "-e",
                "HIP_VISIBLE_DEVICES=1",
                "img:1",
                "hrr-playback",
                "$(id)",
                "/arch/pid-1",
            ]
        );
    }

    #[test]
    fn replay_variables_pass_through_by_name_and_hrrs_own_are_not_doubled() {
        let set = [
            ("HSA_XNACK", "1"),
            ("HIP_HRR_REPLAY_SYNC_WATCHDOG_MS", "5000"),
            ("AMD_LOG_LEVEL", "4"),
            ("ROCR_VISIBLE_DEVICES", "2,3"),
            ("HIP_HRR_REPLAY_PROGRESS_SECONDS", "9"),
            ("HOME", "/home/u"),
            ("MY_SETTING", "a b"),
            ("PATH", "/usr/bin"),
        ]
        .map(|(k, v)| (OsString::from(k), OsString::from(v)));
        let own = ["HIP_VISIBLE_DEVICES", "HIP_HRR_REPLAY_PROGRESS_SECONDS"];
        let got = passed_through(set.into_iter(), &["MY_SETTING".into()], &own).unwrap();
        assert_eq!(
            got,
            [
                "AMD_LOG_LEVEL=4",
                "HIP_HRR_REPLAY_SYNC_WATCHDOG_MS=5000",
                "HSA_XNACK=1",
                "MY_SETTING=a b",
                "ROCR_VISIBLE_DEVICES=2,3"
            ]
        );
        let err = passed_through(std::iter::empty(), &["A=1".into()], &own).unwrap_err();
        assert!(err
            .to_string()
            .contains("\"A=1\" is not an environment variable name"));
    }

    #[test]
    fn paths_docker_cannot_express_are_refused() {
        assert!(volume(Path::new("/data/a:b"), ARCH).is_err());
        assert!(volume(Path::new("/data/a,b"), ARCH).is_err());
        assert_eq!(
            join_ld(&[None, Some(""), Some("/x"), Some("/opt/rocm/lib")]),
            "/x:/opt/rocm/lib"
        );
    }
}
