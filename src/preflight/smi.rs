//! The GPU list of a host (or an image) from its management tool:
//! `rocm-smi --showid --showproductname` text, or, when only `amd-smi`
//! exists, `amd-smi static --asic --json` (amd-smi does not take rocm-smi
//! flags, which upstream passes it by mistake; reference §4.3).

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use serde::Serialize;
use serde_json::Value;

use crate::executable::is_executable;
use crate::subprocess::{self, ExecOptions};

/// Time limit of one management-tool run (upstream: 30 s).
pub const SMI_TIMEOUT: Duration = Duration::from_secs(30);

/// One GPU of the replay environment.
#[derive(Clone, Debug, Default, Serialize, PartialEq, Eq, schemars::JsonSchema)]
pub struct HostGpu {
    /// The tool's GPU index (`GPU[n]`, amd-smi `gpu`).
    pub id: u32,
    /// The arch as the tool prints it, lowercased (e.g. `gfx942`).
    pub arch: Option<String>,
    /// The product name, when the tool prints one.
    pub name: Option<String>,
}

/// The `amd-smi` arguments used: the static ASIC section as JSON.
pub const AMD_SMI_ARGS: &[&str] = &["static", "--asic", "--json"];

/// The `rocm-smi` arguments used.
pub const ROCM_SMI_ARGS: &[&str] = &["--showid", "--showproductname"];

/// The GPUs in `rocm-smi --showid --showproductname` output: one per
/// distinct `GPU[n]` id. The arch of a GPU is the lowercased text after the
/// last `:` of its `GFX Version` line, else its `GPU Family` line, else its
/// `Card series` line (the reference's three, case-sensitive; keyed by GPU id
/// so mixed line types cannot shift one GPU's arch onto another). Names come
/// from `Card model` / `Card name` lines.
pub fn parse_rocm_smi(text: &str) -> Vec<HostGpu> {
    // id → (arch rank, arch, name); a lower rank wins.
    let mut gpus: BTreeMap<u32, (usize, Option<String>, Option<String>)> = BTreeMap::new();
    for line in text.lines() {
        let Some(id) = gpu_id(line) else { continue };
        let entry = gpus.entry(id).or_insert((usize::MAX, None, None));
        let value = line.rsplit(':').next().unwrap_or("").trim();
        if value.is_empty() {
            continue;
        }
        let rank = ["GFX Version", "GPU Family", "Card series"]
            .iter()
            .position(|k| line.contains(k));
        if let Some(rank) = rank {
            if rank < entry.0 {
                entry.0 = rank;
                entry.1 = Some(value.to_ascii_lowercase());
            }
        } else if entry.2.is_none() && (line.contains("Card model") || line.contains("Card name")) {
            entry.2 = Some(value.to_string());
        }
    }
    gpus.into_iter()
        .map(|(id, (_, arch, name))| HostGpu { id, arch, name })
        .collect()
}

/// The `n` of the first `GPU[n]` in `line`.
pub fn gpu_id(line: &str) -> Option<u32> {
    let rest = &line[line.find("GPU[")? + 4..];
    rest[..rest.find(']')?].parse().ok()
}

/// The GPUs in `amd-smi static --asic --json` output. No sample of this
/// output is in the reference, so only these fields are relied on: the
/// document is as [`amd_smi_gpus`] reads it, and each GPU's `asic` object
/// has `target_graphics_version` (the arch, e.g. `gfx942`) and
/// `market_name`.
pub fn parse_amd_smi(text: &str) -> Option<Vec<HostGpu>> {
    let gpus = amd_smi_gpus(text)?
        .into_iter()
        .map(|(id, g)| {
            let asic = g.get("asic").and_then(Value::as_object);
            let field = |k: &str| {
                asic.and_then(|a| a.get(k))
                    .and_then(Value::as_str)
                    .map(str::trim)
                    .filter(|s| !s.is_empty() && *s != "N/A")
            };
            HostGpu {
                id,
                arch: field("target_graphics_version").map(str::to_ascii_lowercase),
                name: field("market_name").map(str::to_string),
            }
        })
        .collect();
    Some(gpus)
}

/// The per-GPU objects of an `amd-smi … --json` document with their GPU
/// index: the document is an array of them, or an object whose `gpu_data`
/// holds that array; `gpu` is the index, and objects without it are
/// numbered by position. `None` when the text is not such a document.
pub fn amd_smi_gpus(text: &str) -> Option<Vec<(u32, serde_json::Map<String, Value>)>> {
    let doc: Value = serde_json::from_str(text.trim()).ok()?;
    let list = match doc {
        Value::Array(a) => a,
        Value::Object(mut o) => match o.remove("gpu_data")? {
            Value::Array(a) => a,
            _ => return None,
        },
        _ => return None,
    };
    let gpus = list
        .into_iter()
        .enumerate()
        .filter_map(|(pos, g)| {
            let Value::Object(g) = g else { return None };
            let id = g
                .get("gpu")
                .and_then(Value::as_u64)
                .and_then(|n| u32::try_from(n).ok())
                .unwrap_or(pos as u32);
            Some((id, g))
        })
        .collect();
    Some(gpus)
}

/// What a management-tool probe found.
#[derive(Debug, Default)]
pub struct SmiProbe {
    /// `rocm-smi` or `amd-smi`, when one ran.
    pub tool: Option<String>,
    /// The GPUs it listed (empty when none or no tool).
    pub gpus: Vec<HostGpu>,
    /// Why the list is empty, in words.
    pub problem: Option<String>,
}

/// Runs `rocm-smi`, or `amd-smi` when there is no `rocm-smi`, found as
/// [`find_smi`] finds them.
pub fn probe(search_path: Option<&OsString>, extra_dirs: &[PathBuf]) -> SmiProbe {
    let opts = ExecOptions {
        timeout: Some(SMI_TIMEOUT),
        ..ExecOptions::default()
    };
    let Some(smi) = find_smi(search_path, extra_dirs) else {
        return SmiProbe {
            problem: Some("neither rocm-smi nor amd-smi was found".into()),
            ..SmiProbe::default()
        };
    };
    let tool = smi.name;
    let argv = smi.command(ROCM_SMI_ARGS, AMD_SMI_ARGS);
    let mut out = SmiProbe {
        tool: Some(tool.to_string()),
        ..SmiProbe::default()
    };
    match subprocess::run(&argv, &opts) {
        Err(e) => out.problem = Some(format!("{tool} could not run: {e:#}")),
        Ok(c) if c.timed_out => {
            out.problem = Some(format!("{tool} timed out after {}s", SMI_TIMEOUT.as_secs()))
        }
        Ok(c) => {
            let text = format!(
                "{}\n{}",
                c.stdout_text(),
                String::from_utf8_lossy(&c.stderr)
            );
            out.gpus = if tool == "rocm-smi" {
                parse_rocm_smi(&text)
            } else {
                parse_amd_smi(&c.stdout_text()).unwrap_or_default()
            };
            if out.gpus.is_empty() {
                out.problem = Some(format!("{tool} listed no GPU"));
            }
        }
    }
    out
}

/// A management tool that was found.
#[derive(Clone, Debug)]
pub struct SmiTool {
    /// `rocm-smi` or `amd-smi`.
    pub name: &'static str,
    /// Its path.
    pub exe: PathBuf,
}

impl SmiTool {
    /// Its command line with `rocm_smi` or `amd_smi` arguments, whichever
    /// it takes (amd-smi does not take rocm-smi's flags).
    pub fn command(&self, rocm_smi: &[&str], amd_smi: &[&str]) -> Vec<String> {
        let args = if self.name == "rocm-smi" {
            rocm_smi
        } else {
            amd_smi
        };
        std::iter::once(self.exe.display().to_string())
            .chain(args.iter().map(|a| a.to_string()))
            .collect()
    }
}

/// The management tool to ask: `rocm-smi`, else `amd-smi`, each looked
/// for on `search_path`, then in `extra_dirs` (`amd-smi.exe` and so on on
/// Windows).
pub fn find_smi(search_path: Option<&OsString>, extra_dirs: &[PathBuf]) -> Option<SmiTool> {
    ["rocm-smi", "amd-smi"]
        .into_iter()
        .find_map(|name| find_tool(name, search_path, extra_dirs).map(|exe| SmiTool { name, exe }))
}

fn find_tool(name: &str, search_path: Option<&OsString>, extra: &[PathBuf]) -> Option<PathBuf> {
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/"));
    if let Some(p) = search_path.and_then(|sp| which::which_in(name, Some(sp), &cwd).ok()) {
        return Some(p);
    }
    let file = format!("{name}{}", std::env::consts::EXE_SUFFIX);
    extra
        .iter()
        .map(|d| d.join(&file))
        .find(|p| is_executable(p))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Lines in the shape of the recorded `rocm-smi` fixture
    /// (`GPU[n]`, two TABs, `: `, label, `: `, value), with the labels the
    /// reference names.
    const ROCM_SMI: &str = "\
====================== ROCm System Management Interface ======================
GPU[0]\t\t: Card series: Instinct MI300X
GPU[0]\t\t: Card model: 0x74a1
GPU[0]\t\t: GFX Version: gfx942
GPU[1]\t\t: Card series: Instinct MI300X
GPU[1]\t\t: GFX Version: gfx942
GPU[2]\t\t: GPU Family: GFX90A
============================== End of ROCm SMI Log ===========================
";

    #[test]
    fn rocm_smi_ids_archs_and_names() {
        let gpus = parse_rocm_smi(ROCM_SMI);
        assert_eq!(gpus.len(), 3);
        assert_eq!(gpus[0].arch.as_deref(), Some("gfx942"));
        assert_eq!(gpus[0].name.as_deref(), Some("0x74a1"));
        assert_eq!(gpus[1].arch.as_deref(), Some("gfx942"));
        assert_eq!(gpus[2].arch.as_deref(), Some("gfx90a"));
        assert!(parse_rocm_smi("no GPUs here\n").is_empty());
    }

    #[test]
    fn amd_smi_array_or_gpu_data() {
        let a = r#"[{"gpu": 0, "asic": {"market_name": "MI300X", "target_graphics_version": "gfx942"}},
                    {"gpu": 1, "asic": {"target_graphics_version": "gfx942"}}]"#;
        let gpus = parse_amd_smi(a).unwrap();
        assert_eq!(gpus.len(), 2);
        assert_eq!(gpus[0].name.as_deref(), Some("MI300X"));
        assert_eq!(gpus[1].arch.as_deref(), Some("gfx942"));
        let b = r#"{"gpu_data": [{"gpu": 3, "asic": {"target_graphics_version": "GFX950"}}]}"#;
        assert_eq!(
            parse_amd_smi(b).unwrap()[0],
            HostGpu {
                id: 3,
                arch: Some("gfx950".into()),
                name: None
            }
        );
        assert!(parse_amd_smi("GPU: 0").is_none());
    }
}
