//! `events.bin` cut shorter by another program while `hrr archive info`
//! reads it through mapped windows (DESIGN §8: never die on any input): the
//! pass survives the bus errors of the vanished pages and reports the file
//! as cut (`truncated_while_reading`), instead of `hrr` being killed by
//! SIGBUS.
#![cfg(target_os = "linux")]

use std::os::unix::process::ExitStatusExt;
use std::process::{Command, Stdio};
use std::time::Duration;

use hrr_testkit::synth::write_big;

#[test]
fn a_stream_cut_while_it_is_read_is_reported_not_fatal() {
    let tmp = tempfile::tempdir().unwrap();
    write_big(tmp.path(), 77, 96 << 20).unwrap();
    let pid_dir = tmp.path().join("pid-77");
    let events = pid_dir.join("events.bin");
    let whole = tmp.path().join("events.whole");
    std::fs::copy(&events, &whole).unwrap();
    let mut cut_reported = 0;
    // From a few milliseconds on: the pass may read the whole file in 40.
    for delay_ms in [5u64, 10, 20, 40, 80, 160, 320, 640] {
        std::fs::copy(&whole, &events).unwrap();
        let child = Command::new(env!("CARGO_BIN_EXE_hrr"))
            .args(["archive", "info", "--json"])
            .arg(&pid_dir)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(delay_ms));
        let f = std::fs::OpenOptions::new()
            .write(true)
            .open(&events)
            .unwrap();
        f.set_len(1 << 20).unwrap();
        let out = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(
            out.status.signal(),
            None,
            "killed after {delay_ms} ms: {stderr}"
        );
        assert_eq!(out.status.code(), Some(0), "after {delay_ms} ms: {stderr}");
        let info: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let problems = info["problems"].as_array().unwrap();
        if let Some(p) = problems
            .iter()
            .find(|p| p["kind"] == "truncated_while_reading")
        {
            cut_reported += 1;
            let detail = p["detail"].as_str().unwrap();
            assert!(detail.contains("to 1048576 bytes"), "{detail}");
        }
    }
    assert!(cut_reported > 0, "no run was cut while it read");
}
