//! The archive the test player replays, decoded from the process directory
//! it is given with hrr's own reader (`hrr::archive::event_stream::Events` for the
//! events in replay order, `hrr::archive::summarize` for the counts). Nothing
//! here is invented: every kernel name, sequence id, grid and count the
//! player prints comes from the archive. A directory the reader cannot load
//! fails the way the real player's loader fails (reference
//! playback-output.md §2a "load failures", §2f), so there is no built-in
//! stand-in archive at all.

use std::io::Read;
use std::path::{Path, PathBuf};

use hrr::archive::event_stream::{DecodedEvent, Events};
use hrr::archive::format::apis::{id, ApiTable};
use hrr::archive::format::framing::{
    FileHeader, Torn, TornReason, EVENTS_MAGIC, EVENT_HEADER_LEN, FILE_HEADER_LEN, MAX_RECORD_BYTES,
};
use serde_json::Value;

/// One recorded kernel launch.
#[derive(Debug, Clone)]
pub struct Launch {
    /// Full recorded kernel name (invalid UTF-8 replaced by U+FFFD).
    pub name: String,
    /// The recorded name's bytes, as the real player prints them
    /// (`printf("%s")` of the captured C string, invalid UTF-8 and all).
    pub raw_name: Vec<u8>,
    /// grid (x, y, z).
    pub grid: [u64; 3],
    /// block (x, y, z).
    pub block: [u64; 3],
    /// Dynamic shared memory bytes.
    pub shared: u64,
    /// Kernel arguments recorded.
    pub args: usize,
    /// Pinned-host snapshots recorded with the launch.
    pub snapshots: usize,
    /// `hipExtModuleLaunchKernel` (`launch=EXT` in `[HRR launch]` lines).
    pub ext: bool,
    /// One of the four launch types `--info` counts as `Kernels:`
    /// (reference §2a).
    pub counted: bool,
}

/// What replaying one event involves, as far as the player's output goes.
#[derive(Debug, Clone)]
pub enum Action {
    /// A kernel launch.
    Launch(Launch),
    /// A device-to-host copy carrying an expected-output blob: a D2H check.
    D2hCheck {
        /// The tag of the `D2H FAIL` line (reference §2g): `kernarg`,
        /// `DtoH`, `DtoHAsync` or the API name.
        tag: String,
        /// Bytes copied.
        size: u64,
    },
    /// Anything else.
    Other,
}

/// One event in replay order.
#[derive(Debug, Clone)]
pub struct Step {
    /// 0-based index in the sequence-sorted event list (`Event N`).
    pub index: usize,
    /// Recorded sequence id.
    pub seq: u64,
    /// Recorded OS thread id (`T…` in `Fatal:` lines).
    pub thread: u64,
    /// API name.
    pub api: String,
    /// What replaying it prints.
    pub action: Action,
}

impl Step {
    /// The launch, when this step is one.
    pub fn launch(&self) -> Option<&Launch> {
        match &self.action {
            Action::Launch(l) => Some(l),
            _ => None,
        }
    }
}

/// How the event stream ended.
#[derive(Debug, Clone, Copy)]
pub enum Ending {
    /// A trailer counting exactly the events before it.
    Clean,
    /// A trailer whose count disagrees with the events before it.
    CountMismatch(u64),
    /// No trailer, the stream simply stops.
    NoTrailer,
    /// No trailer and a torn last record.
    Torn(Torn),
}

/// A decoded process archive.
#[derive(Debug, Clone)]
pub struct Archive {
    /// The process directory.
    pub path: PathBuf,
    /// Complete events before any trailer.
    pub events: u64,
    /// Distinct recorded thread ids.
    pub threads: u64,
    /// `*.blob` files.
    pub blobs: u64,
    /// `*.hsaco` files.
    pub code_objects: u64,
    /// How the stream ended.
    pub ending: Ending,
    /// Records after the trailer (ignored by the reader).
    pub after_trailer: u64,
    /// API call counts in API-id order (the Event Type Breakdown).
    pub apis: Vec<(String, u64)>,
    /// Every event in replay (sequence) order.
    pub steps: Vec<Step>,
}

impl Archive {
    /// Every launch in replay order.
    pub fn launches(&self) -> impl Iterator<Item = &Launch> {
        self.steps.iter().filter_map(Step::launch)
    }

    /// The launches `--info` and the `Archive :` start line count.
    pub fn counted_launches(&self) -> impl Iterator<Item = &Launch> {
        self.launches().filter(|l| l.counted)
    }

    /// Index in [`Archive::steps`] of the last launch.
    pub fn last_launch(&self) -> Option<usize> {
        self.steps.iter().rposition(|s| s.launch().is_some())
    }

    /// The reader's stderr diagnostics printed before `--info` or a replay
    /// (reference §2a "Reader diagnostics").
    pub fn reader_diagnostics(&self) -> Vec<String> {
        let n = self.events;
        let mut lines = Vec::new();
        if self.after_trailer > 0 {
            lines.push(format!(
                "[HRR] Ignored {} records after the clean-shutdown trailer",
                self.after_trailer
            ));
        }
        match self.ending {
            Ending::Clean => {}
            Ending::CountMismatch(counted) => lines.push(format!("[HRR] Clean-shutdown trailer counts {counted} events but {n} precede it; the archive is not treated as complete")),
            Ending::NoTrailer => lines.push(format!("[HRR] Archive has no clean-shutdown trailer (capture likely crashed); recovered {n} events")),
            Ending::Torn(torn) => {
                lines.push(match torn.reason {
                    TornReason::PartialHeader => format!("[HRR] Truncated event header ({}/{EVENT_HEADER_LEN} bytes) at tail", torn.bytes),
                    TornReason::LengthTooSmall(len) => format!("[HRR] Torn trailing record (payload_length {len} < {EVENT_HEADER_LEN})"),
                    TornReason::LengthOverCap(len) => format!("[HRR] Implausible payload_length {len} (max {MAX_RECORD_BYTES}) — treating as torn"),
                    TornReason::BodyShort { announced } => format!("[HRR] Truncated event payload (expected {announced} bytes) at tail"),
                });
                lines.push(format!("[HRR] Recovered {n} events before the torn record"));
                lines.push(format!("[HRR] Archive has no clean-shutdown trailer (capture likely crashed); recovered {n} events, trailing torn record discarded"));
            }
        }
        lines
    }

    /// The value of the `--info` `Complete:` line.
    pub fn complete_text(&self) -> &'static str {
        match self.ending {
            Ending::Clean => "yes (clean shutdown)",
            Ending::Torn(_) => "NO (crash-truncated; trailing torn record discarded)",
            Ending::NoTrailer | Ending::CountMismatch(_) => {
                "NO (no shutdown trailer; capture likely crashed)"
            }
        }
    }
}

/// Why an archive cannot be loaded: the real loader's stderr lines; the
/// player exits 1 after printing them.
pub struct LoadError(pub Vec<String>);

/// The format version the player "was built for": `HRR_TEST_READER_VERSION`,
/// else 7 (the synthetic archives' version).
pub fn reader_version() -> u16 {
    std::env::var("HRR_TEST_READER_VERSION")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(7)
}

/// The version-mismatch line of reference §2f for `events.bin` of `dir`.
pub fn version_mismatch(dir: &Path, file: u16, reader: u16) -> String {
    format!(
        "[HRR] Version mismatch in {}: file={file} reader={reader}",
        dir.join("events.bin").display()
    )
}

/// Reads the 8-byte file header of `dir/events.bin`, failing with the real
/// loader's lines for a missing file, a short file or a bad magic.
pub fn header(dir: &Path) -> Result<FileHeader, LoadError> {
    let path = dir.join("events.bin");
    let shown = path.display();
    let Ok(mut file) = std::fs::File::open(&path) else {
        return Err(LoadError(vec![format!("[HRR] Cannot open {shown}")]));
    };
    let mut head = [0u8; FILE_HEADER_LEN];
    if file.read_exact(&mut head).is_err() {
        return Err(LoadError(vec![format!(
            "[HRR] {shown} too short (missing file header)"
        )]));
    }
    let header = FileHeader::parse(&head).expect("8 header bytes");
    if header.magic != EVENTS_MAGIC {
        return Err(LoadError(vec![format!(
            "[HRR] Bad magic 0x{:08x} in {shown} (expected 0x{:08x})",
            u32::from_le_bytes(header.magic),
            u32::from_le_bytes(EVENTS_MAGIC)
        )]));
    }
    Ok(header)
}

/// Decodes the process archive `dir`.
pub fn load(dir: &Path) -> Result<Archive, LoadError> {
    let header = header(dir)?;
    // A version hrr does not decode: the real reader, built for one
    // version, reports any other as a version mismatch.
    if ApiTable::for_version(header.version).is_none() {
        return Err(LoadError(vec![version_mismatch(
            dir,
            header.version,
            reader_version(),
        )]));
    }
    let fail = |e: anyhow::Error| LoadError(vec![format!("[HRR] {e:#}")]);
    let mut events = Events::open(dir).map_err(fail)?;
    let table = events.table();
    let mut steps = Vec::new();
    let mut raw = RawRecords::open(dir);
    while let Some(e) = events.next_matching(0, None).map_err(fail)? {
        let v7 = table.canonical(e.id).unwrap_or(u16::MAX);
        let raw_name = raw.kernel_name(&e, v7);
        steps.push(step(e, v7, raw_name));
    }
    // The real player replays in sequence order; a stable sort keeps the
    // file order of equal sequence ids.
    steps.sort_by_key(|s| s.seq);
    for (index, s) in steps.iter_mut().enumerate() {
        s.index = index;
    }
    let end = events.end();
    let summary = hrr::archive::summarize(dir).map_err(fail)?;
    let ending = match (end.trailer, end.torn) {
        (Some(n), _) if n == end.events => Ending::Clean,
        (Some(n), _) => Ending::CountMismatch(n),
        (None, Some(torn)) => Ending::Torn(torn),
        (None, None) => Ending::NoTrailer,
    };
    Ok(Archive {
        path: dir.to_path_buf(),
        events: end.events,
        threads: summary.threads,
        blobs: summary.blobs.files,
        code_objects: summary.code_objects.files,
        ending,
        after_trailer: end.after_trailer,
        apis: summary
            .apis
            .iter()
            .map(|a| (a.name.clone(), a.count))
            .collect(),
        steps,
    })
}

/// `events.bin` read again record by record, for what the decoded
/// fields give only as text: the kernel name's bytes.
struct RawRecords {
    file: Option<std::fs::File>,
}

impl RawRecords {
    fn open(dir: &Path) -> RawRecords {
        RawRecords {
            file: std::fs::File::open(dir.join("events.bin")).ok(),
        }
    }

    /// The kernel name's bytes of launch record `e` (`v7`: its canonical
    /// API id); empty when the record cannot be read again.
    fn kernel_name(&mut self, e: &DecodedEvent, v7: u16) -> Vec<u8> {
        use hrr::archive::format::payloads::{decode, Payload};
        use std::io::{Seek, SeekFrom};
        let (Some(file), true) = (&mut self.file, e.fields.contains_key("grid")) else {
            return Vec::new();
        };
        // `payload_length` counts the whole record, header included, and
        // the payload layouts index into it.
        let mut record = vec![0u8; (e.length as usize).min(MAX_RECORD_BYTES as usize)];
        let read = file
            .seek(SeekFrom::Start(e.offset))
            .and_then(|_| file.read_exact(&mut record));
        match (read, decode(Some(v7), &record)) {
            (Ok(()), Payload::Launch(l)) => l.name.to_vec(),
            _ => Vec::new(),
        }
    }
}

fn step(e: DecodedEvent, v7: u16, raw_name: Vec<u8>) -> Step {
    let action = if let Some(Value::String(name)) = e.fields.get("kernel") {
        // Launch payloads carry a grid; graph kernel nodes do not and are
        // not launches.
        match e.fields.get("grid") {
            Some(grid) => Action::Launch(Launch {
                name: name.clone(),
                raw_name,
                grid: dims(grid),
                block: dims(e.fields.get("block").unwrap_or(&Value::Null)),
                shared: e
                    .fields
                    .get("shared_mem")
                    .and_then(Value::as_u64)
                    .unwrap_or(0),
                args: len(e.fields.get("args")),
                snapshots: len(e.fields.get("snapshots")),
                ext: v7 == id::HIP_EXT_MODULE_LAUNCH_KERNEL,
                counted: matches!(
                    v7,
                    id::HIP_MODULE_LAUNCH_KERNEL
                        | id::HIP_EXT_MODULE_LAUNCH_KERNEL
                        | id::HIP_LAUNCH_KERNEL
                        | id::HIP_LAUNCH_BY_PTR
                ),
            }),
            None => Action::Other,
        }
    } else if e.fields.get("d2h_check") == Some(&Value::Bool(true)) {
        Action::D2hCheck {
            tag: match v7 {
                id::HIP_MEMCPY | id::HIP_MEMCPY_ASYNC | id::HIP_MEMCPY_WITH_STREAM => {
                    "kernarg".into()
                }
                id::HIP_MEMCPY_DTOH => "DtoH".into(),
                id::HIP_MEMCPY_DTOH_ASYNC => "DtoHAsync".into(),
                _ => e.api.clone(),
            },
            size: e.fields.get("size").and_then(Value::as_u64).unwrap_or(0),
        }
    } else {
        Action::Other
    };
    Step {
        index: 0,
        seq: e.seq,
        thread: e.thread,
        api: e.api,
        action,
    }
}

fn dims(v: &Value) -> [u64; 3] {
    let at = |i: usize| v.get(i).and_then(Value::as_u64).unwrap_or(1);
    [at(0), at(1), at(2)]
}

fn len(v: Option<&Value>) -> usize {
    v.and_then(Value::as_array).map_or(0, Vec::len)
}

/// `[x,y,z]` as the player prints grids and blocks.
pub fn dims_text(d: [u64; 3]) -> String {
    format!("[{},{},{}]", d[0], d[1], d[2])
}

/// The recorded name shortened to `width` the way the `--info` tables do:
/// first `width - 3` characters and `...` when longer.
pub fn clip(name: &str, width: usize) -> String {
    if name.chars().count() <= width {
        return name.to_string();
    }
    let mut s: String = name.chars().take(width - 3).collect();
    s.push_str("...");
    s
}
