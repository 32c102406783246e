//! The one rule for which GPUs a replay can see and what a GPU index means,
//! used by the replay (`--gpu N`, `auto`) and by the preflight (GPU count,
//! requested ordinal, arch) alike (reference playback-output.md §10.1).
//!
//! Slurm and containers often set device masks before hrr runs. Two layers
//! apply them, and each re-indexes:
//! * ROCr lists the host's GPUs (rocm-smi's `GPU[n]` order) and keeps only
//!   those `ROCR_VISIBLE_DEVICES` names, in its order (indices, or `GPU-…`
//!   UUIDs, whose host index hrr cannot know);
//! * CLR indexes into ROCr's list: `HIP_VISIBLE_DEVICES`, else
//!   `CUDA_VISIBLE_DEVICES`, picks and orders entries of it; without either
//!   it sees all of it.
//!
//! A GPU index (`--gpu N`, `replay.gpu`) counts within CLR's list, so a
//! replay never leaves the masks it was given. hrr replaces
//! `HIP_VISIBLE_DEVICES` with the one ROCr index of the chosen device and
//! leaves `ROCR_VISIBLE_DEVICES` as it is, so the player sees exactly that
//! device. A list entry that is not a usable index (not a number, out of
//! range) ends the list there, as the runtimes do; a repeated entry is
//! skipped. An empty variable counts as unset. Windows has no ROCr, so
//! `ROCR_VISIBLE_DEVICES` is ignored there.

use std::collections::BTreeMap;

use anyhow::bail;

/// The device masks of an environment, as the runtimes read them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DeviceMasks {
    /// `ROCR_VISIBLE_DEVICES`.
    pub rocr: Option<String>,
    /// The mask CLR reads: (`HIP_VISIBLE_DEVICES` or `CUDA_VISIBLE_DEVICES`,
    /// its value).
    pub clr: Option<(&'static str, String)>,
}

impl DeviceMasks {
    /// The masks in hrr's own environment (what the player inherits).
    pub fn from_env() -> DeviceMasks {
        DeviceMasks::from_vars(|k| std::env::var(k).ok())
    }

    /// The masks `get` returns values for; empty values are unset.
    pub fn from_vars(get: impl Fn(&str) -> Option<String>) -> DeviceMasks {
        let var = |k: &str| get(k).filter(|v| !v.trim().is_empty());
        let clr = ["HIP_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES"]
            .into_iter()
            .find_map(|k| var(k).map(|v| (k, v)));
        DeviceMasks {
            rocr: var("ROCR_VISIBLE_DEVICES").filter(|_| cfg!(not(windows))),
            clr,
        }
    }

    /// The masks as `NAME=value` texts, for messages and reports; empty
    /// when none is set.
    pub fn describe(&self) -> Vec<String> {
        let mut out: Vec<String> = self
            .rocr
            .iter()
            .map(|v| format!("ROCR_VISIBLE_DEVICES={v}"))
            .collect();
        out.extend(self.clr.iter().map(|(k, v)| format!("{k}={v}")));
        out
    }

    /// The masks [`DeviceMasks::describe`] wrote, read back (for a report
    /// that keeps only those texts).
    pub fn from_described(described: &[String]) -> DeviceMasks {
        DeviceMasks::from_vars(|k| {
            described
                .iter()
                .find_map(|m| m.strip_prefix(k)?.strip_prefix('='))
                .map(str::to_string)
        })
    }
}

/// One GPU the replay can see.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VisibleGpu {
    /// Its index in ROCr's list: the `HIP_VISIBLE_DEVICES` value that
    /// selects it.
    pub rocr_index: u32,
    /// Its host index (rocm-smi's `GPU[n]`); `None` when
    /// `ROCR_VISIBLE_DEVICES` names it by UUID.
    pub host_index: Option<u32>,
}

/// CLR's visible GPUs in index order, for `masks` on a host with
/// `host_gpus` GPUs (`None`: not known, so entries cannot be checked
/// against it). `None` when nothing bounds the list: no mask and an
/// unknown GPU count.
pub fn visible(masks: &DeviceMasks, host_gpus: Option<u32>) -> Option<Vec<VisibleGpu>> {
    let rocr = rocr_list(masks, host_gpus);
    let Some((_, list)) = &masks.clr else {
        return rocr.map(|r| {
            r.into_iter()
                .zip(0u32..)
                .map(|(host_index, rocr_index)| VisibleGpu {
                    rocr_index,
                    host_index,
                })
                .collect()
        });
    };
    let mut out: Vec<VisibleGpu> = Vec::new();
    for entry in entries(list) {
        let Ok(j) = entry.parse::<u32>() else { break };
        let host_index = match &rocr {
            Some(r) => match r.get(j as usize) {
                Some(h) => *h,
                None => break,
            },
            // No ROCr mask and an unknown host: ROCr's list is the host's.
            None => Some(j),
        };
        if out.iter().all(|g| g.rocr_index != j) {
            out.push(VisibleGpu {
                rocr_index: j,
                host_index,
            });
        }
    }
    Some(out)
}

/// ROCr's list: the host index of each GPU it keeps (`None`: named by
/// UUID); `None` when nothing bounds it (no mask, unknown host).
fn rocr_list(masks: &DeviceMasks, host_gpus: Option<u32>) -> Option<Vec<Option<u32>>> {
    match &masks.rocr {
        Some(list) => {
            let mut out: Vec<Option<u32>> = Vec::new();
            for entry in entries(list) {
                match entry.parse::<u32>() {
                    Ok(i) if host_gpus.is_some_and(|n| i >= n) => break,
                    Ok(i) if out.contains(&Some(i)) => {}
                    Ok(i) => out.push(Some(i)),
                    Err(_) if entry.starts_with("GPU-") => out.push(None),
                    Err(_) => break,
                }
            }
            Some(out)
        }
        None => host_gpus.map(|n| (0..n).map(Some).collect()),
    }
}

/// In words, why the CLR mask hides GPUs that `ROCR_VISIBLE_DEVICES`
/// leaves, when one of its entries counts past the end of ROCr's list (on
/// a host with `host_gpus` GPUs, when known): HIP applies its mask within
/// ROCr's, so an entry that repeats a host index (as Slurm without device
/// cgroups sets both variables, to the same host indices) names no GPU and
/// ends the list there. `None` when the masks do not stack that way.
pub fn stacked_masks(masks: &DeviceMasks, host_gpus: Option<u32>) -> Option<String> {
    let rocr = masks.rocr.as_ref()?;
    let (clr, list) = masks.clr.as_ref()?;
    let kept = rocr_list(masks, host_gpus)?.len();
    let past = entries(list)
        .map_while(|e| e.parse::<u32>().ok())
        .find(|&j| j as usize >= kept)?;
    Some(format!(
        "{clr}={list} counts within the {kept} GPU(s) ROCR_VISIBLE_DEVICES={rocr} leaves (HIP applies it after ROCr), so its entry {past} names none of them; when both hold host GPU indices (Slurm without device cgroups sets both), unset {clr} and keep ROCR_VISIBLE_DEVICES"
    ))
}

/// The comma-separated entries of a mask, trimmed.
fn entries(list: &str) -> impl Iterator<Item = &str> {
    list.split(',').map(str::trim)
}

/// GPU `index` of `list`; an index past its end is an error naming the
/// masks, so a replay never runs on a device outside them.
pub fn select(list: &[VisibleGpu], index: u32, masks: &DeviceMasks) -> anyhow::Result<VisibleGpu> {
    if let Some(g) = list.get(index as usize) {
        return Ok(*g);
    }
    let why = match masks.describe() {
        m if m.is_empty() => String::new(),
        m => format!(" with {}", m.join(" ")),
    };
    let stacked = stacked_masks(masks, None);
    if list.is_empty() {
        let fix = stacked.unwrap_or_else(|| "check the device masks".to_string());
        bail!("no GPU is visible to the replay{why}; {fix}");
    }
    let fix = stacked.map(|s| format!("; {s}")).unwrap_or_default();
    bail!(
        "GPU {index} is not visible to the replay: it sees {} GPU(s){why}, and GPU indices count within them (0..{}){fix}",
        list.len(),
        list.len() - 1
    )
}

/// The index in `list` of the GPU with strictly the most free VRAM per
/// `free` (bytes by host index); the lowest index on a tie; `None` when no
/// listed GPU has a known value.
pub fn most_free(list: &[VisibleGpu], free: &BTreeMap<u32, i128>) -> Option<u32> {
    let mut best: Option<(u32, i128)> = None;
    for (i, g) in (0u32..).zip(list) {
        let Some(&bytes) = g.host_index.and_then(|h| free.get(&h)) else {
            continue;
        };
        if best.is_none_or(|(_, b)| bytes > b) {
            best = Some((i, bytes));
        }
    }
    best.map(|(i, _)| i)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn masks(vars: &[(&str, &str)]) -> DeviceMasks {
        DeviceMasks::from_vars(|k| {
            vars.iter()
                .find(|(name, _)| *name == k)
                .map(|(_, v)| v.to_string())
        })
    }

    /// (rocr index, host index) of each visible GPU.
    fn pairs(list: Option<Vec<VisibleGpu>>) -> Option<Vec<(u32, Option<u32>)>> {
        list.map(|l| l.iter().map(|g| (g.rocr_index, g.host_index)).collect())
    }

    // ROCR_VISIBLE_DEVICES applies only where ROCr runs (not Windows).
    #[cfg(not(windows))]
    #[test]
    fn slurm_host_indices_in_both_masks_leave_no_gpu_and_the_error_says_why() {
        let slurm = masks(&[("ROCR_VISIBLE_DEVICES", "2"), ("CUDA_VISIBLE_DEVICES", "2")]);
        let list = visible(&slurm, Some(4)).unwrap();
        assert!(list.is_empty(), "as the runtimes, no GPU: {list:?}");
        let err = select(&list, 0, &slurm).unwrap_err().to_string();
        assert!(
            err.starts_with("no GPU is visible to the replay with ROCR_VISIBLE_DEVICES=2 CUDA_VISIBLE_DEVICES=2; CUDA_VISIBLE_DEVICES=2 counts within the 1 GPU(s)"),
            "{err}"
        );
        assert!(
            err.ends_with("unset CUDA_VISIBLE_DEVICES and keep ROCR_VISIBLE_DEVICES"),
            "{err}"
        );
        // GPU 0 given so happens to work: 0 counts within a list of one.
        let first = masks(&[("ROCR_VISIBLE_DEVICES", "0"), ("CUDA_VISIBLE_DEVICES", "0")]);
        assert_eq!(pairs(visible(&first, Some(4))), Some(vec![(0, Some(0))]));
        assert_eq!(stacked_masks(&first, Some(4)), None);
        // The masks read back from their texts are the same masks.
        assert_eq!(DeviceMasks::from_described(&slurm.describe()), slurm);
    }

    #[test]
    fn without_masks_every_host_gpu_is_visible_in_order() {
        let none = masks(&[]);
        assert_eq!(
            pairs(visible(&none, Some(3))),
            Some(vec![(0, Some(0)), (1, Some(1)), (2, Some(2))])
        );
        assert_eq!(pairs(visible(&none, None)), None);
        assert_eq!(masks(&[("HIP_VISIBLE_DEVICES", " ")]), none);
    }

    #[test]
    fn hip_visible_devices_picks_entries_and_the_chosen_value_is_the_entry() {
        // A job given GPUs 2 and 3: --gpu 1 is the second, written as 3.
        let m = masks(&[("HIP_VISIBLE_DEVICES", "2,3")]);
        let list = visible(&m, Some(8)).unwrap();
        assert_eq!(
            pairs(Some(list.clone())),
            Some(vec![(2, Some(2)), (3, Some(3))])
        );
        assert_eq!(select(&list, 1, &m).unwrap().rocr_index, 3);
        let err = select(&list, 2, &m).unwrap_err().to_string();
        assert_eq!(
            err,
            "GPU 2 is not visible to the replay: it sees 2 GPU(s) with HIP_VISIBLE_DEVICES=2,3, and GPU indices count within them (0..1)"
        );
        // Unknown host: the mask still bounds the list.
        assert_eq!(visible(&m, None).unwrap().len(), 2);
    }

    #[test]
    fn cuda_visible_devices_counts_only_without_hip_visible_devices() {
        let m = masks(&[("CUDA_VISIBLE_DEVICES", "1")]);
        assert_eq!(pairs(visible(&m, Some(4))), Some(vec![(1, Some(1))]));
        let both = masks(&[
            ("CUDA_VISIBLE_DEVICES", "1"),
            ("HIP_VISIBLE_DEVICES", "0,2"),
        ]);
        assert_eq!(
            pairs(visible(&both, Some(4))),
            Some(vec![(0, Some(0)), (2, Some(2))])
        );
    }

    // ROCR_VISIBLE_DEVICES applies only where ROCr runs (not Windows).
    #[cfg(not(windows))]
    #[test]
    fn hip_indexes_into_rocrs_list_after_rocr_visible_devices() {
        // ROCr keeps host GPUs 4,5,6,7 (in that order); CLR takes its
        // entries 1 and 3: host GPUs 5 and 7, selected as HIP 1 and 3.
        let m = masks(&[
            ("ROCR_VISIBLE_DEVICES", "4,5,6,7"),
            ("HIP_VISIBLE_DEVICES", "1,3"),
        ]);
        let list = visible(&m, Some(8)).unwrap();
        assert_eq!(
            pairs(Some(list.clone())),
            Some(vec![(1, Some(5)), (3, Some(7))])
        );
        assert_eq!(
            select(&list, 0, &m).unwrap(),
            VisibleGpu {
                rocr_index: 1,
                host_index: Some(5)
            }
        );
        // ROCr alone re-indexes: GPU 0 is host GPU 6, selected as HIP 0.
        let m = masks(&[("ROCR_VISIBLE_DEVICES", "6,2")]);
        assert_eq!(
            pairs(visible(&m, Some(8))),
            Some(vec![(0, Some(6)), (1, Some(2))])
        );
        // UUIDs are kept, host index unknown.
        let m = masks(&[("ROCR_VISIBLE_DEVICES", "GPU-4b2c5f1a9e7d3c60,1")]);
        assert_eq!(
            pairs(visible(&m, None)),
            Some(vec![(0, None), (1, Some(1))])
        );
    }

    // ROCR_VISIBLE_DEVICES applies only where ROCr runs (not Windows).
    #[cfg(not(windows))]
    #[test]
    fn a_bad_entry_ends_the_list_and_repeats_are_skipped() {
        let m = masks(&[("HIP_VISIBLE_DEVICES", "1,1,9,0")]);
        assert_eq!(pairs(visible(&m, Some(2))), Some(vec![(1, Some(1))]));
        let m = masks(&[("HIP_VISIBLE_DEVICES", "0,x,1")]);
        assert_eq!(visible(&m, Some(2)).unwrap().len(), 1);
        let m = masks(&[("ROCR_VISIBLE_DEVICES", "3"), ("HIP_VISIBLE_DEVICES", "1")]);
        let list = visible(&m, Some(4)).unwrap();
        assert!(list.is_empty());
        let err = select(&list, 0, &m).unwrap_err().to_string();
        assert!(
            err.starts_with(
                "no GPU is visible to the replay with ROCR_VISIBLE_DEVICES=3 HIP_VISIBLE_DEVICES=1"
            ),
            "{err}"
        );
    }

    #[test]
    fn auto_only_considers_visible_gpus() {
        // Host GPU 0 has the most free VRAM, but the job may use 2 and 3.
        let free: BTreeMap<u32, i128> = [(0, 900), (1, 50), (2, 100), (3, 300)].into();
        let m = masks(&[("HIP_VISIBLE_DEVICES", "2,3")]);
        let list = visible(&m, Some(4)).unwrap();
        assert_eq!(most_free(&list, &free), Some(1));
        assert_eq!(list[1].rocr_index, 3);
        let all = visible(&masks(&[]), Some(4)).unwrap();
        assert_eq!(most_free(&all, &free), Some(0));
        let tie: BTreeMap<u32, i128> = [(2, 100), (3, 100)].into();
        assert_eq!(most_free(&list, &tie), Some(0));
        assert_eq!(most_free(&list, &BTreeMap::new()), None);
    }
}
