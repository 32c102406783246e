//! Process archives and capture roots on disk (reference §1–§3, §13): an
//! `events.bin`, blobs and code objects under their FNV-1a-128 names, the
//! per-process manifest (with `metadata` when asked) and the root manifest.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use crate::events::{fnv1a128, hash_name, EventsFile};

/// What to write as `pid-*/manifest.json`.
#[derive(Debug, Clone)]
pub enum Manifest {
    /// Clean shutdown: `complete: true`.
    Complete,
    /// Crash callback: `complete: false`.
    Incomplete,
    /// Killed hard: no manifest at all.
    None,
    /// Exactly this text (unreadable / hostile manifests).
    Raw(String),
}

/// A process archive to write.
#[derive(Debug, Clone)]
pub struct ProcessArchive {
    /// Process id (directory `pid-<pid>`).
    pub pid: u64,
    /// Parent pid for the manifest.
    pub parent_pid: u64,
    /// The event stream.
    pub events: EventsFile,
    /// Blob contents, written under `blobs/<hh>/<name>.blob`.
    pub blobs: Vec<Vec<u8>>,
    /// Code-object contents, written under `code_objects/<name>.hsaco`.
    pub code_objects: Vec<Vec<u8>>,
    /// The manifest to write.
    pub manifest: Manifest,
    /// Capture-environment `metadata` for the manifest.
    pub metadata: Option<Value>,
    /// `unreplayable_apis` for the manifest.
    pub unreplayable_apis: Option<Value>,
}

impl ProcessArchive {
    /// An archive of `pid` around an event stream, with a complete manifest.
    pub fn new(pid: u64, events: EventsFile) -> ProcessArchive {
        ProcessArchive {
            pid,
            parent_pid: 0,
            events,
            blobs: Vec::new(),
            code_objects: Vec::new(),
            manifest: Manifest::Complete,
            metadata: None,
            unreplayable_apis: None,
        }
    }

    /// Registers blob bytes to write; returns their hash for events.
    pub fn add_blob(&mut self, bytes: &[u8]) -> (u64, u64) {
        self.blobs.push(bytes.to_vec());
        fnv1a128(bytes)
    }

    /// Registers code-object bytes to write; returns their hash.
    pub fn add_code_object(&mut self, bytes: &[u8]) -> (u64, u64) {
        self.code_objects.push(bytes.to_vec());
        fnv1a128(bytes)
    }

    /// The per-process manifest text (one key per line, as the writer does),
    /// or `None` for a killed process.
    pub fn manifest_text(&self) -> Option<String> {
        let complete = match &self.manifest {
            Manifest::Complete => true,
            Manifest::Incomplete => false,
            Manifest::None => return None,
            Manifest::Raw(text) => return Some(text.clone()),
        };
        let mut m = json!({
            "pid": self.pid,
            "parent_pid": self.parent_pid,
            "complete": complete,
            "event_count": self.events.events(),
            "blob_count": (self.blobs.len() + self.code_objects.len()) as u64,
        });
        if let Some(u) = &self.unreplayable_apis {
            m["unreplayable_apis"] = u.clone();
        }
        if let Some(md) = &self.metadata {
            m["metadata"] = md.clone();
        }
        Some(serde_json::to_string_pretty(&m).expect("manifest serialises") + "\n")
    }

    /// Writes `root/pid-<pid>/` and returns its path.
    pub fn write(&self, root: &Path) -> io::Result<PathBuf> {
        let dir = root.join(format!("pid-{}", self.pid));
        fs::create_dir_all(dir.join("blobs"))?;
        fs::create_dir_all(dir.join("code_objects"))?;
        fs::write(dir.join("events.bin"), self.events.bytes())?;
        for b in &self.blobs {
            let name = hash_name(fnv1a128(b));
            let sub = dir.join("blobs").join(&name[..2]);
            fs::create_dir_all(&sub)?;
            fs::write(sub.join(format!("{name}.blob")), b)?;
        }
        for c in &self.code_objects {
            let name = hash_name(fnv1a128(c));
            fs::write(dir.join("code_objects").join(format!("{name}.hsaco")), c)?;
        }
        if let Some(text) = self.manifest_text() {
            fs::write(dir.join("manifest.json"), text)?;
        }
        Ok(dir)
    }
}

/// Writes the root `manifest.json` (reference §2) listing `processes`.
pub fn write_root_manifest(root: &Path, processes: &[&ProcessArchive]) -> io::Result<()> {
    let mut sorted: Vec<&&ProcessArchive> = processes.iter().collect();
    sorted.sort_by_key(|p| p.pid);
    let pids: Vec<u64> = sorted.iter().map(|p| p.pid).collect();
    let owner = sorted
        .iter()
        .find(|p| sorted.iter().any(|c| c.parent_pid == p.pid))
        .map(|p| p.pid)
        .or_else(|| pids.first().copied())
        .unwrap_or(0);
    let list: Vec<Value> = sorted
        .iter()
        .map(|p| {
            json!({
                "pid": p.pid,
                "parent_pid": p.parent_pid,
                "complete": matches!(p.manifest, Manifest::Complete),
                "event_count": p.events.events(),
                "blob_count": (p.blobs.len() + p.code_objects.len()) as u64,
            })
        })
        .collect();
    let m = json!({"version": 1, "capture_mode": "in-tree", "owner_pid": owner, "processes": list});
    fs::write(
        root.join("manifest.json"),
        serde_json::to_string_pretty(&m)? + "\n",
    )
}

/// Capture-environment metadata (reference §3 schema) for one gfx942
/// device. The values are illustrative, not taken from a real host.
pub fn gfx942_metadata() -> Value {
    json!({
        "schema_version": 1,
        "runtime": {"hip_runtime_version": "7.2.53211", "comgr_version": "3.0"},
        "device_count": 1,
        "captured_device_count": 1,
        "devices": [{
            "ordinal": 0,
            "properties": {
                "name": "AMD Instinct MI300X",
                "gcn_arch_name": "gfx942:sramecc+:xnack-",
                "total_global_mem": 206_158_430_208u64,
                "multi_processor_count": 304,
                "warp_size": 64,
                "max_threads_per_block": 1024,
                "clock_rate_khz": 2_100_000,
                "memory_clock_rate_khz": 1_300_000,
                "memory_bus_width": 8192,
                "l2_cache_size": 4_194_304,
                "integrated": 0,
                "managed_memory": 1,
                "memory_pools_supported": 1,
                "compute_mode": 0,
                "compute_capability": "9.4",
                "pci": "0:12:0",
                "uuid": "00000000000000000000000000000000",
                "luid": "",
                "luid_device_node_mask": 0
            }
        }]
    })
}
