//! Docker replay (Linux): the player runs in `docker.image` with the GPU
//! devices passed through and the capture root mounted read-only at
//! `/arch` (reference upstream-triage.md §6, DESIGN §7). Unlike upstream it
//! gets the same sync flags, progress, timeout and stop markers as a native
//! replay, and the container is named so a timeout can `docker kill` it,
//! and so can the supervisor when `hrr` itself dies (a killed `docker run`
//! client leaves its container running).

use std::ffi::OsString;
use std::path::Path;
use std::time::Duration;

use anyhow::{anyhow, bail};

use super::{Launch, ReplayRequest};
use crate::context::Context;
use crate::docker_env::{volume, DockerEnv, DockerMissing};

/// Where the capture root appears inside the container.
const ARCH: &str = "/arch";
/// The in-image player locations tried by the probe, in order.
const IMAGE_PLAYERS: [&str; 2] = ["hrr-playback", "/opt/rocm/bin/hrr-playback"];
/// Where `docker.mount_clr` puts the host player.
const OVERLAY_PLAYER: &str = "/opt/hrr/bin/hrr-playback";
/// Bound on the probe run (it may pull the image).
const PROBE_TIMEOUT: Duration = Duration::from_secs(600);

/// The `docker run` command of a replay of `pid_dir` (under `capture_root`)
/// on `gpu`, and the `docker kill` that stops it. The container is the one
/// [`DockerEnv`] describes (the one the docker preflight probes), plus the
/// capture root, the host player with `docker.mount_clr`, the GPU and the
/// progress interval.
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
    let env = DockerEnv::new(config, image).map_err(|e| {
        if e.is::<DockerMissing>() {
            anyhow!("docker replay needs the docker CLI, and it is not on PATH")
        } else {
            e
        }
    })?;
    for note in env.notes() {
        ctx.ui.warn(note);
    }
    let mut mounts = vec![volume(capture_root, ARCH)?];
    let player = if env.clr_lib().is_some() {
        let host = super::native::host_player(req.player.as_deref())?;
        mounts.push(volume(&host, OVERLAY_PLAYER)?);
        OVERLAY_PLAYER.to_string()
    } else {
        image_player(&env)?
    };
    mounts.extend(env.overlay_mounts());
    let name = container_name();
    let pid_name = pid_dir
        .file_name()
        .ok_or_else(|| anyhow!("{} has no directory name", pid_dir.display()))?;
    let mut in_container = OsString::from(format!("{ARCH}/"));
    in_container.push(pid_name);
    let mut vars = env.passed_env().to_vec();
    vars.extend([
        format!("HIP_VISIBLE_DEVICES={gpu}"),
        format!("{}={}", super::PROGRESS_ENV, req.progress_env()),
        format!("LD_LIBRARY_PATH={}", env.ld_library_path()),
    ]);
    let mut command: Vec<OsString> = vec![player.into()];
    command.extend(req.player_args(in_container)?);
    let mut argv: Vec<OsString> = env.client().iter().map(OsString::from).collect();
    argv.extend(run_args(&name, &mounts, &vars, env.image(), command));
    Ok(Launch {
        argv,
        env: Vec::new(),
        stop_command: Some(env.command(["kill".to_string(), name])),
        status_source: super::StatusSource::DockerClient,
    })
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

/// The image's own player, found by a throwaway run of each candidate with
/// `--version` (argv only, no shell in the container).
fn image_player(env: &DockerEnv) -> anyhow::Result<String> {
    for candidate in IMAGE_PLAYERS {
        let argv = env.command([
            "run".into(),
            "--rm".into(),
            "-e".into(),
            format!("LD_LIBRARY_PATH={}", env.ld_library_path()),
            env.image().to_string(),
            candidate.to_string(),
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
        "hrr-playback not found in image {} (tried {}); set docker.mount_clr = true (with docker.clr_build) to mount the host player and CLR libraries",
        env.image(),
        IMAGE_PLAYERS.join(", ")
    )
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
}
