//! The docker probe (reference §4.5): what a container image offers, asked
//! through `docker run --rm --device=/dev/kfd --device=/dev/dri <image> …`.
//! Every argument is a separate argv element; the only shell text is the
//! fixed probe script below, and nothing from the archive reaches docker.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::bail;

use super::host::{hip_version_in, HostFacts, HostProbe};
use super::smi;
use crate::config::Config;
use crate::subprocess::{self, Captured, ExecOptions};

/// Time limit of the GPU/HIP probe container (upstream: 120 s).
const GPU_PROBE_TIMEOUT: Duration = Duration::from_secs(120);
/// Time limit of the comgr probe container (upstream: 60 s).
const COMGR_PROBE_TIMEOUT: Duration = Duration::from_secs(60);
/// Where the host CLR libraries are mounted with `docker.mount_clr`.
const CLR_MOUNT: &str = "/opt/hrr/lib";
/// Where the host ROCr libraries are mounted with `docker.mount_clr`.
const ROCR_MOUNT: &str = "/opt/hrr/rocr";
/// The library dir of `rocm/vllm:` images' bundled ROCm SDK.
const VLLM_SDK_LIB: &str = "/opt/python/lib/python3.13/site-packages/_rocm_sdk_core/lib";

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

/// How to call docker: through `sudo -n` always, never, or when docker
/// itself is refused and `sudo -n true` works (`docker.sudo`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sudo {
    /// `docker.sudo = "auto"`.
    Auto,
    /// `docker.sudo = true`.
    Always,
    /// `docker.sudo = false`.
    Never,
}

/// The docker probe of one image.
#[derive(Clone, Debug)]
pub struct DockerProbe {
    image: String,
    sudo: Sudo,
    clr_lib: Option<PathBuf>,
    rocr_lib: Option<PathBuf>,
    extra_ld: Option<String>,
    /// Why a requested overlay is not used.
    overlay_problem: Option<String>,
}

impl DockerProbe {
    /// The probe of `image` with the docker settings of `config`
    /// (`docker.sudo`, `docker.mount_clr`, `docker.clr_build`,
    /// `docker.extra_ld`, `playback.path`, `playback.rocr_lib`). An image
    /// name that docker would read as an option, or a mount path docker
    /// cannot express, is an error.
    pub fn new(config: &Config, image: &str) -> anyhow::Result<DockerProbe> {
        if cfg!(windows) {
            bail!("docker preflight is not supported on Windows; use WSL2 and run hrr there");
        }
        if image.is_empty() || image.starts_with('-') || image.chars().any(char::is_whitespace) {
            bail!("invalid docker image name '{image}'");
        }
        let sudo = match config.get("docker.sudo") {
            Some(toml::Value::Boolean(true)) => Sudo::Always,
            Some(toml::Value::Boolean(false)) => Sudo::Never,
            _ => Sudo::Auto,
        };
        let mut probe = DockerProbe {
            image: image.to_string(),
            sudo,
            clr_lib: None,
            rocr_lib: None,
            extra_ld: config
                .str("docker.extra_ld")
                .filter(|s| !s.is_empty())
                .map(str::to_string)
                .or_else(|| {
                    image
                        .starts_with("rocm/vllm:")
                        .then(|| VLLM_SDK_LIB.to_string())
                }),
            overlay_problem: None,
        };
        if config.bool("docker.mount_clr") {
            probe.clr_lib = clr_lib_candidates(config)
                .into_iter()
                .find(|d| holds(d, "libamdhip64.so"));
            if probe.clr_lib.is_none() {
                probe.overlay_problem = Some(
                    "docker.mount_clr is set but no CLR lib dir with libamdhip64.so* was found \
                     (docker.clr_build/hipamd/lib, or lib/ beside playback.path); probing the image's own stack"
                        .into(),
                );
            } else {
                probe.rocr_lib = config
                    .str("playback.rocr_lib")
                    .map(PathBuf::from)
                    .filter(|d| d.join("libhsa-runtime64.so.1").exists());
            }
        }
        for dir in probe.clr_lib.iter().chain(&probe.rocr_lib) {
            if dir.to_string_lossy().contains(':') {
                bail!(
                    "cannot mount {} into docker: the path contains ':'",
                    dir.display()
                );
            }
        }
        Ok(probe)
    }

    /// `LD_LIBRARY_PATH` inside the container: `[<extra>:]/opt/rocm/lib`, or
    /// with the overlay `/opt/hrr/lib[:/opt/hrr/rocr][:<extra>]:/opt/rocm/lib`.
    fn ld_path(&self) -> String {
        let mut parts: Vec<&str> = Vec::new();
        if self.clr_lib.is_some() {
            parts.push(CLR_MOUNT);
            if self.rocr_lib.is_some() {
                parts.push(ROCR_MOUNT);
            }
        }
        parts.extend(self.extra_ld.as_deref());
        parts.push("/opt/rocm/lib");
        parts.join(":")
    }

    fn mounts(&self, with_rocr: bool) -> Vec<String> {
        let mut v = Vec::new();
        if let Some(clr) = &self.clr_lib {
            v.extend([
                "-v".to_string(),
                format!("{}:{CLR_MOUNT}:ro", clr.display()),
            ]);
        }
        if let (true, Some(rocr)) = (with_rocr, &self.rocr_lib) {
            v.extend([
                "-v".to_string(),
                format!("{}:{ROCR_MOUNT}:ro", rocr.display()),
            ]);
        }
        v
    }

    fn gpu_argv(&self) -> Vec<String> {
        let mut a: Vec<String> = ["run", "--rm", "--device=/dev/kfd", "--device=/dev/dri"]
            .map(String::from)
            .to_vec();
        a.extend(self.mounts(true));
        a.extend(["-e".into(), format!("HRR_PROBE_LD={}", self.ld_path())]);
        a.extend([
            self.image.clone(),
            "bash".into(),
            "-lc".into(),
            GPU_SCRIPT.into(),
        ]);
        a
    }

    fn comgr_argv(&self) -> Vec<String> {
        let mut a: Vec<String> = vec!["run".into(), "--rm".into()];
        a.extend(self.mounts(false));
        a.extend(["-e".into(), format!("LD_LIBRARY_PATH={}", self.ld_path())]);
        a.extend([
            self.image.clone(),
            "python3".into(),
            "-c".into(),
            COMGR_SCRIPT.into(),
        ]);
        a
    }

    fn source(&self) -> String {
        match &self.clr_lib {
            Some(clr) => format!("docker:{}:overlay:{}", self.image, clr.display()),
            None => format!("docker:{}", self.image),
        }
    }
}

impl HostProbe for DockerProbe {
    fn probe(&self) -> HostFacts {
        let first = run_docker(&self.gpu_argv(), self.sudo, GPU_PROBE_TIMEOUT);
        let (captured, sudo) = match first {
            Outcome::Ran(c, sudo) => (c, sudo),
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
                    self.image,
                    first_line(&String::from_utf8_lossy(&captured.stderr))
                ),
            );
        }
        let mut facts = HostFacts {
            source: self.source(),
            ..HostFacts::default()
        };
        facts.problems.extend(self.overlay_problem.clone());
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
        let overlay_hip = self.clr_lib.as_deref().and_then(hip_version_in);
        if let Some((v, from)) = overlay_hip {
            facts.hip_runtime_version = Some(v);
            facts.hip_runtime_from = Some(from.display().to_string());
        } else if let Some(v) = sections
            .get("hip-version")
            .and_then(|t| parse_hip_version_file(t))
        {
            facts.hip_runtime_version = Some(v);
            facts.hip_runtime_from = Some(format!("{}:/opt/rocm/share/hip/version", self.image));
        } else {
            facts
                .problems
                .push("the image has no readable share/hip/version".into());
        }
        let comgr = run_with(&self.comgr_argv(), sudo, COMGR_PROBE_TIMEOUT);
        match comgr {
            Ok(c) if c.success() => {
                let out = c.stdout_text();
                let v = out.lines().map(str::trim).find(|l| is_major_minor(l));
                facts.comgr_version = v.map(str::to_string);
                facts.comgr_from = v.map(|_| format!("{}:libamd_comgr.so", self.image));
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
    /// Docker ran (maybe unsuccessfully); `true` when through `sudo -n`.
    Ran(Captured, bool),
    Unavailable(String),
    Denied(String),
}

/// Runs `docker <args>` per the sudo policy. A missing docker is
/// `Unavailable`; "permission denied" (without a working `sudo -n`) is
/// `Denied`.
fn run_docker(args: &[String], sudo: Sudo, timeout: Duration) -> Outcome {
    let first_with_sudo = sudo == Sudo::Always;
    let c = match run_with(args, first_with_sudo, timeout) {
        Ok(c) => c,
        Err(e) if first_with_sudo => {
            return Outcome::Denied(format!("sudo -n docker could not run: {e:#}"))
        }
        Err(e) => return Outcome::Unavailable(format!("docker is not available: {e:#}")),
    };
    if !denied(&c) {
        return Outcome::Ran(c, first_with_sudo);
    }
    if sudo == Sudo::Auto && sudo_works() {
        return match run_with(args, true, timeout) {
            Ok(c) if !denied(&c) => Outcome::Ran(c, true),
            Ok(c) => Outcome::Denied(first_line(&String::from_utf8_lossy(&c.stderr))),
            Err(e) => Outcome::Denied(format!("sudo -n docker could not run: {e:#}")),
        };
    }
    Outcome::Denied(format!(
        "docker refused: {} (add yourself to the docker group, or allow `sudo -n docker` and set docker.sudo)",
        first_line(&String::from_utf8_lossy(&c.stderr))
    ))
}

fn run_with(args: &[String], sudo: bool, timeout: Duration) -> anyhow::Result<Captured> {
    let mut argv: Vec<String> = if sudo {
        vec!["sudo".into(), "-n".into(), "docker".into()]
    } else {
        vec!["docker".into()]
    };
    argv.extend(args.iter().cloned());
    subprocess::run(
        &argv,
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

fn sudo_works() -> bool {
    let argv = ["sudo", "-n", "true"].map(String::from);
    subprocess::run(
        &argv,
        &ExecOptions {
            timeout: Some(Duration::from_secs(10)),
            ..Default::default()
        },
    )
    .is_ok_and(|c| c.success())
}

/// The CLR lib dirs tried for the overlay: `<docker.clr_build>/hipamd/lib`,
/// then `lib/` beside the configured player's `bin/`.
fn clr_lib_candidates(config: &Config) -> Vec<PathBuf> {
    let mut v = Vec::new();
    if let Some(b) = config.str("docker.clr_build").filter(|s| !s.is_empty()) {
        v.push(Path::new(b).join("hipamd").join("lib"));
    }
    if let Some(dir) = config
        .str("playback.path")
        .and_then(|p| Path::new(p).parent())
    {
        v.push(dir.join("..").join("lib"));
    }
    v
}

/// `dir` holds a file whose name starts with `prefix`.
fn holds(dir: &Path, prefix: &str) -> bool {
    std::fs::read_dir(dir).is_ok_and(|entries| {
        entries
            .filter_map(Result::ok)
            .any(|e| e.file_name().to_string_lossy().starts_with(prefix))
    })
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
    fn ld_path_and_argv_shapes() {
        let c = Config::with_overrides(&[]).unwrap();
        let p = DockerProbe::new(&c, "rocm/vllm:latest").unwrap();
        assert_eq!(p.ld_path(), format!("{VLLM_SDK_LIB}:/opt/rocm/lib"));
        let argv = p.gpu_argv();
        assert_eq!(
            &argv[..4],
            ["run", "--rm", "--device=/dev/kfd", "--device=/dev/dri"]
        );
        assert_eq!(argv[argv.len() - 3..argv.len() - 1], ["bash", "-lc"]);
        assert_eq!(argv[argv.len() - 4], "rocm/vllm:latest");
        let p = DockerProbe::new(&c, "ubuntu:22.04").unwrap();
        assert_eq!(p.ld_path(), "/opt/rocm/lib");
        assert!(DockerProbe::new(&c, "--privileged").is_err());
    }

    #[test]
    fn overlay_mounts_clr_and_rocr() {
        let dir = tempfile::tempdir().unwrap();
        let clr = dir.path().join("clr/hipamd/lib");
        let rocr = dir.path().join("rocr");
        std::fs::create_dir_all(&clr).unwrap();
        std::fs::create_dir_all(&rocr).unwrap();
        std::fs::write(clr.join("libamdhip64.so.7.2.53211"), b"").unwrap();
        std::fs::write(rocr.join("libhsa-runtime64.so.1"), b"").unwrap();
        let c = Config::with_overrides(&[
            "docker.mount_clr=true",
            &format!("docker.clr_build={}", dir.path().join("clr").display()),
            &format!("playback.rocr_lib={}", rocr.display()),
            "docker.extra_ld=/x/lib",
        ])
        .unwrap();
        let p = DockerProbe::new(&c, "img").unwrap();
        assert_eq!(
            p.ld_path(),
            "/opt/hrr/lib:/opt/hrr/rocr:/x/lib:/opt/rocm/lib"
        );
        assert_eq!(p.source(), format!("docker:img:overlay:{}", clr.display()));
        let argv = p.gpu_argv();
        assert!(argv.contains(&format!("{}:/opt/hrr/lib:ro", clr.display())));
        assert!(argv.contains(&format!("{}:/opt/hrr/rocr:ro", rocr.display())));
    }

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
