//! The archives a run over many covers: the paths given on the command line
//! and in a `--from` list, each a capture root or a `pid-*` directory, or
//! else a directory searched for capture roots. Every archive is named by
//! its resolved path, once, and the list is byte-sorted, so that every task
//! of a job array sees the same list.

use std::io::Read as _;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context as _};

use crate::safety::{is_archive_dir, resolve};

/// How many directory levels below a searched directory are looked at for
/// capture roots.
pub const SEARCH_DEPTH: usize = 4;

/// The largest `--from` list read.
pub const LIST_LIMIT: u64 = 16 << 20;

/// The most directory entries one search looks at before it stops with a
/// warning, so that a search rooted at `/` ends.
const SEARCH_LIMIT: usize = 1_000_000;

/// The paths of a `--from` list: one per line, surrounding whitespace
/// trimmed, blank lines and lines starting with `#` skipped; `-` reads
/// stdin. Relative paths count from the current directory, as on the
/// command line.
pub fn read_list(path: &Path) -> anyhow::Result<Vec<PathBuf>> {
    let mut bytes = Vec::new();
    let shown = if path == Path::new("-") {
        std::io::stdin()
            .lock()
            .take(LIST_LIMIT + 1)
            .read_to_end(&mut bytes)
            .context("cannot read the --from list on stdin")?;
        "stdin".to_string()
    } else {
        std::fs::File::open(path)
            .and_then(|f| f.take(LIST_LIMIT + 1).read_to_end(&mut bytes))
            .with_context(|| format!("cannot read the --from list {}", path.display()))?;
        path.display().to_string()
    };
    if bytes.len() as u64 > LIST_LIMIT {
        bail!(
            "the --from list {shown} is larger than {} MiB; split it into several lists",
            LIST_LIMIT >> 20
        );
    }
    Ok(bytes
        .split(|&b| b == b'\n')
        .map(<[u8]>::trim_ascii)
        .filter(|line| !line.is_empty() && !line.starts_with(b"#"))
        .map(path_from_bytes)
        .collect())
}

#[cfg(unix)]
fn path_from_bytes(bytes: &[u8]) -> PathBuf {
    PathBuf::from(<std::ffi::OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(bytes))
}

#[cfg(not(unix))]
fn path_from_bytes(bytes: &[u8]) -> PathBuf {
    PathBuf::from(String::from_utf8_lossy(bytes).into_owned())
}

/// What the paths given expand to.
#[derive(Debug, Default)]
pub struct Expanded {
    /// Every archive, resolved, once, byte-sorted.
    pub archives: Vec<PathBuf>,
    /// Whether a directory was searched (so the run is one over many
    /// archives even when it found one).
    pub searched: bool,
}

/// Expands `paths`: a capture root, a `pid-*` directory or a path that is
/// not a directory (its triage then says what is wrong with it) is an
/// archive; any other directory is searched [`SEARCH_DEPTH`] levels deep
/// for capture roots and `pid-*` archives, never following a symlink. A
/// directory that cannot be read, or a search that finds nothing, is a
/// warning through `warn`.
pub fn expand(paths: &[PathBuf], warn: &mut dyn FnMut(&str)) -> Expanded {
    let mut out = Expanded::default();
    for path in paths {
        let is_dir = std::fs::metadata(path).is_ok_and(|m| m.is_dir());
        if !is_dir || is_pid_dir(path) || is_archive_dir(path) {
            out.archives.push(resolve(path));
            continue;
        }
        out.searched = true;
        let before = out.archives.len();
        let mut budget = SEARCH_LIMIT;
        search(path, SEARCH_DEPTH, &mut budget, &mut out.archives, warn);
        if budget == 0 {
            warn(&format!(
                "stopped searching {} after {SEARCH_LIMIT} directory entries; name its capture roots instead",
                path.display()
            ));
        }
        if out.archives.len() == before {
            warn(&format!(
                "no capture archive found in {} ({SEARCH_DEPTH} levels searched, symlinks not followed)",
                path.display()
            ));
        }
    }
    out.archives.sort_by(|a, b| {
        a.as_os_str()
            .as_encoded_bytes()
            .cmp(b.as_os_str().as_encoded_bytes())
    });
    out.archives.dedup();
    out
}

/// A directory named `pid-*`.
fn is_pid_dir(path: &Path) -> bool {
    resolve(path)
        .file_name()
        .is_some_and(|n| n.as_encoded_bytes().starts_with(b"pid-"))
}

/// Adds the archives below `dir`, `depth` levels deep, to `found`; an
/// archive is not searched further.
fn search(
    dir: &Path,
    depth: usize,
    budget: &mut usize,
    found: &mut Vec<PathBuf>,
    warn: &mut dyn FnMut(&str),
) {
    if depth == 0 || *budget == 0 {
        return;
    }
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) => {
            warn(&format!("cannot search {}: {e}; skipped", dir.display()));
            return;
        }
    };
    let mut subdirs = Vec::new();
    for entry in entries {
        if *budget == 0 {
            return;
        }
        *budget -= 1;
        let entry = match entry {
            Ok(entry) => entry,
            Err(e) => {
                warn(&format!("cannot search {}: {e}; skipped", dir.display()));
                return;
            }
        };
        // The entry's own type: a symlink is never a directory here.
        if !entry.file_type().is_ok_and(|t| t.is_dir()) {
            continue;
        }
        let path = entry.path();
        if is_archive_dir(&path) {
            found.push(resolve(&path));
        } else {
            subdirs.push(path);
        }
    }
    subdirs.sort();
    for sub in subdirs {
        search(&sub, depth - 1, budget, found, warn);
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    fn root(dir: &Path) {
        std::fs::create_dir_all(dir.join("pid-7")).unwrap();
        std::fs::write(dir.join("pid-7/events.bin"), b"").unwrap();
    }

    fn names(base: &Path, list: &[PathBuf]) -> Vec<String> {
        let base = resolve(base);
        list.iter()
            .map(|p| p.strip_prefix(&base).unwrap().display().to_string())
            .collect()
    }

    #[test]
    fn a_search_finds_roots_within_the_depth_and_follows_no_symlink() {
        let t = tempfile::tempdir().unwrap();
        let d = t.path();
        root(&d.join("a/capture.hrr"));
        root(&d.join("b/c/d/capture.hrr")); // level 4
        root(&d.join("b/c/d/e/capture.hrr")); // level 5: too deep
        std::fs::create_dir_all(d.join("loose/pid-9")).unwrap();
        std::fs::write(d.join("loose/pid-9/events.bin"), b"").unwrap();
        let elsewhere = tempfile::tempdir().unwrap();
        root(&elsewhere.path().join("linked.hrr"));
        std::os::unix::fs::symlink(elsewhere.path(), d.join("link")).unwrap();
        std::os::unix::fs::symlink(elsewhere.path().join("linked.hrr"), d.join("root-link"))
            .unwrap();
        let mut warnings = Vec::new();
        let e = expand(&[d.to_path_buf()], &mut |w| warnings.push(w.to_string()));
        assert!(e.searched);
        assert_eq!(
            names(d, &e.archives),
            ["a/capture.hrr", "b/c/d/capture.hrr", "loose"]
        );
        assert!(warnings.is_empty(), "{warnings:?}");
    }

    #[test]
    fn named_archives_are_kept_once_and_sorted_by_bytes() {
        let t = tempfile::tempdir().unwrap();
        let d = t.path();
        root(&d.join("z.hrr"));
        root(&d.join("B.hrr"));
        let given = [
            d.join("z.hrr"),
            d.join("B.hrr/pid-7"),
            d.join("./z.hrr"),
            d.join("missing.hrr"),
            d.join("B.hrr"),
        ];
        let e = expand(&given, &mut |w| panic!("{w}"));
        assert!(!e.searched);
        assert_eq!(
            names(d, &e.archives),
            ["B.hrr", "B.hrr/pid-7", "missing.hrr", "z.hrr"]
        );
    }

    #[test]
    fn an_unreadable_or_empty_directory_is_a_warning() {
        use std::os::unix::fs::PermissionsExt;
        let t = tempfile::tempdir().unwrap();
        let d = t.path();
        root(&d.join("ok/capture.hrr"));
        std::fs::create_dir_all(d.join("locked/inner")).unwrap();
        std::fs::set_permissions(d.join("locked"), std::fs::Permissions::from_mode(0o000)).unwrap();
        let mut warnings = Vec::new();
        let e = expand(&[d.to_path_buf()], &mut |w| warnings.push(w.to_string()));
        std::fs::set_permissions(d.join("locked"), std::fs::Permissions::from_mode(0o755)).unwrap();
        assert_eq!(names(d, &e.archives), ["ok/capture.hrr"]);
        // root can read anything: the warning is only there for others.
        if nix::unistd::geteuid().as_raw() != 0 {
            assert!(
                warnings
                    .iter()
                    .any(|w| w.starts_with("cannot search") && w.contains("locked")),
                "{warnings:?}"
            );
        }
        let empty = tempfile::tempdir().unwrap();
        let mut warnings = Vec::new();
        let e = expand(&[empty.path().to_path_buf()], &mut |w| {
            warnings.push(w.to_string())
        });
        assert!(e.archives.is_empty());
        assert!(
            warnings[0].starts_with("no capture archive found in"),
            "{warnings:?}"
        );
    }

    #[test]
    fn a_list_skips_blank_lines_and_comments() {
        let t = tempfile::tempdir().unwrap();
        let list = t.path().join("list.txt");
        std::fs::write(&list, "# nightly\n/a/capture.hrr\n\n  /b/x.hrr  \r\n#/c\n").unwrap();
        assert_eq!(
            read_list(&list).unwrap(),
            [PathBuf::from("/a/capture.hrr"), PathBuf::from("/b/x.hrr")]
        );
        let err = read_list(&t.path().join("nope")).unwrap_err();
        assert!(format!("{err:#}").starts_with("cannot read the --from list"));
    }
}
