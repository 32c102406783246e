//! A fingerprint of a directory tree (every entry's kind, mode, mtime, and a
//! hash of its bytes or link target), to prove a command left an archive
//! exactly as it found it. Symlinks are recorded, never followed, so a
//! symlink loop in a hostile archive is just another entry.

use std::collections::BTreeMap;
use std::hash::Hasher;
use std::io::Read;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// One entry: (kind, mode, mtime seconds, mtime nanoseconds, size, content hash).
pub type Entry = (char, u32, i64, i64, u64, u64);

/// Fingerprints every entry under `root` (and `root` itself), keyed by the
/// path relative to `root`. An entry that cannot be read (mode 000 as a
/// non-root user) is recorded with content hash 0.
pub fn snapshot(root: &Path) -> BTreeMap<PathBuf, Entry> {
    let mut out = BTreeMap::new();
    walk(root, root, &mut out);
    out
}

fn walk(root: &Path, path: &Path, out: &mut BTreeMap<PathBuf, Entry>) {
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return;
    };
    let kind = meta.file_type();
    let (tag, hash) = if kind.is_symlink() {
        let target = std::fs::read_link(path).unwrap_or_default();
        ('l', hash_bytes(target.as_os_str().as_encoded_bytes()))
    } else if kind.is_dir() {
        ('d', 0)
    } else if kind.is_file() {
        ('f', hash_file(path))
    } else {
        ('o', 0)
    };
    let rel = path.strip_prefix(root).unwrap_or(path).to_path_buf();
    out.insert(
        rel,
        (
            tag,
            meta.mode(),
            meta.mtime(),
            meta.mtime_nsec(),
            meta.len(),
            hash,
        ),
    );
    if tag == 'd' {
        if let Ok(entries) = std::fs::read_dir(path) {
            for e in entries.flatten() {
                walk(root, &e.path(), out);
            }
        }
    }
}

fn hash_bytes(bytes: &[u8]) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    h.write(bytes);
    h.finish()
}

fn hash_file(path: &Path) -> u64 {
    let Ok(mut f) = std::fs::File::open(path) else {
        return 0;
    };
    let mut h = std::collections::hash_map::DefaultHasher::new();
    let mut buf = vec![0u8; 1 << 20];
    while let Ok(n) = f.read(&mut buf) {
        if n == 0 {
            break;
        }
        h.write(&buf[..n]);
    }
    h.finish()
}

/// Paths under `dir` whose file name starts with `.hrr-tmp-` (the prefix of
/// `hrr`'s atomic-write temp files): any left behind is a torn write.
pub fn leftover_temp_files(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let name = e.file_name();
            if name.to_string_lossy().starts_with(".hrr-tmp-") {
                found.push(e.path());
            }
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                stack.push(e.path());
            }
        }
    }
    found
}
