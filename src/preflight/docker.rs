//! The docker probe (reference §4.5): what a container image offers, asked
//! through `docker run --rm --device=/dev/kfd --device=/dev/dri <image> …`.
//! Every argument is a separate argv element; the only shell text is the
//! fixed probe script below, and nothing from the archive reaches docker.

use std::time::Duration;

use anyhow::bail;

use super::host::{hip_version_in, HostFacts, HostProbe};
use super::smi;
use crate::config::Config;
use crate::docker_env::{DockerEnv, DockerMissing};
use crate::subprocess::{self, Captured, ExecOptions};

/// Time limit of the GPU/HIP probe container (upstream: 120 s).
const GPU_PROBE_TIMEOUT: Duration = Duration::from_secs(120);
/// Time limit of the comgr probe container (upstream: 60 s).
const COMGR_PROBE_TIMEOUT: Duration = Duration::from_secs(60);

/// Runs inside the image (as `bash -lc`, so the image's login profile sets
/// its PATH): the GPU list from rocm-smi (or amd-smi's JSON), then the
/// `HIP_VERSION_*` lines of `<rocm>/share/hip/version`. Sections start with
/// `hrr-probe: <name>` lines. The library path comes in as `HRR_PROBE_LD`.
const GPU_SCRIPT: &str = r#"export LD_LIBRARY_PATH="$HRR_PROBE_LD"
if command -v rocm-smi >/dev/null 2>&1; then
  echo "hrr-probe: rocm-smi"; rocm-smi --showid --showproductname 2>&1
elif command -v amd-smi >/dev/null 2>&1; then
  echo "hrr-probe: amd-smi"; amd-smi static --asic --json 2>&1
fi
echo "hrr-probe: hip-version"
cat "${ROCM_PATH:-/opt/rocm}/share/hip/version" 2>/dev/null
"#;

/// Runs inside the image with `python3 -c`: load the first
/// `libamd_comgr.so*` on `LD_LIBRARY_PATH` (then `/opt/rocm/lib`) and print
/// `major.minor` from `amd_comgr_get_version`.
const COMGR_SCRIPT: &str = r#"import ctypes, glob, os
dirs = [d for d in os.environ.get("LD_LIBRARY_PATH", "").split(":") if d] + ["/opt/rocm/lib"]
for d in dirs:
    for p in sorted(glob.glob(os.path.join(d, "libamd_comgr.so*"))):
        try:
            lib = ctypes.CDLL(p)
            ma, mi = ctypes.c_size_t(), ctypes.c_size_t()
            lib.amd_comgr_get_version(ctypes.byref(ma), ctypes.byref(mi))
        except (OSError, AttributeError):
            continue
        print("%d.%d" % (ma.value, mi.value))
        raise SystemExit(0)
raise SystemExit(1)
"#;

/// The docker probe of one image: containers of the [`DockerEnv`] a docker
/// replay of it would run in (same client, image, overlay, variables and
/// library path).
#[derive(Clone, Debug)]
pub struct DockerProbe {
    /// The environment, or why docker is not there to probe.
    env: Result<DockerEnv, String>,
}

impl DockerProbe {
    /// The probe of `image` in the docker environment of `config` (see
    /// [`DockerEnv::new`]). A configuration the replay would refuse (an
    /// image name docker would read as an option, `docker.mount_clr` without
    /// a CLR lib dir, a mount path docker cannot express) is an error; a
    /// missing docker CLI is the probe's `docker:unavailable` outcome.
    pub fn new(config: &Config, image: &str) -> anyhow::Result<DockerProbe> {
        if cfg!(windows) {
            bail!("docker preflight is not supported on Windows; use WSL2 and run hrr there");
        }
        let env = match DockerEnv::new(config, image) {
            Ok(env) => Ok(env),
            Err(e) if e.is::<DockerMissing>() => Err(format!("docker is not available: {e}")),
            Err(e) => return Err(e),
        };
        Ok(DockerProbe { env })
    }
}

/// The `-v` and `-e` options every probe container gets from `env`.
fn env_args(env: &DockerEnv) -> Vec<String> {
    let mut a = Vec::new();
    for m in env.overlay_mounts() {
        a.extend(["-v".to_string(), m.to_string_lossy().into_owned()]);
    }
    for e in env.passed_env() {
        a.extend(["-e".to_string(), e.clone()]);
    }
    a.extend([
        "-e".to_string(),
        format!("LD_LIBRARY_PATH={}", env.ld_library_path()),
    ]);
    a
}

/// `docker run` of the GPU/HIP probe: the GPU devices, the environment,
/// and the library path again as `HRR_PROBE_LD`, which the script exports
/// after the login profile ran.
fn gpu_argv(env: &DockerEnv) -> Vec<String> {
    let mut a: Vec<String> = ["run", "--rm", "--device=/dev/kfd", "--device=/dev/dri"]
        .map(String::from)
        .to_vec();
    a.extend(env_args(env));
    a.extend([
        "-e".into(),
        format!("HRR_PROBE_LD={}", env.ld_library_path()),
        env.image().to_string(),
        "bash".into(),
        "-lc".into(),
        GPU_SCRIPT.into(),
    ]);
    env.command(a)
}

/// `docker run` of the comgr probe (no devices needed).
fn comgr_argv(env: &DockerEnv) -> Vec<String> {
    let mut a: Vec<String> = vec!["run".into(), "--rm".into()];
    a.extend(env_args(env));
    a.extend([
        env.image().to_string(),
        "python3".into(),
        "-c".into(),
        COMGR_SCRIPT.into(),
    ]);
    env.command(a)
}

/// `host.source`: `docker:<image>`, with the overlay's CLR dir when mounted.
fn source(env: &DockerEnv) -> String {
    match env.clr_lib() {
        Some(clr) => format!("docker:{}:overlay:{}", env.image(), clr.display()),
        None => format!("docker:{}", env.image()),
    }
}

impl HostProbe for DockerProbe {
    fn probe(&self) -> HostFacts {
        let env = match &self.env {
            Ok(env) => env,
            Err(why) => return HostFacts::unprobed("docker:unavailable", why.clone()),
        };
        let captured = match run_docker(env, &gpu_argv(env), GPU_PROBE_TIMEOUT) {
            Outcome::Ran(c) => c,
            Outcome::Unavailable(why) => return HostFacts::unprobed("docker:unavailable", why),
            Outcome::Denied(why) => return HostFacts::unprobed("docker:permission-denied", why),
        };
        let text = format!(
            "{}\n{}",
            captured.stdout_text(),
            String::from_utf8_lossy(&captured.stderr)
        );
        let sections = split_sections(&text);
        if !captured.success() && !captured.timed_out && sections.is_empty() {
            // The container never ran the probe script: no daemon, no
            // image, no runtime for the devices.
            return HostFacts::unprobed(
                "docker:unavailable",
                format!(
                    "docker could not run {}: {}",
                    env.image(),
                    first_line(&String::from_utf8_lossy(&captured.stderr))
                ),
            );
        }
        let mut facts = HostFacts {
            source: source(env),
            ..HostFacts::default()
        };
        facts.problems.extend(env.notes().iter().cloned());
        if captured.timed_out {
            facts.problems.push(format!(
                "the docker probe timed out after {}s",
                GPU_PROBE_TIMEOUT.as_secs()
            ));
        } else if !captured.success() {
            facts.problems.push(format!(
                "the docker probe exited with status {}: {}",
                captured.status.map_or("?".into(), |s| s.to_string()),
                first_line(&String::from_utf8_lossy(&captured.stderr))
            ));
        }
        let gpus = match (sections.get("rocm-smi"), sections.get("amd-smi")) {
            (Some(t), _) => smi::SmiProbe {
                tool: Some("rocm-smi".into()),
                gpus: smi::parse_rocm_smi(t),
                problem: None,
            },
            (None, Some(t)) => smi::SmiProbe {
                tool: Some("amd-smi".into()),
                gpus: smi::parse_amd_smi(t).unwrap_or_default(),
                problem: None,
            },
            (None, None) => smi::SmiProbe {
                problem: Some("the image has neither rocm-smi nor amd-smi".into()),
                ..Default::default()
            },
        };
        facts.set_gpus(gpus);
        if facts.visible_gpus.is_none() && facts.gpu_tool.is_some() {
            facts
                .problems
                .push("the image's GPU tool listed no GPU".into());
        }
        let overlay_hip = env.clr_lib().and_then(hip_version_in);
        if let Some((v, from)) = overlay_hip {
            facts.hip_runtime_version = Some(v);
            facts.hip_runtime_from = Some(from.display().to_string());
        } else if let Some(v) = sections
            .get("hip-version")
            .and_then(|t| parse_hip_version_file(t))
        {
            facts.hip_runtime_version = Some(v);
            facts.hip_runtime_from = Some(format!("{}:/opt/rocm/share/hip/version", env.image()));
        } else {
            facts
                .problems
                .push("the image has no readable share/hip/version".into());
        }
        let comgr = run(&comgr_argv(env), COMGR_PROBE_TIMEOUT);
        match comgr {
            Ok(c) if c.success() => {
                let out = c.stdout_text();
                let v = out.lines().map(str::trim).find(|l| is_major_minor(l));
                facts.comgr_version = v.map(str::to_string);
                facts.comgr_from = v.map(|_| format!("{}:libamd_comgr.so", env.image()));
            }
            Ok(c) => facts.problems.push(format!(
                "the image's comgr probe failed (python3 and libamd_comgr.so* are needed): {}",
                first_line(&String::from_utf8_lossy(&c.stderr))
            )),
            Err(e) => facts
                .problems
                .push(format!("the comgr probe could not run: {e:#}")),
        }
        facts
    }
}

enum Outcome {
    /// Docker ran (maybe unsuccessfully).
    Ran(Captured),
    Unavailable(String),
    Denied(String),
}

/// Runs `argv` (a docker command of `env`). A docker that cannot be
/// started is `Unavailable` (through `sudo -n`: `Denied`); a run refused
/// with "permission denied" is `Denied`.
fn run_docker(env: &DockerEnv, argv: &[String], timeout: Duration) -> Outcome {
    let c = match run(argv, timeout) {
        Ok(c) => c,
        Err(e) if env.uses_sudo() => {
            return Outcome::Denied(format!("sudo -n docker could not run: {e:#}"))
        }
        Err(e) => return Outcome::Unavailable(format!("docker is not available: {e:#}")),
    };
    if !denied(&c) {
        return Outcome::Ran(c);
    }
    let why = first_line(&String::from_utf8_lossy(&c.stderr));
    if env.uses_sudo() {
        return Outcome::Denied(why);
    }
    Outcome::Denied(format!(
        "docker refused: {why} (add yourself to the docker group, or allow `sudo -n docker` and set docker.sudo)"
    ))
}

fn run(argv: &[String], timeout: Duration) -> anyhow::Result<Captured> {
    subprocess::run(
        argv,
        &ExecOptions {
            timeout: Some(timeout),
            ..ExecOptions::default()
        },
    )
}

fn denied(c: &Captured) -> bool {
    !c.success()
        && format!("{}{}", c.stdout_text(), String::from_utf8_lossy(&c.stderr))
            .to_ascii_lowercase()
            .contains("permission denied")
}

/// The probe script's output split at its `hrr-probe: <name>` lines.
fn split_sections(text: &str) -> std::collections::HashMap<String, String> {
    let mut out = std::collections::HashMap::new();
    let mut current: Option<String> = None;
    for line in text.lines() {
        if let Some(name) = line.strip_prefix("hrr-probe: ") {
            current = Some(name.trim().to_string());
            out.entry(name.trim().to_string())
                .or_insert_with(String::new);
        } else if let Some(name) = &current {
            let s = out.get_mut(name).expect("section created above");
            s.push_str(line);
            s.push('\n');
        }
    }
    out
}

/// `M.m.p` from the `HIP_VERSION_MAJOR=`, `HIP_VERSION_MINOR=`,
/// `HIP_VERSION_PATCH=` lines of `share/hip/version` (a `-githash` tail on
/// the patch is dropped).
fn parse_hip_version_file(text: &str) -> Option<String> {
    let field = |key: &str| {
        text.lines().find_map(|l| {
            let v = l.trim().strip_prefix(key)?.strip_prefix('=')?;
            let v = v.trim().split('-').next()?;
            v.parse::<u64>().ok()
        })
    };
    Some(format!(
        "{}.{}.{}",
        field("HIP_VERSION_MAJOR")?,
        field("HIP_VERSION_MINOR")?,
        field("HIP_VERSION_PATCH")?
    ))
}

fn is_major_minor(s: &str) -> bool {
    matches!(s.split_once('.'), Some((a, b)) if !a.is_empty() && !b.is_empty()
        && a.bytes().all(|c| c.is_ascii_digit()) && b.bytes().all(|c| c.is_ascii_digit()))
}

fn first_line(s: &str) -> String {
    s.lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("no output")
        .to_string()
}

// Docker preflight is refused on Windows, so its tests are not built there.
#[cfg(all(test, not(windows)))]
mod tests {
    use super::*;

    #[test]
    fn probe_output_sections_and_versions() {
        let out = "hrr-probe: rocm-smi\nGPU[0]\t\t: GFX Version: gfx942\nhrr-probe: hip-version\nHIP_VERSION_MAJOR=7\nHIP_VERSION_MINOR=2\nHIP_VERSION_PATCH=53211-abc\n";
        let s = split_sections(out);
        assert_eq!(smi::parse_rocm_smi(&s["rocm-smi"]).len(), 1);
        assert_eq!(
            parse_hip_version_file(&s["hip-version"]).as_deref(),
            Some("7.2.53211")
        );
        assert!(parse_hip_version_file("HIP_VERSION_MAJOR=7\n").is_none());
        assert!(is_major_minor("2.8") && !is_major_minor("2.") && !is_major_minor("x.8"));
    }
}
