//! Shared helpers for the integration tests: a hermetic `hrr` command and
//! the test player.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

/// A temp home for one test: user config dir, site file, cwd.
pub struct Sandbox {
    /// The temp directory (removed on drop).
    pub dir: tempfile::TempDir,
}

impl Sandbox {
    /// A fresh sandbox.
    pub fn new() -> Sandbox {
        Sandbox {
            dir: tempfile::tempdir().expect("tempdir"),
        }
    }

    /// The sandbox root.
    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// `~/.config/hrr` inside the sandbox.
    pub fn user_dir(&self) -> PathBuf {
        self.path().join("xdg").join("hrr")
    }

    /// The site config file the sandboxed `hrr` reads.
    pub fn site_file(&self) -> PathBuf {
        self.path().join("site.toml")
    }

    /// Writes `text` to `rel` under the sandbox, creating directories.
    pub fn write(&self, rel: &str, text: &str) -> PathBuf {
        let p = self.path().join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, text).unwrap();
        p
    }

    /// `hrr` with a hermetic environment: no HRR_*/legacy variables, HOME and
    /// XDG dirs inside the sandbox, the site file inside the sandbox, cwd the
    /// sandbox, the workdir inside the sandbox, PATH limited to system dirs.
    pub fn hrr(&self) -> assert_cmd::Command {
        let mut cmd = assert_cmd::Command::cargo_bin("hrr").expect("hrr binary");
        cmd.env_clear()
            .env("PATH", "/usr/bin:/bin")
            .env("HOME", self.path().join("home"))
            .env("XDG_CONFIG_HOME", self.path().join("xdg"))
            .env("HRR_SITE_CONFIG", self.site_file())
            .env("HRR_TRIAGE_WORKDIR", self.path().join("work"))
            .env("TMPDIR", std::env::temp_dir())
            .current_dir(self.path());
        cmd
    }
}

/// Makes an executable script `name` in `dir` with `body`.
#[cfg(unix)]
pub fn script(dir: &Path, name: &str, body: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    std::fs::create_dir_all(dir).unwrap();
    let p = dir.join(name);
    std::fs::write(&p, body).unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    p
}

/// stdout of a finished command as text.
pub fn stdout(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// stderr of a finished command as text.
pub fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The test player (`hrr-test-player`, standing in for `hrr-playback`) next
/// to the `hrr` binary; built once with cargo if it is missing.
pub fn test_player() -> PathBuf {
    static BUILD: std::sync::Once = std::sync::Once::new();
    let hrr = assert_cmd::cargo::cargo_bin("hrr");
    let player = hrr
        .parent()
        .expect("target dir")
        .join(format!("hrr-test-player{}", std::env::consts::EXE_SUFFIX));
    BUILD.call_once(|| {
        if !player.is_file() {
            let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
            let mut build = std::process::Command::new(cargo);
            build.args(["build", "-p", "hrr-testkit", "--bin", "hrr-test-player"]);
            if player.parent().and_then(|d| d.file_name()) == Some("release".as_ref()) {
                build.arg("--release");
            }
            let status = build.status().expect("run cargo build for the test player");
            assert!(status.success(), "building hrr-test-player failed");
        }
    });
    player
}
