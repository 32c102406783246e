//! The comgr version of the replay host, asked of the library itself: load
//! `libamd_comgr.so*` (Windows `amd_comgr.dll`) in-process and call
//! `amd_comgr_get_version(&major, &minor)` (reference §4.3; no Python).
//!
//! A statically linked `hrr` (the musl build, one file to copy to a GPU
//! host) cannot load a shared library. It reads the version from the name
//! of the file the library path ends at instead (`libamd_comgr.so.3.0.60200`
//! is 3.0), and says so in a note.

use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;

/// How long loading and asking the library may take (upstream: 15 s).
pub const COMGR_TIMEOUT: Duration = Duration::from_secs(15);

/// What the comgr probe found.
#[derive(Debug, Default)]
pub struct ComgrProbe {
    /// `major.minor`.
    pub version: Option<String>,
    /// The library that answered.
    pub library: Option<PathBuf>,
    /// Why there is no version, in words.
    pub problem: Option<String>,
    /// How the version was found, when not by asking the library.
    pub note: Option<String>,
}

/// Tries `candidates` in order (paths, or bare names the loader searches
/// for) and returns the version of the first one that loads and exports
/// `amd_comgr_get_version`. Runs on a helper thread bounded by `timeout`: a
/// library whose initialisation hangs leaves that thread behind and the
/// value unknown, but never hangs `hrr`.
pub fn probe(candidates: Vec<PathBuf>, timeout: Duration) -> ComgrProbe {
    if candidates.is_empty() {
        return ComgrProbe {
            problem: Some("no comgr library found".into()),
            ..ComgrProbe::default()
        };
    }
    let (tx, rx) = mpsc::channel();
    let spawned = std::thread::Builder::new()
        .name("hrr-comgr-probe".into())
        .spawn(move || {
            let mut last_error = String::from("no comgr library could be loaded");
            for lib in candidates {
                match version_of(&lib) {
                    Ok(v) => {
                        let _ = tx.send(ComgrProbe {
                            version: Some(v),
                            note: STATIC_NOTE.map(|n| format!("{n} ({})", lib.display())),
                            library: Some(lib),
                            problem: None,
                        });
                        return;
                    }
                    Err(e) => last_error = e,
                }
            }
            let _ = tx.send(ComgrProbe {
                problem: Some(last_error),
                ..ComgrProbe::default()
            });
        });
    if let Err(e) = spawned {
        return ComgrProbe {
            problem: Some(format!("cannot start the comgr probe: {e}")),
            ..ComgrProbe::default()
        };
    }
    rx.recv_timeout(timeout).unwrap_or_else(|_| ComgrProbe {
        problem: Some(format!(
            "loading comgr did not finish within {}s",
            timeout.as_secs()
        )),
        ..ComgrProbe::default()
    })
}

/// What a version found without loading the library is marked with.
#[cfg(not(all(target_os = "linux", target_env = "musl")))]
const STATIC_NOTE: Option<&str> = None;
/// What a version found without loading the library is marked with.
#[cfg(all(target_os = "linux", target_env = "musl"))]
const STATIC_NOTE: Option<&str> = Some(
    "comgr version read from the library's file name: this hrr is statically linked and cannot load it",
);

/// The version in the name of the file `lib` ends at, after symlinks:
/// `libamd_comgr.so.3.0.60200` → `3.0`. A name with only a major version
/// (`libamd_comgr.so.3`, the SONAME) gives no minor and so no version.
#[cfg(any(all(test, unix), all(target_os = "linux", target_env = "musl")))]
fn version_from_name(lib: &Path) -> Result<String, String> {
    let real =
        dunce::canonicalize(lib).map_err(|e| format!("cannot open {}: {e}", lib.display()))?;
    let name = real
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut parts = name
        .split_once(".so.")
        .map(|(_, v)| v.split('.'))
        .into_iter()
        .flatten()
        .map(|p| p.parse::<u64>().ok());
    match (parts.next().flatten(), parts.next().flatten()) {
        (Some(major), Some(minor)) => Ok(format!("{major}.{minor}")),
        _ => Err(format!(
            "{} names no major.minor version, and a statically linked hrr cannot load it to ask",
            real.display()
        )),
    }
}

/// A statically linked `hrr` cannot load `lib`: its version comes from its
/// file name.
#[cfg(all(target_os = "linux", target_env = "musl"))]
fn version_of(lib: &Path) -> Result<String, String> {
    version_from_name(lib)
}

/// Loads `lib` and asks it for its version.
#[cfg(not(all(target_os = "linux", target_env = "musl")))]
fn version_of(lib: &Path) -> Result<String, String> {
    /// `void amd_comgr_get_version(size_t *major, size_t *minor)`.
    type GetVersion = unsafe extern "C" fn(*mut usize, *mut usize);
    // SAFETY: loading a comgr library runs its initialisers; that is the
    // documented way to ask comgr its version (the capture side does the
    // same). The symbol is called with the C signature comgr declares, with
    // two valid out-pointers.
    unsafe {
        let library = libloading::Library::new(lib)
            .map_err(|e| format!("cannot load {}: {e}", lib.display()))?;
        let get: libloading::Symbol<GetVersion> = library
            .get(b"amd_comgr_get_version\0")
            .map_err(|e| format!("{} has no amd_comgr_get_version: {e}", lib.display()))?;
        let (mut major, mut minor) = (0usize, 0usize);
        get(&mut major, &mut minor);
        // Unloading an LLVM-based library can run its global destructors
        // at a bad time; it stays loaded for the life of the process.
        std::mem::forget(library);
        Ok(format!("{major}.{minor}"))
    }
}

/// The `libamd_comgr.so*` files directly in `dir`, sorted by name.
pub fn libraries_in(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut found: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with("libamd_comgr.so")
        })
        .map(|e| e.path())
        .collect();
    found.sort();
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_or_foreign_library_is_a_problem_not_a_panic() {
        let p = probe(vec![], COMGR_TIMEOUT);
        assert!(p.version.is_none() && p.problem.is_some());
        let dir = tempfile::tempdir().unwrap();
        let fake = dir.path().join("libamd_comgr.so.3");
        std::fs::write(&fake, b"not an ELF file").unwrap();
        assert_eq!(libraries_in(dir.path()), vec![fake.clone()]);
        let p = probe(vec![fake], COMGR_TIMEOUT);
        assert!(p.version.is_none());
        assert!(p.problem.unwrap().contains("cannot load"));
    }

    #[cfg(unix)]
    #[test]
    fn the_file_name_behind_a_symlink_gives_major_and_minor() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("libamd_comgr.so.3.0.60200");
        std::fs::write(&real, b"").unwrap();
        let soname = dir.path().join("libamd_comgr.so.3");
        std::os::unix::fs::symlink(&real, &soname).unwrap();
        assert_eq!(version_from_name(&soname).unwrap(), "3.0");
        let bare = dir.path().join("libamd_comgr.so.2");
        std::fs::write(&bare, b"").unwrap();
        assert!(version_from_name(&bare)
            .unwrap_err()
            .contains("no major.minor"));
    }
}
