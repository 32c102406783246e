//! Resolving capture roots (DESIGN §3): process states from manifests, the
//! process triage picks and why, leftovers, symlinked pid-* entries, and the
//! Lua bindings `hrr.archive.resolve` / `hrr.archive.info`.

mod common;

use std::path::Path;

use hrr::archive::{resolve, Info};
use hrr_testkit::archive::{write_root_manifest, Manifest, ProcessArchive};
use hrr_testkit::events::EventsFile;

fn process(pid: u64, events: u64, manifest: Manifest, trailer: bool) -> ProcessArchive {
    let mut f = EventsFile::v7();
    for i in 0..events {
        f.malloc(0x7f00_0000_0000 + i * 0x1000, 64);
    }
    if trailer {
        f.trailer();
    }
    let mut p = ProcessArchive::new(pid, f);
    p.manifest = manifest;
    p
}

fn root_with(processes: &[ProcessArchive]) -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    for p in processes {
        p.write(tmp.path()).unwrap();
    }
    let refs: Vec<&ProcessArchive> = processes.iter().collect();
    write_root_manifest(tmp.path(), &refs).unwrap();
    tmp
}

fn state_of(r: &hrr::archive::ArchiveRef, pid: u64) -> &'static str {
    r.processes
        .iter()
        .find(|p| p.pid == pid)
        .unwrap()
        .state
        .as_str()
}

#[test]
fn complete_incomplete_and_killed_two_dead_pick_most_events() {
    let root = root_with(&[
        process(100, 50, Manifest::Complete, true),
        process(200, 3, Manifest::Incomplete, false),
        process(300, 7, Manifest::None, false),
    ]);
    let r = resolve(root.path()).unwrap();
    assert_eq!(r.kind, hrr::archive::ArchiveKind::Root);
    assert_eq!(r.processes.len(), 3);
    assert_eq!(
        (state_of(&r, 100), state_of(&r, 200), state_of(&r, 300)),
        ("complete", "incomplete", "not_finalized")
    );
    // The killed process has no manifest: its events are counted from events.bin.
    assert_eq!(r.processes.iter().find(|p| p.pid == 300).unwrap().events, 7);
    assert_eq!(r.chosen, 300, "{}", r.reason);
    assert!(r.reason.contains("2 processes died"), "{}", r.reason);
    assert!(r.path.ends_with("pid-300"));
    assert_eq!(
        r.root.as_deref(),
        Some(dunce::canonicalize(root.path()).unwrap().to_str().unwrap())
    );
}

#[test]
fn the_dead_process_wins_over_the_biggest() {
    let root = root_with(&[
        process(100, 500, Manifest::Complete, true),
        process(200, 3, Manifest::Incomplete, false),
    ]);
    let r = resolve(root.path()).unwrap();
    assert_eq!(r.chosen, 200);
    assert!(r.reason.contains("only process that died"), "{}", r.reason);
}

#[test]
fn none_dead_picks_most_events() {
    let root = root_with(&[
        process(100, 5, Manifest::Complete, true),
        process(200, 9, Manifest::Complete, true),
        process(300, 2, Manifest::Complete, true),
    ]);
    let r = resolve(root.path()).unwrap();
    assert_eq!(r.chosen, 200);
    assert!(r.reason.starts_with("no process died"), "{}", r.reason);
}

#[test]
fn single_process_root_is_that_process() {
    let root = root_with(&[process(4242, 4, Manifest::Complete, true)]);
    let r = resolve(root.path()).unwrap();
    assert_eq!((r.chosen, r.processes.len()), (4242, 1));
    match hrr::archive::info(root.path()).unwrap() {
        Info::Process(s) => assert_eq!((s.pid, s.events), (Some(4242), 4)),
        Info::Root(_) => panic!("a one-process root reports that process"),
    }
}

#[test]
fn pid_dir_without_events_bin_is_a_leftover_never_chosen() {
    let root = root_with(&[
        process(100, 5, Manifest::Complete, true),
        process(200, 1, Manifest::Complete, true),
    ]);
    std::fs::create_dir_all(root.path().join("pid-999/blobs")).unwrap();
    let r = resolve(root.path()).unwrap();
    assert_eq!(r.chosen, 100);
    assert_eq!(r.leftovers.len(), 1);
    assert!(r.leftovers[0].ends_with("pid-999"));
    assert!(r.processes.iter().all(|p| p.pid != 999));
}

#[test]
fn an_empty_pid_dir_alone_is_an_error_saying_nothing_was_recorded() {
    let root = tempfile::tempdir().unwrap();
    let pid = root.path().join("pid-5");
    std::fs::create_dir_all(pid.join("blobs")).unwrap();
    let e = resolve(&pid).unwrap_err();
    assert!(format!("{e:#}").contains("no events.bin"), "{e:#}");
    let e = resolve(root.path()).unwrap_err();
    assert!(format!("{e:#}").contains("no process archive"), "{e:#}");
    let sb = common::Sandbox::new();
    let out = sb
        .hrr()
        .args(["archive", "info"])
        .arg(&pid)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = common::stderr(&out);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with("error: ") && err.contains("no events.bin"),
        "{err}"
    );
}

#[cfg(unix)]
#[test]
fn symlinked_pid_dirs_are_refused_not_followed() {
    let elsewhere = tempfile::tempdir().unwrap();
    let outside = process(777, 100, Manifest::Incomplete, false)
        .write(elsewhere.path())
        .unwrap();
    let root = root_with(&[process(100, 5, Manifest::Complete, true)]);
    std::os::unix::fs::symlink(&outside, root.path().join("pid-777")).unwrap();
    let r = resolve(root.path()).unwrap();
    assert_eq!(
        r.chosen, 100,
        "the symlinked dead process must not be chosen"
    );
    assert_eq!(r.processes.len(), 1);
    assert_eq!(r.problems.len(), 1);
    assert_eq!(r.problems[0].kind, "symlinked_process");
}

#[test]
fn root_table_in_text_and_json() {
    let root = root_with(&[
        process(100, 5, Manifest::Complete, true),
        process(200, 3, Manifest::Incomplete, false),
    ]);
    let sb = common::Sandbox::new();
    let out = sb
        .hrr()
        .args(["archive", "info", "--json"])
        .arg(root.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", common::stderr(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["kind"], "root");
    assert_eq!(v["schema_version"], 1);
    assert_eq!(v["chosen"], 200);
    assert_eq!(v["processes"][0]["pid"], 100);
    assert_eq!(v["processes"][1]["state"], "incomplete");
    assert_eq!(v["processes"][1]["parent_pid"], 0);
    let out = sb
        .hrr()
        .args(["archive", "info"])
        .arg(root.path())
        .output()
        .unwrap();
    let text = common::stdout(&out);
    assert!(text.contains("Processes: 2"), "{text}");
    assert!(text.contains("Triage would pick pid 200"), "{text}");
}

fn lua_script(sb: &common::Sandbox, root: &Path) -> std::process::Output {
    let script = sb.write(
        "probe.lua",
        r#"
local a = hrr.archive.resolve(hrr.args[1])
local s = hrr.archive.info(a.path)
hrr.out(string.format("%s %d %s %d %d %s\n", a.kind, a.chosen, s.state, s.events,
  #a.processes, tostring(s.trailer.present)))
local ok, err = pcall(hrr.archive.info, hrr.args[1] .. "/nope")
hrr.out(tostring(ok) .. " " .. tostring(err):match("hrr.archive.info: [^\n]*") .. "\n")
return 0
"#,
    );
    sb.hrr().arg("run").arg(script).arg(root).output().unwrap()
}

#[test]
fn lua_resolve_and_info_return_the_json_tables() {
    let root = root_with(&[
        process(100, 5, Manifest::Complete, true),
        process(200, 3, Manifest::Incomplete, false),
    ]);
    let sb = common::Sandbox::new();
    let out = lua_script(&sb, root.path());
    assert_eq!(out.status.code(), Some(0), "{}", common::stderr(&out));
    let text = common::stdout(&out);
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some("root 200 incomplete 3 2 false"));
    let err = lines.next().unwrap();
    assert!(
        err.starts_with("false hrr.archive.info: cannot open archive"),
        "{err}"
    );
}
