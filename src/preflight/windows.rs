//! The Windows host probe (reference §4.4), compiled only on Windows: load
//! `amdhip64.dll` with libloading and ask it for the device count, each
//! device's arch (attribute 57, rendered `gfx%x`) and the runtime version;
//! comgr from `amd_comgr.dll`. When the DLL cannot be used: `rocm-smi` or
//! `amd-smi` (on `PATH`, else in the root's `bin` or `hip\bin`) for the GPUs
//! and `<root>/.info/version` for the HIP version.
//!
//! Device names are not read from the DLL: `hipGetDeviceProperties` fills a
//! struct whose layout differs between HIP releases; names come from
//! `amd-smi` when it is there.

use std::path::{Path, PathBuf};

use super::comgr;
use super::host::{HostFacts, HostProbe};
use super::smi::{self, HostGpu};

/// `hipDeviceAttributeGcnArch` in the reference's numbering.
const ATTRIBUTE_GCN_ARCH: i32 = 57;

type GetDeviceCount = unsafe extern "C" fn(*mut i32) -> i32;
type DeviceGetAttribute = unsafe extern "C" fn(*mut i32, i32, i32) -> i32;
type RuntimeGetVersion = unsafe extern "C" fn(*mut i32) -> i32;

/// The Windows probe for a ROCm root (`rocm.path`, which `HIP_PATH` /
/// `ROCM_PATH` set).
#[derive(Clone, Debug)]
pub struct WindowsHost {
    root: PathBuf,
}

impl WindowsHost {
    /// The probe for the ROCm/HIP SDK at `root`.
    pub fn new(root: PathBuf) -> WindowsHost {
        WindowsHost { root }
    }

    /// `<root>\bin\<dll>`, `<root>\hip\bin\<dll>`, then the bare name
    /// (the loader searches PATH).
    fn candidates(&self, dll: &str) -> Vec<PathBuf> {
        let mut c: Vec<PathBuf> = [self.root.join("bin"), self.root.join("hip").join("bin")]
            .into_iter()
            .map(|d| d.join(dll))
            .filter(|p| p.is_file())
            .collect();
        c.push(PathBuf::from(dll));
        c
    }
}

impl HostProbe for WindowsHost {
    fn probe(&self) -> HostFacts {
        let mut facts = HostFacts {
            source: "host".into(),
            ..HostFacts::default()
        };
        match self
            .candidates("amdhip64.dll")
            .iter()
            .find_map(|p| ask_hip(p).ok())
        {
            Some((gpus, version, from)) => {
                facts.gpu_tool = Some("amdhip64.dll".into());
                facts.visible_gpus = (!gpus.is_empty()).then_some(gpus.len() as u32);
                facts.gpus = gpus;
                facts.hip_runtime_version = version;
                facts.hip_runtime_from = Some(from.display().to_string());
            }
            None => {
                facts
                    .problems
                    .push("amdhip64.dll could not be loaded".into());
                facts.set_gpus(smi::probe(
                    std::env::var_os("PATH").as_ref(),
                    &[self.root.join("bin"), self.root.join("hip").join("bin")],
                ));
            }
        }
        if facts.hip_runtime_version.is_none() {
            let info = self.root.join(".info").join("version");
            if let Some(v) = std::fs::read_to_string(&info)
                .ok()
                .as_deref()
                .and_then(parse_info_version)
            {
                facts.hip_runtime_version = Some(v);
                facts.hip_runtime_from = Some(info.display().to_string());
            }
        }
        let c = comgr::probe(self.candidates("amd_comgr.dll"), comgr::COMGR_TIMEOUT);
        facts.comgr_version = c.version;
        facts.comgr_from = c.library.map(|p| p.display().to_string());
        facts.problems.extend(c.problem);
        facts
    }
}

/// Loads `dll` and returns its GPUs, its runtime version and the DLL path.
fn ask_hip(dll: &Path) -> Result<(Vec<HostGpu>, Option<String>, PathBuf), String> {
    // SAFETY: the three HIP entry points are called with their C signatures
    // (`hipError_t f(int*)`, `hipError_t f(int*, hipDeviceAttribute_t, int)`)
    // and valid out-pointers; the DLL stays loaded for the process.
    unsafe {
        let lib = libloading::Library::new(dll).map_err(|e| e.to_string())?;
        let answers = {
            let count_fn: libloading::Symbol<GetDeviceCount> =
                lib.get(b"hipGetDeviceCount\0").map_err(|e| e.to_string())?;
            let attr_fn: libloading::Symbol<DeviceGetAttribute> = lib
                .get(b"hipDeviceGetAttribute\0")
                .map_err(|e| e.to_string())?;
            let mut count = 0i32;
            if count_fn(&mut count) != 0 {
                count = 0;
            }
            let gpus: Vec<HostGpu> = (0..count.max(0))
                .map(|id| {
                    let mut value = 0i32;
                    let arch = (attr_fn(&mut value, ATTRIBUTE_GCN_ARCH, id) == 0 && value > 0)
                        .then(|| format!("gfx{value:x}"));
                    HostGpu {
                        id: id as u32,
                        arch,
                        name: None,
                    }
                })
                .collect();
            let mut v = 0i32;
            let version = match lib.get::<RuntimeGetVersion>(b"hipRuntimeGetVersion\0") {
                Ok(f) if f(&mut v) == 0 && v > 0 => {
                    let v = v as u32;
                    Some(format!(
                        "{}.{}.{}",
                        v / 10_000_000,
                        (v / 100_000) % 100,
                        v % 100_000
                    ))
                }
                _ => None,
            };
            (gpus, version)
        };
        std::mem::forget(lib);
        Ok((answers.0, answers.1, dll.to_path_buf()))
    }
}

/// The HIP version in a `.info/version` file: a `HIP version : X` line or a
/// bare `X.Y.Z[-githash]` line; the githash is dropped.
fn parse_info_version(text: &str) -> Option<String> {
    text.lines().find_map(|line| {
        let value = match line.split_once(':') {
            Some((k, v)) if k.trim().eq_ignore_ascii_case("HIP version") => v.trim(),
            _ => line.trim(),
        };
        let v = value.split('-').next()?;
        let ok = v.split('.').count() >= 2 && v.split('.').all(|p| p.parse::<u64>().is_ok());
        ok.then(|| v.to_string())
    })
}
