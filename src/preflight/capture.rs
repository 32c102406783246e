//! The capture side of the preflight: what the recording process saw, read
//! from the `metadata` object of `pid-<pid>/manifest.json`
//! (reference archive-format.md §3, upstream-triage.md §4.2).

use std::path::Path;

use serde::Serialize;

use crate::archive::format::manifest::{CaptureDevice, CaptureMetadata};

/// What the capture's manifest says about the recording environment.
#[derive(Clone, Debug, Default, Serialize, PartialEq, Eq, schemars::JsonSchema)]
pub struct CaptureFacts {
    /// The manifest carried a `metadata` object. `false` for a legacy
    /// capture, a manifest rewritten by `hrr-playback --repair`, or no
    /// readable manifest: nothing can be compared then.
    pub metadata: bool,
    /// Why there is no metadata, in words (`None` when there is).
    pub missing_reason: Option<String>,
    /// `metadata.schema_version` (reported only).
    pub schema_version: Option<String>,
    /// The HIP runtime version the capture ran on, e.g. `7.2.53211`.
    pub hip_runtime_version: Option<String>,
    /// The comgr version the capture ran with, e.g. `2.8`.
    pub comgr_version: Option<String>,
    /// How many GPUs the capture's runtime enumerated (compared).
    pub device_count: Option<u64>,
    /// How many of them had their properties read (reported only).
    pub captured_device_count: Option<u64>,
    /// One entry per device object, in manifest order.
    pub devices: Vec<CaptureDevice>,
}

impl CaptureFacts {
    /// The raw arch names of the devices that have one, in manifest order.
    pub fn arch_names(&self) -> Vec<&str> {
        self.devices
            .iter()
            .filter_map(|d| d.gcn_arch_name.as_deref())
            .collect()
    }

    /// The device compared with replay GPU `gpu`: the one whose `ordinal` is
    /// `gpu`; without such a device, the `gpu`-th device that has an arch,
    /// clamped to the last one (upstream's `min(gpu, len-1)`). Returns the
    /// capture ordinal it stands for and its raw arch.
    pub fn arch_for(&self, gpu: u32) -> Option<(u64, &str)> {
        let with_arch: Vec<(usize, &CaptureDevice)> = self
            .devices
            .iter()
            .enumerate()
            .filter(|(_, d)| d.gcn_arch_name.is_some())
            .collect();
        if let Some((_, d)) = with_arch
            .iter()
            .find(|(_, d)| d.ordinal == Some(u64::from(gpu)))
        {
            return Some((u64::from(gpu), d.gcn_arch_name.as_deref()?));
        }
        let (pos, d) = with_arch.get((gpu as usize).min(with_arch.len().checked_sub(1)?))?;
        Some((
            d.ordinal.unwrap_or(*pos as u64),
            d.gcn_arch_name.as_deref()?,
        ))
    }
}

/// Reads `<process_dir>/manifest.json`. Never fails: an absent, unreadable,
/// oversized or invalid manifest, or one without a `metadata` object, gives
/// facts with `metadata: false` and the reason.
pub fn read(process_dir: &Path) -> CaptureFacts {
    match crate::archive::format::manifest::read(process_dir).capture_metadata() {
        Ok(meta) => CaptureFacts::from(meta),
        Err(reason) => CaptureFacts {
            missing_reason: Some(reason),
            ..CaptureFacts::default()
        },
    }
}

impl From<CaptureMetadata> for CaptureFacts {
    /// The report's view of the capture's metadata.
    fn from(meta: CaptureMetadata) -> CaptureFacts {
        CaptureFacts {
            metadata: true,
            missing_reason: None,
            schema_version: meta.schema_version.map(|n| n.to_string()),
            hip_runtime_version: meta.hip_runtime_version,
            comgr_version: meta.comgr_version,
            device_count: meta.device_count,
            captured_device_count: meta.captured_device_count,
            devices: meta.devices,
        }
    }
}

/// The arch part that is compared: before the first `:`, trimmed,
/// lowercased (`gfx942:sramecc+:xnack-` → `gfx942`).
pub fn normalize_arch(raw: &str) -> String {
    raw.split(':')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts(manifest: &str) -> CaptureFacts {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("manifest.json"), manifest).unwrap();
        read(dir.path())
    }

    #[test]
    fn reads_the_reference_example() {
        // upstream-triage.md §4.2
        let c = facts(
            r#"{"pid": 1, "parent_pid": 1, "complete": false, "event_count": 100, "blob_count": 5,
              "metadata": {"schema_version": 1,
                "runtime": {"hip_runtime_version": "7.13.0", "comgr_version": "2.8"},
                "device_count": 2, "captured_device_count": 2,
                "devices": [
                  {"ordinal": 0, "properties": {"name": "Instinct MI300X", "gcn_arch_name": "gfx942:sramecc+:xnack-"}},
                  {"ordinal": 1, "properties": {"name": "Instinct MI300X", "gcn_arch_name": "gfx942:sramecc+:xnack-"}}]}}"#,
        );
        assert!(c.metadata);
        assert_eq!(c.schema_version.as_deref(), Some("1"));
        assert_eq!(c.hip_runtime_version.as_deref(), Some("7.13.0"));
        assert_eq!(
            (c.device_count, c.captured_device_count),
            (Some(2), Some(2))
        );
        assert_eq!(c.arch_names(), ["gfx942:sramecc+:xnack-"; 2]);
        assert_eq!(c.arch_for(1), Some((1, "gfx942:sramecc+:xnack-")));
    }

    #[test]
    fn devices_without_ordinals_are_taken_by_position() {
        let c = facts(
            r#"{"metadata": {"devices": ["junk", {"gcn_arch_name": "gfx90a:xnack+"},
                {"properties": {"gcn_arch_name": "gfx1100"}}]}}"#,
        );
        assert_eq!(c.arch_for(0), Some((0, "gfx90a:xnack+")));
        // Clamped to the last device, as upstream's `min(gpu, len-1)`.
        assert_eq!(c.arch_for(7), Some((1, "gfx1100")));
    }

    #[test]
    fn no_metadata_is_a_legacy_capture_with_a_reason() {
        let c = facts(
            r#"{"pid": 1, "parent_pid": 0, "complete": true, "event_count": 3, "blob_count": 0}"#,
        );
        assert!(!c.metadata);
        assert!(c.missing_reason.unwrap().contains("--repair"));
        let dir = tempfile::tempdir().unwrap();
        assert!(read(dir.path())
            .missing_reason
            .unwrap()
            .contains("no manifest.json"));
        assert!(facts("{\"pid\": ")
            .missing_reason
            .unwrap()
            .contains("not valid JSON"));
    }

    #[test]
    fn arch_normalisation() {
        assert_eq!(normalize_arch(" GFX942:sramecc+:xnack- "), "gfx942");
        assert_eq!(normalize_arch("gfx1100"), "gfx1100");
    }
}
