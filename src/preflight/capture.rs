//! The capture side of the preflight: what the recording process saw, read
//! from the `metadata` object of `pid-<pid>/manifest.json`
//! (reference archive-format.md §3, upstream-triage.md §4.2).

use std::path::Path;

use serde::Serialize;
use serde_json::Value;

use crate::archive::format::manifest::ManifestState;

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

/// One GPU the capture saw.
#[derive(Clone, Debug, Default, Serialize, PartialEq, Eq, schemars::JsonSchema)]
pub struct CaptureDevice {
    /// `ordinal`, when the manifest gives it.
    pub ordinal: Option<u64>,
    /// Marketing name (`properties.name`).
    pub name: Option<String>,
    /// Raw `gcn_arch_name`, e.g. `gfx942:sramecc+:xnack-`.
    pub gcn_arch_name: Option<String>,
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
    match crate::archive::format::manifest::read(process_dir) {
        ManifestState::Present(v) => from_manifest(&v),
        ManifestState::Missing => {
            legacy("the process has no manifest.json (killed hard, or not finalized)".into())
        }
        ManifestState::Unreadable(why) => legacy(why),
    }
}

fn legacy(reason: String) -> CaptureFacts {
    CaptureFacts {
        missing_reason: Some(reason),
        ..CaptureFacts::default()
    }
}

/// The capture facts of a parsed per-process manifest.
pub fn from_manifest(manifest: &Value) -> CaptureFacts {
    let Some(meta) = manifest.get("metadata").and_then(Value::as_object) else {
        return legacy(
            "the manifest has no metadata object (legacy capture, or rewritten by --repair)".into(),
        );
    };
    let runtime = meta.get("runtime").and_then(Value::as_object);
    let version = |key: &str| {
        runtime
            .and_then(|r| r.get(key))
            .and_then(version_text)
            .or_else(|| meta.get(key).and_then(version_text))
    };
    let devices = meta
        .get("devices")
        .and_then(Value::as_array)
        .map(|list| list.iter().filter_map(device).collect())
        .unwrap_or_default();
    CaptureFacts {
        metadata: true,
        missing_reason: None,
        schema_version: meta
            .get("schema_version")
            .and_then(lenient_int)
            .map(|n| n.to_string()),
        hip_runtime_version: version("hip_runtime_version"),
        comgr_version: version("comgr_version"),
        device_count: meta.get("device_count").and_then(lenient_int),
        captured_device_count: meta.get("captured_device_count").and_then(lenient_int),
        devices,
    }
}

fn device(v: &Value) -> Option<CaptureDevice> {
    let d = v.as_object()?;
    let props = d.get("properties").and_then(Value::as_object);
    let text = |key: &str| {
        props
            .and_then(|p| p.get(key))
            .or_else(|| d.get(key))
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
    };
    Some(CaptureDevice {
        ordinal: d.get("ordinal").and_then(lenient_int),
        name: text("name"),
        gcn_arch_name: text("gcn_arch_name"),
    })
}

/// A non-negative integer, or a string of digits; booleans are rejected.
fn lenient_int(v: &Value) -> Option<u64> {
    match v {
        Value::Number(n) => n.as_u64(),
        Value::String(s) if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) => {
            s.parse().ok()
        }
        _ => None,
    }
}

/// A version value as text when it is "truthy": a non-empty string or a
/// non-zero number.
fn version_text(v: &Value) -> Option<String> {
    match v {
        Value::String(s) if !s.trim().is_empty() => Some(s.trim().to_string()),
        Value::Number(n) if n.as_f64() != Some(0.0) => Some(n.to_string()),
        _ => None,
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
    use serde_json::json;

    /// The reference's example manifest (upstream-triage.md §4.2).
    fn sample() -> Value {
        json!({
          "pid": 1, "parent_pid": 1, "complete": false, "event_count": 100, "blob_count": 5,
          "metadata": {
            "schema_version": 1,
            "runtime": {"hip_runtime_version": "7.13.0", "comgr_version": "2.8"},
            "device_count": 2, "captured_device_count": 2,
            "devices": [
              {"ordinal": 0, "properties": {"name": "Instinct MI300X", "gcn_arch_name": "gfx942:sramecc+:xnack-"}},
              {"ordinal": 1, "properties": {"name": "Instinct MI300X", "gcn_arch_name": "gfx942:sramecc+:xnack-"}}
            ]
          }
        })
    }

    #[test]
    fn reads_the_reference_example() {
        let c = from_manifest(&sample());
        assert!(c.metadata);
        assert_eq!(c.schema_version.as_deref(), Some("1"));
        assert_eq!(c.hip_runtime_version.as_deref(), Some("7.13.0"));
        assert_eq!(c.comgr_version.as_deref(), Some("2.8"));
        assert_eq!(
            (c.device_count, c.captured_device_count),
            (Some(2), Some(2))
        );
        assert_eq!(c.arch_names(), ["gfx942:sramecc+:xnack-"; 2]);
        assert_eq!(c.devices[1].name.as_deref(), Some("Instinct MI300X"));
        assert_eq!(c.arch_for(1), Some((1, "gfx942:sramecc+:xnack-")));
    }

    #[test]
    fn top_level_fallbacks_lenient_ints_and_direct_arch() {
        let m = json!({"metadata": {
            "schema_version": "2", "hip_runtime_version": "7.15.26291", "comgr_version": 3,
            "runtime": {"hip_runtime_version": ""},
            "device_count": "3", "captured_device_count": true,
            "devices": ["junk", {"gcn_arch_name": "gfx90a:xnack+"}, {"properties": {"gcn_arch_name": "gfx1100"}}]
        }});
        let c = from_manifest(&m);
        assert_eq!(c.schema_version.as_deref(), Some("2"));
        assert_eq!(c.hip_runtime_version.as_deref(), Some("7.15.26291"));
        assert_eq!(c.comgr_version.as_deref(), Some("3"));
        assert_eq!((c.device_count, c.captured_device_count), (Some(3), None));
        assert_eq!(c.arch_names(), ["gfx90a:xnack+", "gfx1100"]);
        // No ordinals: by position, clamped to the last device.
        assert_eq!(c.arch_for(0), Some((0, "gfx90a:xnack+")));
        assert_eq!(c.arch_for(7), Some((1, "gfx1100")));
    }

    #[test]
    fn no_metadata_is_a_legacy_capture_with_a_reason() {
        let c = from_manifest(
            &json!({"pid": 1, "parent_pid": 0, "complete": true, "event_count": 3, "blob_count": 0}),
        );
        assert!(!c.metadata);
        assert!(c.missing_reason.unwrap().contains("--repair"));
        let dir = tempfile::tempdir().unwrap();
        assert!(read(dir.path())
            .missing_reason
            .unwrap()
            .contains("no manifest.json"));
        std::fs::write(dir.path().join("manifest.json"), "{\"pid\": ").unwrap();
        assert!(read(dir.path())
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
