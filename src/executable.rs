//! Whether a path is a program `hrr` may run: the one test behind every
//! program search (the player, the smi tools, `hrr-<name>` externals).

use std::path::Path;

/// `path` is a regular file (after symlinks) that this user may execute.
/// On Unix the kernel decides (`access(X_OK)`), so a file whose execute bit
/// belongs to another user or group does not count; elsewhere any regular
/// file does.
pub fn is_executable(path: &Path) -> bool {
    let Ok(meta) = std::fs::metadata(path) else {
        return false;
    };
    if !meta.is_file() {
        return false;
    }
    #[cfg(unix)]
    {
        nix::unistd::access(path, nix::unistd::AccessFlags::X_OK).is_ok()
    }
    #[cfg(not(unix))]
    {
        true
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn file_with_mode(dir: &Path, name: &str, mode: u32) -> std::path::PathBuf {
        let path = dir.join(name);
        std::fs::write(&path, b"#!/bin/sh\n").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
        path
    }

    #[test]
    fn only_regular_files_this_user_may_run_count() {
        let dir = tempfile::tempdir().unwrap();
        assert!(is_executable(&file_with_mode(dir.path(), "tool", 0o755)));
        assert!(!is_executable(&file_with_mode(dir.path(), "data", 0o644)));
        assert!(
            !is_executable(dir.path()),
            "a searchable directory is no program"
        );
        assert!(!is_executable(&dir.path().join("missing")));
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(dir.path().join("tool"), &link).unwrap();
        assert!(is_executable(&link), "a symlink to a program is followed");
    }
}
