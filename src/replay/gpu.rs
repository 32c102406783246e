//! Choosing the GPU: an explicit ordinal, or `auto` = the device with the
//! most free VRAM per `rocm-smi --showmeminfo vram` (reference
//! upstream-triage.md §2.7), else 0.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use super::GpuChoice;
use crate::context::Context;

/// Bound on the `rocm-smi` probe.
const PROBE_TIMEOUT: Duration = Duration::from_secs(30);

/// The GPU ordinal for `choice`, and how it was chosen (for the status line).
pub fn choose(ctx: &Context, choice: GpuChoice) -> (u32, String) {
    match choice {
        GpuChoice::Ordinal(n) => (n, "as configured".into()),
        GpuChoice::Auto => match probe(ctx) {
            Some(text) => match most_free(&text) {
                Some(n) => (n, "most free VRAM per rocm-smi".into()),
                None => (0, "rocm-smi reported no VRAM; default 0".into()),
            },
            None => (0, "rocm-smi unavailable; default 0".into()),
        },
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
    let opts = crate::process::ExecOptions {
        timeout: Some(PROBE_TIMEOUT),
        ..Default::default()
    };
    let out = crate::process::run(&argv, &opts).ok()?;
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

/// The device with strictly the most free VRAM (the lowest ordinal on a tie).
pub fn most_free(text: &str) -> Option<u32> {
    let mut best: Option<(u32, i128)> = None;
    for (dev, free) in free_vram(text) {
        if best.is_none_or(|(_, b)| free > b) {
            best = Some((dev, free));
        }
    }
    best.map(|(dev, _)| dev)
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
        assert_eq!(most_free(text), Some(1));
    }

    #[test]
    fn ties_keep_the_first_device_and_noise_is_ignored() {
        let text = "GPU[0]\t\t: VRAM Total Memory (B): 100\nGPU[0]\t\t: VRAM Total Used Memory (B): 50\n\
                    GPU[3]\t\t: VRAM Total Memory (B): 80\nGPU[3]\t\t: VRAM Total Used Memory (B): 30\n\
                    GPU[4]\t\t: VRAM Total Memory (B): n/a\nWARNING: something\n";
        assert_eq!(most_free(text), Some(0));
        assert_eq!(most_free("no devices\n"), None);
    }
}
