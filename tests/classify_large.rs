//! A generated 50 MB verbose log with a 5 MB single line and invalid UTF-8
//! in the middle: read in one bounded pass, classified from its real lines.

use std::io::{BufReader, BufWriter, Write};

use hrr::classify::{Classifier, LINE_CAP};
use hrr::finding::{FaultClass, KernelSource, Outcome};

const TARGET: u64 = 50 << 20;
const LONG_LINE: usize = 5 << 20;

#[test]
fn fifty_megabytes_with_a_long_line_and_invalid_utf8() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("replay.log");
    let mut w = BufWriter::new(std::fs::File::create(&path).unwrap());
    let mut written: u64 = 0;
    let mut lines: u64 = 0;
    let mut event = 0u64;
    let mut next_progress = 1000u64;
    let put =
        |w: &mut BufWriter<std::fs::File>, bytes: &[u8], written: &mut u64, lines: &mut u64| {
            w.write_all(bytes).unwrap();
            w.write_all(b"\n").unwrap();
            *written += bytes.len() as u64 + 1;
            *lines += 1;
        };
    put(
        &mut w,
        b"[HRR] Archive : 3000000 events, 90000 kernels, 12 blobs, 1 code objects",
        &mut written,
        &mut lines,
    );
    let mut long_done = false;
    while written < TARGET {
        event += 1;
        let line = format!("[HRR] Event {event}: hipLaunchKernel");
        put(&mut w, line.as_bytes(), &mut written, &mut lines);
        if event == next_progress {
            next_progress += 1000;
            let p = format!(
                r#"[HRR progress] elapsed_s={}.0 seq={event} kernels={} d2h_pass=0 d2h_fail=0 d2h_attempted=0 last="k_{event}""#,
                event / 1000,
                event / 3
            );
            put(&mut w, p.as_bytes(), &mut written, &mut lines);
        }
        if !long_done && written > TARGET / 2 {
            // invalid UTF-8: a lone continuation byte, an overlong form, a cut-off sequence
            put(
                &mut w,
                b"[HRR]   arg[0]: scalar 4 bytes = \xff\xfe\x80 (u32=\xc0\xaf) \xe2\x82",
                &mut written,
                &mut lines,
            );
            let mut long = b"[HRR] ".to_vec();
            long.resize(LONG_LINE - 200, b'x');
            // a fault line hidden past the examined head of the long line
            long.extend_from_slice(
                b" Memory access fault by GPU node-9 on address 0xdead. Reason: Unknown.",
            );
            put(&mut w, &long, &mut written, &mut lines);
            long_done = true;
        }
    }
    let tail: [&[u8]; 3] = [
        br#"[HRR launch] seq=9999999 kernel=90001 launch=MOD grid=[1024,1,1] block=[256,1,1] shared=0 args=3 snapshots=0 name="_Z9crash_oobPKiPii""#,
        b"Memory access fault by GPU node-2 (Agent handle: 0x55d5c2a1e6b0) on address 0x7f3a2c600000(may not be exact address). Reason: Page not present or supervisor privilege.",
        b"[hrr] replay killed by signal 6",
    ];
    for t in tail {
        put(&mut w, t, &mut written, &mut lines);
    }
    w.flush().unwrap();
    drop(w);
    assert!(written >= TARGET);

    let mut c = Classifier::new();
    c.begin_input("replay.log");
    c.feed_reader(BufReader::new(std::fs::File::open(&path).unwrap()))
        .unwrap();
    let e = c.evidence();
    assert_eq!(e.bytes, written, "every byte was read");
    assert_eq!(e.lines, lines, "every line was seen, the long one once");
    assert_eq!(e.long_lines, 1);
    const { assert!(LINE_CAP < LONG_LINE) };
    assert_eq!(
        e.progress.as_ref().map(|p| p.last.clone()),
        Some(format!("k_{}", event - event % 1000))
    );
    let f = c.finish(None, None, None);
    assert_eq!(
        (f.outcome, f.fault_class),
        (Outcome::Maf, FaultClass::IllegalMemoryAccess)
    );
    assert_eq!(
        f.fault_address.as_deref(),
        Some("0x7f3a2c600000"),
        "only the long line's head is examined"
    );
    assert_eq!(
        (f.kernel_name.as_deref(), f.kernel_source),
        (Some("_Z9crash_oobPKiPii"), Some(KernelSource::TraceKernels))
    );
    assert_eq!(f.failing_event_seq, Some(9_999_999));
    assert_eq!(
        (f.failing_call_index, f.failing_api.as_deref()),
        (Some(event), Some("hipLaunchKernel"))
    );
    assert!(f.notes.iter().any(|n| n.contains("longer than 64 KiB")));
}
