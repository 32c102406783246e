//! The rule that nothing is ever written inside an archive (DESIGN §8), and
//! the shape that tells an archive directory from any other.
//!
//! A target is inside an archive when one of its ancestors *is* the archive
//! (same device and inode on Unix, so a bind mount or a symlinked alias of
//! the archive is caught), or when one of its ancestors has the shape of an
//! archive, whether or not the command named one.

use std::path::{Component, Path, PathBuf};

use anyhow::bail;

/// `path` made absolute with every symlink resolved, also when its last
/// components do not exist yet (the deepest existing ancestor is resolved and
/// the rest appended, with `..` applied).
pub fn resolve(path: &Path) -> PathBuf {
    let abs = if path.is_absolute() {
        path.to_path_buf()
    } else {
        std::env::current_dir().unwrap_or_default().join(path)
    };
    let mut rest = Vec::new();
    let mut cur = abs.as_path();
    loop {
        if let Ok(real) = dunce::canonicalize(cur) {
            let mut out = real;
            for c in rest.iter().rev() {
                match c {
                    Component::ParentDir => {
                        out.pop();
                    }
                    Component::CurDir => {}
                    other => out.push(other.as_os_str()),
                }
            }
            return out;
        }
        match (cur.parent(), cur.components().next_back()) {
            (Some(parent), Some(last)) => {
                rest.push(last);
                cur = parent;
            }
            _ => return abs,
        }
    }
}

/// Whether `dir` has the shape of a capture archive: a `pid-*` archive (it
/// holds `events.bin`) or a capture root (it holds a `manifest.json`, or a
/// `pid-*` directory holding `events.bin`). Any kind of entry of those names
/// counts, so a damaged archive is still recognised. A shared temp directory
/// (world-writable with the sticky bit, like `/tmp`) is never an archive:
/// anyone could plant those names there and so stop every write below it.
pub fn is_archive_dir(dir: &Path) -> bool {
    if is_shared_temp(dir) {
        return false;
    }
    let present = |p: PathBuf| std::fs::symlink_metadata(p).is_ok();
    if present(dir.join("events.bin")) || present(dir.join("manifest.json")) {
        return true;
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        return false;
    };
    entries.flatten().any(|e| {
        e.file_name().to_string_lossy().starts_with("pid-") && present(e.path().join("events.bin"))
    })
}

#[cfg(unix)]
fn is_shared_temp(dir: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(dir).is_ok_and(|m| m.permissions().mode() & 0o1002 == 0o1002)
}

/// Windows has no sticky bit; its temp directories are per user.
#[cfg(not(unix))]
fn is_shared_temp(_dir: &Path) -> bool {
    false
}

/// The nearest directory at or above `path` (symlinks resolved) that has the
/// shape of a capture archive ([`is_archive_dir`]), if any.
pub fn enclosing_archive(path: &Path) -> Option<PathBuf> {
    let resolved = resolve(path);
    resolved
        .ancestors()
        .filter(|d| d.is_dir())
        .find(|d| is_archive_dir(d))
        .map(Path::to_path_buf)
}

/// The directory that must never be written into for the archive a command
/// names: the capture root when `archive` is a `pid-*` directory, else
/// `archive` itself (resolved, so every spelling of it compares equal).
pub fn archive_root(archive: &Path) -> PathBuf {
    let resolved = resolve(archive);
    let is_process = resolved
        .file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.starts_with("pid-"));
    match resolved.parent() {
        Some(parent) if is_process => parent.to_path_buf(),
        _ => resolved,
    }
}

/// Refuses `path` (a workdir, `-o` file, log, temp file) when it is inside
/// the archive `archive`, compared by identity along the target's ancestors
/// (see the module doc), or inside any directory shaped like an archive.
pub fn ensure_outside(path: &Path, archive: &Path) -> anyhow::Result<()> {
    let target = resolve(path);
    let root = resolve(archive);
    if target.starts_with(&root) || same_dir_among_ancestors(&target, &root) {
        bail!(refusal(path, archive));
    }
    ensure_not_in_archive(path)
}

/// Refuses `path` when it is at or below a directory shaped like a capture
/// archive, so nothing is written into one even when no archive was named.
pub fn ensure_not_in_archive(path: &Path) -> anyhow::Result<()> {
    match enclosing_archive(path) {
        Some(archive) => bail!(refusal(path, &archive)),
        None => Ok(()),
    }
}

fn refusal(path: &Path, archive: &Path) -> String {
    format!(
        "refusing to write {} inside the archive {}: hrr never writes into an archive; choose a path outside it",
        path.display(),
        archive.display()
    )
}

/// Whether an existing ancestor of `target` is the same directory as `root`
/// (same device and inode), however either is spelled.
#[cfg(unix)]
fn same_dir_among_ancestors(target: &Path, root: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    let Ok(root) = std::fs::metadata(root) else {
        return false;
    };
    target
        .ancestors()
        .filter_map(|d| std::fs::metadata(d).ok())
        .any(|m| m.dev() == root.dev() && m.ino() == root.ino())
}

/// Windows: std exposes no stable file identity, so the resolved-path
/// comparison in [`ensure_outside`] and the archive shape are the checks
/// (a junction to the archive is resolved by `canonicalize`).
#[cfg(not(unix))]
fn same_dir_among_ancestors(_target: &Path, _root: &Path) -> bool {
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    fn archive(dir: &Path) -> PathBuf {
        let root = dir.join("cap.hrr");
        std::fs::create_dir_all(root.join("pid-1")).unwrap();
        std::fs::write(root.join("pid-1/events.bin"), b"").unwrap();
        root
    }

    #[test]
    fn the_root_of_a_named_process_is_its_capture_root() {
        let dir = tempfile::tempdir().unwrap();
        let root = resolve(&archive(dir.path()));
        assert_eq!(archive_root(&root.join("pid-1")), root);
        assert_eq!(archive_root(&root.join("pid-1/../pid-1")), root);
        assert_eq!(archive_root(&root), root);
    }

    #[test]
    fn refuses_paths_inside_even_through_symlinks_and_dotdot() {
        let dir = tempfile::tempdir().unwrap();
        let archive = archive(dir.path());
        assert!(ensure_outside(&archive.join("pid-1/new/x.log"), &archive).is_err());
        assert!(ensure_outside(&dir.path().join("out/../cap.hrr/x"), &archive).is_err());
        assert!(ensure_outside(&dir.path().join("out/x.md"), &archive).is_ok());
        assert!(ensure_outside(&dir.path().join("cap.hrr2/x"), &archive).is_ok());
        #[cfg(unix)]
        {
            let link = dir.path().join("innocent");
            std::os::unix::fs::symlink(&archive, &link).unwrap();
            let err = ensure_outside(&link.join("f.md"), &archive).unwrap_err();
            assert!(err.to_string().contains("never writes into an archive"));
        }
    }

    #[test]
    fn a_directory_shaped_like_an_archive_is_refused_without_being_named() {
        let dir = tempfile::tempdir().unwrap();
        let root = archive(dir.path());
        let elsewhere = dir.path().join("elsewhere");
        std::fs::create_dir(&elsewhere).unwrap();
        for inside in [root.join("out.md"), root.join("pid-1/deep/er/out.md")] {
            let err = ensure_outside(&inside, &elsewhere).unwrap_err();
            assert!(err.to_string().contains("cap.hrr"), "{err}");
            assert!(ensure_not_in_archive(&inside).is_err());
        }
        let bare = dir.path().join("bare");
        std::fs::create_dir(&bare).unwrap();
        std::fs::write(bare.join("manifest.json"), "{}").unwrap();
        assert!(ensure_not_in_archive(&bare.join("x")).is_err());
        assert!(ensure_not_in_archive(&elsewhere.join("x")).is_ok());
    }

    #[cfg(unix)]
    #[test]
    fn names_planted_in_a_shared_temp_dir_do_not_make_it_an_archive() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let shared = dir.path().join("tmp");
        std::fs::create_dir_all(shared.join("pid-1")).unwrap();
        std::fs::write(shared.join("pid-1/events.bin"), b"").unwrap();
        std::fs::write(shared.join("manifest.json"), b"{}").unwrap();
        assert!(ensure_not_in_archive(&shared.join("hrr-triage-0/x.md")).is_err());
        std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o1777)).unwrap();
        assert!(ensure_not_in_archive(&shared.join("hrr-triage-0/x.md")).is_ok());
        assert!(ensure_not_in_archive(&shared.join("pid-1/x.md")).is_err());
    }

    /// A directory without the archive shape, reached through a bind mount
    /// of it (as root) or a symlinked alias (where mounting is not
    /// permitted): only the identity comparison can tell it is the archive.
    #[cfg(target_os = "linux")]
    #[test]
    fn an_alias_of_the_archive_is_the_archive() {
        struct Unmount(PathBuf);
        impl Drop for Unmount {
            fn drop(&mut self) {
                let _ = std::process::Command::new("umount").arg(&self.0).status();
            }
        }
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("real");
        let alias = dir.path().join("alias");
        std::fs::create_dir_all(real.join("sub")).unwrap();
        std::fs::create_dir(&alias).unwrap();
        let mounted = std::process::Command::new("mount")
            .arg("--bind")
            .arg(&real)
            .arg(&alias)
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        let _guard = mounted.then(|| Unmount(alias.clone()));
        if !mounted {
            std::fs::remove_dir(&alias).unwrap();
            std::os::unix::fs::symlink(&real, &alias).unwrap();
        }
        let err = ensure_outside(&alias.join("sub/new/x.md"), &real).unwrap_err();
        assert!(
            err.to_string().contains("never writes into an archive"),
            "{err}"
        );
        assert!(ensure_outside(&dir.path().join("x.md"), &real).is_ok());
    }
}
