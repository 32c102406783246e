//! The comparison rules (reference upstream-triage.md §4.6), plus the two
//! additions of issue 9: the requested-GPU check also runs when the
//! capture's device count is unknown, and the arch is compared for the
//! requested ordinal (by GPU id, not by list position). Counts and
//! ordinals are those within the device masks ([`crate::replay::visible`]).

use super::capture::{normalize_arch, CaptureFacts};
use super::host::HostFacts;
use crate::replay::visible::{self, DeviceMasks};

/// How strict the comparison is.
#[derive(Clone, Copy, Debug, Default)]
pub struct Strictness {
    /// HIP runtime / comgr version mismatches block instead of asking.
    pub version: bool,
    /// An arch mismatch blocks instead of warning.
    pub arch: bool,
}

/// What the rules concluded, each list in rule order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Verdict {
    /// The replay cannot be faithful: do not replay.
    pub blocks: Vec<String>,
    /// Replay only after the user agrees (version mismatches).
    pub confirms: Vec<String>,
    /// Worth knowing; the replay goes ahead.
    pub warnings: Vec<String>,
}

/// Compares `capture` with `host` for a replay on GPU `gpu` (an index
/// among the GPUs `host` says the replay can see).
pub fn evaluate(capture: &CaptureFacts, host: &HostFacts, gpu: u32, strict: Strictness) -> Verdict {
    let mut v = Verdict::default();
    let masks = DeviceMasks::from_described(&host.device_masks);
    let host_gpus = (!host.gpus.is_empty()).then_some(host.gpus.len() as u32);
    let stacked = visible::stacked_masks(&masks, host_gpus);
    match host.visible_gpus {
        Some(visible) => {
            let within = host.within_masks();
            if let Some(seen) = capture.device_count.filter(|&n| n > u64::from(visible)) {
                v.blocks.push(format!(
                    "capture saw {seen} GPU(s) but replay environment only exposes {visible}{within}"
                ));
            }
            if visible == 0 {
                let why = stacked
                    .as_ref()
                    .map(|s| format!(": {s}"))
                    .unwrap_or_default();
                v.blocks.push(format!(
                    "the replay environment exposes no GPU{within}{why}"
                ));
            } else if gpu >= visible {
                v.blocks.push(format!(
                    "requested replay GPU {gpu} but replay environment only has {visible} GPU(s){within} (0..{})",
                    visible - 1
                ));
            }
        }
        None => v.warnings.push(format!(
            "could not determine replay GPU count ({}); continuing with warnings",
            host.source
        )),
    }
    if let Some(s) = stacked.filter(|_| host.visible_gpus != Some(0)) {
        v.warnings.push(format!("the device masks hide GPUs: {s}"));
    }
    if let (Some((cap_gpu, cap_raw)), Some(replay_raw)) =
        (capture.arch_for(gpu), host.arch_of_visible(gpu))
    {
        let (expected, got) = (normalize_arch(cap_raw), normalize_arch(replay_raw));
        if !expected.is_empty() && !got.is_empty() && expected != got {
            let msg = format!(
                "GPU architecture mismatch: capture GPU {cap_gpu} is {expected}, replay GPU {gpu} looks like {got}"
            );
            if strict.arch {
                v.blocks.push(msg);
            } else {
                v.warnings.push(msg);
            }
        }
    }
    let versions = [
        (
            "HIP runtime",
            &capture.hip_runtime_version,
            &host.hip_runtime_version,
        ),
        ("comgr", &capture.comgr_version, &host.comgr_version),
    ];
    for (what, cap, replay) in versions {
        if let (Some(a), Some(b)) = (cap, replay) {
            if a != b {
                let msg = format!("{what} version mismatch: capture {a} vs replay {b}");
                if strict.version {
                    v.blocks.push(msg);
                } else {
                    v.confirms.push(msg);
                }
            }
        }
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::archive::format::manifest::CaptureDevice;
    use crate::preflight::smi::HostGpu;

    fn capture(count: Option<u64>, archs: &[&str], hip: &str, comgr: &str) -> CaptureFacts {
        CaptureFacts {
            metadata: true,
            device_count: count,
            hip_runtime_version: Some(hip.into()),
            comgr_version: Some(comgr.into()),
            devices: archs
                .iter()
                .enumerate()
                .map(|(i, a)| CaptureDevice {
                    ordinal: Some(i as u64),
                    gcn_arch_name: Some(a.to_string()),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }
    }

    fn host(archs: &[&str], hip: &str, comgr: &str) -> HostFacts {
        HostFacts {
            source: "host".into(),
            visible_gpus: (!archs.is_empty()).then_some(archs.len() as u32),
            gpus: archs
                .iter()
                .enumerate()
                .map(|(i, a)| HostGpu {
                    id: i as u32,
                    arch: Some(a.to_string()),
                    name: None,
                })
                .collect(),
            hip_runtime_version: Some(hip.into()),
            comgr_version: Some(comgr.into()),
            ..Default::default()
        }
    }

    const LAX: Strictness = Strictness {
        version: false,
        arch: false,
    };
    const STRICT: Strictness = Strictness {
        version: true,
        arch: true,
    };

    #[test]
    fn identical_stacks_pass() {
        let c = capture(Some(1), &["gfx942:sramecc+:xnack-"], "7.2.53211", "2.8");
        assert_eq!(
            evaluate(&c, &host(&["gfx942"], "7.2.53211", "2.8"), 0, STRICT),
            Verdict::default()
        );
    }

    #[test]
    fn a_host_with_zero_gpus_blocks_without_underflow() {
        let c = capture(None, &[], "7.2.53211", "2.8");
        let mut h = host(&[], "7.2.53211", "2.8");
        h.visible_gpus = Some(0);
        let v = evaluate(&c, &h, 0, LAX);
        assert_eq!(v.blocks, ["the replay environment exposes no GPU"]);
    }

    /// A host of four gfx942 GPUs seen through the masks `vars`.
    #[cfg(not(windows))]
    fn masked(vars: &[(&str, &str)]) -> HostFacts {
        let mut h = host(&["gfx942"; 4], "7.2.53211", "2.8");
        h.apply_masks(&DeviceMasks::from_vars(|k| {
            vars.iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| v.to_string())
        }));
        h
    }

    // ROCR_VISIBLE_DEVICES applies only where ROCr runs (not Windows).
    #[cfg(not(windows))]
    #[test]
    fn slurm_masks_repeated_in_cuda_visible_devices_are_explained_with_the_fix() {
        let c = capture(Some(1), &["gfx942"], "7.2.53211", "2.8");
        // Slurm gave host GPU 2 and set both variables to its host index:
        // HIP's index 2 counts within ROCr's list of one and names none.
        let h = masked(&[("ROCR_VISIBLE_DEVICES", "2"), ("CUDA_VISIBLE_DEVICES", "2")]);
        assert_eq!(h.visible_gpus, Some(0));
        let v = evaluate(&c, &h, 0, LAX);
        assert_eq!(
            v.blocks.last().map(String::as_str),
            Some(
                "the replay environment exposes no GPU within ROCR_VISIBLE_DEVICES=2 CUDA_VISIBLE_DEVICES=2: \
                 CUDA_VISIBLE_DEVICES=2 counts within the 1 GPU(s) ROCR_VISIBLE_DEVICES=2 leaves (HIP applies it after ROCr), \
                 so its entry 2 names none of them; when both hold host GPU indices (Slurm without device cgroups sets both), \
                 unset CUDA_VISIBLE_DEVICES and keep ROCR_VISIBLE_DEVICES"
            )
        );
        assert!(v.warnings.is_empty(), "{v:?}");
        // Given GPUs 1 and 2 so, HIP keeps only the first: a warning.
        let h = masked(&[
            ("ROCR_VISIBLE_DEVICES", "1,2"),
            ("CUDA_VISIBLE_DEVICES", "1,2"),
        ]);
        assert_eq!(h.visible_gpus, Some(1));
        let v = evaluate(&c, &h, 0, LAX);
        assert!(v.blocks.is_empty(), "{v:?}");
        assert_eq!(v.warnings.len(), 1, "{v:?}");
        assert!(
            v.warnings[0].starts_with("the device masks hide GPUs: CUDA_VISIBLE_DEVICES=1,2 counts within the 2 GPU(s) ROCR_VISIBLE_DEVICES=1,2 leaves"),
            "{v:?}"
        );
        // Masks that do not stack say nothing more.
        let h = masked(&[("ROCR_VISIBLE_DEVICES", "2")]);
        assert_eq!(evaluate(&c, &h, 0, LAX), Verdict::default());
    }

    #[test]
    fn gpu_count_and_requested_gpu_block() {
        let c = capture(Some(2), &["gfx942", "gfx942"], "7.2.53211", "2.8");
        let h = host(&["gfx942"], "7.2.53211", "2.8");
        let v = evaluate(&c, &h, 1, LAX);
        assert_eq!(
            v.blocks,
            [
                "capture saw 2 GPU(s) but replay environment only exposes 1",
                "requested replay GPU 1 but replay environment only has 1 GPU(s) (0..0)"
            ]
        );
        // The requested-GPU check also runs without a capture device count.
        let c = CaptureFacts {
            device_count: None,
            ..c
        };
        assert_eq!(evaluate(&c, &h, 3, LAX).blocks.len(), 1);
    }

    #[test]
    fn arch_warns_or_blocks_per_requested_ordinal() {
        let c = capture(
            Some(2),
            &["gfx942:sramecc+:xnack-", "gfx90a:xnack+"],
            "v",
            "c",
        );
        let h = host(&["gfx942", "gfx942"], "v", "c");
        assert_eq!(evaluate(&c, &h, 0, LAX), Verdict::default());
        let msg =
            "GPU architecture mismatch: capture GPU 1 is gfx90a, replay GPU 1 looks like gfx942";
        assert_eq!(evaluate(&c, &h, 1, LAX).warnings, [msg]);
        assert_eq!(
            evaluate(
                &c,
                &h,
                1,
                Strictness {
                    arch: true,
                    version: false
                }
            )
            .blocks,
            [msg]
        );
    }

    #[test]
    fn versions_ask_or_block() {
        let c = capture(Some(1), &["gfx942"], "7.13.0", "2.8");
        let h = host(&["gfx942"], "7.2.53211", "3.0");
        let expected = [
            "HIP runtime version mismatch: capture 7.13.0 vs replay 7.2.53211",
            "comgr version mismatch: capture 2.8 vs replay 3.0",
        ];
        let v = evaluate(&c, &h, 0, LAX);
        assert_eq!(v.confirms, expected);
        assert!(v.blocks.is_empty());
        let v = evaluate(
            &c,
            &h,
            0,
            Strictness {
                version: true,
                arch: false,
            },
        );
        assert_eq!(v.blocks, expected);
        assert!(v.confirms.is_empty());
    }

    #[test]
    fn unknown_host_values_compare_nothing_and_warn_once() {
        let c = capture(Some(8), &["gfx942"], "7.13.0", "2.8");
        let h = HostFacts {
            source: "host".into(),
            ..Default::default()
        };
        let v = evaluate(&c, &h, 5, STRICT);
        assert!(v.blocks.is_empty() && v.confirms.is_empty());
        assert_eq!(
            v.warnings,
            ["could not determine replay GPU count (host); continuing with warnings"]
        );
    }
}
