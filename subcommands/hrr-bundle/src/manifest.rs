//! `BUNDLE.json`: the entry listing each file of a bundle with its size,
//! role and SHA-256 digests, plus the `hrr archive info --json` summary.
//!
//! Layout 3 (written now) puts it last and gives each file the SHA-256 of
//! every [`PIECE_SIZE`]-byte piece plus one SHA-256 over those digests, so
//! the pieces of one large file are hashed on several cores at once.
//! Layout 2 put it last with one whole-file SHA-256; layout 1 put it first.
//! `verify` reads all three.

use serde::{Deserialize, Serialize};

/// Name of the manifest entry: the last entry of the tar (the first in
/// layout 1).
pub const MANIFEST_NAME: &str = "BUNDLE.json";

/// The largest `BUNDLE.json` `verify` will read (a manifest listing a
/// million files is well under this).
pub const MANIFEST_MAX_BYTES: u64 = 64 * 1024 * 1024;

/// Version of the bundle layout `hrr bundle` writes: 3, `BUNDLE.json` last,
/// files hashed in pieces.
pub const SCHEMA_VERSION: u32 = 3;

/// Bytes per hashed piece in layout 3 (the last piece of a file is shorter;
/// a file of at most this size is one piece, whose digest is the file's
/// plain SHA-256). `BUNDLE.json` states it as `piece_size`.
pub const PIECE_SIZE: u64 = 4 << 20;

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
    /// Bytes per hashed piece ([`PIECE_SIZE`]); layout 3 only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub piece_size: Option<u64>,
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
    /// Why it is there.
    pub role: Role,
    /// The SHA-256 digests of its content.
    #[serde(flatten)]
    pub digest: FileDigest,
}

/// How a file's content is hashed: in pieces (layout 3) or whole (layouts
/// 1 and 2). All digests are lowercase hex.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum FileDigest {
    /// Layout 3.
    Pieces {
        /// SHA-256 of the concatenated 32-byte digests of `piece_sha256`, in
        /// order: one digest naming the whole file.
        tree_sha256: String,
        /// SHA-256 of each `piece_size`-byte piece, in order; an empty file
        /// has one, of no bytes.
        piece_sha256: Vec<String>,
    },
    /// Layouts 1 and 2: the SHA-256 of the whole content.
    Whole {
        /// Its digest.
        sha256: String,
    },
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

/// How many pieces a file of `size` bytes is hashed in: one per started
/// [`PIECE_SIZE`] bytes, and one for an empty file.
pub fn piece_count(size: u64) -> u64 {
    size.div_ceil(PIECE_SIZE).max(1)
}

#[cfg(test)]
mod tests {
    use super::{is_safe_path, piece_count, PIECE_SIZE};

    #[test]
    fn a_file_has_one_piece_per_started_piece_size_and_at_least_one() {
        assert_eq!(piece_count(0), 1);
        assert_eq!(piece_count(1), 1);
        assert_eq!(piece_count(PIECE_SIZE), 1);
        assert_eq!(piece_count(PIECE_SIZE + 1), 2);
        assert_eq!(piece_count(3 * PIECE_SIZE), 3);
    }

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
