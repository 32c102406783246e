//! Nothing inside an archive is executed or read as configuration: a
//! `.hrr/` planted in a received archive (or one the user does not own) is
//! never used, whichever directory of the archive the user runs `hrr` from.
#![cfg(unix)]

mod common;

use std::path::{Path, PathBuf};

use common::{stderr, stdout, Sandbox};
use hrr_testkit::archive::ProcessArchive;
use hrr_testkit::events::{api, EventsFile, Launch};

/// `sb/cap.hrr/pid-7` with one launch; returns the capture root.
fn archive(sb: &Sandbox) -> PathBuf {
    let mut a = ProcessArchive::new(7, EventsFile::v7());
    a.events.launch(
        api::HIP_LAUNCH_KERNEL,
        &Launch::new("k", [1, 1, 1], [1, 1, 1]),
    );
    let root = sb.path().join("cap.hrr");
    a.write(&root).unwrap();
    root
}

/// Plants `dir/.hrr/` with a `triage.lua` that would create `marker` and a
/// config that would choose a player shipped beside it.
fn plant(dir: &Path, marker: &Path) -> PathBuf {
    let hrr = dir.join(".hrr");
    std::fs::create_dir_all(hrr.join("scripts")).unwrap();
    std::fs::write(
        hrr.join("scripts/triage.lua"),
        format!(
            "hrr.exec({{'touch', {:?}}})\nreturn 0\n",
            marker.display().to_string()
        ),
    )
    .unwrap();
    std::fs::write(
        hrr.join("config.toml"),
        "[playback]\npath = \"/planted/hrr-playback\"\n",
    )
    .unwrap();
    hrr
}

/// `hrr` run from `cwd` inside the sandbox.
fn hrr_in(sb: &Sandbox, cwd: &Path, args: &[&str]) -> std::process::Output {
    sb.hrr().current_dir(cwd).args(args).output().unwrap()
}

/// From `cwd`, triage runs the embedded workflow, the planted player is not
/// configured, and `config path` names every planted `.hrr/` as skipped.
fn assert_nothing_planted_is_used(sb: &Sandbox, root: &Path, cwd: &Path, planted: &[PathBuf]) {
    let marker = sb.path().join("PLANTED-SCRIPT-RAN");
    let out = hrr_in(
        sb,
        cwd,
        &["triage", "--no-replay", &root.display().to_string()],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stdout(&out).contains("## HRR Triage"), "{}", stdout(&out));
    assert!(
        !marker.exists(),
        "the archive's triage.lua ran from {}",
        cwd.display()
    );

    let out = hrr_in(sb, cwd, &["config", "get", "playback.path"]);
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    assert!(
        stderr(&out).contains("'playback.path' is not set"),
        "{}",
        stderr(&out)
    );

    let text = stdout(&hrr_in(sb, cwd, &["config", "path"]));
    for dir in planted {
        let line = text
            .lines()
            .find(|l| l.contains(&dir.display().to_string()))
            .unwrap_or_else(|| panic!("{} not listed: {text}", dir.display()));
        assert!(line.starts_with("project   skipped  "), "{line}");
        assert!(line.contains("inside the capture archive"), "{line}");
    }
    assert!(
        !text.lines().any(|l| l.starts_with("project   exists")),
        "{text}"
    );

    let out = sb
        .hrr()
        .current_dir(cwd)
        .args(["-v", "--list"])
        .output()
        .unwrap();
    let text = stdout(&out);
    assert!(text.contains("triage         embedded in hrr"), "{text}");
    for dir in planted {
        assert!(
            text.contains(&format!("(skipped {}: ", dir.display())),
            "{text}"
        );
    }
}

#[test]
fn a_hrr_dir_planted_in_the_capture_root_is_ignored_from_the_root() {
    let sb = Sandbox::new();
    let root = archive(&sb);
    let marker = sb.path().join("PLANTED-SCRIPT-RAN");
    let planted = plant(&root, &marker);
    assert_nothing_planted_is_used(&sb, &root, &root, &[planted]);
}

#[test]
fn a_hrr_dir_planted_in_a_pid_dir_is_ignored_from_the_pid_dir() {
    let sb = Sandbox::new();
    let root = archive(&sb);
    let pid = root.join("pid-7");
    let marker = sb.path().join("PLANTED-SCRIPT-RAN");
    let in_pid = plant(&pid, &marker);
    let in_root = plant(&root, &marker);
    assert_nothing_planted_is_used(&sb, &pid, &pid, &[in_pid, in_root]);
}

#[test]
fn below_an_archive_no_hrr_dir_is_used_not_even_the_users_own_above_it() {
    let sb = Sandbox::new();
    let root = archive(&sb);
    let below = root.join("pid-7/notes/deeper");
    std::fs::create_dir_all(&below).unwrap();
    let marker = sb.path().join("PLANTED-SCRIPT-RAN");
    let planted = [
        plant(&below, &marker),
        plant(&root, &marker),
        plant(sb.path(), &marker),
    ];
    assert_nothing_planted_is_used(&sb, &root, &below, &planted);
}

#[test]
fn a_hrr_dir_owned_by_another_user_is_skipped() {
    let sb = Sandbox::new();
    let marker = sb.path().join("PLANTED-SCRIPT-RAN");
    let root = archive(&sb);
    let shared = sb.path().join("shared");
    std::fs::create_dir(&shared).unwrap();
    let planted = plant(&shared, &marker);
    // Handing the directory to uid 1 (the tests run as root) stands for
    // another user's `.hrr/`.
    let me = std::os::unix::fs::MetadataExt::uid(&std::fs::metadata(sb.path()).unwrap());
    std::os::unix::fs::chown(&planted, Some(1), Some(1)).unwrap();
    let out = hrr_in(
        &sb,
        &shared,
        &["triage", "--no-replay", &root.display().to_string()],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(!marker.exists(), "another user's triage.lua ran");
    let out = hrr_in(&sb, &shared, &["config", "get", "playback.path"]);
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    let text = stdout(&hrr_in(&sb, &shared, &["config", "path"]));
    assert!(
        text.contains(&format!(
            "project   skipped  {} (it belongs to uid 1, not to you (uid {me})",
            planted.display()
        )),
        "{text}"
    );

    // Given back to the user, the same directory is the project.
    std::os::unix::fs::chown(&planted, Some(me), None).unwrap();
    let out = hrr_in(&sb, &shared, &["config", "get", "playback.path"]);
    assert_eq!(stdout(&out), "/planted/hrr-playback\n", "{}", stderr(&out));
    let out = hrr_in(
        &sb,
        &shared,
        &["triage", "--no-replay", &root.display().to_string()],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(marker.exists(), "the user's own project script runs");
}
