//! `ArchiveFacts`: the classifier's view of the `hrr archive info --json`
//! document (DESIGN §3.2). It is the interface with the archive module: the
//! caller serialises the archive summary to JSON and deserialises it here, so
//! both sides only share the documented schema. Every field has a serde
//! default, so a partial document (or a future one with more fields) loads.

use crate::archive::format::manifest::CaptureMetadata;
use crate::archive::ArchiveKind;
use crate::finding::{ArchiveHealth, CaptureInfo};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// `trailer` of the archive summary.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct TrailerFacts {
    /// A trailer record exists.
    pub present: bool,
    /// Event count the trailer claims.
    pub total_events: Option<u64>,
}

/// One `kernels[]` row.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct KernelFacts {
    /// Full, untruncated kernel name.
    pub name: String,
    /// Launch events of this kernel.
    pub launches: u64,
    /// Code-object hash, when bound.
    pub code_object: Option<String>,
}

/// `blobs` / `code_objects` of the summary.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct FileFacts {
    /// Files present.
    pub files: u64,
    /// Distinct hashes referenced by events.
    pub referenced: u64,
    /// Referenced hashes with no file.
    pub missing: Vec<String>,
}

/// One `problems[]` entry.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ProblemFacts {
    /// Problem kind (`torn_tail`, `unsupported_version`, …).
    pub kind: String,
    /// Human-readable detail.
    pub detail: String,
}

/// One `processes[]` row of a root summary.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ProcessFacts {
    /// Process id.
    pub pid: u64,
    /// Parent process id.
    pub parent_pid: Option<u64>,
    /// `complete | incomplete | not_finalized | unknown`.
    pub state: Option<String>,
    /// Events recorded.
    pub events: Option<u64>,
    /// Blobs written.
    pub blobs: Option<u64>,
    /// Size of events.bin.
    pub events_bin_bytes: Option<u64>,
    /// The `pid-*` directory.
    pub path: Option<String>,
}

/// The `hrr archive info --json` document, process or root (DESIGN §3.2).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ArchiveFacts {
    /// Schema version of the document.
    pub schema_version: u32,
    /// A process or a root document.
    pub kind: ArchiveKind,
    /// Absolute archive path.
    pub path: Option<String>,
    /// Process id (process archives).
    pub pid: Option<u64>,
    /// events.bin format version.
    pub format_version: Option<u32>,
    /// events.bin header flags.
    pub flags: Option<u64>,
    /// `complete | incomplete | not_finalized | unknown`.
    pub state: Option<String>,
    /// Valid trailer whose count equals the events before it.
    pub complete: Option<bool>,
    /// Trailer facts.
    pub trailer: Option<TrailerFacts>,
    /// A torn tail record was discarded.
    pub truncated: Option<bool>,
    /// Bytes of the torn tail.
    pub torn_bytes: Option<u64>,
    /// Records found after the trailer.
    pub records_after_trailer: Option<u64>,
    /// Complete non-trailer records.
    pub events: Option<u64>,
    /// Launch events.
    pub kernel_launches: Option<u64>,
    /// Recorded threads.
    pub threads: Option<u64>,
    /// Last minus first timestamp.
    pub duration_ns: Option<u64>,
    /// When `events.bin` was last written (RFC 3339 UTC).
    pub events_modified: Option<String>,
    /// Kernels by launches.
    pub kernels: Vec<KernelFacts>,
    /// Blob files.
    pub blobs: Option<FileFacts>,
    /// Code-object files.
    pub code_objects: Option<FileFacts>,
    /// D2H copies carrying an expected-output blob.
    pub d2h_checks: Option<u64>,
    /// The allocation map and launch pointer audit.
    pub memory: Option<crate::archive::memory::MemorySection>,
    /// The per-process manifest as parsed.
    pub manifest: Option<Value>,
    /// Problems found while reading.
    pub problems: Vec<ProblemFacts>,
    /// Root: the processes.
    pub processes: Vec<ProcessFacts>,
    /// Root: the process triage would pick.
    pub chosen: Option<u64>,
    /// Root: why.
    pub reason: Option<String>,
}

impl ArchiveFacts {
    /// Archive health as the finding reports it.
    pub fn health(&self) -> ArchiveHealth {
        let processes = if self.kind == ArchiveKind::Root {
            self.processes.iter().map(|p| p.pid).collect()
        } else {
            self.pid.into_iter().collect()
        };
        ArchiveHealth {
            complete: self.complete,
            trailer: self.trailer.as_ref().map(|t| t.present),
            truncated: self.truncated,
            recovered_events: match self.complete {
                Some(true) => Some(0),
                Some(false) => self.events,
                None => None,
            },
            events: self.events,
            kernel_launches: self.kernel_launches,
            blobs: self.blobs.as_ref().map(|b| b.files),
            code_objects: self.code_objects.as_ref().map(|b| b.files),
            threads: self.threads,
            processes,
            events_modified: self.events_modified.clone(),
        }
    }

    /// Capture environment from the manifest `metadata` (upstream-triage §4.2),
    /// read by the archive's one metadata parser; the arch is the first
    /// device's.
    pub fn capture(&self) -> CaptureInfo {
        let Some(meta) = self
            .manifest
            .as_ref()
            .and_then(CaptureMetadata::from_manifest)
        else {
            return CaptureInfo::default();
        };
        CaptureInfo {
            gcn_arch: meta
                .devices
                .into_iter()
                .next()
                .and_then(|d| d.gcn_arch_name),
            hip_runtime_version: meta.hip_runtime_version,
            comgr_version: meta.comgr_version,
            device_count: meta.device_count,
            ..CaptureInfo::default()
        }
    }

    /// The kernel of a single-kernel archive: exactly one distinct kernel,
    /// and the list accounts for every launch (so it was not cut short).
    pub fn single_kernel(&self) -> Option<&str> {
        let [only] = self.kernels.as_slice() else {
            return None;
        };
        let whole = self.kernel_launches.is_none_or(|n| n == only.launches);
        (whole && !only.name.is_empty()).then_some(only.name.as_str())
    }

    /// Whether `kernels` holds every kernel the archive launches: its launch
    /// counts add up to `kernel_launches`. They fall short when kernels went
    /// untracked past the summary's table caps (the `tables_capped` problem),
    /// when launches could not be decoded, or when the list was cut
    /// (`archive info --json --kernels N`).
    pub fn kernel_table_complete(&self) -> bool {
        let listed: u64 = self.kernels.iter().map(|k| k.launches).sum();
        self.kernel_launches.is_some_and(|n| n == listed)
    }

    /// Problems of `kind` the summary reports.
    pub fn problem(&self, kind: &str) -> Option<&ProblemFacts> {
        self.problems.iter().find(|p| p.kind == kind)
    }

    /// Process ids of a root with several processes.
    pub fn other_processes(&self) -> Vec<u64> {
        if self.kind == ArchiveKind::Root && self.processes.len() > 1 {
            self.processes.iter().map(|p| p.pid).collect()
        } else {
            Vec::new()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_documented_process_document() {
        let doc = r#"{
          "schema_version": 1, "kind": "process", "path": "/abs/capture.hrr/pid-4242",
          "pid": 4242, "format_version": 7, "flags": 1, "state": "complete", "complete": true,
          "trailer": {"present": true, "total_events": 23}, "truncated": false, "torn_bytes": 0,
          "records_after_trailer": 0, "events": 23, "kernel_launches": 3, "threads": 1,
          "duration_ns": 123456, "apis": [{"id": 215, "name": "hipMalloc", "count": 3}],
          "kernels": [{"name": "vector_add", "launches": 2, "code_object": null},
                      {"name": "saxpy", "launches": 1, "code_object": null}],
          "blobs": {"files": 4, "referenced": 4, "missing": []},
          "code_objects": {"files": 1, "referenced": 1, "missing": []},
          "d2h_checks": 3, "regions": {"streams": 0, "records": 0},
          "manifest": {"pid": 4242, "metadata": {"runtime": {"hip_runtime_version": "7.13.0",
             "comgr_version": "2.8"}, "device_count": "2",
             "devices": [{"ordinal": 0, "properties": {"gcn_arch_name": "gfx942:sramecc+:xnack-"}}]}},
          "problems": []
        }"#;
        let f: ArchiveFacts = serde_json::from_str(doc).unwrap();
        let h = f.health();
        assert_eq!(h.complete, Some(true));
        assert_eq!(h.recovered_events, Some(0));
        assert_eq!(h.events, Some(23));
        assert_eq!(h.blobs, Some(4));
        assert_eq!(h.processes, [4242]);
        let c = f.capture();
        assert_eq!(c.hip_runtime_version.as_deref(), Some("7.13.0"));
        assert_eq!(c.comgr_version.as_deref(), Some("2.8"));
        assert_eq!(c.device_count, Some(2));
        assert_eq!(c.gcn_arch.as_deref(), Some("gfx942:sramecc+:xnack-"));
        assert_eq!(f.single_kernel(), None, "two kernels");
    }

    #[test]
    fn single_kernel_needs_the_whole_list() {
        let mut f: ArchiveFacts = serde_json::from_str(
            r#"{"kind":"process","kernel_launches":4,"kernels":[{"name":"k","launches":4}]}"#,
        )
        .unwrap();
        assert_eq!(f.single_kernel(), Some("k"));
        f.kernel_launches = Some(9); // list cut to the top kernel only
        assert_eq!(f.single_kernel(), None);
    }

    #[test]
    fn partial_and_root_documents_load() {
        let f: ArchiveFacts = serde_json::from_str("{}").unwrap();
        assert_eq!(f.health(), ArchiveHealth::default());
        let r: ArchiveFacts = serde_json::from_str(
            r#"{"schema_version":1,"kind":"root","path":"/r","processes":[{"pid":1},{"pid":2}],"chosen":2,"reason":"died"}"#,
        )
        .unwrap();
        assert_eq!(r.other_processes(), [1, 2]);
        assert_eq!(r.health().processes, [1, 2]);
        let legacy: ArchiveFacts =
            serde_json::from_str(r#"{"manifest":{"metadata":{"device_count":true}}}"#).unwrap();
        assert_eq!(legacy.capture().device_count, None, "a bool is not a count");
    }
}
