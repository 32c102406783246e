//! Per-process `manifest.json` (reference §3): read it, never trust it
//! blindly, and classify the process state from it.
//!
//! The capture writes it at clean shutdown (`complete: true`) and from the
//! crash callback (`complete: false`); a process killed hard leaves none.

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
