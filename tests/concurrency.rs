//! Issue 8 item 5: parallel triage runs sharing a workdir, and a thousand
//! archive decodes in one process without leaking descriptors or memory.
#![cfg(target_os = "linux")]

mod common;

use std::collections::BTreeSet;
use std::path::Path;

use common::{stderr, stdout, Sandbox};
use hrr_testkit::archive::{Manifest, ProcessArchive};
use hrr_testkit::events::{api, EventsFile, Launch};
use hrr_testkit::tree;

fn crashed_process(root: &Path, pid: u64, launches: usize) {
    let mut a = ProcessArchive::new(pid, EventsFile::v7());
    a.manifest = Manifest::Incomplete;
    a.events.malloc(0x7f00_0000_0000, 4096);
    let k = Launch::new("_Z9crash_oobPKiPii", [64, 1, 1], [64, 1, 1]);
    for _ in 0..launches {
        a.events.launch(api::HIP_LAUNCH_KERNEL, &k);
    }
    a.write(root).unwrap();
}

#[test]
fn eight_parallel_triage_runs_write_eight_whole_findings() {
    let sb = Sandbox::new();
    let root = sb.path().join("cap.hrr");
    crashed_process(&root, 4242, 3);
    let runs: Vec<_> = (0..8)
        .map(|_| {
            let mut cmd = sb.hrr_process();
            cmd.args(["-q", "triage", "--no-replay", "--format", "json"])
                .arg(&root)
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped());
            cmd.spawn().unwrap()
        })
        .collect();
    let mut printed = Vec::new();
    for run in runs {
        let out = run.wait_with_output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        printed.push(stdout(&out));
    }
    let work = sb.path().join("work");
    let names: BTreeSet<String> = std::fs::read_dir(&work)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names.len(), 8, "{names:?}");
    for name in &names {
        assert!(
            name.starts_with("pid-4242-") && name.ends_with(".finding.json"),
            "{name}"
        );
        let text = std::fs::read_to_string(work.join(name)).unwrap();
        let f: serde_json::Value = serde_json::from_str(&text).expect("a whole JSON finding");
        assert_eq!(f["fault_class"], "metadata_only", "{name}");
        assert_eq!(f["archive_health"]["kernel_launches"], 3, "{name}");
        assert!(printed.contains(&text), "{name} is what one run printed");
    }
    assert!(tree::leftover_temp_files(sb.path()).is_empty());
}

fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd").unwrap().count()
}

fn rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

#[test]
fn a_thousand_summaries_leak_no_descriptors_or_memory() {
    let dir = tempfile::tempdir().unwrap();
    let mut dirs = Vec::new();
    for i in 0..1000u64 {
        let root = dir.path().join(format!("cap{i}.hrr"));
        let mut a = ProcessArchive::new(1000 + i, EventsFile::v7());
        let blob = a.add_blob(&i.to_le_bytes());
        a.events
            .malloc(0x7f00_0000_0000, 4096)
            .launch(
                api::HIP_LAUNCH_KERNEL,
                &Launch::new("_Z1kv", [1, 1, 1], [1, 1, 1]),
            )
            .memcpy_dtoh(0x10, 0x7f00_0000_0000, 8, blob)
            .trailer();
        dirs.push(a.write(&root).unwrap());
    }
    let decode = |d: &Path| {
        let s = hrr::archive::summarize(d).unwrap();
        assert_eq!((s.events, s.kernel_launches, s.d2h_checks), (3, 1, 1));
    };
    // Warm up allocator pools and lazily built tables first.
    for d in &dirs[..20] {
        decode(d);
    }
    let (fds, rss) = (open_fds(), rss_kib());
    for d in &dirs {
        decode(d);
    }
    let (fds_after, rss_after) = (open_fds(), rss_kib());
    assert_eq!(fds_after, fds, "file descriptors leaked");
    // A leak of even 1 KiB per archive would show as ~1 MiB; allow allocator noise.
    assert!(
        rss_after < rss + 4096,
        "RSS grew from {rss} KiB to {rss_after} KiB over 1,000 archives"
    );
}
