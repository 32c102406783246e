//! `BUNDLE.json`: the entry listing each file of a bundle with its size,
//! SHA-256 and role, plus the `hrr archive info --json` summary. Layout 2
//! puts it last, after the files it lists (so each file is read once, hashed
//! as it is packed); layout 1 put it first, and `verify` reads both.

use serde::{Deserialize, Serialize};

/// Name of the manifest entry: the last entry of the tar (the first in
/// layout 1).
pub const MANIFEST_NAME: &str = "BUNDLE.json";

/// The largest `BUNDLE.json` `verify` will read (a manifest listing a
/// million files is well under this).
pub const MANIFEST_MAX_BYTES: u64 = 64 * 1024 * 1024;

/// Version of the bundle layout `hrr bundle` writes: 2, `BUNDLE.json` last.
pub const SCHEMA_VERSION: u32 = 2;

/// The whole `BUNDLE.json` document.
#[derive(Debug, Serialize, Deserialize)]
pub struct BundleManifest {
    /// Layout version ([`SCHEMA_VERSION`]).
    pub schema_version: u32,
    /// Which program wrote the bundle.
    pub generator: Generator,
    /// When the bundle was written, RFC 3339 UTC (`…Z`).
    pub created_utc: String,
    /// The archive that was packed.
    pub archive: ArchiveSource,
    /// Every file in the bundle except `BUNDLE.json` itself, in tar order.
    pub files: Vec<FileRecord>,
    /// Count and byte total of `files`.
    pub totals: Totals,
    /// Entries of the archive that were left out (symlinks, special files).
    #[serde(default)]
    pub skipped: Vec<Skipped>,
    /// What `hrr archive info --json` reported for the archive.
    pub archive_info: serde_json::Value,
}

/// The program that wrote a bundle.
#[derive(Debug, Serialize, Deserialize)]
pub struct Generator {
    /// Always `hrr-bundle`.
    pub name: String,
    /// Its version.
    pub version: String,
}

/// Where the packed archive came from.
#[derive(Debug, Serialize, Deserialize)]
pub struct ArchiveSource {
    /// The archive's directory on the packing host (resolved path).
    pub source_path: String,
    /// Its directory inside the bundle (`archive/<name>`).
    pub bundle_path: String,
    /// `process` or `root`, as `hrr archive info` said.
    pub kind: Option<String>,
}

/// Why a file is in the bundle.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Part of the capture archive.
    Archive,
    /// The triage finding.
    Finding,
    /// The replay log.
    Log,
}

/// One file of the bundle.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct FileRecord {
    /// Path inside the bundle, `/`-separated, relative.
    pub path: String,
    /// Size in bytes.
    pub size: u64,
    /// Lowercase hex SHA-256 of the content.
    pub sha256: String,
    /// Why it is there.
    pub role: Role,
}

/// Count and byte total of the listed files.
#[derive(Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Totals {
    /// Number of files.
    pub files: u64,
    /// Sum of their sizes.
    pub bytes: u64,
}

impl Totals {
    /// The totals of `files`.
    pub fn of(files: &[FileRecord]) -> Totals {
        Totals {
            files: files.len() as u64,
            bytes: files.iter().map(|f| f.size).sum(),
        }
    }
}

/// An archive entry that was not packed, and why.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Skipped {
    /// Its path inside the bundle had it been packed.
    pub path: String,
    /// Why it was left out.
    pub reason: String,
}

/// True when `path` is a safe relative bundle path: no root, no `.`/`..`
/// components, no empty components, no backslashes.
pub fn is_safe_path(path: &str) -> bool {
    !path.is_empty()
        && !path.contains('\\')
        && path
            .split('/')
            .all(|c| !c.is_empty() && c != "." && c != "..")
}

#[cfg(test)]
mod tests {
    use super::is_safe_path;

    #[test]
    fn bundle_paths_must_be_plain_relative() {
        assert!(is_safe_path("archive/pid-1/events.bin"));
        assert!(!is_safe_path("/etc/passwd"));
        assert!(!is_safe_path("archive/../x"));
        assert!(!is_safe_path("archive//x"));
        assert!(!is_safe_path("./x"));
        assert!(!is_safe_path(""));
    }
}
