//! `events.bin` cut into mapped windows of whole event records: the fast
//! path of `archive info` (DESIGN §11).
//!
//! Reading a chunk copies it out of the page cache, and that copy alone is
//! what `cat` costs. A mapped window is decoded in place, so no copy is
//! paid (what that saves is in docs/performance.md). Windows start on a
//! 2 MiB file offset, so the kernel can map a large page-cache folio with
//! one entry, and each is unmapped once decoded: the resident set stays a
//! few parts per decoder whatever the file size.
//!
//! Windows are framed in parallel: each decoder finds a record boundary in
//! its own window (`boundary.rs`) and walks the length chain from it, with
//! no lock held. The cutter then settles the windows in file order
//! ([`Cutter::settle`]): a window's walk is taken when the serial walk,
//! arriving from the window before, lands on one of its record starts, and
//! the window is walked serially otherwise, with the reading cutter's
//! [`Framing`]. So torn tails, trailers and records after the trailer are
//! settled by the one serial framing, and the records are exactly the
//! serial walk's, whatever the boundaries found.
//!
//! A window maps its part of the file and a little beyond it, where the
//! last records starting in the part end; a window holding a record that
//! runs further is mapped again up to the record cap, so every record that
//! starts in the part lies wholly inside it. Only the pages the walk and
//! the decoder touch are read, but the kernel maps the large folios they
//! lie in whole, up to the end of the mapping ([`OVERHANG`]).
//!
//! Only files on local disk file systems of Linux are mapped
//! ([`worth_mapping`]): where a page cannot be read (a network or FUSE file
//! system failing), a mapped reader is killed by a signal where a reading
//! one gets an error it can report. A file cut shorter by another program
//! while it is mapped is survived (`page_guard.rs`): the pass ends and
//! [`Cutter::cut_short`] reports the length found.

use std::fs::File;
use std::io;
use std::ops::Deref;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use memmap2::{Mmap, MmapOptions};

use crate::archive::format::framing::{EVENT_HEADER_LEN, MAX_RECORD_BYTES};
use crate::archive::summary::boundary;
use crate::archive::summary::chunks::{Cutter, Framing, Piece, RecordStarts, Records};
use crate::archive::summary::page_guard::{self, Registration};

/// Where windows start and how much each maps.
#[derive(Debug, Clone, Copy)]
pub(in crate::archive) struct Geometry {
    /// Bytes of the file per window: a window holds the records that start
    /// in its part, which starts on a multiple of it (a multiple of the
    /// page size, of the 2 MiB large folio in production, and of the
    /// 64 KiB mapping granularity of Windows).
    pub(in crate::archive) part: u64,
}

/// The 2 MiB large folio the production parts are made of.
const FOLIO: u64 = 2 << 20;
/// Bytes a window maps past its part, for the records that start in the
/// part and end past it. Not the record cap: the kernel maps a large folio
/// of the page cache whole where a fault lands in it, up to the end of the
/// mapping, so a window mapped up to the cap past its part held the next
/// folios too (up to 5 MiB a window, 90–100 MiB of resident pages with
/// sixteen decoders; docs/performance.md). A record running past this is
/// rare, and its window is mapped again up to the cap.
const OVERHANG: u64 = 64 << 10;
/// The pages all decoders' parts may touch at once (the resident set the
/// windows add), which makes parts smaller when there are many decoders.
const PARTS_IN_ALL: u64 = 32 << 20;

impl Geometry {
    /// The production geometry: parts of two 2 MiB large folios.
    pub(in crate::archive) const DEFAULT: Geometry = Geometry { part: 2 * FOLIO };

    /// The production geometry for `decoders` decoders: [`DEFAULT`](Self::DEFAULT)
    /// up to eight, one folio per part beyond, so the parts all decoders
    /// hold stay within 32 MiB.
    pub(in crate::archive) fn for_decoders(decoders: usize) -> Geometry {
        let share = PARTS_IN_ALL / decoders.max(1) as u64;
        Geometry {
            part: (share - share % FOLIO).clamp(FOLIO, Self::DEFAULT.part),
        }
    }
}

/// A mapped range of the file, registered with the page guard while it is
/// mapped. The registration is declared first so it lets go of the address
/// range before the map is unmapped (nothing reads the map by then): a
/// slot of the guard never names memory that another mapping, of another
/// pass or of anything else, could take meanwhile.
struct GuardedMap {
    _registration: Registration,
    map: Mmap,
}

impl Deref for GuardedMap {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        &self.map
    }
}

/// One decoder's mapped window and where its event records start.
#[derive(Default)]
pub(in crate::archive) struct Window {
    map: Option<GuardedMap>,
    offset: u64,
    starts: RecordStarts,
    /// Where, in the map, the first record of the file may start (past
    /// the file header in the first window, else 0).
    first: usize,
    /// The window's part of the file ends here, in the map: it holds the
    /// records that start before it.
    limit: usize,
    /// Where the speculative walk ([`Piece::frame`]) ended, in the map,
    /// when it got through the window's part; its starts are in `starts`.
    walked: Option<usize>,
}

impl Piece for Window {
    fn records(&self) -> Records<'_> {
        let buf = self.map.as_deref().unwrap_or_default();
        self.starts.records(buf, self.offset)
    }

    fn release(&mut self) {
        self.map = None;
    }

    fn frame(&mut self) {
        self.starts.clear();
        self.walked = None;
        let Some(map) = self.map.as_deref() else {
            return;
        };
        if let Some(at) = boundary::find(map, self.first, self.limit) {
            self.walked = boundary::walk(map, at, self.limit, &mut self.starts);
        }
    }
}

/// Cuts `events.bin` into mapped [`Window`]s: the window of part N maps
/// the file from `N × part` on, [`OVERHANG`] past the part, or up to the
/// record cap past it where a record starting in the part runs further.
pub(in crate::archive) struct MappedChunks {
    file: File,
    geometry: Geometry,
    /// File length when the pass began; nothing past it is read.
    len: u64,
    /// File offset of the first record (after the file header).
    start: u64,
    /// File offset of the next part to hand out.
    next_part: u64,
    /// File offset the serial walk has reached: the next record of the
    /// stream, once every part handed out has been settled.
    pos: u64,
    framing: Framing,
    /// Raised when the file turned out shorter than `len` while it was
    /// read: found before mapping a window, or by a page of a window
    /// replaced after a SIGBUS.
    cut: Arc<AtomicBool>,
}

impl MappedChunks {
    /// A cutter over the first `len` bytes of `file`, whose records start
    /// at `start` (after the file header). Gives the file back, for the
    /// reading cutter, when it cannot be mapped.
    pub(in crate::archive) fn new(
        file: File,
        start: u64,
        len: u64,
        geometry: Geometry,
    ) -> Result<MappedChunks, File> {
        debug_assert!(geometry.part >= EVENT_HEADER_LEN as u64);
        let cutter = MappedChunks {
            file,
            geometry,
            len,
            start,
            next_part: 0,
            pos: start.min(len),
            framing: Framing::new(len.saturating_sub(start)),
            cut: Arc::new(AtomicBool::new(false)),
        };
        if len > start && cutter.map(0, len.min(geometry.part)).is_err() {
            return Err(cutter.file);
        }
        Ok(cutter)
    }

    /// Maps `[from, to)` of the file, after checking the file still holds
    /// it: `None`, with the cut noted, when it was already cut shorter
    /// (copied over in place, say), rather than a fault on a page past its
    /// new end.
    fn map(&self, from: u64, to: u64) -> io::Result<Option<GuardedMap>> {
        if self.file.metadata()?.len() < to {
            self.cut.store(true, Ordering::Release);
            return Ok(None);
        }
        let len = usize::try_from(to - from)
            .map_err(|_| io::Error::other("window larger than the address space"))?;
        // SAFETY: the map is read-only and `hrr` never writes the archive;
        // the file held the whole window a moment ago, and only files on
        // local disk file systems are mapped. Two hazards remain, both
        // outside `hrr`: a page that cannot be read (the file cut shorter
        // by another program while the window is decoded) faults with
        // SIGBUS, which the page guard registered below turns into a page
        // of zeros and a cut noted; and bytes rewritten in place by another
        // program change under the slice, which only changes what is
        // decoded, since every length read from it is bounds-checked.
        // Capture writers only ever append.
        let map = unsafe { MmapOptions::new().offset(from).len(len).map(&self.file) }?;
        let registration = page_guard::register(map.as_ptr(), map.len(), &self.cut)?;
        Ok(Some(GuardedMap {
            map,
            _registration: registration,
        }))
    }

    /// Where the window of the part at `from` ends when it maps `over`
    /// bytes past the part (never past the file).
    fn window_end(&self, from: u64, over: u64) -> u64 {
        self.len
            .min(from.saturating_add(self.geometry.part.saturating_add(over)))
    }

    /// Walks the records of window `w` that start in its part, serially,
    /// from `at` in its map, noting their starts after those noted.
    fn walk_serially(&mut self, w: &mut Window, at: usize) {
        let map = w.map.as_deref().unwrap_or_default();
        let noted = w.starts.at().len();
        self.framing.unread = self.len - (w.offset + map.len() as u64);
        let walked = self
            .framing
            .walk(&map[at..], self.pos, &mut w.starts, w.limit - at);
        // Starts are noted relative to the walk; the map begins `at` bytes
        // earlier (less than the part, so no overflow).
        w.starts.shift(noted, at as u32);
        self.pos += walked as u64;
        self.framing.unread = self.len - self.pos;
    }
}

/// Whether `file` is on a local disk file system (Linux ext2/3/4, XFS,
/// Btrfs, tmpfs, overlayfs), the only files `archive info` maps. Elsewhere
/// (network and FUSE file systems) a failed page read would kill `hrr`
/// rather than be reported, so those are read.
pub(in crate::archive) fn worth_mapping(file: &File) -> bool {
    // The `f_type` magics of linux/magic.h, written out because not every
    // C library (musl) exports all of them.
    const LOCAL: [u64; 5] = [
        0xEF53,      // ext2/3/4
        0x5846_5342, // XFS
        0x9123_683E, // Btrfs
        0x0102_1994, // tmpfs
        0x794C_7630, // overlayfs
    ];
    nix::sys::statfs::fstatfs(file).is_ok_and(|s| LOCAL.contains(&(s.filesystem_type().0 as u64)))
}

impl Cutter for MappedChunks {
    type Piece = Window;

    fn next(&mut self, w: &mut Window) -> io::Result<bool> {
        w.starts.clear();
        w.walked = None;
        let part = self.geometry.part;
        // Parts wholly inside a record already walked hold no start.
        if self.pos > self.next_part {
            self.next_part = self.pos - self.pos % part;
        }
        let from = self.next_part;
        if self.framing.stopped() || from >= self.len || self.pos >= self.len {
            return Ok(false);
        }
        // Most records starting in the part end within a little past it;
        // `settle` maps the window again for one that does not.
        let to = self.window_end(from, OVERHANG);
        let Some(map) = self.map(from, to)? else {
            return Ok(false);
        };
        w.map = Some(map);
        w.offset = from;
        // Both below `part + MAX_RECORD_BYTES`, so they fit in a usize.
        w.first = self.start.saturating_sub(from) as usize;
        w.limit = part.min(self.len - from) as usize;
        self.next_part = from + part;
        Ok(true)
    }

    /// Takes the window's speculative walk when the serial walk arrives at
    /// one of its record starts (from there both walks are the same walk),
    /// and walks the window's part serially otherwise: at a trailer, a
    /// torn tail, a record over the part, or a wrong boundary.
    fn settle(&mut self, w: &mut Window) -> io::Result<()> {
        // The serial walk is in this part: past its start (the part before
        // ended at or after it, unless the file was cut while a window was
        // mapped again), before its limit.
        let part = w.offset..w.offset + w.limit as u64;
        if w.map.is_none() || self.framing.stopped() || !part.contains(&self.pos) {
            w.starts.clear();
            return Ok(());
        }
        let at = (self.pos - w.offset) as usize;
        if let (Some(end), None) = (w.walked, self.framing.trailer()) {
            if let Ok(i) = w.starts.at().binary_search(&(at as u32)) {
                w.starts.drop_before(i);
                self.pos = w.offset + end as u64;
                self.framing.unread = self.len - self.pos;
                return Ok(());
            }
        }
        w.starts.clear();
        self.walk_serially(w, at);
        // The walk stopped at a record running past the window, which maps
        // only a little past its part: map it far enough to hold any
        // record, and walk on.
        let end = w.offset + w.map.as_deref().map_or(0, <[u8]>::len) as u64;
        let full = self.window_end(w.offset, u64::from(MAX_RECORD_BYTES));
        if self.pos < part.end && !self.framing.stopped() && end < full {
            let Some(map) = self.map(w.offset, full)? else {
                w.starts.clear();
                return Ok(());
            };
            w.map = Some(map);
            self.walk_serially(w, (self.pos - w.offset) as usize);
        }
        Ok(())
    }

    fn framing(&self) -> &Framing {
        &self.framing
    }

    fn cut_short(&self) -> Option<(u64, u64)> {
        if !self.cut.load(Ordering::Acquire) {
            return None;
        }
        let now = self.file.metadata().map_or(0, |m| m.len());
        Some((self.len, now.min(self.len)))
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::*;
    use crate::archive::format::framing::{TRAILER_MAGIC, TRAILER_TYPE};
    use crate::archive::summary::chunks::testing::{by_cutter, by_record_reader, xorshift, View};
    use crate::archive::summary::chunks::EventChunks;

    /// A 64 KiB-aligned geometry (the mapping granularity of Windows), so a
    /// stream of a few hundred KiB spans many windows.
    const SMALL: Geometry = Geometry { part: 64 << 10 };

    fn record(len: usize, event_type: u16) -> Vec<u8> {
        let mut r = vec![0xA5; len];
        r[0..2].copy_from_slice(&event_type.to_le_bytes());
        r[26..30].copy_from_slice(&(len as u32).to_le_bytes());
        r
    }

    fn trailer(count: u64) -> Vec<u8> {
        let mut t = record(44, TRAILER_TYPE);
        t[32..40].copy_from_slice(&count.to_le_bytes());
        t[40..44].copy_from_slice(&TRAILER_MAGIC);
        t
    }

    fn file_of(bytes: &[u8]) -> File {
        let mut f = tempfile::tempfile().unwrap();
        f.write_all(bytes).unwrap();
        f
    }

    /// The event records and framing outcome the mapped cutter sees in the
    /// first `len` bytes of a file holding `bytes` (an 8-byte header first).
    fn mapped_first(bytes: &[u8], len: usize, g: Geometry) -> View {
        let cutter = MappedChunks::new(file_of(bytes), 8, len as u64, g);
        by_cutter(cutter.ok().unwrap())
    }

    /// [`mapped_first`] of the whole file.
    fn mapped(bytes: &[u8], g: Geometry) -> View {
        mapped_first(bytes, bytes.len(), g)
    }

    /// The same as the record-by-record reader sees it in the first `len`
    /// bytes of `bytes`.
    fn read_first(bytes: &[u8], len: usize) -> View {
        by_record_reader(&bytes[8..], 8, len as u64 - 8)
    }

    /// [`read_first`] of all of `bytes`.
    fn read(bytes: &[u8]) -> View {
        read_first(bytes, bytes.len())
    }

    /// Streams of mixed records, some larger than a window, ending clean,
    /// with a trailer and records after it (whole, or the last cut short),
    /// or torn in each way of §9.
    fn streams() -> Vec<Vec<u8>> {
        let mut next = xorshift(0x9E37_79B9_7F4A_7C15);
        let mut out = Vec::new();
        for case in 0..14 {
            let mut s = b"EHRR\x07\0\0\0".to_vec();
            for i in 0..(200 + case * 40) {
                let r = next();
                let len = if i % 97 == 50 {
                    // Larger than a SMALL window: mapped whole.
                    150_000 + (r % 70_000) as usize
                } else {
                    32 + (r % 3000) as usize
                };
                // Allocations, frees and other events, mixed, so the
                // records noted for the map are checked (`by_cutter`).
                s.extend(record(len, [215, 90, 16, 300][(r >> 20) as usize % 4]));
            }
            match case % 8 {
                0 => {}
                1 => {
                    s.extend(trailer(7));
                    s.extend(record(90, 90));
                }
                2 => s.extend([1, 2, 3]),
                3 => s.extend(&record(5000, 215)[..4000]),
                4 => {
                    let mut r = record(64, 215);
                    r[26..30].copy_from_slice(&12u32.to_le_bytes());
                    s.extend(r);
                }
                5 => {
                    let mut r = record(64, 215);
                    r[26..30].copy_from_slice(&(MAX_RECORD_BYTES + 1).to_le_bytes());
                    s.extend(r);
                }
                // A torn record larger than a SMALL window.
                6 => s.extend(&record(300_000, 215)[..250_000]),
                // After the trailer, a record cut short: not a torn tail.
                _ => {
                    s.extend(trailer(7));
                    s.extend(record(90, 90));
                    s.extend(&record(5000, 215)[..4000]);
                }
            }
            out.push(s);
        }
        out
    }

    /// A record crossing into the second part whose bytes past the part's
    /// start are a chain of plausible headers of allocations ending
    /// exactly where the next record starts: the part's own walk starts at
    /// the first fake header, and the serial walk, arriving at the real
    /// record, takes the part's walk from there and drops the fake starts
    /// before it, and with them the records noted for the map
    /// (`by_cutter` checks them).
    #[test]
    fn records_noted_for_the_map_follow_a_walk_taken_from_a_later_start() {
        let header = |event_type: u16, seq: u64, len: usize| {
            let mut r = vec![0u8; len];
            r[0..2].copy_from_slice(&event_type.to_le_bytes());
            r[2..10].copy_from_slice(&seq.to_le_bytes());
            r[26..30].copy_from_slice(&(len as u32).to_le_bytes());
            r
        };
        let g = Geometry { part: 4096 };
        let mut s = b"EHRR\x07\0\0\0".to_vec();
        let mut seq = 0;
        while s.len() < 3000 {
            seq += 1;
            s.extend(header([215, 16][seq as usize % 2], seq, 100));
        }
        let fakes = 4096 + 64;
        let end = fakes + 48 * 10;
        seq += 1;
        let mut long = header(16, seq, end - s.len());
        for at in (fakes..end).step_by(48) {
            let at = at - s.len();
            long[at..at + 32].copy_from_slice(&header(215, seq + 1, 48)[..32]);
        }
        s.extend(long);
        while s.len() < 3 * 4096 {
            seq += 1;
            s.extend(header([215, 16, 90][seq as usize % 3], seq, 120));
        }
        let got = mapped(&s, g);
        assert_eq!(got, read(&s));
        assert!(got.0.iter().any(|&(at, _)| at == end as u64));
    }

    #[test]
    fn windows_hold_exactly_the_records_the_reader_reads() {
        for (case, s) in streams().iter().enumerate() {
            let expect = read(s);
            assert!(expect.0.len() >= 200, "case {case}");
            for g in [SMALL, Geometry::DEFAULT] {
                assert_eq!(mapped(s, g), expect, "case {case}, {g:?}");
            }
        }
    }

    /// The production geometry over many windows: 14 MiB of records with
    /// a 5 MiB one inside, ending torn.
    #[test]
    fn default_windows_hold_exactly_the_records_the_reader_reads() {
        let mut s = b"EHRR\x07\0\0\0".to_vec();
        for i in 0..12000usize {
            s.extend(record(32 + (i * 7919) % 1500, 215));
            if i == 6000 {
                s.extend(record(5 << 20, 215));
            }
        }
        s.extend(&record(900, 215)[..500]);
        let expect = read(&s);
        assert!(s.len() > 3 * Geometry::DEFAULT.part as usize);
        assert_eq!(mapped(&s, Geometry::DEFAULT), expect);
    }

    /// A window maps only a little past its part, and maps again up to the
    /// record cap only where a record runs past that: one window of a
    /// stream holding one record longer than three parts.
    #[test]
    fn only_a_record_running_past_its_window_maps_it_far() {
        let mut s = b"EHRR\x07\0\0\0".to_vec();
        while s.len() < 6 * SMALL.part as usize {
            s.extend(record(1000, 215));
            if s.len() > 2 * SMALL.part as usize && s.len() < 3 * SMALL.part as usize {
                s.extend(record(3 * SMALL.part as usize + 100, 16));
            }
        }
        let mut cutter = MappedChunks::new(file_of(&s), 8, s.len() as u64, SMALL)
            .ok()
            .unwrap();
        let mut w = Window::default();
        let (mut windows, mut far) = (0, 0);
        while cutter.next(&mut w).unwrap() {
            let mapped = |w: &Window| w.map.as_deref().unwrap().len() as u64;
            assert!(mapped(&w) <= SMALL.part + OVERHANG);
            w.frame();
            cutter.settle(&mut w).unwrap();
            windows += 1;
            far += usize::from(mapped(&w) > SMALL.part + OVERHANG);
        }
        assert_eq!((far, windows > 3), (1, true));
        assert_eq!(mapped(&s, SMALL), read(&s));
    }

    /// A file that grew after the pass took its length (a capture still
    /// being written) is read as it was: the mapped cutter, the reading
    /// cutter and the record reader all stop at that length.
    #[test]
    fn a_file_grown_past_the_length_taken_is_read_up_to_it() {
        let s = &streams()[1];
        for len in [s.len() / 2, s.len() / 3 + 7, 100] {
            let expect = read(&s[..len]);
            assert_eq!(mapped_first(s, len, SMALL), expect, "len {len}");
            let mut f = file_of(s);
            io::Seek::seek(&mut f, io::SeekFrom::Start(8)).unwrap();
            let reading = by_cutter(EventChunks::new(f, 8, len as u64 - 8, 1000));
            assert_eq!(reading, expect, "reading cutter, len {len}");
            assert_eq!(read_first(s, len), expect, "record reader, len {len}");
        }
    }

    /// On a realistic archive (launches, allocations, copies of several
    /// threads), the boundary each window finds for itself is the record
    /// start the serial walk reaches, so no window is walked twice.
    #[test]
    fn windows_find_the_boundary_the_serial_walk_reaches() {
        let tmp = tempfile::tempdir().unwrap();
        hrr_testkit::synth::write_big(tmp.path(), 1, 3 << 20).unwrap();
        let s = std::fs::read(tmp.path().join("pid-1/events.bin")).unwrap();
        let starts: Vec<u64> = read(&s).0.iter().map(|&(at, _)| at).collect();
        let part = SMALL.part as usize;
        let mut windows = 0;
        for from in (part..s.len()).step_by(part) {
            let limit = part.min(s.len() - from);
            let first = starts.iter().find(|&&at| at >= from as u64).copied();
            let want = first.filter(|&at| at < (from + limit) as u64);
            let found = boundary::find(&s[from..], 0, limit).map(|at| (from + at) as u64);
            assert_eq!(found, want, "window at {from}");
            windows += 1;
        }
        assert!(windows >= 40, "{windows} windows");
    }

    #[test]
    fn many_decoders_hold_smaller_parts() {
        assert_eq!(Geometry::for_decoders(2).part, Geometry::DEFAULT.part);
        assert_eq!(Geometry::for_decoders(8).part, Geometry::DEFAULT.part);
        assert_eq!(Geometry::for_decoders(16).part, FOLIO);
    }

    #[test]
    fn an_empty_stream_maps_nothing() {
        for bytes in [&b"EHRR\x07\0\0\0"[..], &b"EHRR"[..]] {
            let (seen, framing) = mapped(bytes, SMALL);
            assert!(seen.is_empty());
            assert_eq!(framing, "None None 0 None");
        }
    }

    #[test]
    fn a_file_cut_shorter_than_the_pass_began_with_ends_the_pass_as_cut() {
        let s = &streams()[0];
        let f = file_of(&s[..s.len() / 2]);
        let mut cut = MappedChunks::new(f, 8, s.len() as u64, SMALL).ok().unwrap();
        let mut w = Window::default();
        while cut.next(&mut w).unwrap() {
            w.release();
        }
        let half = (s.len() / 2) as u64;
        assert_eq!(cut.cut_short(), Some((s.len() as u64, half)));
    }

    /// The file cut by another program after a window was mapped: the
    /// decoder reading it survives (zeros past the cut) and the pass
    /// reports the cut, before any later window is mapped.
    #[test]
    fn a_file_cut_under_a_mapped_window_is_survived_and_reported() {
        let s = &streams()[3];
        let f = file_of(s);
        let handle = f.try_clone().unwrap();
        let mut cut = MappedChunks::new(f, 8, s.len() as u64, SMALL).ok().unwrap();
        let mut w = Window::default();
        assert!(cut.next(&mut w).unwrap());
        handle.set_len(4096).unwrap();
        let records = w.records();
        let past_cut = records.buf[8192..].iter().filter(|&&b| b != 0).count();
        assert_eq!(past_cut, 0, "bytes past the cut read as zeros");
        assert_eq!(cut.cut_short(), None, "noted once the window is let go");
        w.release();
        assert_eq!(cut.cut_short(), Some((s.len() as u64, 4096)));
        assert!(!cut.next(&mut w).unwrap(), "the pass ends at the cut");
    }

    #[test]
    fn files_off_local_disks_are_not_mapped() {
        let proc_file = File::open("/proc/self/status").unwrap();
        assert!(!worth_mapping(&proc_file));
    }

    #[test]
    fn a_file_that_cannot_be_mapped_is_handed_back() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("events.bin");
        std::fs::write(&path, [0u8; 4096]).unwrap();
        // Write-only: a read mapping is refused, as on file systems
        // without mmap.
        let f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
        assert!(MappedChunks::new(f, 8, 4096, SMALL).is_err());
    }
}
