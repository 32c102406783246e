//! The replay side of the preflight: what the replay host (or image) has.
//! One [`HostProbe`] trait; the Linux probe is here, the Windows one in
//! `windows.rs`, the docker one in `docker.rs`, so the rules and the report
//! are the same code for all three.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::comgr;
use super::smi::{self, HostGpu};
use crate::replay::visible::{self, DeviceMasks};

/// What the replay environment offers. `None` means unknown: a probe that
/// could not tell never fails the preflight by itself.
#[derive(Clone, Debug, Default, Serialize, PartialEq, Eq, schemars::JsonSchema)]
pub struct HostFacts {
    /// Where the facts come from: `host`, `docker:<image>`,
    /// `docker:<image>:overlay:<clr lib>`, `docker:unavailable`,
    /// `docker:permission-denied`.
    pub source: String,
    /// The tool that listed the GPUs (`rocm-smi`, `amd-smi`, `amdhip64.dll`).
    pub gpu_tool: Option<String>,
    /// The number of GPUs the replay can see: the tool's list, within the
    /// device masks of hrr's environment.
    pub visible_gpus: Option<u32>,
    /// The GPUs the tool listed, by id.
    pub gpus: Vec<HostGpu>,
    /// The device masks set in hrr's environment (`HIP_VISIBLE_DEVICES=2,3`),
    /// within which GPU indices count.
    pub device_masks: Vec<String>,
    /// The tool id of each GPU the replay can see, in GPU-index order;
    /// null for one a mask names by UUID. Empty when the count is unknown.
    pub visible_ids: Vec<Option<u32>>,
    /// The HIP runtime version, e.g. `7.2.53211`.
    pub hip_runtime_version: Option<String>,
    /// The file the HIP version was read from.
    pub hip_runtime_from: Option<String>,
    /// The comgr version, `major.minor`.
    pub comgr_version: Option<String>,
    /// The comgr library that reported it.
    pub comgr_from: Option<String>,
    /// Why some values are unknown, in words.
    pub problems: Vec<String>,
}

impl HostFacts {
    /// Facts with only a source and one problem: nothing could be probed.
    pub fn unprobed(source: &str, problem: String) -> HostFacts {
        HostFacts {
            source: source.to_string(),
            problems: vec![problem],
            ..HostFacts::default()
        }
    }

    /// Sets the GPU list (and count, when non-empty) from a management-tool
    /// probe.
    pub fn set_gpus(&mut self, probe: smi::SmiProbe) {
        self.gpu_tool = probe.tool;
        self.visible_gpus = (!probe.gpus.is_empty()).then_some(probe.gpus.len() as u32);
        self.gpus = probe.gpus;
        self.problems.extend(probe.problem);
    }

    /// The arch of GPU `id`, as the tool printed it.
    pub fn arch_of(&self, id: u32) -> Option<&str> {
        self.gpus.iter().find(|g| g.id == id)?.arch.as_deref()
    }

    /// Narrows the tool's GPU list to what the replay can see through
    /// `masks` (the rule of [`crate::replay::visible`]): `visible_gpus`
    /// becomes that count and `visible_ids` the tool ids in index order.
    pub fn apply_masks(&mut self, masks: &DeviceMasks) {
        self.device_masks = masks.describe();
        let Some(list) = self
            .visible_gpus
            .and_then(|n| visible::visible(masks, Some(n)))
        else {
            return;
        };
        self.visible_gpus = Some(list.len() as u32);
        self.visible_ids = list.iter().map(|g| g.host_index).collect();
    }

    /// The arch of the GPU at `index` among those the replay can see.
    pub fn arch_of_visible(&self, index: u32) -> Option<&str> {
        let id = match self.visible_ids.get(index as usize) {
            Some(id) => (*id)?,
            None if self.device_masks.is_empty() => index,
            None => return None,
        };
        self.arch_of(id)
    }

    /// ` within <masks>` when device masks are set, for messages.
    pub fn within_masks(&self) -> String {
        if self.device_masks.is_empty() {
            String::new()
        } else {
            format!(" within {}", self.device_masks.join(" "))
        }
    }
}

/// A way of finding out what a replay environment offers.
pub trait HostProbe {
    /// Probes; every value it cannot establish is left unknown with a
    /// problem saying why. Never fails.
    fn probe(&self) -> HostFacts;
}

/// The native probe of this platform for `ctx`'s configuration.
pub fn native(config: &crate::config::Config) -> Box<dyn HostProbe> {
    #[cfg(windows)]
    {
        Box::new(super::windows::WindowsHost::new(config.rocm_path()))
    }
    #[cfg(not(windows))]
    {
        Box::new(LinuxHost::from_env(config.rocm_path()))
    }
}

/// The Linux host probe: GPUs from `rocm-smi`/`amd-smi`, HIP version from
/// the `libamdhip64.so.X.Y.Z` file name under `<rocm>/lib`, comgr from the
/// library itself.
#[derive(Clone, Debug)]
pub struct LinuxHost {
    /// `rocm.path`.
    pub rocm: PathBuf,
    /// `PATH` to find `rocm-smi` / `amd-smi` on.
    pub search_path: Option<OsString>,
    /// `LD_LIBRARY_PATH`, the first place comgr is looked for.
    pub ld_library_path: Option<OsString>,
}

impl LinuxHost {
    /// The probe for `rocm`, with this process's `PATH` and `LD_LIBRARY_PATH`.
    pub fn from_env(rocm: PathBuf) -> LinuxHost {
        LinuxHost {
            rocm,
            search_path: std::env::var_os("PATH"),
            ld_library_path: std::env::var_os("LD_LIBRARY_PATH"),
        }
    }

    /// Where comgr is looked for: each `LD_LIBRARY_PATH` dir, `<rocm>/lib`,
    /// then the standard locations of the reference.
    fn comgr_candidates(&self) -> Vec<PathBuf> {
        let mut dirs: Vec<PathBuf> = self
            .ld_library_path
            .as_ref()
            .map(|v| {
                std::env::split_paths(v)
                    .filter(|d| !d.as_os_str().is_empty())
                    .collect()
            })
            .unwrap_or_default();
        dirs.push(self.rocm.join("lib"));
        let mut files: Vec<PathBuf> = dirs.iter().flat_map(|d| comgr::libraries_in(d)).collect();
        files.extend(
            [
                "/opt/python/lib/python3.13/site-packages/_rocm_sdk_core/lib/libamd_comgr.so.3",
                "/opt/rocm/lib/libamd_comgr.so.3",
                "/opt/rocm/lib/libamd_comgr.so",
            ]
            .iter()
            .map(PathBuf::from)
            .filter(|p| p.is_file()),
        );
        let mut seen = std::collections::HashSet::new();
        files.retain(|f| seen.insert(f.clone()));
        files
    }
}

impl HostProbe for LinuxHost {
    fn probe(&self) -> HostFacts {
        let mut facts = HostFacts {
            source: "host".into(),
            ..HostFacts::default()
        };
        facts.set_gpus(smi::probe(
            self.search_path.as_ref(),
            &[self.rocm.join("bin")],
        ));
        let lib = self.rocm.join("lib");
        match hip_version_in(&lib) {
            Some((v, from)) => {
                facts.hip_runtime_version = Some(v);
                facts.hip_runtime_from = Some(from.display().to_string());
            }
            None => facts.problems.push(format!(
                "no libamdhip64.so.X.Y.Z under {} (set rocm.path)",
                lib.display()
            )),
        }
        let c = comgr::probe(self.comgr_candidates(), comgr::COMGR_TIMEOUT);
        facts.comgr_version = c.version;
        facts.comgr_from = c.library.map(|p| p.display().to_string());
        facts.problems.extend(c.problem);
        facts.problems.extend(c.note);
        facts
    }
}

/// The HIP runtime version in `lib_dir`, from the name of the real file
/// behind `libamdhip64.so` (then behind each `libamdhip64.so.N`), else the
/// highest `libamdhip64.so.X.Y.Z` present. A `-githash` suffix is dropped.
pub fn hip_version_in(lib_dir: &Path) -> Option<(String, PathBuf)> {
    let mut names: Vec<String> = std::fs::read_dir(lib_dir)
        .ok()?
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("libamdhip64.so"))
        .collect();
    names.sort();
    let links = std::iter::once("libamdhip64.so".to_string()).chain(
        names
            .iter()
            .rev()
            .filter(|n| {
                n.strip_prefix("libamdhip64.so.")
                    .is_some_and(|v| v.parse::<u32>().is_ok())
            })
            .cloned(),
    );
    for link in links {
        let Ok(real) = dunce::canonicalize(lib_dir.join(&link)) else {
            continue;
        };
        let parsed = real
            .file_name()
            .and_then(|n| parse_hip_so_name(&n.to_string_lossy()));
        if let Some(v) = parsed {
            return Some((v.0, real));
        }
    }
    names
        .iter()
        .filter_map(|n| parse_hip_so_name(n).map(|(v, key)| (key, v, n)))
        .max()
        .map(|(_, v, n)| (v, lib_dir.join(n)))
}

/// `libamdhip64.so.7.15.26291-2ed46569ce` → (`7.15.26291`, (7, 15, 26291)).
pub fn parse_hip_so_name(name: &str) -> Option<(String, (u64, u64, u64))> {
    let rest = name.strip_prefix("libamdhip64.so.")?;
    let version = rest.split('-').next()?;
    let parts: Vec<u64> = version
        .split('.')
        .map(|p| p.parse().ok())
        .collect::<Option<_>>()?;
    match parts[..] {
        [a, b, c] => Some((format!("{a}.{b}.{c}"), (a, b, c))),
        _ => None,
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    #[test]
    fn hip_so_names() {
        assert_eq!(
            parse_hip_so_name("libamdhip64.so.7.15.26291-2ed46569ce")
                .unwrap()
                .0,
            "7.15.26291"
        );
        assert_eq!(
            parse_hip_so_name("libamdhip64.so.7.2.53211").unwrap().0,
            "7.2.53211"
        );
        assert!(parse_hip_so_name("libamdhip64.so.7").is_none());
        assert!(parse_hip_so_name("libamdhip64.so").is_none());
    }

    #[test]
    fn symlink_target_wins_over_the_highest_file() {
        let dir = tempfile::tempdir().unwrap();
        let lib = dir.path();
        std::fs::write(lib.join("libamdhip64.so.7.2.53211"), b"").unwrap();
        std::fs::write(lib.join("libamdhip64.so.7.10.1"), b"").unwrap();
        // No symlink: the highest version (numerically, 7.10 > 7.2).
        assert_eq!(hip_version_in(lib).unwrap().0, "7.10.1");
        std::os::unix::fs::symlink("libamdhip64.so.7.2.53211", lib.join("libamdhip64.so.7"))
            .unwrap();
        std::os::unix::fs::symlink("libamdhip64.so.7", lib.join("libamdhip64.so")).unwrap();
        assert_eq!(hip_version_in(lib).unwrap().0, "7.2.53211");
        assert!(hip_version_in(&lib.join("nope")).is_none());
    }
}
