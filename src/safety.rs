//! The rule that nothing is ever written inside an archive (DESIGN §8).

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

/// Refuses `path` (a workdir, `-o` file, log, temp file) when it is inside
/// the archive `archive` after resolving symlinks on both.
pub fn ensure_outside(path: &Path, archive: &Path) -> anyhow::Result<()> {
    let target = resolve(path);
    let root = resolve(archive);
    if target.starts_with(&root) {
        bail!(
            "refusing to write {} inside the archive {}: hrr never writes into an archive; choose a path outside it",
            path.display(),
            archive.display()
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_paths_inside_even_through_symlinks_and_dotdot() {
        let dir = tempfile::tempdir().unwrap();
        let archive = dir.path().join("cap.hrr");
        std::fs::create_dir_all(archive.join("pid-1")).unwrap();
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
}
