//! Names of what a run over many archives writes per archive: the finding
//! files of `-o DIR` and each worker's own workdir. Two capture roots may
//! have the same name (every night's `capture.hrr`), so a name holds a
//! short hash of the root's resolved path as well.

use std::fmt::Write as _;
use std::path::Path;

use sha2::{Digest, Sha256};

use crate::safety::{archive_root, resolve};

/// How many hex digits of the path's SHA-256 a name holds.
const HASH_DIGITS: usize = 12;

/// `<root name>-<hash of its path>` for the capture root of `archive` (a
/// root, or a `pid-*` directory in one): a stable name that two roots of
/// the same name do not share.
pub fn root_stem(archive: &Path) -> String {
    let root = archive_root(archive);
    let name = root
        .file_name()
        .map_or_else(|| "archive".to_string(), |n| safe(&n.to_string_lossy()));
    let digest = Sha256::digest(root.as_os_str().as_encoded_bytes());
    let mut hash = String::with_capacity(HASH_DIGITS);
    for byte in digest.iter().take(HASH_DIGITS / 2) {
        let _ = write!(hash, "{byte:02x}");
    }
    format!("{name}-{hash}")
}

/// The file a finding about `archive` goes to in `-o DIR`:
/// `<root name>-<hash>-pid-<pid>.finding.json` for a `pid-*` directory,
/// `<root name>-<hash>.finding.json` when no process is known (an archive
/// that could not be triaged at all).
pub fn finding_file(archive: &Path) -> String {
    let resolved = resolve(archive);
    let pid = resolved
        .file_name()
        .map(|n| n.to_string_lossy())
        .and_then(|n| n.strip_prefix("pid-").map(safe));
    match pid {
        Some(pid) => format!("{}-pid-{pid}.finding.json", root_stem(archive)),
        None => format!("{}.finding.json", root_stem(archive)),
    }
}

/// `text` with every character but ASCII letters, digits, `.`, `_` and `-`
/// replaced by `_`, and no leading `.`, so that an archive's name can only
/// ever name a plain file in the directory.
fn safe(text: &str) -> String {
    let mut out: String = text
        .chars()
        .map(|c| match c {
            'a'..='z' | 'A'..='Z' | '0'..='9' | '.' | '_' | '-' => c,
            _ => '_',
        })
        .collect();
    if out.starts_with('.') {
        out.replace_range(..1, "_");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roots_of_the_same_name_get_different_files() {
        let a = finding_file(Path::new("/nightly/a/capture.hrr/pid-4243"));
        let b = finding_file(Path::new("/nightly/b/capture.hrr/pid-4243"));
        assert_ne!(a, b);
        for name in [&a, &b] {
            let hash = name
                .strip_prefix("capture.hrr-")
                .and_then(|r| r.strip_suffix("-pid-4243.finding.json"))
                .unwrap_or_else(|| panic!("{name}"));
            assert_eq!(hash.len(), HASH_DIGITS);
            assert!(hash.chars().all(|c| c.is_ascii_hexdigit()));
        }
        // The process and its root share the stem; the name is stable.
        assert_eq!(
            root_stem(Path::new("/nightly/a/capture.hrr")),
            root_stem(Path::new("/nightly/a/capture.hrr/pid-1"))
        );
        assert_eq!(
            a,
            finding_file(Path::new("/nightly/a/capture.hrr/pid-4243"))
        );
    }

    #[test]
    fn names_from_the_archive_cannot_leave_the_directory() {
        let name = finding_file(Path::new("/x/..hidden\nroot/pid-1;rm"));
        assert!(name.starts_with("_.hidden_root-"), "{name}");
        assert!(name.ends_with("-pid-1_rm.finding.json"), "{name}");
        let whole = finding_file(Path::new("/x/odd.hrr"));
        assert!(whole.starts_with("odd.hrr-") && whole.ends_with(".finding.json"));
        assert!(!whole.contains("pid-"));
    }
}
