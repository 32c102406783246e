//! The docker environment of a capture's replay (reference
//! upstream-triage.md §6, DESIGN §7): how docker is called (`docker`, or
//! `sudo -n docker`), the image, the read-only overlay of the host's CLR and
//! ROCr libraries (`docker.mount_clr`), the variables passed into the
//! container, and its `LD_LIBRARY_PATH`.
//!
//! It is built here once from the config, and both the docker preflight and
//! the docker replay start their containers from it, so the probe sees the
//! container the replay runs. Every decision is made before any container
//! starts: the replay's `docker run` streams the player's output and cannot
//! be retried, so `sudo` is chosen up front with `docker info`, never by
//! retrying a refused run.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::bail;

use crate::config::Config;
use crate::subprocess::{self, ExecOptions};

/// Where the overlay's CLR libraries appear in the container.
pub const CLR_MOUNT: &str = "/opt/hrr/lib";
/// Where the overlay's ROCr libraries appear in the container.
pub const ROCR_MOUNT: &str = "/opt/hrr/rocr";
/// The library dir of the ROCm SDK bundled in `rocm/vllm:` images, used
/// when `docker.extra_ld` is not set.
const VLLM_SDK_LIB: &str = "/opt/python/lib/python3.13/site-packages/_rocm_sdk_core/lib";
/// The image's own ROCm libraries, last on the library path.
const IMAGE_ROCM_LIB: &str = "/opt/rocm/lib";
/// The file a CLR lib dir must hold to be mounted (a prefix: the name
/// carries the version).
const CLR_LIBRARY: &str = "libamdhip64.so";
/// The file a ROCr lib dir must hold to be mounted.
const ROCR_LIBRARY: &str = "libhsa-runtime64.so.1";
/// Bound on `docker info` / `sudo -n docker info`.
const INFO_TIMEOUT: Duration = Duration::from_secs(30);
/// Variables every container of a replay gets from hrr itself, never from
/// hrr's environment: the GPU, the progress interval and the library path.
const OWN_VARIABLES: [&str; 3] = [
    "HIP_VISIBLE_DEVICES",
    crate::replay::PROGRESS_ENV,
    "LD_LIBRARY_PATH",
];

/// The docker CLI is not on PATH. The preflight reports this as an
/// unprobed environment; the replay as an error.
#[derive(Debug)]
pub struct DockerMissing;

impl std::fmt::Display for DockerMissing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the docker CLI is not on PATH")
    }
}

impl std::error::Error for DockerMissing {}

/// One docker environment: what every container of a docker replay (and of
/// its preflight) is started with.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DockerEnv {
    client: Vec<String>,
    image: String,
    clr_lib: Option<PathBuf>,
    rocr_lib: Option<PathBuf>,
    passed: Vec<String>,
    ld_library_path: String,
    notes: Vec<String>,
}

impl DockerEnv {
    /// The environment of `image` under `config` (`docker.sudo`,
    /// `docker.mount_clr`, `docker.clr_build`, `playback.path`,
    /// `playback.rocr_lib`, `docker.extra_ld`, `docker.env`) and hrr's own
    /// environment. Errors: an image name docker would read as an option, a
    /// `docker.mount_clr` without a CLR lib dir, a mount path docker cannot
    /// express, a `docker.env` entry that is no variable name, and
    /// [`DockerMissing`].
    pub fn new(config: &Config, image: &str) -> anyhow::Result<DockerEnv> {
        let mut env = DockerEnv::configured(config, image)?;
        let docker = which::which("docker").map_err(|_| DockerMissing)?;
        env.client = client(&docker, config.get("docker.sudo"));
        Ok(env)
    }

    /// Everything but the client, which needs docker itself.
    fn configured(config: &Config, image: &str) -> anyhow::Result<DockerEnv> {
        if image.is_empty() || image.starts_with('-') || image.chars().any(char::is_whitespace) {
            bail!("invalid docker image name '{image}'");
        }
        let mut notes = Vec::new();
        let (clr_lib, rocr_lib) = if config.bool("docker.mount_clr") {
            let clr = clr_lib(config)?;
            volume(&clr, CLR_MOUNT)?;
            let rocr = rocr_lib(config, &mut notes);
            if let Some(dir) = &rocr {
                volume(dir, ROCR_MOUNT)?;
            }
            (Some(clr), rocr)
        } else {
            (None, None)
        };
        let extra_ld = config
            .str("docker.extra_ld")
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .or_else(|| {
                image
                    .starts_with("rocm/vllm:")
                    .then(|| VLLM_SDK_LIB.to_string())
            });
        let mut ld: Vec<&str> = Vec::new();
        if clr_lib.is_some() {
            ld.push(CLR_MOUNT);
        }
        if rocr_lib.is_some() {
            ld.push(ROCR_MOUNT);
        }
        ld.extend(extra_ld.as_deref());
        ld.push(IMAGE_ROCM_LIB);
        let ld_library_path = ld.join(":");
        let passed = passed_through(
            std::env::vars_os(),
            &config.strings("docker.env"),
            &OWN_VARIABLES,
        )?;
        Ok(DockerEnv {
            client: Vec::new(),
            image: image.to_string(),
            clr_lib,
            rocr_lib,
            passed,
            ld_library_path,
            notes,
        })
    }

    /// The argv of `docker <args>` as this environment calls docker.
    pub fn command<S: Into<String>>(&self, args: impl IntoIterator<Item = S>) -> Vec<String> {
        let mut argv = self.client.clone();
        argv.extend(args.into_iter().map(Into::into));
        argv
    }

    /// The client argv prefix: the docker found on PATH, or `sudo -n` and it.
    pub fn client(&self) -> &[String] {
        &self.client
    }

    /// Whether docker is called through `sudo -n`.
    pub fn uses_sudo(&self) -> bool {
        self.client.first().is_some_and(|c| c == "sudo")
    }

    /// The image every container runs.
    pub fn image(&self) -> &str {
        &self.image
    }

    /// The host CLR lib dir mounted at [`CLR_MOUNT`], with
    /// `docker.mount_clr`.
    pub fn clr_lib(&self) -> Option<&Path> {
        self.clr_lib.as_deref()
    }

    /// The `-v` values of the overlay, read-only: the CLR lib dir, then the
    /// ROCr lib dir when there is one.
    pub fn overlay_mounts(&self) -> Vec<OsString> {
        self.clr_lib
            .iter()
            .map(|d| (d, CLR_MOUNT))
            .chain(self.rocr_lib.iter().map(|d| (d, ROCR_MOUNT)))
            .filter_map(|(d, at)| volume(d, at).ok())
            .collect()
    }

    /// The `-e` values `NAME=value` taken from hrr's environment (see
    /// [`passed_through`]), sorted by name.
    pub fn passed_env(&self) -> &[String] {
        &self.passed
    }

    /// `LD_LIBRARY_PATH` inside the container: `[<extra>:]/opt/rocm/lib`, or
    /// with the overlay `/opt/hrr/lib[:/opt/hrr/rocr][:<extra>]:/opt/rocm/lib`.
    pub fn ld_library_path(&self) -> &str {
        &self.ld_library_path
    }

    /// Why a part of the requested overlay is not mounted, in words.
    pub fn notes(&self) -> &[String] {
        &self.notes
    }
}

/// The docker client argv prefix per `docker.sudo`: `true` is `sudo -n
/// docker`, `false` plain `docker`; `auto` is plain `docker` when its
/// `docker info` works, else `sudo -n docker` when `sudo` is on PATH and
/// that `docker info` works, else plain `docker` (whose failure the caller
/// then reports).
fn client(docker: &Path, sudo: Option<&toml::Value>) -> Vec<String> {
    let plain = vec![docker.display().to_string()];
    let with_sudo = vec!["sudo".into(), "-n".into(), docker.display().to_string()];
    let works = |prefix: &[String]| {
        let mut argv = prefix.to_vec();
        argv.push("info".into());
        let opts = ExecOptions {
            timeout: Some(INFO_TIMEOUT),
            ..ExecOptions::default()
        };
        subprocess::run(&argv, &opts).is_ok_and(|c| c.success())
    };
    match sudo {
        Some(toml::Value::Boolean(true)) => with_sudo,
        Some(toml::Value::Boolean(false)) => plain,
        _ if works(&plain) => plain,
        _ if which::which("sudo").is_ok() && works(&with_sudo) => with_sudo,
        _ => plain,
    }
}

/// The CLR lib dir of the overlay: the first of
/// `<docker.clr_build>/hipamd/lib` and `lib/` beside `playback.path`'s
/// `bin/` that holds `libamdhip64.so*`; none is an error naming both.
fn clr_lib(config: &Config) -> anyhow::Result<PathBuf> {
    let mut candidates = Vec::new();
    if let Some(build) = config.str("docker.clr_build").filter(|s| !s.is_empty()) {
        candidates.push(Path::new(build).join("hipamd").join("lib"));
    }
    if let Some(bin) = config
        .str("playback.path")
        .filter(|s| !s.is_empty())
        .and_then(|p| Path::new(p).parent())
    {
        candidates.push(bin.join("..").join("lib"));
    }
    if let Some(found) = candidates.iter().find(|d| holds(d, CLR_LIBRARY)) {
        return Ok(found.clone());
    }
    let tried: Vec<String> = candidates.iter().map(|d| d.display().to_string()).collect();
    bail!(
        "docker.mount_clr is set but no CLR lib dir with {CLR_LIBRARY}* was found ({}); set \
         docker.clr_build (or CLR_BUILD) to a CLR build directory, whose hipamd/lib is mounted",
        if tried.is_empty() {
            "neither docker.clr_build nor playback.path is set".to_string()
        } else {
            format!("tried {}", tried.join(", "))
        }
    )
}

/// The ROCr lib dir of the overlay: `playback.rocr_lib` when it holds
/// `libhsa-runtime64.so.1`. One without it is not mounted, and `notes`
/// says so.
fn rocr_lib(config: &Config, notes: &mut Vec<String>) -> Option<PathBuf> {
    let dir = PathBuf::from(config.str("playback.rocr_lib").filter(|s| !s.is_empty())?);
    if dir.join(ROCR_LIBRARY).is_file() {
        return Some(dir);
    }
    notes.push(format!(
        "playback.rocr_lib {} holds no {ROCR_LIBRARY}; it is not mounted, and the image's ROCr is used",
        dir.display()
    ));
    None
}

/// `dir` holds a file whose name starts with `prefix`.
fn holds(dir: &Path, prefix: &str) -> bool {
    std::fs::read_dir(dir).is_ok_and(|entries| {
        entries
            .filter_map(Result::ok)
            .any(|e| e.file_name().to_string_lossy().starts_with(prefix))
    })
}

/// The `-v` value `<host>:<container>:ro`; a host path with `:` or `,`
/// cannot be expressed there and is refused.
pub fn volume(host: &Path, container: &str) -> anyhow::Result<OsString> {
    if host.to_string_lossy().contains([':', ',']) {
        bail!(
            "cannot mount {} into the container: docker -v paths must not contain ':' or ','; move or link it to a plain path",
            host.display()
        );
    }
    let mut v = host.as_os_str().to_os_string();
    v.push(format!(":{container}:ro"));
    Ok(v)
}

/// The replay-relevant variables of hrr's environment (`vars`), as `-e`
/// values `NAME=value`, so a container gets what a native replay inherits:
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

// The client is checked against fake docker and sudo programs in
// tests/docker_env.rs, with the preflight and the replay that use it.
#[cfg(all(test, unix))]
mod tests {
    use super::*;

    fn config(sets: &[&str]) -> Config {
        Config::with_overrides(sets).unwrap()
    }

    #[test]
    fn the_library_path_puts_the_overlay_first_and_the_images_rocm_last() {
        let env = DockerEnv::configured(&config(&[]), "rocm/vllm:latest").unwrap();
        assert_eq!(
            env.ld_library_path(),
            format!("{VLLM_SDK_LIB}:/opt/rocm/lib")
        );
        assert!(env.overlay_mounts().is_empty());
        let env = DockerEnv::configured(&config(&[]), "ubuntu:22.04").unwrap();
        assert_eq!(env.ld_library_path(), "/opt/rocm/lib");

        let dir = tempfile::tempdir().unwrap();
        let clr = dir.path().join("clr/hipamd/lib");
        let rocr = dir.path().join("rocr");
        std::fs::create_dir_all(&clr).unwrap();
        std::fs::create_dir_all(&rocr).unwrap();
        std::fs::write(clr.join("libamdhip64.so.7.2.53211"), b"").unwrap();
        std::fs::write(rocr.join("libhsa-runtime64.so.1"), b"").unwrap();
        let c = config(&[
            "docker.mount_clr=true",
            &format!("docker.clr_build={}", dir.path().join("clr").display()),
            &format!("playback.rocr_lib={}", rocr.display()),
            "docker.extra_ld=/x/lib",
        ]);
        let env = DockerEnv::configured(&c, "img").unwrap();
        assert_eq!(
            env.ld_library_path(),
            "/opt/hrr/lib:/opt/hrr/rocr:/x/lib:/opt/rocm/lib"
        );
        assert_eq!(env.clr_lib(), Some(clr.as_path()));
        assert_eq!(
            env.overlay_mounts(),
            [
                OsString::from(format!("{}:/opt/hrr/lib:ro", clr.display())),
                OsString::from(format!("{}:/opt/hrr/rocr:ro", rocr.display())),
            ]
        );
    }

    #[test]
    fn the_clr_overlay_falls_back_to_lib_beside_the_player() {
        let dir = tempfile::tempdir().unwrap();
        let player = dir.path().join("opt/bin/hrr-playback");
        let lib = dir.path().join("opt/lib");
        std::fs::create_dir_all(player.parent().unwrap()).unwrap();
        std::fs::create_dir_all(&lib).unwrap();
        std::fs::write(lib.join("libamdhip64.so.7.2.53211"), b"").unwrap();
        let empty_build = dir.path().join("clr");
        std::fs::create_dir_all(empty_build.join("hipamd/lib")).unwrap();
        let c = config(&[
            &format!("docker.clr_build={}", empty_build.display()),
            &format!("playback.path={}", player.display()),
        ]);
        assert_eq!(clr_lib(&c).unwrap(), dir.path().join("opt/bin/../lib"));
        let err = clr_lib(&config(&[&format!(
            "docker.clr_build={}",
            empty_build.display()
        )]))
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("no CLR lib dir with libamdhip64.so* was found (tried ")
                && err.contains("clr/hipamd/lib"),
            "{err}"
        );
        assert!(clr_lib(&config(&[]))
            .unwrap_err()
            .to_string()
            .contains("neither docker.clr_build nor playback.path is set"));
    }

    #[test]
    fn a_rocr_dir_without_the_runtime_is_not_mounted_and_says_why() {
        let dir = tempfile::tempdir().unwrap();
        let c = config(&[&format!("playback.rocr_lib={}", dir.path().display())]);
        let mut notes = Vec::new();
        assert_eq!(rocr_lib(&c, &mut notes), None);
        assert!(
            notes[0].contains("holds no libhsa-runtime64.so.1"),
            "{notes:?}"
        );
        std::fs::write(dir.path().join("libhsa-runtime64.so.1"), b"").unwrap();
        let mut notes = Vec::new();
        assert_eq!(rocr_lib(&c, &mut notes), Some(dir.path().to_path_buf()));
        assert!(notes.is_empty());
    }

    #[test]
    fn paths_docker_cannot_express_and_option_like_images_are_refused() {
        assert!(volume(Path::new("/data/a:b"), CLR_MOUNT).is_err());
        assert!(volume(Path::new("/data/a,b"), CLR_MOUNT).is_err());
        assert_eq!(
            volume(Path::new("/data/lib"), CLR_MOUNT).unwrap(),
            "/data/lib:/opt/hrr/lib:ro"
        );
        for image in ["", "--privileged", "img name"] {
            let err = DockerEnv::configured(&config(&[]), image).unwrap_err();
            assert!(
                err.to_string().contains("invalid docker image name"),
                "{err}"
            );
        }
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
        let got = passed_through(set.into_iter(), &["MY_SETTING".into()], &OWN_VARIABLES).unwrap();
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
        let err = passed_through(std::iter::empty(), &["A=1".into()], &OWN_VARIABLES).unwrap_err();
        assert!(err
            .to_string()
            .contains("\"A=1\" is not an environment variable name"));
    }
}
