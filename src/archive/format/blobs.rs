//! Content hashes of blobs and code objects, and the files that hold them
//! (reference §13).
//!
//! A hash is the FNV-1a-128 pair (lo, hi) written by the capture; its name is
//! `%016llx%016llx` of lo then hi. Blobs live at `blobs/<hh>/<name>.blob`
//! (indexed recursively by file stem, as the upstream reader does), code
//! objects at `code_objects/<name>.hsaco` (flat).

use std::fmt;
use std::fs;
use std::path::Path;

/// An FNV-1a-128 content hash as recorded in events; (0, 0) means "none".
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct BlobHash {
    /// Standard 64-bit FNV-1a over the bytes.
    pub lo: u64,
    /// The second pass (basis and prime swapped).
    pub hi: u64,
}

impl BlobHash {
    /// A hash from its two recorded halves.
    pub fn new(lo: u64, hi: u64) -> BlobHash {
        BlobHash { lo, hi }
    }

    /// True for the (0, 0) "no blob" value.
    pub fn is_zero(self) -> bool {
        self.lo == 0 && self.hi == 0
    }

    /// `Some(self)` unless it is the "no blob" value.
    pub fn nonzero(self) -> Option<BlobHash> {
        (!self.is_zero()).then_some(self)
    }

    /// Parses a 32-hex-digit file name stem (lo first, then hi).
    pub fn from_hex(s: &str) -> Option<BlobHash> {
        if s.len() != 32 || !s.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        let lo = u64::from_str_radix(&s[..16], 16).ok()?;
        let hi = u64::from_str_radix(&s[16..], 16).ok()?;
        Some(BlobHash { lo, hi })
    }
}

impl fmt::Display for BlobHash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:016x}{:016x}", self.lo, self.hi)
    }
}

/// The blob and code-object files present in a process archive.
#[derive(Debug, Default)]
pub struct FileIndex {
    /// Every `*.blob` file found under `blobs/`.
    pub blob_files: u64,
    /// Every `*.hsaco` file found in `code_objects/`.
    pub code_object_files: u64,
    /// Hashes of blob files with a well-formed 32-hex name.
    pub blobs: Vec<BlobHash>,
    /// Hashes of code-object files with a well-formed 32-hex name.
    pub code_objects: Vec<BlobHash>,
}

impl FileIndex {
    /// Scans `blobs/` (recursively, not following symlinked directories)
    /// and `code_objects/` (flat) of a process archive. Missing directories
    /// are empty; unreadable ones are reported as an error string.
    pub fn scan(process_dir: &Path) -> Result<FileIndex, String> {
        let mut index = FileIndex::default();
        let mut blobs = Vec::new();
        scan_dir(&process_dir.join("blobs"), "blob", true, &mut blobs, 0)?;
        index.blob_files = blobs.len() as u64;
        index.blobs = blobs.into_iter().flatten().collect();
        let mut cos = Vec::new();
        scan_dir(
            &process_dir.join("code_objects"),
            "hsaco",
            false,
            &mut cos,
            0,
        )?;
        index.code_object_files = cos.len() as u64;
        index.code_objects = cos.into_iter().flatten().collect();
        index.blobs.sort_unstable();
        index.blobs.dedup();
        index.code_objects.sort_unstable();
        index.code_objects.dedup();
        Ok(index)
    }

    /// Counts `*.blob` files only (for the root process table).
    pub fn count_blobs(process_dir: &Path) -> u64 {
        let mut found = Vec::new();
        match scan_dir(&process_dir.join("blobs"), "blob", true, &mut found, 0) {
            Ok(()) => found.len() as u64,
            Err(_) => 0,
        }
    }
}

/// Depth limit of the blob scan: the layout has one level of `<hh>/`
/// folders; a few more are tolerated, a symlink loop is not followed anyway.
const MAX_SCAN_DEPTH: u32 = 4;

fn scan_dir(
    dir: &Path,
    ext: &str,
    recursive: bool,
    out: &mut Vec<Option<BlobHash>>,
    depth: u32,
) -> Result<(), String> {
    let entries = match fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(format!("cannot list {}: {e}", dir.display())),
    };
    for entry in entries {
        let entry = entry.map_err(|e| format!("cannot list {}: {e}", dir.display()))?;
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        let path = entry.path();
        if kind.is_dir() {
            if recursive && depth < MAX_SCAN_DEPTH {
                scan_dir(&path, ext, recursive, out, depth + 1)?;
            }
        } else if kind.is_file() && path.extension().is_some_and(|e| e == ext) {
            let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or("");
            out.push(BlobHash::from_hex(stem));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_prints_lo_first() {
        let h = BlobHash::new(0xF, 0xF000_0000_0000_0000);
        assert_eq!(h.to_string(), "000000000000000ff000000000000000");
        assert_eq!(BlobHash::from_hex(&h.to_string()), Some(h));
        assert_eq!(BlobHash::from_hex("xyz"), None);
    }
}
