//! One streaming pass over a process archive that builds its
//! [`ArchiveSummary`]: the event stream, the blob and code-object files, the
//! region sidecars and the manifest.
//!
//! Up to 16 decoder threads take turns at a shared cutter for the next
//! piece of the stream: mapped windows of 4 MiB parts (`mapped.rs`), or
//! 256 KiB chunks read into a buffer when the file is not on a local disk
//! or cannot be mapped (`chunks.rs`). Each frames its piece without the
//! lock, waits for the pieces before it to be settled, has its own settled
//! (so the records are the serial walk's) and tallies it (`tally.rs`).
//! With the allocation map, it first takes the piece's allocations and
//! frees out and hands them to the map, in stream order, and audits the
//! piece's launches as it tallies them (`memory/merge.rs`).
//! Memory stays bounded whatever the archive size: one window or buffer
//! per decoder (each holds a single record up to the 64 MiB cap whole),
//! and capped tables.

use std::fs;
use std::io::{self, Read};
use std::path::Path;
use std::sync::{Mutex, MutexGuard};
use std::thread;

use anyhow::{bail, Context as _};
use rustc_hash::FxHashSet;

use crate::archive::format::apis::ApiTable;
use crate::archive::format::blobs::{BlobHash, FileIndex};
use crate::archive::format::framing::{FileHeader, EVENTS_MAGIC, FILE_HEADER_LEN};
use crate::archive::format::manifest::{self, ManifestState};
use crate::archive::format::regions;
use crate::archive::memory::map::AllocationMap;
use crate::archive::memory::merge::{OrderedMap, Turn};
use crate::archive::memory::ops::PieceOps;
use crate::archive::memory::view::{PieceAudit, Prepared, View};
use crate::archive::memory::watch::Watch;
use crate::archive::memory::{MemorySection, MAX_REGION_RECORDS};
use crate::archive::summary::chunks::{Cutter, EventChunks, Piece};
use crate::archive::summary::document::{
    ApiCount, ArchiveKind, ArchiveSummary, FileRefs, KernelSummary, Problem, RegionSummary,
    TrailerInfo, SCHEMA_VERSION,
};
use crate::archive::summary::health::health;
#[cfg(target_os = "linux")]
use crate::archive::summary::mapped::{self, Geometry, MappedChunks};
use crate::archive::summary::tally::Tally;
use crate::archive::summary::waiters::Waiters;

/// Bytes per chunk when `events.bin` is read rather than mapped.
const CHUNK_BYTES: usize = 256 << 10;
/// Decoder threads at most: the framing walk runs on every decoder, so the
/// pass scales to 16 cores; memory grows by one window or chunk buffer
/// per decoder.
const MAX_WORKERS: usize = 16;

/// Decoders at most that apply the pieces to the allocation map
/// themselves; with more, a thread of the map's own applies them
/// ([`OrderedMap::apply_on_own_thread`]), on a core of its own where
/// windows are mapped: on the 16-core device, sixteen decoders applying
/// the map themselves peaked at 93 MiB, and eight ran 20% slower with the
/// map's thread than without (docs/performance.md).
const MAX_WORKERS_APPLYING: usize = 8;

/// Result of streaming `events.bin`.
pub(in crate::archive) struct StreamOutcome {
    pub(in crate::archive) trailer: Option<u64>,
    pub(in crate::archive) after_trailer: u64,
    pub(in crate::archive) torn: Option<crate::archive::format::framing::Torn>,
    /// The length the pass began with and the length `events.bin` was
    /// found at, when another program cut it shorter while it was read.
    pub(in crate::archive) cut_short: Option<(u64, u64)>,
    /// A tail after the trailer that is no whole record (not torn, §10.7).
    pub(in crate::archive) bytes_after_trailer: Option<crate::archive::format::framing::Torn>,
}

/// Streams the `len` bytes of `events.bin` on every core: mapped when the
/// file is on a local disk of Linux and can be mapped (one decoder per
/// core, as none ever waits on a read, but one core fewer where the map's
/// own thread applies the pieces), read in chunks otherwise (one decoder
/// more than cores: one waiting for the cutter's lock leaves its core to
/// the spare, measured 5–7% faster on two cores).
fn stream(
    table: ApiTable,
    file: fs::File,
    len: u64,
    memory: Option<&OrderedMap>,
) -> io::Result<(Tally, StreamOutcome)> {
    let cores = thread::available_parallelism().map_or(1, |n| n.get());
    let start = FILE_HEADER_LEN as u64;
    #[cfg(target_os = "linux")]
    let file = match mapped::worth_mapping(&file) {
        true => {
            let decoders = match memory {
                // One core is left to the map's own thread.
                Some(_) if cores > MAX_WORKERS_APPLYING + 1 => (cores - 1).min(MAX_WORKERS),
                _ => cores.min(MAX_WORKERS),
            };
            match MappedChunks::new(file, start, len, Geometry::for_decoders(decoders)) {
                Ok(mapped) => return decode_all(mapped, table, decoders, memory),
                Err(file) => file,
            }
        }
        false => file,
    };
    let body = len.saturating_sub(start);
    let chunks = EventChunks::new(file, start, body, CHUNK_BYTES);
    decode_all(chunks, table, (cores + 1).min(MAX_WORKERS), memory)
}

/// The cutter shared by the decoders, with the turns of the pieces it has
/// handed out: pieces are settled in the order they were handed out, and
/// the pieces that hold event records are numbered in that order.
struct Shared<C> {
    cutter: C,
    /// Pieces handed out.
    handed: u64,
    /// Pieces settled; the next to settle is the one handed out as this.
    settled: u64,
    /// Settled pieces holding event records (the allocation map's order).
    numbered: u64,
    /// A decoder failed or panicked: the others stop rather than wait for
    /// a piece it held.
    failed: bool,
    /// Decoders waiting for their turn to settle, by turn.
    waiters: Waiters,
}

impl<C> Shared<C> {
    /// Stops every decoder waiting for its turn.
    fn fail(&mut self) {
        self.failed = true;
        self.waiters.wake_all();
    }
}

/// The shared cutter, with the decoders waiting for their turns.
struct Turns<C> {
    shared: Mutex<Shared<C>>,
}

impl<C> Turns<C> {
    fn lock(&self) -> MutexGuard<'_, Shared<C>> {
        self.shared.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Stops every decoder waiting for its turn.
    fn fail(&self) {
        self.lock().fail();
    }
}

/// Runs `workers` decoders over the pieces of `cutter`, each tallying on
/// its own; the tallies are merged at the end. No decoder waits for another
/// except while one takes its piece, waits for the pieces before its own
/// to be settled, or (with few decoders) applies pieces to the allocation
/// map `memory`, in stream order (each piece is numbered as it is
/// settled); with many, a thread of the map's own applies them.
fn decode_all<C: Cutter>(
    cutter: C,
    table: ApiTable,
    workers: usize,
    memory: Option<&OrderedMap>,
) -> io::Result<(Tally, StreamOutcome)> {
    let turns = Turns {
        shared: Mutex::new(Shared {
            cutter,
            handed: 0,
            settled: 0,
            numbered: 0,
            failed: false,
            waiters: Waiters::default(),
        }),
    };
    let tallies: Vec<io::Result<Tally>> = thread::scope(|scope| {
        let applier = memory.filter(|_| workers > MAX_WORKERS_APPLYING).map(|m| {
            m.apply_on_own_thread();
            scope.spawn(|| m.apply_all())
        });
        let helpers: Vec<_> = (1..workers)
            .map(|_| scope.spawn(|| decode_share(&turns, table, memory)))
            .collect();
        let mut tallies = vec![decode_share(&turns, table, memory)];
        for h in helpers {
            tallies.push(
                h.join()
                    .unwrap_or_else(|_| Err(io::Error::other("a decoder thread failed"))),
            );
        }
        if let (Some(m), Some(applier)) = (memory, applier) {
            m.close();
            if applier.join().is_err() {
                tallies.push(Err(io::Error::other("the allocation map's thread failed")));
            }
        }
        tallies
    });
    let mut total = Tally::new(table);
    for t in tallies {
        total.merge(t?);
    }
    let shared = turns.shared.into_inner().unwrap_or_else(|e| e.into_inner());
    let cutter = shared.cutter;
    let f = cutter.framing();
    let outcome = StreamOutcome {
        trailer: f.trailer(),
        after_trailer: f.after_trailer(),
        torn: f.torn(),
        cut_short: cutter.cut_short(),
        bytes_after_trailer: f.bytes_after_trailer(),
    };
    Ok((total, outcome))
}

/// One decoder's share of the stream: pieces taken from the cutter until
/// it is exhausted, each framed without the lock, settled in its turn and
/// tallied into a tally of its own; each piece's allocations and frees go
/// to `memory` under the piece's number before it is tallied, and its
/// launches are audited as they are tallied.
fn decode_share<C: Cutter>(
    turns: &Turns<C>,
    table: ApiTable,
    memory: Option<&OrderedMap>,
) -> io::Result<Tally> {
    let mut tally = Tally::new(table);
    let mut piece = C::Piece::default();
    let mut ops = PieceOps::default();
    let mut prepared = Prepared::default();
    let mut view = View::default();
    let _abandon = AbandonOnPanic(memory, turns);
    loop {
        piece.release();
        // Blocks of their own, so the lock is let go before framing and
        // decoding.
        let turn = {
            let mut s = turns.lock();
            if s.failed {
                return Ok(tally);
            }
            match s.cutter.next(&mut piece) {
                Ok(true) => {}
                Ok(false) => return Ok(tally),
                Err(e) => {
                    s.fail();
                    return Err(e);
                }
            }
            s.handed += 1;
            s.handed - 1
        };
        piece.frame();
        let number = {
            let mut s = turns.lock();
            while s.settled < turn && !s.failed {
                s = Waiters::sleep(s, turn, |s| &mut s.waiters, || turns.lock());
            }
            if s.failed {
                return Ok(tally);
            }
            let settled = s.cutter.settle(&mut piece);
            s.settled += 1;
            if settled.is_err() {
                s.fail();
            } else {
                let next = s.settled;
                s.waiters.wake(next);
            }
            settled?;
            if piece.records().starts.is_empty() {
                continue;
            }
            s.numbered += 1;
            s.numbered - 1
        };
        let Some(map) = memory else {
            tally.records(piece.records(), None);
            continue;
        };
        ops.scan(piece.records(), table, map.launches());
        match map.prepare(number, &mut ops, &mut prepared, &mut view) {
            Turn::Audit => {
                let mut audit = PieceAudit::new(&mut view, number, &prepared, None);
                tally.records(piece.records(), Some(&mut audit));
                let audit = audit.finish();
                // The copy of the map's ranges goes first, so the map
                // changes its nodes in place rather than copy them.
                prepared.clear();
                map.audited(number, audit);
            }
            Turn::Audited => tally.records(piece.records(), None),
            Turn::Abandoned => return Ok(tally),
        }
    }
}

/// Lets the other decoders go on when a decoder panics, so none waits for
/// the piece it held: neither its turn to be settled nor its piece of the
/// allocation map.
struct AbandonOnPanic<'a, C>(Option<&'a OrderedMap>, &'a Turns<C>);

impl<C> Drop for AbandonOnPanic<'_, C> {
    fn drop(&mut self) {
        if thread::panicking() {
            self.1.fail();
            if let Some(map) = self.0 {
                map.abandon();
            }
        }
    }
}

/// What the pass builds beside the summary.
enum Memory {
    /// No allocation map (`archive info --no-memory`).
    Off,
    /// The map, for the `memory` section.
    On,
    /// The map with a query's watch.
    Watching(Box<Watch>),
}

/// Builds the summary of one process archive (a directory holding
/// `events.bin`), its `memory` section included. An undecodable stream
/// (bad magic, short file, unsupported version, unreadable file) is a
/// summary with a fatal problem, not an error (except a mapped file that
/// fails under `hrr` while it is decoded, see `mapped.rs`); `Err` means the
/// path is not a process archive at all.
pub fn summarize(process_dir: &Path) -> anyhow::Result<ArchiveSummary> {
    Ok(summarize_with(process_dir, Memory::On)?.0)
}

/// [`summarize`] without the allocation map: `memory` is null.
pub fn summarize_without_memory(process_dir: &Path) -> anyhow::Result<ArchiveSummary> {
    Ok(summarize_with(process_dir, Memory::Off)?.0)
}

/// [`summarize`] with `watch` filled in as the map is built.
pub fn summarize_watching(
    process_dir: &Path,
    watch: Watch,
) -> anyhow::Result<(ArchiveSummary, Watch)> {
    let (s, w) = summarize_with(process_dir, Memory::Watching(Box::new(watch)))?;
    Ok((s, w.unwrap_or_default()))
}

fn summarize_with(
    process_dir: &Path,
    memory: Memory,
) -> anyhow::Result<(ArchiveSummary, Option<Watch>)> {
    let dir = dunce::canonicalize(process_dir)
        .with_context(|| format!("cannot open archive {}", process_dir.display()))?;
    let events_path = dir.join("events.bin");
    let meta = match fs::metadata(&events_path) {
        Ok(m) => m,
        Err(e) if e.kind() == io::ErrorKind::NotFound => bail!(
            "{} has no events.bin: the process created its directory but recorded nothing (point hrr at a pid-* directory that holds events.bin, or at the capture root)",
            dir.display()
        ),
        Err(e) => bail!("cannot read {}: {e}", events_path.display()),
    };
    if !meta.is_file() {
        bail!("{} is not a regular file", events_path.display());
    }
    let manifest_state = manifest::read(&dir);
    let mut s = empty_summary(&dir, &manifest_state);
    s.events_modified = crate::archive::modified::events_modified(&meta);

    let mut file = match fs::File::open(&events_path) {
        Ok(f) => f,
        Err(e) => {
            s.problems.push(Problem::new(
                "unreadable",
                format!("cannot open {}: {e}", events_path.display()),
            ));
            return Ok((s, None));
        }
    };
    let mut head = [0u8; FILE_HEADER_LEN];
    let got = read_up_to(&mut file, &mut head);
    let header = match got.map(|n| FileHeader::parse(&head[..n])) {
        Err(e) => {
            s.problems.push(Problem::new(
                "unreadable",
                format!("cannot read events.bin: {e}"),
            ));
            return Ok((s, None));
        }
        Ok(None) => {
            s.problems.push(Problem::new(
                "short_file",
                format!(
                    "events.bin is {} bytes, shorter than its 8-byte header: nothing was recorded or the file was cut; re-capture",
                    meta.len()
                ),
            ));
            return Ok((s, None));
        }
        Ok(Some(h)) => h,
    };
    if header.magic != EVENTS_MAGIC {
        s.problems.push(Problem::new(
            "bad_magic",
            format!(
                "events.bin starts with {:02x} {:02x} {:02x} {:02x}, not the HRR magic \"EHRR\": not an HRR event stream",
                header.magic[0], header.magic[1], header.magic[2], header.magic[3]
            ),
        ));
        return Ok((s, None));
    }
    s.format_version = Some(header.version);
    s.flags = Some(header.flags);
    let Some(table) = ApiTable::for_version(header.version) else {
        s.problems.push(Problem::new(
            "unsupported_version",
            format!(
                "events.bin is format version {}; hrr decodes formats 6, 7 and 8 only and does not guess at other layouts. Re-capture with a current runtime, or inspect it with the hrr-playback built for format {} (hrr-playback --info)",
                header.version, header.version
            ),
        ));
        return Ok((s, None));
    };
    s.api_table = Some(table.label().to_string());
    if table == ApiTable::V8AssumedV7 {
        s.notes.push(
            "format 8: API names are read with the v7 table because upstream has not published a v8 table; launch payloads are decoded with their v8 snapshot records".into(),
        );
    }

    let (watch, memory) = match memory {
        Memory::Off => (None, None),
        Memory::On => (None, Some(new_map(&dir))),
        Memory::Watching(w) => (Some(*w), Some(new_map(&dir))),
    };
    let ordered = memory.map(|m| OrderedMap::new(m, watch));
    let (tally, outcome) = match stream(table, file, meta.len(), ordered.as_ref()) {
        Ok(r) => r,
        Err(e) => {
            s.problems.push(Problem::new(
                "unreadable",
                format!("read error in events.bin: {e}"),
            ));
            return Ok((s, None));
        }
    };
    fill_from_stream(&mut s, &tally, &outcome);
    fill_files(&mut s, &dir, &tally);
    health(&mut s, &manifest_state, &tally, &outcome);
    let watch = ordered.map(|o| {
        let (map, watch) = o.finish();
        let (section, notes) = MemorySection::of(&map.totals, map.live_count());
        s.memory = Some(section);
        s.notes.extend(notes);
        watch
    });
    Ok((s, watch.flatten()))
}

/// An empty allocation map holding the region records of `dir`.
fn new_map(dir: &Path) -> AllocationMap {
    let (records, capped) = regions::read_records(dir, MAX_REGION_RECORDS);
    AllocationMap::new(records, capped)
}

fn read_up_to(file: &mut fs::File, buf: &mut [u8]) -> io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match file.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

fn pid_from_dir(dir: &Path) -> Option<u64> {
    dir.file_name()?
        .to_str()?
        .strip_prefix("pid-")?
        .parse()
        .ok()
}

fn empty_summary(dir: &Path, manifest_state: &ManifestState) -> ArchiveSummary {
    ArchiveSummary {
        schema_version: SCHEMA_VERSION,
        kind: ArchiveKind::Process,
        path: dir.display().to_string(),
        pid: manifest_state.int("pid").or_else(|| pid_from_dir(dir)),
        format_version: None,
        flags: None,
        api_table: None,
        state: manifest_state.process_state(),
        complete: false,
        trailer: TrailerInfo {
            present: false,
            total_events: None,
        },
        truncated: false,
        torn_bytes: 0,
        records_after_trailer: 0,
        events: 0,
        kernel_launches: 0,
        threads: 0,
        duration_ns: 0,
        events_modified: None,
        apis: Vec::new(),
        kernels: Vec::new(),
        blobs: FileRefs::default(),
        code_objects: FileRefs::default(),
        d2h_checks: 0,
        regions: RegionSummary::default(),
        memory: None,
        manifest: manifest_state.value().cloned(),
        capture: manifest_state.capture_metadata().ok(),
        problems: Vec::new(),
        notes: Vec::new(),
    }
}

fn fill_from_stream(s: &mut ArchiveSummary, t: &Tally, o: &StreamOutcome) {
    s.events = t.events;
    s.trailer = TrailerInfo {
        present: o.trailer.is_some(),
        total_events: o.trailer,
    };
    s.complete = o.trailer == Some(t.events);
    s.truncated = o.torn.is_some();
    s.torn_bytes = o.torn.map_or(0, |x| x.bytes);
    s.records_after_trailer = o.after_trailer;
    s.kernel_launches = t.kernel_launches;
    s.threads = t.threads.len() as u64;
    s.duration_ns = if t.events > 0 {
        t.last_ts.saturating_sub(t.first_ts)
    } else {
        0
    };
    s.d2h_checks = t.d2h_checks;
    s.apis = t
        .api_counts
        .iter()
        .enumerate()
        .filter(|(_, &c)| c > 0)
        .map(|(id, &count)| {
            let id = id as u16;
            ApiCount {
                id,
                name: t.table.display_name(id).into_owned(),
                count,
            }
        })
        .collect();
    let mut kernels: Vec<KernelSummary> = t
        .kernels
        .iter()
        .map(|k| KernelSummary {
            name: String::from_utf8_lossy(&k.name).into_owned(),
            launches: k.launches,
            code_object: k.code_object.nonzero().map(|h| h.to_string()),
        })
        .collect();
    kernels.sort_by(|a, b| {
        b.launches
            .cmp(&a.launches)
            .then_with(|| a.name.cmp(&b.name))
    });
    s.kernels = kernels;
}

fn fill_files(s: &mut ArchiveSummary, dir: &Path, t: &Tally) {
    let index = match FileIndex::scan(dir) {
        Ok(i) => i,
        Err(why) => {
            s.problems.push(Problem::new("unreadable_files", why));
            FileIndex::default()
        }
    };
    let blob_present = |h: &BlobHash| index.blobs.binary_search(h).is_ok();
    let co_present = |h: &BlobHash| index.code_objects.binary_search(h).is_ok() || blob_present(h);
    let missing = |refs: &FxHashSet<BlobHash>, present: &dyn Fn(&BlobHash) -> bool| {
        let mut m: Vec<BlobHash> = refs.iter().filter(|h| !present(h)).copied().collect();
        m.sort_unstable();
        m.into_iter().map(|h| h.to_string()).collect::<Vec<_>>()
    };
    s.blobs = FileRefs {
        files: index.blob_files,
        referenced: t.blob_refs.len() as u64,
        missing: missing(&t.blob_refs, &blob_present),
    };
    s.code_objects = FileRefs {
        files: index.code_object_files,
        referenced: t.co_refs.len() as u64,
        missing: missing(&t.co_refs, &co_present),
    };
    let r = regions::scan(dir);
    s.regions = RegionSummary {
        streams: r.streams,
        records: r.records,
    };
    for p in r.problems {
        s.problems.push(Problem::new("damaged_region_stream", p));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The summary fields the stream decides, from `cutter`.
    fn streamed<C: Cutter>(dir: &Path, cutter: C, workers: usize) -> serde_json::Value {
        let map = OrderedMap::new(AllocationMap::new(Vec::new(), false), None);
        let (tally, outcome) = decode_all(cutter, ApiTable::V7, workers, Some(&map)).unwrap();
        let mut s = empty_summary(dir, &manifest::read(dir));
        fill_from_stream(&mut s, &tally, &outcome);
        let map = map.finish().0;
        s.memory = Some(MemorySection::of(&map.totals, map.live_count()).0);
        let refs = |set: &FxHashSet<BlobHash>| {
            let mut v: Vec<String> = set.iter().map(|h| h.to_string()).collect();
            v.sort();
            v
        };
        serde_json::json!({
            "summary": serde_json::to_value(&s).unwrap(),
            "blob_refs": refs(&tally.blob_refs),
            "co_refs": refs(&tally.co_refs),
        })
    }

    /// Mapped windows and read chunks, at any number of decoders, give the
    /// same summary of a realistic archive, whole and cut at odd offsets
    /// (torn tails; the cut-off trailer).
    #[test]
    fn mapped_and_read_streams_summarize_alike() {
        let tmp = tempfile::tempdir().unwrap();
        let stats = hrr_testkit::synth::write_big(tmp.path(), 1, 3 << 20).unwrap();
        let dir = tmp.path().join("pid-1");
        let events = dir.join("events.bin");
        let whole = fs::read(&events).unwrap();
        for cut in [whole.len(), whole.len() - 20, 2_000_003, 65_536 + 9, 100] {
            fs::write(&events, &whole[..cut]).unwrap();
            let len = cut as u64;
            let open = || fs::File::open(&events).unwrap();
            let read = |chunk| {
                // The reading cutter starts where the file header ends.
                let mut f = open();
                io::Seek::seek(&mut f, io::SeekFrom::Start(8)).unwrap();
                EventChunks::new(f, 8, len - 8, chunk)
            };
            let expect = streamed(&dir, read(CHUNK_BYTES), 1);
            if cut == whole.len() {
                assert_eq!(expect["summary"]["events"], stats.events);
                assert_eq!(expect["summary"]["complete"], true);
            }
            for workers in [1, 3] {
                // Mapping is Linux-only.
                #[cfg(target_os = "linux")]
                for g in [Geometry { part: 64 << 10 }, Geometry::DEFAULT] {
                    let mapped = MappedChunks::new(open(), 8, len, g).ok().unwrap();
                    let what = format!("cut at {cut}, {workers} decoders, {g:?}");
                    assert_eq!(streamed(&dir, mapped, workers), expect, "{what}");
                }
                let what = format!("cut at {cut}, {workers} decoders, 1000-byte chunks");
                assert_eq!(streamed(&dir, read(1000), workers), expect, "{what}");
            }
        }
    }

    /// A record of `len` bytes (a header at least) of type `event_type`,
    /// its payload from `fill`.
    #[cfg(target_os = "linux")]
    fn record(
        event_type: u16,
        seq: u64,
        tid: u64,
        len: u32,
        fill: &mut dyn FnMut() -> u8,
    ) -> Vec<u8> {
        let mut r: Vec<u8> = (0..len).map(|_| fill()).collect();
        r[0..2].copy_from_slice(&event_type.to_le_bytes());
        r[2..10].copy_from_slice(&seq.to_le_bytes());
        r[10..18].copy_from_slice(&(1_000 + seq * 10).to_le_bytes());
        r[18..26].copy_from_slice(&tid.to_le_bytes());
        r[26..30].copy_from_slice(&len.to_le_bytes());
        r[30..32].fill(0);
        r
    }

    /// The summary fields the stream decides for the `events.bin` at
    /// `events`, as the serial walk reads it (one decoder, read in chunks)
    /// and as mapped windows framed in parallel give them, at `part` and
    /// at several numbers of decoders.
    #[cfg(target_os = "linux")]
    fn parallel_against_serial(events: &Path, part: u64) -> Result<(), String> {
        let dir = events.parent().unwrap();
        let len = fs::metadata(events).unwrap().len();
        let mut f = fs::File::open(events).unwrap();
        io::Seek::seek(&mut f, io::SeekFrom::Start(8)).unwrap();
        let serial = streamed(dir, EventChunks::new(f, 8, len - 8, CHUNK_BYTES), 1);
        for workers in [1, 4, 7] {
            let open = fs::File::open(events).unwrap();
            let mapped = MappedChunks::new(open, 8, len, Geometry { part })
                .ok()
                .unwrap();
            let parallel = streamed(dir, mapped, workers);
            if parallel != serial {
                return Err(format!(
                    "{workers} decoders, part {part}:\nparallel {parallel}\nserial {serial}"
                ));
            }
        }
        Ok(())
    }

    #[cfg(target_os = "linux")]
    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]

        /// Hostile streams framed in parallel summarize as the serial walk
        /// reads them: records of many threads with interleaved sequence
        /// ids, of unknown types and region batches; payloads that are
        /// chains of plausible fake headers (a boundary finder's trap);
        /// trailers inside, with records after them; and every torn tail
        /// of §9, a claim exactly at the record cap and garbage included.
        #[test]
        fn parallel_framing_summarizes_as_the_serial_walk(
            records in proptest::collection::vec((0u8..6, 32u32..2500, 0u64..4), 1..300),
            tail in 0u8..8,
            part_pages in 1u64..9,
            seed in 1u64..u64::MAX,
        ) {
            use crate::archive::format::framing::{MAX_RECORD_BYTES, TRAILER_MAGIC, TRAILER_TYPE};
            use crate::archive::format::regions::REGION_EVENT;
            let mut next = crate::archive::summary::chunks::testing::xorshift(seed);
            let mut s = b"EHRR\x07\0\0\0".to_vec();
            let mut seq = 0u64;
            for &(kind, len, tid) in &records {
                seq += 1 + next() % 3;
                let mut random = || next() as u8;
                let r = match kind {
                    0 => record(215, seq, tid, len, &mut random),
                    1 => {
                        // The payload: fake headers of type 215, 48 bytes
                        // apart, with the sequence ids of their neighbours.
                        let mut r = record(215, seq, tid, len.max(64), &mut || 0);
                        let mut at = 32 + (len as usize % 16);
                        while at + 48 <= r.len() {
                            let fake = record(215, seq + 1, tid, 48, &mut || 0);
                            r[at..at + 32].copy_from_slice(&fake[..32]);
                            at += 48;
                        }
                        r
                    }
                    2 => record(9_999, seq, tid, len, &mut random),
                    3 => record(REGION_EVENT, seq, tid, len, &mut random),
                    4 => {
                        let mut t = record(TRAILER_TYPE, seq, tid, 44, &mut || 0);
                        t[32..40].copy_from_slice(&seq.to_le_bytes());
                        t[40..44].copy_from_slice(&TRAILER_MAGIC);
                        t
                    }
                    _ => record(308, seq, tid, len, &mut random),
                };
                s.extend(r);
            }
            let mut random = || next() as u8;
            match tail {
                0 => {}
                1 => s.extend([7, 0, 1]),
                2 => s.extend(&record(215, seq + 1, 0, 900, &mut random)[..500]),
                3 => {
                    let mut r = record(215, seq + 1, 0, 64, &mut random);
                    r[26..30].copy_from_slice(&12u32.to_le_bytes());
                    s.extend(r);
                }
                4 => {
                    let mut r = record(215, seq + 1, 0, 64, &mut random);
                    r[26..30].copy_from_slice(&(MAX_RECORD_BYTES + 1).to_le_bytes());
                    s.extend(r);
                }
                5 => {
                    // Exactly the cap, announced by a body far shorter.
                    let mut r = record(215, seq + 1, 0, 4096, &mut random);
                    r[26..30].copy_from_slice(&MAX_RECORD_BYTES.to_le_bytes());
                    s.extend(r);
                }
                6 => s.extend((0..3000).map(|_| random())),
                _ => {
                    let mut t = record(TRAILER_TYPE, seq + 1, 0, 44, &mut || 0);
                    t[32..40].copy_from_slice(&seq.to_le_bytes());
                    t[40..44].copy_from_slice(&TRAILER_MAGIC);
                    s.extend(t);
                    s.extend((0..100).map(|_| random()));
                }
            }
            let tmp = tempfile::tempdir().unwrap();
            let events = tmp.path().join("events.bin");
            fs::write(&events, &s).unwrap();
            let checked = parallel_against_serial(&events, part_pages * 4096);
            proptest::prop_assert!(checked.is_ok(), "{}", checked.unwrap_err());
        }
    }

    /// Records at the record cap, whole and over the windows around them,
    /// framed in parallel, summarize as the serial walk reads them.
    #[cfg(target_os = "linux")]
    #[test]
    fn records_at_the_cap_are_framed_in_parallel_as_serially() {
        use crate::archive::format::framing::MAX_RECORD_BYTES;
        let mut s = b"EHRR\x07\0\0\0".to_vec();
        let mut seq = 0;
        for big in [false, true, false, false, true] {
            for _ in 0..300 {
                seq += 1;
                s.extend(record(215, seq, 1, 40 + (seq % 97) as u32, &mut || 0x5A));
            }
            if big {
                seq += 1;
                s.extend(record(308, seq, 2, MAX_RECORD_BYTES, &mut || 0));
            }
        }
        let tmp = tempfile::tempdir().unwrap();
        let events = tmp.path().join("events.bin");
        fs::write(&events, &s).unwrap();
        for part in [64 << 10, Geometry::DEFAULT.part] {
            parallel_against_serial(&events, part).unwrap();
        }
    }

    /// The memory section the allocation map gives from `cutter`.
    fn memory_of<C: Cutter>(cutter: C, workers: usize) -> MemorySection {
        let map = OrderedMap::new(AllocationMap::new(Vec::new(), false), None);
        decode_all(cutter, ApiTable::V7, workers, Some(&map)).unwrap();
        let (m, _) = map.finish();
        MemorySection::of(&m.totals, m.live_count()).0
    }

    /// The map depends on event order: pieces finished out of order by
    /// several decoders are applied in stream order, so mapped windows and
    /// read chunks of any size, at any number of decoders, give the map a
    /// single decoder reading the file in order gives.
    #[test]
    fn the_allocation_map_is_the_same_at_any_number_of_decoders() {
        let tmp = tempfile::tempdir().unwrap();
        let stats = hrr_testkit::synth::write_big(tmp.path(), 1, 3 << 20).unwrap();
        let events = tmp.path().join("pid-1/events.bin");
        let len = fs::metadata(&events).unwrap().len();
        let read = |chunk| {
            let mut f = fs::File::open(&events).unwrap();
            io::Seek::seek(&mut f, io::SeekFrom::Start(8)).unwrap();
            EventChunks::new(f, 8, len - 8, chunk)
        };
        let expect = memory_of(read(CHUNK_BYTES), 1);
        assert_eq!(expect.allocations, 1024 + stats.allocations);
        assert_eq!(expect.frees, stats.frees);
        assert!(expect.stale_pointer_launches > 0, "{expect:?}");
        assert!(expect.unattributed_pointer_args > 0, "{expect:?}");
        // Past eight, the map's own thread applies the pieces.
        for workers in [2, 4, 12] {
            assert_eq!(memory_of(read(1000), workers), expect, "{workers} decoders");
            #[cfg(target_os = "linux")]
            {
                let g = Geometry { part: 64 << 10 };
                let open = fs::File::open(&events).unwrap();
                let mapped = MappedChunks::new(open, 8, len, g).ok().unwrap();
                assert_eq!(memory_of(mapped, workers), expect, "{workers} mapped");
            }
        }
    }

    /// The memory section and what a watch saw, the map built from
    /// `cutter` by `workers` decoders.
    fn watched_memory_of<C: Cutter>(cutter: C, workers: usize, watch: Watch) -> String {
        let map = OrderedMap::new(AllocationMap::new(Vec::new(), false), Some(watch));
        decode_all(cutter, ApiTable::V7, workers, Some(&map)).unwrap();
        let (m, w) = map.finish();
        let section = MemorySection::of(&m.totals, m.live_count()).0;
        format!("{section:?}\n{w:?}")
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(48))]

        /// Allocations, frees (matched or not, reusing addresses) and
        /// launches passing pointers into live, freed and no ranges (small
        /// buffers and segments of whole granules, and null), cut
        /// into small pieces (read chunks, and mapped windows framed in
        /// parallel) that six decoders (twelve for the windows, past the
        /// eight that apply the map themselves) finish out of order: the
        /// map, its audit and a watched address come out as one decoder
        /// reading in order makes them.
        #[test]
        fn the_map_from_many_decoders_is_the_map_from_one(
            ops in proptest::collection::vec((0u8..4, 0u64..48, 0u64..16), 1..500),
            chunk in 150usize..3000,
        ) {
            use hrr_testkit::events::{api, Arg, EventsFile, Launch};
            let base = |slot: u64| 0x7f00_0000_0000 + slot * 0x1_0000;
            // Segments of two whole granules, as behind a caching allocator.
            let segment = |slot: u64| 0x7f10_0000_0000 + slot * 0x40_0000;
            let mut ev = EventsFile::v7();
            for &(kind, slot, x) in &ops {
                match kind {
                    0 if x % 5 == 0 => {
                        ev.malloc(segment(slot), 0x40_0000);
                    }
                    0 => {
                        ev.malloc(base(slot), 0x100 << (x % 9));
                    }
                    1 if x % 5 == 0 => {
                        ev.free(segment(slot));
                    }
                    1 => {
                        ev.free(base(slot));
                    }
                    _ => {
                        let mut l = Launch::new(&format!("k{}", x % 3), [1, 1, 1], [64, 1, 1]);
                        let other = base((slot + x) % 48) + x * 0x40;
                        let first = match x % 3 {
                            0 => segment(slot) + x * 0x3_0000,
                            _ => base(slot) + x * 0x10,
                        };
                        l.args = vec![
                            Arg::Pointer(first),
                            Arg::Value(7u32.to_le_bytes().to_vec()),
                            Arg::Embedded([other, 0].iter().flat_map(|w| w.to_le_bytes()).collect(), vec![0, 8]),
                        ];
                        ev.launch(api::HIP_MODULE_LAUNCH_KERNEL, &l);
                    }
                }
            }
            ev.trailer();
            let tmp = tempfile::tempdir().unwrap();
            let events = tmp.path().join("events.bin");
            fs::write(&events, ev.bytes()).unwrap();
            let len = ev.bytes().len() as u64;
            let read = |chunk| {
                let mut f = fs::File::open(&events).unwrap();
                io::Seek::seek(&mut f, io::SeekFrom::Start(8)).unwrap();
                EventChunks::new(f, 8, len - 8, chunk)
            };
            let watch = || Watch {
                at: Some(ops.len() as u64 / 2),
                address: Some(base(3) + 0x10),
                kernel: Some(b"k1".to_vec()),
                ..Watch::default()
            };
            let serial = watched_memory_of(read(CHUNK_BYTES), 1, watch());
            proptest::prop_assert_eq!(watched_memory_of(read(chunk), 6, watch()), serial.clone());
            // Unwatched, the audit answers from its pointer cache first.
            let unwatched = format!("{:?}", memory_of(read(chunk), 6));
            proptest::prop_assert_eq!(serial.lines().next(), Some(unwatched.as_str()));
            // Mapped windows, framed in parallel, feed the map in order too.
            #[cfg(target_os = "linux")]
            {
                let open = fs::File::open(&events).unwrap();
                let part = 4096 * (1 + chunk as u64 % 4);
                let mapped = MappedChunks::new(open, 8, len, Geometry { part }).ok().unwrap();
                // Twelve decoders: the map's own thread applies the pieces.
                proptest::prop_assert_eq!(watched_memory_of(mapped, 12, watch()), serial);
            }
        }
    }
}
