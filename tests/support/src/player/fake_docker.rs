//! A fake `docker` (and `sudo`) for tests, reached through a symlink named
//! `docker` / `sudo` to the test player. It records every argv as one JSON
//! line in `HRR_TEST_DOCKER_LOG`, and:
//! * `docker info` succeeds (fails with docker's permission message when
//!   `HRR_TEST_DOCKER_NEEDS_SUDO=1` and not run through the fake sudo);
//! * `docker run [opts] IMAGE CMD…` applies `-e` and `-v SRC:DST[:ro]`
//!   (paths under DST in CMD become paths under SRC), records CMD's pid under
//!   `HRR_TEST_DOCKER_STATE/<--name>.pid`, runs CMD as its child and exits
//!   as the real client does: with CMD's exit code, or 128 + N when CMD was
//!   killed by signal N; the image's player (`HRR_TEST_IMAGE_PLAYER`,
//!   default `/opt/rocm/bin/hrr-playback`) is this test player;
//! * `docker kill NAME` SIGKILLs the recorded pid (the "container").

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};

use super::output::err;

/// `sudo -n CMD…`: records, then execs CMD from PATH with `HRR_TEST_SUDO=1`.
pub fn sudo(args: &[String]) -> ! {
    record("sudo", args);
    let rest: Vec<&String> = args.iter().skip_while(|a| a.starts_with('-')).collect();
    let Some((program, tail)) = rest.split_first() else {
        err("usage: sudo -n command");
        std::process::exit(1);
    };
    let e = std::process::Command::new(program)
        .args(tail)
        .env("HRR_TEST_SUDO", "1")
        .exec();
    err(&format!("sudo: {program}: {e}"));
    std::process::exit(1)
}

/// The fake `docker` CLI.
pub fn docker(args: &[String]) -> ! {
    record("docker", args);
    match args.first().map(String::as_str) {
        Some("info") => {
            let needs_sudo = std::env::var_os("HRR_TEST_DOCKER_NEEDS_SUDO").is_some();
            if needs_sudo && std::env::var_os("HRR_TEST_SUDO").is_none() {
                err("permission denied while trying to connect to the Docker daemon socket at unix:///var/run/docker.sock");
                std::process::exit(1);
            }
            println!("Server Version: 0.0.0-fake");
            std::process::exit(0)
        }
        Some("kill") => kill(args.get(1).map(String::as_str).unwrap_or("")),
        Some("run") => run(&args[1..]),
        _ => {
            err("docker: 'fake' supports info, run and kill only");
            std::process::exit(1)
        }
    }
}

fn record(program: &str, args: &[String]) {
    use std::io::Write;
    let Ok(path) = std::env::var("HRR_TEST_DOCKER_LOG") else {
        return;
    };
    let mut argv = vec![program.to_string()];
    argv.extend(args.iter().cloned());
    let line = serde_json::to_string(&argv).unwrap_or_default();
    if let Ok(mut f) = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
    {
        let _ = writeln!(f, "{line}");
    }
}

fn state_file(name: &str) -> Option<PathBuf> {
    let dir = std::env::var_os("HRR_TEST_DOCKER_STATE")?;
    Some(Path::new(&dir).join(format!("{name}.pid")))
}

fn kill(name: &str) -> ! {
    use nix::sys::signal::{kill, Signal};
    use nix::unistd::Pid;
    let pid = state_file(name)
        .and_then(|f| std::fs::read_to_string(f).ok())
        .and_then(|s| s.trim().parse::<i32>().ok());
    match pid {
        Some(pid) => {
            let _ = kill(Pid::from_raw(pid), Signal::SIGKILL);
            println!("{name}");
            std::process::exit(0)
        }
        None => {
            err(&format!(
                "Error response from daemon: No such container: {name}"
            ));
            std::process::exit(1)
        }
    }
}

const NO_VALUE: &[&str] = &[
    "--rm",
    "--init",
    "-t",
    "--tty",
    "-i",
    "--interactive",
    "--privileged",
];

fn run(args: &[String]) -> ! {
    let mut env: Vec<(String, String)> = Vec::new();
    let mut mounts: Vec<(String, String)> = Vec::new();
    let mut name = None;
    let mut entrypoint = None;
    let mut i = 0;
    while i < args.len() && args[i].starts_with('-') {
        let (flag, inline) = match args[i].split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f.to_string(), Some(v.to_string())),
            _ => (args[i].clone(), None),
        };
        i += 1;
        if NO_VALUE.contains(&flag.as_str()) {
            continue;
        }
        let value = match inline {
            Some(v) => v,
            None => {
                i += 1;
                args.get(i - 1).cloned().unwrap_or_default()
            }
        };
        match flag.as_str() {
            "-e" | "--env" => {
                let (k, v) = value.split_once('=').unwrap_or((&value, ""));
                env.push((k.to_string(), v.to_string()));
            }
            "-v" | "--volume" => {
                let mut parts = value.split(':');
                let src = parts.next().unwrap_or_default().to_string();
                let dst = parts.next().unwrap_or_default().to_string();
                mounts.push((src, dst));
            }
            "--name" => name = Some(value),
            "--entrypoint" => entrypoint = Some(value),
            _ => {}
        }
    }
    let Some(_image) = args.get(i) else {
        err("docker: \"docker run\" requires at least 1 argument.");
        std::process::exit(125)
    };
    let mut command: Vec<String> = entrypoint.into_iter().collect();
    command.extend(args[i + 1..].iter().cloned());
    mounts.sort_by_key(|(_, dst)| std::cmp::Reverse(dst.len()));
    let command: Vec<String> = command.iter().map(|a| host_path(a, &mounts)).collect();
    let Some(program) = command.first() else {
        err("docker: no command given and the fake image has no default command");
        std::process::exit(125)
    };
    let image_player = std::env::var("HRR_TEST_IMAGE_PLAYER")
        .unwrap_or_else(|_| "/opt/rocm/bin/hrr-playback".into());
    let exe = if *program == image_player {
        std::env::current_exe().unwrap_or_default()
    } else if Path::new(program).is_absolute() && Path::new(program).is_file() {
        PathBuf::from(program)
    } else {
        err(&format!("docker: Error response from daemon: failed to create task for container: failed to create shim task: OCI runtime create failed: runc create failed: unable to start container process: exec: \"{program}\": executable file not found in $PATH: unknown."));
        std::process::exit(127)
    };
    let mut cmd = std::process::Command::new(exe);
    cmd.arg0("hrr-playback").args(&command[1..]).env_clear();
    for (k, v) in std::env::vars() {
        if k == "PATH" || k.starts_with("HRR_TEST_") {
            cmd.env(k, v);
        }
    }
    cmd.envs(env);
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => {
            err(&format!("docker: cannot start {program}: {e}"));
            std::process::exit(126)
        }
    };
    if let Some(f) = name.as_deref().and_then(state_file) {
        super::write_atomically(&f, &child.id().to_string());
    }
    match child.wait() {
        Ok(status) => {
            use std::os::unix::process::ExitStatusExt;
            std::process::exit(
                status
                    .code()
                    .unwrap_or_else(|| 128 + status.signal().unwrap_or(0)),
            )
        }
        Err(e) => {
            err(&format!("docker: lost the container process: {e}"));
            std::process::exit(125)
        }
    }
}

/// `arg` with a container path under a mount's destination replaced by the
/// host path.
fn host_path(arg: &str, mounts: &[(String, String)]) -> String {
    for (src, dst) in mounts {
        if arg == dst {
            return src.clone();
        }
        if let Some(rest) = arg.strip_prefix(dst.as_str()) {
            if rest.starts_with('/') {
                return format!("{src}{rest}");
            }
        }
    }
    arg.to_string()
}
