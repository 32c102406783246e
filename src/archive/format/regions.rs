//! Region sidecars `regions/*.hrrr` (reference §14): streams written by
//! producers such as the PyTorch caching-allocator hook. They share the
//! events.bin framing, so the same torn-tail rules apply; `hrr` counts the
//! streams and region records and reports damaged ones, and reads the
//! records themselves ([`read_records`]) for the allocation map.

use std::fs;
use std::io::Read;
use std::path::Path;

use crate::archive::format::framing::{
    le_u16, le_u32, le_u64, RecordReader, DEFAULT_CHUNK, FILE_HEADER_LEN,
};

/// On-disk magic of a region stream (`HRR_REGION_MAGIC`, bytes "HRRR").
pub const REGION_MAGIC: [u8; 4] = *b"HRRR";
/// The only region format version (`HRR_REGION_VERSION`).
pub const REGION_VERSION: u16 = 1;
/// `event_type` of a region batch record.
pub const REGION_EVENT: u16 = 0xFFFD;
/// Size of one region record.
pub const REGION_RECORD_LEN: usize = 32;
/// Offset of the first region record in a batch.
const BATCH_HEADER_LEN: usize = 40;

/// Counts over all region sidecars of a process.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct RegionCounts {
    /// `*.hrrr` files found.
    pub streams: u64,
    /// Region records in complete, well-formed batches.
    pub records: u64,
    /// One plain sentence per damaged stream.
    pub problems: Vec<String>,
}

/// One region record (§14): a block or segment becoming live or dead.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RegionRecord {
    /// `op` 0: the range becomes live (ADD); otherwise it dies (DEL).
    pub add: bool,
    /// `kind` 1: a whole allocator segment; otherwise a block inside one.
    pub segment: bool,
    /// Capture-time device address.
    pub base: u64,
    /// Bytes.
    pub size: u64,
    /// CLOCK_MONOTONIC ns (0: live since before the stream began).
    pub mono_ns: u64,
}

impl RegionRecord {
    fn parse(r: &[u8]) -> RegionRecord {
        RegionRecord {
            add: r[0] == 0,
            segment: r[1] == 1,
            base: le_u64(r, 8),
            size: le_u64(r, 16),
            mono_ns: le_u64(r, 24),
        }
    }
}

/// The `regions/*.hrrr` files of a process directory, in filename order
/// (the order the reference merges them in).
fn stream_files(process_dir: &Path) -> Vec<std::path::PathBuf> {
    let Ok(entries) = fs::read_dir(process_dir.join("regions")) else {
        return Vec::new();
    };
    let mut files: Vec<_> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "hrrr"))
        .collect();
    files.sort();
    files
}

/// The region records of every well-formed batch of every sidecar, merged
/// in filename order and stable-sorted by `mono_ns` as the reference
/// merges them; at most `cap` records are kept (true when more were
/// left out). Damaged streams give what precedes the damage (`scan`
/// reports the damage).
pub fn read_records(process_dir: &Path, cap: usize) -> (Vec<RegionRecord>, bool) {
    let mut out = Vec::new();
    let mut capped = false;
    for path in stream_files(process_dir) {
        let Ok(meta) = fs::symlink_metadata(&path) else {
            continue;
        };
        if !meta.is_file() {
            continue;
        }
        let _ = walk_stream(&path, meta.len(), &mut |r| {
            if out.len() < cap {
                out.push(RegionRecord::parse(r));
            } else {
                capped = true;
            }
        });
    }
    out.sort_by_key(|r| r.mono_ns);
    (out, capped)
}

/// Scans `regions/` of a process directory (missing directory = none).
pub fn scan(process_dir: &Path) -> RegionCounts {
    let mut counts = RegionCounts::default();
    for path in stream_files(process_dir) {
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let meta = match fs::symlink_metadata(&path) {
            Ok(m) if m.is_file() => m,
            _ => {
                counts
                    .problems
                    .push(format!("regions/{name} is not a regular file; skipped"));
                continue;
            }
        };
        counts.streams += 1;
        match walk_stream(&path, meta.len(), &mut |_| {}) {
            Ok(n) => counts.records += n,
            Err((n, why)) => {
                counts.records += n;
                counts.problems.push(format!("regions/{name}: {why}"));
            }
        }
    }
    counts
}

/// Hands each region record of one stream to `each` and counts them; on
/// damage returns what was counted before it and why it stopped.
fn walk_stream(path: &Path, len: u64, each: &mut dyn FnMut(&[u8])) -> Result<u64, (u64, String)> {
    let mut f = fs::File::open(path).map_err(|e| (0, format!("cannot open: {e}")))?;
    let mut head = [0u8; FILE_HEADER_LEN];
    if len < FILE_HEADER_LEN as u64 || f.read_exact(&mut head).is_err() {
        return Err((0, "shorter than its 8-byte header".into()));
    }
    if head[0..4] != REGION_MAGIC {
        return Err((0, "bad magic (not a region stream)".into()));
    }
    let version = le_u16(&head, 4);
    if version != REGION_VERSION {
        return Err((
            0,
            format!("region format version {version}, only 1 is known"),
        ));
    }
    let mut reader = RecordReader::new(
        f,
        FILE_HEADER_LEN as u64,
        len - FILE_HEADER_LEN as u64,
        DEFAULT_CHUNK / 4,
    );
    let mut records = 0u64;
    loop {
        let rec = match reader.next_record() {
            Ok(Some(r)) => r,
            Ok(None) => break,
            Err(e) => return Err((records, format!("read error: {e}"))),
        };
        if rec.header.event_type != REGION_EVENT || rec.bytes.len() < BATCH_HEADER_LEN {
            return Err((
                records,
                format!("record at offset {} is not a region batch", rec.offset),
            ));
        }
        let n = u64::from(le_u32(rec.bytes, 32));
        let expected = BATCH_HEADER_LEN as u64 + n * REGION_RECORD_LEN as u64;
        if expected != rec.bytes.len() as u64 {
            return Err((
                records,
                format!(
                    "batch at offset {} claims {n} records but is {} bytes long",
                    rec.offset,
                    rec.bytes.len()
                ),
            ));
        }
        for r in rec.bytes[BATCH_HEADER_LEN..].chunks_exact(REGION_RECORD_LEN) {
            each(r);
        }
        records += n;
    }
    match reader.torn() {
        Some(t) => Err((records, format!("torn last batch ({t})"))),
        None => Ok(records),
    }
}
