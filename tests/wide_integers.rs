//! Integers of 2^63 or more (a time span, a trailer count, a pid from a
//! damaged archive) do not fit a Lua integer. They reach Lua as decimal
//! strings, come back exact, and triage keeps them exact in its JSON.

mod common;

use std::path::PathBuf;

use common::{stderr, stdout, Sandbox};
use hrr_testkit::archive::ProcessArchive;
use hrr_testkit::events::{api, EventsFile, Launch};

/// 2^63 + 7: the pid in the manifest and the directory name.
const PID: u64 = (1 << 63) + 7;
/// 2^63 + 5 ns between the first and the last record.
const SPAN: u64 = (1 << 63) + 5;

/// `cap.hrr/pid-<PID>`: two launches `SPAN` ns apart and a trailer that
/// claims `u64::MAX` events.
fn wide_archive(sb: &Sandbox) -> PathBuf {
    let mut ev = EventsFile::v7();
    ev.clock = 0;
    ev.tick = SPAN;
    let k = Launch::new("_Z6kernelPf", [64, 1, 1], [256, 1, 1]);
    ev.launch(api::HIP_LAUNCH_KERNEL, &k);
    // The clock is now at SPAN; a tick of 0 keeps it from wrapping.
    ev.tick = 0;
    ev.launch(api::HIP_LAUNCH_KERNEL, &k)
        .trailer_counting(u64::MAX);
    let mut a = ProcessArchive::new(PID, EventsFile::v7());
    a.events = ev;
    a.write(&sb.path().join("cap.hrr")).unwrap()
}

#[test]
fn lua_sees_wide_integers_as_exact_decimal_strings() {
    let sb = Sandbox::new();
    let dir = wide_archive(&sb);
    let f = sb.write(
        "w.lua",
        &format!(
            "local s = hrr.archive.info({:?})\n\
             hrr.out(type(s.pid) .. ' ' .. s.pid .. ' ' .. s.duration_ns .. ' ' .. s.trailer.total_events .. ' ' .. math.type(s.events))\n",
            dir.display().to_string()
        ),
    );
    let out = sb.hrr().arg("run").arg(&f).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(
        stdout(&out),
        format!("string {PID} {SPAN} {} integer", u64::MAX)
    );
}

#[test]
fn triage_of_an_archive_with_wide_integers_keeps_them_exact() {
    let sb = Sandbox::new();
    let dir = wide_archive(&sb);
    let out = sb
        .hrr()
        .arg("triage")
        .arg(&dir)
        .args(["--no-replay", "--format", "json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let finding: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    let processes = &finding["archive_health"]["processes"];
    assert_eq!(processes, &serde_json::json!([PID]), "{finding:#}");
}
