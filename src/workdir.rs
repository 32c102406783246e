//! The work directory for findings, replay logs and builds (DESIGN §8):
//! created 0700, and never a symlink, another user's directory or an
//! unwritable one.

use std::path::{Path, PathBuf};

use anyhow::Context as _;

use crate::config::Config;

/// The workdir `config` names (`output.workdir`), or the default
/// `<temp>/hrr-triage-<uid>`; not created.
pub fn configured(config: &Config) -> PathBuf {
    match config.str("output.workdir") {
        Some(dir) if !dir.is_empty() => PathBuf::from(dir),
        _ => std::env::temp_dir().join(format!("hrr-triage-{}", user_tag())),
    }
}

/// Creates (0700) or checks the configured workdir and returns it. A
/// directory that is a symlink, owned by someone else, writable by group or
/// others, or not writable is not used: a fresh private (0700) temp
/// directory is used instead, and `warn` is told why. A workdir inside a
/// capture archive is an error, raised before anything is created.
pub fn ensure(config: &Config, warn: &dyn Fn(&str)) -> anyhow::Result<PathBuf> {
    let dir = configured(config);
    crate::safety::ensure_not_in_archive(&dir)?;
    match usable(&dir) {
        Ok(()) => Ok(dir),
        Err(why) => {
            let mut builder = tempfile::Builder::new();
            builder.prefix("hrr-triage-");
            #[cfg(unix)]
            builder.permissions(std::os::unix::fs::PermissionsExt::from_mode(0o700));
            let fresh = builder
                .tempdir()
                .context("cannot create a private temp directory for the workdir")?
                .keep();
            warn(&format!(
                "not using workdir {}: {why}; using {} instead",
                dir.display(),
                fresh.display()
            ));
            Ok(fresh)
        }
    }
}

fn usable(dir: &Path) -> Result<(), String> {
    match std::fs::symlink_metadata(dir) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            create_private(dir).map_err(|e| format!("cannot create it: {e}"))
        }
        Err(e) => Err(e.to_string()),
        Ok(meta) if meta.file_type().is_symlink() => Err("it is a symlink".into()),
        Ok(meta) if !meta.is_dir() => Err("it is not a directory".into()),
        Ok(meta) => owned_and_writable(dir, &meta),
    }
}

/// Creates `dir` and any missing parents with mode 0700 (an existing one is
/// left as it is).
pub fn create_private(dir: &Path) -> std::io::Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(dir)
}

#[cfg(unix)]
fn owned_and_writable(dir: &Path, meta: &std::fs::Metadata) -> Result<(), String> {
    use std::os::unix::fs::MetadataExt;
    let me = nix::unistd::geteuid().as_raw();
    if meta.uid() != me {
        return Err(format!(
            "it belongs to uid {}, not to you (uid {me})",
            meta.uid()
        ));
    }
    if meta.mode() & 0o022 != 0 {
        return Err(format!(
            "it is writable by group or others (mode {:o}), so another user could plant files in it",
            meta.mode() & 0o7777
        ));
    }
    nix::unistd::access(
        dir,
        nix::unistd::AccessFlags::W_OK | nix::unistd::AccessFlags::X_OK,
    )
    .map_err(|e| format!("it is not writable: {e}"))
}

#[cfg(not(unix))]
fn owned_and_writable(_dir: &Path, meta: &std::fs::Metadata) -> Result<(), String> {
    if meta.permissions().readonly() {
        return Err("it is read-only".into());
    }
    Ok(())
}

fn user_tag() -> String {
    #[cfg(unix)]
    {
        nix::unistd::geteuid().as_raw().to_string()
    }
    #[cfg(not(unix))]
    {
        std::env::var("USERNAME").unwrap_or_else(|_| "user".into())
    }
}

/// The stamp that makes output names unique: UTC time as
/// `YYYYMMDDTHHMMSSZ` and this process's id, e.g. `20261129T205323Z-4242`
/// (the upstream triage's naming).
pub fn stamp() -> String {
    let now = humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string();
    let compact: String = now.chars().filter(|c| *c != '-' && *c != ':').collect();
    format!("{compact}-{}", std::process::id())
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn creates_0700_and_refuses_a_planted_symlink() {
        let dir = tempfile::tempdir().unwrap();
        let wd = dir.path().join("wd");
        let c = Config::with_overrides(&[&format!("output.workdir={}", wd.display())]).unwrap();
        let got = ensure(&c, &|_| panic!("no warning expected")).unwrap();
        assert_eq!(got, wd);
        assert_eq!(
            std::fs::metadata(&wd).unwrap().permissions().mode() & 0o777,
            0o700
        );

        let planted = dir.path().join("planted");
        std::os::unix::fs::symlink(dir.path(), &planted).unwrap();
        let c =
            Config::with_overrides(&[&format!("output.workdir={}", planted.display())]).unwrap();
        let warned = std::cell::RefCell::new(String::new());
        let got = ensure(&c, &|m| *warned.borrow_mut() = m.to_string()).unwrap();
        assert_ne!(got, planted);
        assert!(
            warned.borrow().contains("it is a symlink"),
            "{}",
            warned.borrow()
        );
        std::fs::remove_dir_all(got).unwrap();
    }

    #[test]
    fn a_workdir_others_can_write_is_replaced_by_a_fresh_private_one() {
        let dir = tempfile::tempdir().unwrap();
        let wd = dir.path().join("shared-wd");
        std::fs::create_dir(&wd).unwrap();
        std::fs::set_permissions(&wd, std::fs::Permissions::from_mode(0o777)).unwrap();
        let c = Config::with_overrides(&[&format!("output.workdir={}", wd.display())]).unwrap();
        let warned = std::cell::RefCell::new(String::new());
        let got = ensure(&c, &|m| *warned.borrow_mut() = m.to_string()).unwrap();
        assert_ne!(got, wd);
        assert!(
            warned
                .borrow()
                .contains("writable by group or others (mode 777)"),
            "{}",
            warned.borrow()
        );
        assert_eq!(
            std::fs::metadata(&got).unwrap().permissions().mode() & 0o777,
            0o700,
            "the fallback is private"
        );
        std::fs::remove_dir_all(got).unwrap();
    }

    #[test]
    fn a_workdir_inside_an_archive_is_refused_before_it_is_created() {
        let dir = tempfile::tempdir().unwrap();
        let pid = dir.path().join("cap.hrr/pid-3");
        std::fs::create_dir_all(&pid).unwrap();
        std::fs::write(pid.join("events.bin"), b"").unwrap();
        let wd = pid.join("work/here");
        let c = Config::with_overrides(&[&format!("output.workdir={}", wd.display())]).unwrap();
        let err = ensure(&c, &|m| panic!("no fallback expected: {m}")).unwrap_err();
        assert!(
            err.to_string().contains("never writes into an archive"),
            "{err}"
        );
        assert!(!pid.join("work").exists());
    }

    #[test]
    fn stamp_is_utc_compact_with_pid() {
        let s = stamp();
        let (time, pid) = s.split_once('-').unwrap();
        assert_eq!(time.len(), 16, "{s}");
        assert!(time.ends_with('Z') && time.as_bytes()[8] == b'T', "{s}");
        assert_eq!(pid, std::process::id().to_string());
    }
}
