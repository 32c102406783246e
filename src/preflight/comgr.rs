//! The comgr version of the replay host, asked of the library itself: load
//! `libamd_comgr.so*` (Windows `amd_comgr.dll`) in-process and call
//! `amd_comgr_get_version(&major, &minor)` (reference §4.3; no Python).

use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;

/// How long loading and asking the library may take (upstream: 15 s).
pub const COMGR_TIMEOUT: Duration = Duration::from_secs(15);

/// `void amd_comgr_get_version(size_t *major, size_t *minor)`.
type GetVersion = unsafe extern "C" fn(*mut usize, *mut usize);

/// What the comgr probe found.
#[derive(Debug, Default)]
pub struct ComgrProbe {
    /// `major.minor`.
    pub version: Option<String>,
    /// The library that answered.
    pub library: Option<PathBuf>,
    /// Why there is no version, in words.
    pub problem: Option<String>,
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

/// Loads `lib` and asks it for its version.
fn version_of(lib: &Path) -> Result<String, String> {
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
}
