//! Choosing the GPU: an explicit index, or `auto`: the visible device with
//! the most free VRAM where the management tool shows it (`rocm-smi
//! --showmeminfo vram`, reference upstream-triage.md §2.7; `amd-smi metric
//! --mem-usage --json` where only amd-smi exists, as on a Windows HIP SDK),
//! else the visible device the tool lists with the lowest index (as
//! `triage_archive.ps1` picks, §8), else the first. The tool is looked for
//! on `PATH`, then in the `bin` of each ROCm root of the player search.
//! Indices count within the device masks hrr was given ([`super::visible`]).

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use serde_json::Value;

use super::visible::{self, DeviceMasks};
use super::GpuChoice;
use crate::context::Context;
use crate::preflight::smi;

/// Bound on the management-tool probe.
const PROBE_TIMEOUT: Duration = Duration::from_secs(30);

/// The `amd-smi` arguments that print the memory use of each GPU.
const AMD_SMI_VRAM_ARGS: &[&str] = &["metric", "--mem-usage", "--json"];

/// The `rocm-smi` arguments that print the VRAM of each GPU.
const ROCM_SMI_VRAM_ARGS: &[&str] = &["--showmeminfo", "vram"];

/// The GPU a replay runs on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Selected {
    /// Its index among the visible GPUs (what `--gpu` takes).
    pub index: u32,
    /// The `HIP_VISIBLE_DEVICES` value that selects it.
    pub hip_visible_devices: u32,
    /// How it was chosen, for the status line.
    pub how: String,
}

/// The GPU for `choice` within the masks of hrr's environment. An index
/// past the visible GPUs is an error; so is `auto` when no GPU is visible.
pub fn select(ctx: &Context, choice: GpuChoice) -> anyhow::Result<Selected> {
    let masks = DeviceMasks::from_env();
    let within = match masks.describe() {
        m if m.is_empty() => String::new(),
        m => format!(", within {}", m.join(" ")),
    };
    let (index, list, how) = match choice {
        GpuChoice::Ordinal(n) => (
            n,
            visible::visible(&masks, None),
            "as configured".to_string(),
        ),
        GpuChoice::Auto => {
            let vram = probe(ctx);
            let host_gpus = vram.listed.iter().next_back().map(|last| last + 1);
            let list = visible::visible(&masks, host_gpus);
            let tool = vram.tool.unwrap_or("rocm-smi or amd-smi");
            let (index, how) = match list.as_deref() {
                Some(l) => match visible::most_free(l, &vram.free) {
                    Some(i) => (i, format!("most free VRAM per {tool}")),
                    None => match lowest_listed(l, &vram.listed) {
                        Some(i) => (i, format!("{tool} showed no VRAM; the lowest GPU it lists")),
                        None => (0, unlisted(&vram)),
                    },
                },
                None => (0, unlisted(&vram)),
            };
            (index, list, how)
        }
    };
    let chosen = match &list {
        Some(l) => visible::select(l, index, &masks)?,
        // Nothing bounds the list: the index is ROCr's own.
        None => visible::VisibleGpu {
            rocr_index: index,
            host_index: Some(index),
        },
    };
    Ok(Selected {
        index,
        hip_visible_devices: chosen.rocr_index,
        how: format!("{how}{within}"),
    })
}

/// The visible-GPU index `auto` or an explicit choice means, and how it was
/// chosen; when no GPU can be chosen, 0 and why.
pub fn choose(ctx: &Context, choice: GpuChoice) -> (u32, String) {
    match select(ctx, choice) {
        Ok(s) => (s.index, s.how),
        Err(e) => (0, format!("{e:#}")),
    }
}

/// What the management tool showed of the host's GPUs.
#[derive(Debug, Default)]
struct Vram {
    /// The tool that answered (`rocm-smi`, `amd-smi`), if one was found.
    tool: Option<&'static str>,
    /// Free VRAM in bytes by host index, where it showed one.
    free: BTreeMap<u32, i128>,
    /// Every host index it named.
    listed: BTreeSet<u32>,
    /// It was found but did not answer (it failed or timed out).
    failed: bool,
}

/// Why `auto` takes the first GPU: no tool, or one that named none.
fn unlisted(vram: &Vram) -> String {
    match vram.tool {
        None => "no rocm-smi or amd-smi found; the first GPU".into(),
        Some(tool) if vram.failed => format!("{tool} failed; the first GPU"),
        Some(tool) => format!("{tool} listed no GPU; the first GPU"),
    }
}

/// The index in `list` of the GPU with the lowest host index in `listed`.
fn lowest_listed(list: &[visible::VisibleGpu], listed: &BTreeSet<u32>) -> Option<u32> {
    (0u32..)
        .zip(list)
        .filter_map(|(i, g)| g.host_index.filter(|h| listed.contains(h)).map(|h| (h, i)))
        .min()
        .map(|(_, i)| i)
}

/// Runs the management tool [`smi::find_smi`] finds on `PATH` or in a ROCm
/// root's `bin` and reads its VRAM report.
fn probe(ctx: &Context) -> Vram {
    let dirs: Vec<_> = crate::playback::rocm_roots(&ctx.config)
        .into_iter()
        .map(|root| root.join("bin"))
        .collect();
    let Some(smi) = smi::find_smi(std::env::var_os("PATH").as_ref(), &dirs) else {
        return Vram::default();
    };
    let tool = smi.name;
    let argv = smi.command(ROCM_SMI_VRAM_ARGS, AMD_SMI_VRAM_ARGS);
    let opts = crate::subprocess::ExecOptions {
        timeout: Some(PROBE_TIMEOUT),
        ..Default::default()
    };
    let mut vram = Vram {
        tool: Some(tool),
        ..Vram::default()
    };
    match crate::subprocess::run(&argv, &opts) {
        Ok(out) if out.success() => {
            let text = out.stdout_text();
            if tool == "rocm-smi" {
                vram.free = free_vram(&text);
                vram.listed = text.lines().filter_map(smi::gpu_id).collect();
            } else {
                let gpus = smi::amd_smi_gpus(&text).unwrap_or_default();
                vram.listed = gpus.iter().map(|(id, _)| *id).collect();
                vram.free = gpus
                    .iter()
                    .filter_map(|(id, g)| Some((*id, amd_smi_free(g)?)))
                    .collect();
            }
        }
        _ => vram.failed = true,
    }
    vram
}

/// The free VRAM in bytes of one GPU of `amd-smi metric --mem-usage
/// --json`. No sample of this output is in the reference, so only these
/// fields are relied on: its `mem_usage` object has `free_vram`, else
/// `total_vram` and `used_vram`, each a `{"value": N, "unit": "MB"}` object
/// or a `"N MB"` string (units B, KB, MB, GB, counted in 1024s, as amd-smi
/// does); `N/A` is no value.
fn amd_smi_free(gpu: &serde_json::Map<String, Value>) -> Option<i128> {
    let usage = gpu.get("mem_usage")?.as_object()?;
    let field = |k: &str| usage.get(k).and_then(amount);
    field("free_vram").or_else(|| Some(field("total_vram")? - field("used_vram")?))
}

/// Bytes in an amd-smi amount: `{"value": N, "unit": U}` or `"N U"`.
fn amount(v: &Value) -> Option<i128> {
    let (number, unit) = match v {
        Value::Object(o) => (
            o.get("value")?.as_f64()?,
            o.get("unit")
                .and_then(Value::as_str)
                .unwrap_or("B")
                .to_string(),
        ),
        Value::String(s) => {
            let mut parts = s.split_whitespace();
            let number = parts.next()?.parse::<f64>().ok()?;
            (number, parts.next().unwrap_or("B").to_string())
        }
        _ => return None,
    };
    let scale: f64 = match unit.to_ascii_uppercase().as_str() {
        "B" => 1.0,
        "KB" | "KIB" => 1024.0,
        "MB" | "MIB" => 1024.0 * 1024.0,
        "GB" | "GIB" => 1024.0 * 1024.0 * 1024.0,
        _ => return None,
    };
    let bytes = number * scale;
    (0.0..1e30).contains(&bytes).then_some(bytes as i128)
}

/// Free VRAM in bytes per device ordinal, from `rocm-smi --showmeminfo vram`
/// text: on each line holding `GPU[`, the digits of the first field are the
/// device, the last field is the value; `Total Used Memory` (tested first,
/// it also holds "Total") gives used bytes, `Total Memory` total bytes.
pub fn free_vram(text: &str) -> BTreeMap<u32, i128> {
    let mut total: BTreeMap<u32, i128> = BTreeMap::new();
    let mut used: BTreeMap<u32, i128> = BTreeMap::new();
    for line in text.lines().filter(|l| l.contains("GPU[")) {
        let mut fields = line.split_whitespace();
        let Some(first) = fields.next() else { continue };
        let digits: String = first.chars().filter(char::is_ascii_digit).collect();
        let (Ok(dev), Some(Ok(value))) = (
            digits.parse::<u32>(),
            line.split_whitespace().last().map(str::parse::<i128>),
        ) else {
            continue;
        };
        if line.contains("Total Used Memory") {
            used.insert(dev, value);
        } else if line.contains("Total Memory") {
            total.insert(dev, value);
        }
    }
    total
        .into_iter()
        .map(|(dev, t)| (dev, t - used.get(&dev).copied().unwrap_or(0)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn picks_the_gpu_with_most_free_vram_from_the_recorded_fixture() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../shared/fixtures/rocm_smi_vram.txt"
        );
        let text =
            &std::fs::read_to_string(path).expect("the shared fixtures beside the repository");
        let free = free_vram(text);
        // GPU[0]: 274877906944 - 264877906944; GPU[1]: 274877906944 - 1073741824.
        assert_eq!(free.get(&0), Some(&10_000_000_000));
        assert_eq!(free.get(&1), Some(&273_804_165_120));
        let all = visible::visible(&DeviceMasks::default(), Some(2)).unwrap();
        assert_eq!(visible::most_free(&all, &free), Some(1));
    }

    #[test]
    fn amd_smi_free_vram_from_its_value_objects_or_strings() {
        let text = r#"[
            {"gpu": 0, "mem_usage": {"total_vram": {"value": 196592, "unit": "MB"},
                                     "used_vram": {"value": 190000, "unit": "MB"},
                                     "free_vram": {"value": 6592, "unit": "MB"}}},
            {"gpu": 1, "mem_usage": {"total_vram": "196592 MB", "used_vram": "283 MB"}},
            {"gpu": 2, "mem_usage": {"free_vram": "N/A"}}
        ]"#;
        let gpus = smi::amd_smi_gpus(text).unwrap();
        let free: Vec<Option<i128>> = gpus.iter().map(|(_, g)| amd_smi_free(g)).collect();
        assert_eq!(free, [Some(6592 << 20), Some((196_592 - 283) << 20), None]);
    }

    #[test]
    fn without_vram_the_lowest_listed_visible_gpu() {
        // HIP_VISIBLE_DEVICES=3,1: visible 0 is host 3, visible 1 host 1.
        let masks = DeviceMasks::from_vars(|k| (k == "HIP_VISIBLE_DEVICES").then(|| "3,1".into()));
        let list = visible::visible(&masks, Some(4)).unwrap();
        assert_eq!(lowest_listed(&list, &[1, 2, 3].into()), Some(1));
        assert_eq!(lowest_listed(&list, &[3].into()), Some(0));
        assert_eq!(lowest_listed(&list, &[0, 2].into()), None);
    }

    #[test]
    fn noise_is_ignored() {
        let text = "GPU[0]\t\t: VRAM Total Memory (B): 100\nGPU[0]\t\t: VRAM Total Used Memory (B): 50\n\
                    GPU[3]\t\t: VRAM Total Memory (B): 80\nGPU[3]\t\t: VRAM Total Used Memory (B): 30\n\
                    GPU[4]\t\t: VRAM Total Memory (B): n/a\nWARNING: something\n";
        assert_eq!(free_vram(text), [(0, 50), (3, 50)].into());
        assert!(free_vram("no devices\n").is_empty());
    }
}
