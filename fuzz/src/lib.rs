//! Fuzz harness bodies for `hrr`'s hostile-input readers (issue 8, item 1).
//!
//! Each `pub fn` takes one raw fuzz input and drives it through the public
//! entry points that a customer's archive, a config file or a replay log
//! reaches, including the rendering of what was decoded. A harness asserts
//! nothing about the conclusions: a panic, a hang or an over-allocation is
//! the finding. The cargo-fuzz targets in `fuzz/fuzz_targets/` call these
//! functions, and `tests/fuzz_regressions.rs` includes this very file (with
//! `#[path]`) to replay every saved crashing input on stable `cargo test`.
//!
//! Inputs that need a path are written into a per-thread scratch directory
//! under the system temp directory (set `TMPDIR=/dev/shm` when fuzzing to
//! keep it in memory), laid out as a capture root `<scratch>/pid-1/…`.

use std::cell::{OnceCell, RefCell};
use std::fs;
use std::io::BufReader;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use hrr::archive::event_stream::Events;
use hrr::archive::format::apis::{id, LAUNCH_IDS};
use hrr::archive::format::framing::RecordReader;
use hrr::archive::format::manifest;
use hrr::archive::format::payloads::{self, Payload};
use hrr::archive::{self, report, Info};
use hrr::classify::{ArchiveFacts, Classifier};
use hrr::config::{schema, Config};
use hrr::finding::Finding;

/// A capture root on disk, reused by every input of one thread and removed
/// when the thread ends.
struct Scratch {
    root: PathBuf,
}

impl Scratch {
    fn new() -> Scratch {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let root = std::env::temp_dir().join(format!(
            "hrr-fuzz-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = fs::remove_dir_all(&root);
        fs::create_dir_all(root.join("pid-1")).expect("create the fuzz scratch directory");
        Scratch { root }
    }

    fn process(&self) -> PathBuf {
        self.root.join("pid-1")
    }

    /// Puts the process archive back to holding `events.bin` only, and drops
    /// any second process a previous input left.
    fn reset(&self, events_bin: &[u8]) {
        let process = self.process();
        let _ = fs::remove_file(process.join("manifest.json"));
        let _ = fs::remove_file(self.root.join("manifest.json"));
        let _ = fs::remove_dir_all(self.root.join("pid-2"));
        fs::write(process.join("events.bin"), events_bin).expect("write events.bin");
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.root);
    }
}

thread_local! {
    static SCRATCH: RefCell<Option<Scratch>> = const { RefCell::new(None) };
}

fn with_scratch(f: impl FnOnce(&Scratch)) {
    SCRATCH.with(|s| f(s.borrow_mut().get_or_insert_with(Scratch::new)));
}

/// The 8-byte `events.bin` header of format `version`.
fn file_header(version: u16) -> Vec<u8> {
    let mut h = b"EHRR".to_vec();
    h.extend(version.to_le_bytes());
    h.extend(0u16.to_le_bytes());
    h
}

/// One record: the 32-byte event header (reference §6) and `payload`.
/// `None` when the record would not fit `payload_length`.
fn record(event_type: u16, seq: u64, payload: &[u8]) -> Option<Vec<u8>> {
    let total = u32::try_from(payload.len().checked_add(32)?).ok()?;
    let mut r = Vec::with_capacity(total as usize);
    r.extend(event_type.to_le_bytes());
    r.extend(seq.to_le_bytes());
    r.extend((1_000 + seq).to_le_bytes());
    r.extend(7u64.to_le_bytes());
    r.extend(total.to_le_bytes());
    r.extend([0u8; 2]);
    r.extend(payload);
    Some(r)
}

/// The clean-shutdown trailer counting `events` (reference §8).
fn trailer(seq: u64, events: u64) -> Vec<u8> {
    let mut payload = events.to_le_bytes().to_vec();
    payload.extend(b"HEOF");
    record(0xFFFF, seq, &payload).expect("44-byte trailer")
}

/// Every read-only view `hrr` offers of a capture root and its process:
/// the summary and its text and JSON reports, the decoded event stream,
/// `archive info` and triage's process choice.
fn exercise_archive(root: &Path, process: &Path) {
    if let Ok(s) = archive::summarize(process) {
        let _ = report::process_text(&s, None);
        let _ = report::process_text(&s, Some(2));
        let _ = serde_json::to_string(&s);
        let _ = s.fatal_problem();
    }
    if let Ok(mut events) = Events::open(process) {
        while let Ok(Some(e)) = events.next_matching(0, None) {
            let _ = e.text_line();
            let _ = serde_json::to_string(&e);
        }
        let _ = events.end();
    }
    match archive::info(root) {
        Ok(Info::Process(s)) => {
            let _ = report::process_text(&s, None);
        }
        Ok(Info::Root(listing)) => {
            let _ = report::root_text(&listing);
        }
        Err(_) => {}
    }
    let _ = archive::resolve(root);
    let _ = archive::resolve(process);
}

/// `record_stream`: the input is a whole `events.bin`. Read record by
/// record from memory at two buffer sizes (so records straddle the chunk),
/// then as a file through every archive view.
pub fn record_stream(data: &[u8]) {
    if let Some(body) = data.get(8..) {
        for chunk in [64, 4096] {
            let mut reader = RecordReader::new(body, 8, body.len() as u64, chunk);
            while let Ok(Some(rec)) = reader.next_record() {
                let _ = rec.trailer_count();
            }
            let _ = reader.torn().map(|t| t.to_string());
        }
    }
    with_scratch(|s| {
        s.reset(data);
        exercise_archive(&s.root, &s.process());
    });
}

/// The graph kernel-node events whose records end with a kernel tail
/// (reference §10.4).
const KERNEL_NODE_IDS: [u16; 3] = [
    id::HIP_GRAPH_ADD_KERNEL_NODE,
    id::HIP_GRAPH_KERNEL_NODE_SET_PARAMS,
    id::HIP_GRAPH_EXEC_KERNEL_NODE_SET_PARAMS,
];

/// Walks everything a decoded payload lets a caller iterate.
fn consume(payload: Payload<'_>) {
    match payload {
        Payload::Launch(l) => {
            for a in l.args() {
                let _ = (a.kind.label(), a.offsets().count());
            }
            let _ = l.snapshots().count();
        }
        Payload::KernelNode(n) => {
            for a in n.args() {
                let _ = (a.kind.label(), a.offsets().count());
            }
        }
        Payload::Malformed(e) => {
            let _ = e.to_string();
        }
        _ => {}
    }
}

/// `launch_payload`: the input is the payload (after the 32-byte header) of
/// one record of each of the ten launch ids and the three kernel-node ids.
/// Each is decoded from memory, then all of them as one v7 `events.bin`
/// with a trailer through every archive view (kernel table, JSON fields).
pub fn launch_payload(data: &[u8]) {
    let mut stream = file_header(7);
    let mut seq = 0;
    for event_type in LAUNCH_IDS.into_iter().chain(KERNEL_NODE_IDS) {
        let Some(rec) = record(event_type, seq, data) else {
            return;
        };
        consume(payloads::decode(Some(event_type), &rec));
        stream.extend(rec);
        seq += 1;
    }
    stream.extend(trailer(seq, seq));
    with_scratch(|s| {
        s.reset(&stream);
        exercise_archive(&s.root, &s.process());
    });
}

/// `manifest`: the input is `pid-1/manifest.json` and the root
/// `manifest.json` of a capture root whose `events.bin` is a clean empty
/// stream, next to a second, finalised process (so the root listing and the
/// process choice read the hostile manifest's state and `event_count`).
pub fn manifest(data: &[u8]) {
    let mut stream = file_header(7);
    stream.extend(trailer(0, 0));
    with_scratch(|s| {
        s.reset(&stream);
        let process = s.process();
        let other = s.root.join("pid-2");
        fs::write(process.join("manifest.json"), data).expect("write manifest.json");
        fs::write(s.root.join("manifest.json"), data).expect("write the root manifest.json");
        fs::create_dir_all(&other).expect("create pid-2");
        fs::write(other.join("events.bin"), &stream).expect("write pid-2/events.bin");
        fs::write(
            other.join("manifest.json"),
            br#"{"pid":2,"complete":true,"event_count":0}"#,
        )
        .expect("write pid-2/manifest.json");

        let state = manifest::read(&process);
        let _ = (state.process_state().as_str(), state.int("event_count"));
        let facts = hrr::preflight::capture::read(&process);
        let _ = facts.arch_names();
        for gpu in [0, 1, 7, u32::MAX] {
            let _ = facts.arch_for(gpu);
        }
        exercise_archive(&s.root, &process);
    });
}

/// `config`: the input is the text of a config file, read as `hrr` reads
/// one (invalid UTF-8 never reaches the parser: reading the file fails
/// first). Every key is then read through every typed accessor and the
/// effective config is printed as `config show` does; each of the first
/// lines is also tried as a `-c key=value` override.
pub fn config(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(c) = hrr::config::parse_text(Path::new("fuzz/config.toml"), text) {
        read_every_key(&c);
    }
    for line in text.lines().take(8) {
        if let Ok(c) = Config::with_overrides(&[line]) {
            read_every_key(&c);
        }
    }
}

fn read_every_key(c: &Config) {
    for spec in schema::KEYS {
        let k = spec.key;
        let _ = (c.get(k), c.str(k), c.bool(k), c.int(k));
        let _ = (c.duration(k), c.size(k), c.strings(k));
        let _ = c.entry(k).map(|e| e.origin.to_string());
    }
    let _ = (c.aliases(), c.rocm_path(), c.profile());
    let _ = c.listing(true);
    let _ = c.listing(false);
}

/// A launch payload (reference §10.1) of `name` with no arguments, no
/// attribute tail and no snapshots.
fn plain_launch(name: &[u8]) -> Vec<u8> {
    let mut p = 0x5000u64.to_le_bytes().to_vec();
    p.extend(u16::try_from(name.len()).expect("short name").to_le_bytes());
    p.extend(name);
    p.extend([0x11; 16]);
    for v in [4u32, 1, 1, 64, 1, 1, 0] {
        p.extend(v.to_le_bytes());
    }
    p.extend([0u8; 4]);
    p
}

thread_local! {
    static CRASH_FACTS: OnceCell<ArchiveFacts> = const { OnceCell::new() };
}

/// The facts of a crashed single-kernel capture (one launch of `crash_oob`,
/// no trailer, manifest `complete: false`), so the classifier's kernel
/// inference and archive-health rules run on every log.
fn crash_facts() -> ArchiveFacts {
    CRASH_FACTS.with(|cell| {
        cell.get_or_init(|| {
            let launch = record(id::HIP_MODULE_LAUNCH_KERNEL, 0, &plain_launch(b"crash_oob"))
                .expect("a short launch record");
            let mut stream = file_header(7);
            stream.extend(launch);
            let mut facts = None;
            with_scratch(|s| {
                s.reset(&stream);
                let process = s.process();
                fs::write(
                    process.join("manifest.json"),
                    br#"{"pid":1,"complete":false}"#,
                )
                .expect("write manifest.json");
                facts = Some(
                    hrr::classify::archive_facts(&process)
                        .expect("decode the crashed single-kernel capture"),
                );
            });
            facts.expect("the scratch closure ran")
        })
        .clone()
    })
}

/// `classifier_lines`: the input is a replay log (or `--info` dump). It is
/// fed through the buffered reader with a 16-byte buffer (so lines straddle
/// buffer fills), and line by line with the facts of a crashed archive;
/// each finding is rendered as JSON and markdown, and the JSON must read
/// back as a finding (what `hrr render` does with a saved finding).
pub fn classifier_lines(data: &[u8]) {
    let mut buffered = Classifier::new();
    buffered.begin_input("fuzz.log");
    let _ = buffered.feed_reader(BufReader::with_capacity(16, data));
    let mut by_line = Classifier::new();
    by_line.begin_input("fuzz.log");
    for line in data.split(|&b| b == b'\n') {
        by_line.feed_line(line);
    }
    let facts = crash_facts();
    for finding in [
        buffered.finish(None, None, None),
        by_line.finish(Some(&facts), None, None),
    ] {
        let json = hrr::render::json(&finding);
        let _ = hrr::render::markdown(&finding);
        if let Err(e) = Finding::from_json(&json) {
            panic!("a finding's own JSON does not read back: {e:#}\n{json}");
        }
    }
}
