//! Choosing the GPU: an explicit index, or `auto` = the visible device
//! with the most free VRAM per `rocm-smi --showmeminfo vram` (reference
//! upstream-triage.md §2.7), else the first visible one. Indices count
//! within the device masks hrr was given ([`super::visible`]).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use super::visible::{self, DeviceMasks};
use super::GpuChoice;
use crate::context::Context;

/// Bound on the `rocm-smi` probe.
const PROBE_TIMEOUT: Duration = Duration::from_secs(30);

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
        GpuChoice::Ordinal(n) => (n, visible::visible(&masks, None), "as configured"),
        GpuChoice::Auto => {
            let free = probe(ctx).map(|text| free_vram(&text)).unwrap_or_default();
            let host_gpus = free.keys().next_back().map(|last| last + 1);
            let list = visible::visible(&masks, host_gpus);
            match list.as_deref().and_then(|l| visible::most_free(l, &free)) {
                Some(i) => (i, list, "most free VRAM per rocm-smi"),
                None if free.is_empty() => (0, list, "rocm-smi unavailable; the first GPU"),
                None => (0, list, "rocm-smi reported no VRAM; the first GPU"),
            }
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

/// `rocm-smi --showmeminfo vram` output, from PATH or `<rocm>/bin`.
fn probe(ctx: &Context) -> Option<String> {
    let smi: PathBuf = which::which("rocm-smi")
        .ok()
        .or_else(|| Some(ctx.config.rocm_path().join("bin/rocm-smi")).filter(|p| p.is_file()))?;
    let argv = vec![
        smi.display().to_string(),
        "--showmeminfo".into(),
        "vram".into(),
    ];
    let opts = crate::subprocess::ExecOptions {
        timeout: Some(PROBE_TIMEOUT),
        ..Default::default()
    };
    let out = crate::subprocess::run(&argv, &opts).ok()?;
    out.success().then(|| out.stdout_text())
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
    fn noise_is_ignored() {
        let text = "GPU[0]\t\t: VRAM Total Memory (B): 100\nGPU[0]\t\t: VRAM Total Used Memory (B): 50\n\
                    GPU[3]\t\t: VRAM Total Memory (B): 80\nGPU[3]\t\t: VRAM Total Used Memory (B): 30\n\
                    GPU[4]\t\t: VRAM Total Memory (B): n/a\nWARNING: something\n";
        assert_eq!(free_vram(text), [(0, 50), (3, 50)].into());
        assert!(free_vram("no devices\n").is_empty());
    }
}
