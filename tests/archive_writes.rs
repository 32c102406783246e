//! Nothing is created inside an archive, not even before a check refuses
//! it, and what `hrr` creates for itself is private.
#![cfg(unix)]

mod common;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use common::{stderr, test_player, tree_snapshot, write_replay_archive, Sandbox};

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

/// Exit code 1, one `error:` line saying nothing is written into an archive.
fn assert_refused(out: &std::process::Output) {
    assert_eq!(out.status.code(), Some(1), "{}", stderr(out));
    let err = stderr(out);
    let errors: Vec<&str> = err.lines().filter(|l| l.starts_with("error:")).collect();
    assert_eq!(errors.len(), 1, "{err}");
    assert!(
        errors[0].contains("hrr never writes into an archive"),
        "{err}"
    );
}

#[test]
fn replay_refuses_a_workdir_inside_the_archive_without_creating_it() {
    let sb = Sandbox::new();
    let root = sb.path().join("cap.hrr");
    let archive = write_replay_archive(&root, 4242, &["vector_add"]);
    let kfd = sb.write("kfd", "");
    let before = tree_snapshot(&root);
    let out = sb
        .hrr()
        .env("HRR_TEST_SCENARIO", "pass")
        .env("HRR_TRIAGE_WORKDIR", archive.dir.join("work/replays"))
        .arg("-c")
        .arg(format!("playback.path={}", test_player().display()))
        .arg("-c")
        .arg(format!("replay.kfd={}", kfd.display()))
        .arg("replay")
        .arg(&archive.dir)
        .output()
        .unwrap();
    assert_refused(&out);
    assert_eq!(tree_snapshot(&root), before, "the archive changed");
}

#[test]
fn classify_o_into_a_capture_root_is_refused_without_archive_named() {
    let sb = Sandbox::new();
    let root = sb.path().join("cap.hrr");
    write_replay_archive(&root, 7, &["k"]);
    let log = sb.write("pass.log", "[HRR] Result: PASS (0 mismatches)\n");
    let before = tree_snapshot(&root);
    for target in [root.join("finding.md"), root.join("pid-7/new/finding.md")] {
        let out = sb
            .hrr()
            .args(["classify", "--log"])
            .arg(&log)
            .arg("-o")
            .arg(&target)
            .output()
            .unwrap();
        assert_refused(&out);
    }
    // Through a symlinked alias of the archive, too.
    let alias = sb.path().join("innocent");
    std::os::unix::fs::symlink(&root, &alias).unwrap();
    let out = sb
        .hrr()
        .args(["classify", "--log"])
        .arg(&log)
        .arg("-o")
        .arg(alias.join("finding.md"))
        .output()
        .unwrap();
    assert_refused(&out);
    assert_eq!(tree_snapshot(&root), before, "the archive changed");
}

#[test]
fn config_init_project_inside_an_archive_is_refused() {
    let sb = Sandbox::new();
    let root = sb.path().join("cap.hrr");
    let archive = write_replay_archive(&root, 7, &["k"]);
    let before = tree_snapshot(&root);
    for cwd in [&root, &archive.dir] {
        let out = sb
            .hrr()
            .current_dir(cwd)
            .args(["config", "init", "--project"])
            .output()
            .unwrap();
        assert_refused(&out);
    }
    assert_eq!(tree_snapshot(&root), before, "the archive changed");
}

#[test]
fn directories_a_workflow_writes_into_are_private() {
    let sb = Sandbox::new();
    let script = sb.write("s.lua", "hrr.fs.write('runs/today/finding.md', 'x')\n");
    let out = sb.hrr().arg("run").arg(script).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let work = sb.path().join("work");
    assert_eq!(mode(&work), 0o700);
    assert_eq!(mode(&work.join("runs")), 0o700);
    assert_eq!(mode(&work.join("runs/today")), 0o700);
    assert_eq!(mode(&work.join("runs/today/finding.md")), 0o600);
}

#[test]
fn a_workdir_others_can_write_is_not_used() {
    let sb = Sandbox::new();
    let work = sb.path().join("work");
    std::fs::create_dir(&work).unwrap();
    std::fs::set_permissions(&work, std::fs::Permissions::from_mode(0o777)).unwrap();
    let script = sb.write("s.lua", "hrr.out(hrr.fs.write('f.md', 'x') .. '\\n')\n");
    let out = sb.hrr().arg("run").arg(script).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("writable by group or others (mode 777)"),
        "{err}"
    );
    let written = String::from_utf8(out.stdout).unwrap();
    let written = Path::new(written.trim());
    assert!(!written.starts_with(&work), "{}", written.display());
    let fresh = written.parent().unwrap();
    assert_eq!(mode(fresh), 0o700, "the fallback workdir is private");
    assert_eq!(std::fs::read_dir(&work).unwrap().count(), 0);
    std::fs::remove_dir_all(fresh).unwrap();
}
