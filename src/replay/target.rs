//! Which process capture a replay runs on. Minimal on purpose: a `pid-*`
//! directory, or a capture root holding exactly one (like `hrr-playback`
//! itself). Choosing among several processes is `triage`'s job.

use std::path::{Path, PathBuf};

use anyhow::bail;

/// The process capture to replay.
#[derive(Clone, Debug)]
pub struct Target {
    /// The absolute `pid-*` directory (holds `events.bin`).
    pub pid_dir: PathBuf,
    /// Its parent: mounted at `/arch` for docker (not on Windows, where
    /// docker replay is refused).
    #[cfg(not(windows))]
    pub capture_root: PathBuf,
    /// What nothing may be written into: the capture root when the parent is
    /// one (a `manifest.json` or a `.hrr` name), else the `pid-*` directory.
    pub archive: PathBuf,
}

/// Resolves `path` to one process capture; an error says what was found
/// and what to pass instead.
pub fn resolve(path: &Path) -> anyhow::Result<Target> {
    let abs = dunce::canonicalize(path)
        .map_err(|e| anyhow::anyhow!("cannot open the archive {}: {e}", path.display()))?;
    if !abs.is_dir() {
        bail!(
            "{} is not an archive directory: pass a pid-* directory or a capture root",
            path.display()
        );
    }
    let pid_dir = crate::archive::single_process(&abs)?;
    let capture_root = pid_dir.parent().unwrap_or(&pid_dir).to_path_buf();
    let is_root = capture_root.join("manifest.json").is_file()
        || capture_root.extension().is_some_and(|e| e == "hrr");
    let archive = if is_root {
        capture_root.clone()
    } else {
        pid_dir.clone()
    };
    Ok(Target {
        pid_dir,
        #[cfg(not(windows))]
        capture_root,
        archive,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_root_with_one_process_resolves_and_several_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("cap.hrr");
        std::fs::create_dir_all(root.join("pid-7")).unwrap();
        std::fs::write(root.join("pid-7/events.bin"), b"").unwrap();
        let t = resolve(&root).unwrap();
        assert!(t.pid_dir.ends_with("cap.hrr/pid-7"));
        assert!(t.archive.ends_with("cap.hrr"));
        assert_eq!(resolve(&root.join("pid-7")).unwrap().pid_dir, t.pid_dir);

        std::fs::create_dir_all(root.join("pid-9")).unwrap();
        std::fs::write(root.join("pid-9/events.bin"), b"").unwrap();
        let err = resolve(&root).unwrap_err().to_string();
        assert!(
            err.contains(
                "is a capture root with 2 processes (pid-7, pid-9); pass one pid-* directory"
            ),
            "{err}"
        );
        let err = resolve(&dir.path().join("nope")).unwrap_err().to_string();
        assert!(err.contains("cannot open the archive"), "{err}");
    }
}
