//! Per-process `manifest.json` (reference §3): read it, never trust it
//! blindly, and classify the process state from it.
//!
//! The capture writes it at clean shutdown (`complete: true`) and from the
//! crash callback (`complete: false`); a process killed hard leaves none.
//! Its `metadata` object, the environment the capture ran in, is read here
//! once into [`CaptureMetadata`], which the preflight compares and the
//! finding reports.

use std::fs;
use std::io::Read;
use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Largest manifest read (a real one is a few KiB; `metadata` is < 128 KiB).
pub const MAX_MANIFEST_BYTES: u64 = 4 << 20;

/// What was found at `pid-*/manifest.json`.
#[derive(Debug, Clone, PartialEq)]
pub enum ManifestState {
    /// A JSON object was read.
    Present(Value),
    /// No manifest: the process never shut down or crashed cleanly.
    Missing,
    /// A file exists but is not a readable JSON object; the text says why.
    Unreadable(String),
}

impl ManifestState {
    /// The parsed manifest, when there is one.
    pub fn value(&self) -> Option<&Value> {
        match self {
            ManifestState::Present(v) => Some(v),
            _ => None,
        }
    }

    /// The state the manifest alone implies (DESIGN §3, issue 3).
    pub fn process_state(&self) -> ProcessState {
        match self {
            ManifestState::Missing => ProcessState::NotFinalized,
            ManifestState::Unreadable(_) => ProcessState::Unknown,
            ManifestState::Present(v) => match v.get("complete").and_then(Value::as_bool) {
                Some(true) => ProcessState::Complete,
                Some(false) => ProcessState::Incomplete,
                None => ProcessState::Unknown,
            },
        }
    }

    /// An integer field of the manifest (`pid`, `event_count`, …).
    pub fn int(&self, key: &str) -> Option<u64> {
        self.value()?.get(key)?.as_u64()
    }

    /// The capture environment of the manifest, or why there is none in
    /// words: no manifest, an unreadable one, or one without a `metadata`
    /// object (a legacy capture, or one rewritten by `hrr-playback --repair`).
    pub fn capture_metadata(&self) -> Result<CaptureMetadata, String> {
        match self {
            ManifestState::Present(v) => CaptureMetadata::from_manifest(v).ok_or_else(|| {
                "the manifest has no metadata object (legacy capture, or rewritten by --repair)"
                    .to_string()
            }),
            ManifestState::Missing => {
                Err("the process has no manifest.json (killed hard, or not finalized)".into())
            }
            ManifestState::Unreadable(why) => Err(why.clone()),
        }
    }
}

/// The environment the recording process saw: the manifest's `metadata`
/// object (reference upstream-triage.md §4.2). Values are read leniently,
/// as the capture's writers differ: a version is a non-empty string
/// (trimmed) or a non-zero number, under `runtime` or at the top level; a
/// count is a number or a string of digits, never a boolean.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CaptureMetadata {
    /// `schema_version` of the metadata.
    pub schema_version: Option<u64>,
    /// The HIP runtime version the capture ran on, e.g. `7.2.53211`.
    pub hip_runtime_version: Option<String>,
    /// The comgr version the capture ran with, e.g. `2.8`.
    pub comgr_version: Option<String>,
    /// How many GPUs the capture's runtime enumerated.
    pub device_count: Option<u64>,
    /// How many of them had their properties read.
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

impl CaptureMetadata {
    /// The `metadata` of a parsed per-process manifest; `None` when it has
    /// no `metadata` object.
    pub fn from_manifest(manifest: &Value) -> Option<CaptureMetadata> {
        let meta = manifest.get("metadata")?.as_object()?;
        let runtime = meta.get("runtime").and_then(Value::as_object);
        let version = |key: &str| {
            runtime
                .and_then(|r| r.get(key))
                .and_then(version_text)
                .or_else(|| meta.get(key).and_then(version_text))
        };
        let count = |key: &str| meta.get(key).and_then(lenient_count);
        Some(CaptureMetadata {
            schema_version: count("schema_version"),
            hip_runtime_version: version("hip_runtime_version"),
            comgr_version: version("comgr_version"),
            device_count: count("device_count"),
            captured_device_count: count("captured_device_count"),
            devices: meta
                .get("devices")
                .and_then(Value::as_array)
                .map(|list| list.iter().filter_map(device).collect())
                .unwrap_or_default(),
        })
    }
}

/// A device object: `ordinal`, and `name` / `gcn_arch_name` under
/// `properties` or beside it; anything but an object is skipped.
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
        ordinal: d.get("ordinal").and_then(lenient_count),
        name: text("name"),
        gcn_arch_name: text("gcn_arch_name"),
    })
}

/// A non-negative integer, or a string of digits (trimmed); booleans are
/// rejected.
fn lenient_count(v: &Value) -> Option<u64> {
    match v {
        Value::Number(n) => n.as_u64(),
        Value::String(s) => {
            let s = s.trim();
            (!s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()))
                .then(|| s.parse().ok())
                .flatten()
        }
        _ => None,
    }
}

/// A version value as text when it is "truthy": a non-empty string
/// (trimmed) or a non-zero number.
fn version_text(v: &Value) -> Option<String> {
    match v {
        Value::String(s) if !s.trim().is_empty() => Some(s.trim().to_string()),
        Value::Number(n) if n.as_f64() != Some(0.0) => Some(n.to_string()),
        _ => None,
    }
}

/// How a process's capture ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ProcessState {
    /// Clean shutdown: manifest `complete: true` (and, in a summary, a
    /// trailer whose count matches).
    Complete,
    /// Manifest `complete: false` (crash callback or a known-lossy capture),
    /// or a manifest that the event stream contradicts.
    Incomplete,
    /// No manifest: killed hard, recorded but never finalised.
    NotFinalized,
    /// A manifest that cannot be read or lacks `complete`.
    Unknown,
}

impl ProcessState {
    /// The JSON spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            ProcessState::Complete => "complete",
            ProcessState::Incomplete => "incomplete",
            ProcessState::NotFinalized => "not_finalized",
            ProcessState::Unknown => "unknown",
        }
    }

    /// True when the process died (what triage looks for first).
    pub fn died(self) -> bool {
        matches!(self, ProcessState::Incomplete | ProcessState::NotFinalized)
    }
}

/// Reads `manifest.json` of a process directory. Symlinked manifests are
/// refused (an archive may come from anyone).
pub fn read(process_dir: &Path) -> ManifestState {
    let path = process_dir.join("manifest.json");
    let meta = match fs::symlink_metadata(&path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return ManifestState::Missing,
        Err(e) => return ManifestState::Unreadable(format!("cannot stat manifest.json: {e}")),
    };
    if meta.file_type().is_symlink() {
        return ManifestState::Unreadable("manifest.json is a symlink; not followed".into());
    }
    if !meta.is_file() {
        return ManifestState::Unreadable("manifest.json is not a regular file".into());
    }
    if meta.len() > MAX_MANIFEST_BYTES {
        return ManifestState::Unreadable(format!(
            "manifest.json is {} bytes, over the {} byte limit",
            meta.len(),
            MAX_MANIFEST_BYTES
        ));
    }
    let mut text = Vec::new();
    let read =
        fs::File::open(&path).and_then(|f| f.take(MAX_MANIFEST_BYTES).read_to_end(&mut text));
    if let Err(e) = read {
        return ManifestState::Unreadable(format!("cannot read manifest.json: {e}"));
    }
    match serde_json::from_slice::<Value>(&text) {
        Ok(v @ Value::Object(_)) => ManifestState::Present(v),
        Ok(_) => ManifestState::Unreadable("manifest.json is not a JSON object".into()),
        Err(e) => ManifestState::Unreadable(format!("manifest.json is not valid JSON: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reads_the_reference_metadata() {
        let m = json!({
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
        });
        let c = CaptureMetadata::from_manifest(&m).unwrap();
        assert_eq!(c.schema_version, Some(1));
        assert_eq!(c.hip_runtime_version.as_deref(), Some("7.13.0"));
        assert_eq!(c.comgr_version.as_deref(), Some("2.8"));
        assert_eq!(
            (c.device_count, c.captured_device_count),
            (Some(2), Some(2))
        );
        assert_eq!(c.devices.len(), 2);
        assert_eq!(c.devices[1].ordinal, Some(1));
        assert_eq!(
            c.devices[1].gcn_arch_name.as_deref(),
            Some("gfx942:sramecc+:xnack-")
        );
        assert_eq!(c.devices[1].name.as_deref(), Some("Instinct MI300X"));
    }

    #[test]
    fn values_are_trimmed_and_read_leniently() {
        let m = json!({"metadata": {
            "schema_version": "2", "hip_runtime_version": " 7.15.26291 ", "comgr_version": 3,
            "runtime": {"hip_runtime_version": "", "comgr_version": 0},
            "device_count": " 3 ", "captured_device_count": true,
            "devices": ["junk", {"gcn_arch_name": " gfx90a:xnack+ "}, {"properties": {"gcn_arch_name": "gfx1100", "name": "  "}}]
        }});
        let c = CaptureMetadata::from_manifest(&m).unwrap();
        assert_eq!(c.schema_version, Some(2));
        assert_eq!(c.hip_runtime_version.as_deref(), Some("7.15.26291"));
        assert_eq!(c.comgr_version.as_deref(), Some("3"), "0 is no version");
        assert_eq!((c.device_count, c.captured_device_count), (Some(3), None));
        let archs: Vec<_> = c
            .devices
            .iter()
            .map(|d| d.gcn_arch_name.as_deref())
            .collect();
        assert_eq!(
            archs,
            [Some("gfx90a:xnack+"), Some("gfx1100")],
            "junk is skipped"
        );
        assert_eq!(c.devices[1].name, None);
    }

    #[test]
    fn no_metadata_says_why() {
        let plain = ManifestState::Present(json!({"pid": 1, "complete": true}));
        assert!(plain.capture_metadata().unwrap_err().contains("--repair"));
        assert!(ManifestState::Missing
            .capture_metadata()
            .unwrap_err()
            .contains("no manifest.json"));
        let junk = ManifestState::Present(json!({"metadata": [1]}));
        assert!(junk.capture_metadata().is_err());
    }

    fn state_of(text: Option<&str>) -> ManifestState {
        let dir = tempfile::tempdir().unwrap();
        if let Some(t) = text {
            fs::write(dir.path().join("manifest.json"), t).unwrap();
        }
        read(dir.path())
    }

    #[test]
    fn classification_follows_complete_flag() {
        assert_eq!(state_of(None).process_state(), ProcessState::NotFinalized);
        assert_eq!(
            state_of(Some(r#"{"pid":1,"complete":true}"#)).process_state(),
            ProcessState::Complete
        );
        assert_eq!(
            state_of(Some(r#"{"pid":1,"complete":false}"#)).process_state(),
            ProcessState::Incomplete
        );
        assert_eq!(
            state_of(Some("{\"pid\":1,")).process_state(),
            ProcessState::Unknown
        );
        assert_eq!(state_of(Some("[1]")).process_state(), ProcessState::Unknown);
        assert_eq!(
            state_of(Some(r#"{"version":1,"capture_mode":"in-tree"}"#)).process_state(),
            ProcessState::Unknown
        );
    }
}
