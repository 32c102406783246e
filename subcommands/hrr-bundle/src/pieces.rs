//! The bundle's files read in [`PIECE_SIZE`] pieces by a few reader
//! threads at once. A reader reads its piece in [`READ_CHUNK`] steps and
//! hashes each step right after reading it, while the bytes are still in
//! that core's cache; the packer takes the pieces in file order and hands
//! the same buffers to zstd. Every byte is read from disk once, and the
//! pieces held at once (each one buffer) are bounded by the reader count.

use std::collections::BTreeMap;
use std::fs::File;
use std::io;
use std::path::Path;
use std::sync::mpsc::{self, Receiver, Sender, SyncSender};
use std::sync::{Arc, Mutex};
use std::thread::Scope;

use anyhow::{bail, Context as _};
use sha2::{Digest, Sha256};

use crate::collect::{Item, Source};
use crate::digest::Sha256Digest;
use crate::manifest::{piece_count, PIECE_SIZE};

/// Bytes read before they are hashed: small enough to stay in a core's
/// cache between the read and the hash.
const READ_CHUNK: usize = 256 << 10;

/// The most reader threads: at a core's SHA-256 speed a few keep up with
/// zstd on every core of the machine.
const MAX_READERS: usize = 4;

/// What the packer writes before a file's content: its size as opened and
/// its modification time (seconds since the epoch).
pub struct FileStart {
    /// Bytes to pack (the size when it was opened).
    pub size: u64,
    /// Modification time for the tar header.
    pub mtime: u64,
}

/// One piece of one item, read and hashed.
pub struct Piece {
    /// Index of its item in the list the pieces were started for.
    pub item: usize,
    /// On the first piece of an item: what its tar header needs.
    pub start: Option<FileStart>,
    /// True on the last piece of an item.
    pub last: bool,
    /// SHA-256 of [`Piece::bytes`].
    pub sha256: Sha256Digest,
    buf: Vec<u8>,
    len: usize,
}

impl Piece {
    /// The piece's content.
    pub fn bytes(&self) -> &[u8] {
        &self.buf[..self.len]
    }
}

/// An item's content, opened by the planning thread.
enum Opened<'a> {
    File { file: File, path: &'a Path },
    Bytes(&'a [u8]),
}

/// One piece to read.
struct Work<'a> {
    source: Arc<Opened<'a>>,
    offset: u64,
    len: usize,
    start: Option<FileStart>,
    last: bool,
}

/// A piece to read, or why the item could not be opened, with its place in
/// the order of all pieces.
struct Job<'a> {
    seq: u64,
    item: usize,
    work: anyhow::Result<Work<'a>>,
}

type Done = (u64, anyhow::Result<Piece>);

/// The packer's end: every piece of every item, in order.
pub struct Pieces {
    done: Receiver<Done>,
    waiting: BTreeMap<u64, anyhow::Result<Piece>>,
    next: u64,
    pool: Sender<Vec<u8>>,
}

impl Pieces {
    /// Starts reading `items` on threads of `scope`: one opens the items in
    /// order (holding few open at once), up to [`MAX_READERS`] read and hash
    /// the pieces. `created` is the mtime of items that are bytes in memory.
    pub fn start<'scope, 'env>(
        scope: &'scope Scope<'scope, 'env>,
        items: &'env [Item],
        created: u64,
    ) -> io::Result<Pieces> {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let readers = cores.clamp(1, MAX_READERS);
        let (job_tx, job_rx) = mpsc::sync_channel::<Job<'env>>(2 * readers);
        let (pool, pool_rx) = mpsc::channel::<Vec<u8>>();
        // Two buffers a reader: one being filled while the packer has the
        // other.
        for _ in 0..2 * readers {
            let _ = pool.send(Vec::new());
        }
        let (done_tx, done) = mpsc::channel::<Done>();
        let jobs = Arc::new(Mutex::new(job_rx));
        let pool_rx = Arc::new(Mutex::new(pool_rx));
        std::thread::Builder::new()
            .name("hrr-bundle-open".into())
            .spawn_scoped(scope, move || plan(items, created, &job_tx))?;
        for _ in 0..readers {
            let (jobs, pool_rx, done_tx) =
                (Arc::clone(&jobs), Arc::clone(&pool_rx), done_tx.clone());
            std::thread::Builder::new()
                .name("hrr-bundle-read".into())
                .spawn_scoped(scope, move || read(&jobs, &pool_rx, &done_tx))?;
        }
        Ok(Pieces {
            done,
            waiting: BTreeMap::new(),
            next: 0,
            pool,
        })
    }

    /// The next piece in order; `None` once every item's last piece has
    /// been returned (or reading stopped at an error returned before).
    pub fn next(&mut self) -> Option<anyhow::Result<Piece>> {
        loop {
            if let Some(piece) = self.waiting.remove(&self.next) {
                self.next += 1;
                return Some(piece);
            }
            let (seq, piece) = self.done.recv().ok()?;
            self.waiting.insert(seq, piece);
        }
    }

    /// Gives a piece's buffer back for reading another.
    pub fn recycle(&self, piece: Piece) {
        let _ = self.pool.send(piece.buf);
    }
}

/// Opens the items in order and queues their pieces; stops at the first
/// item that cannot be opened (queued as an error) or when nobody reads.
fn plan<'a>(items: &'a [Item], created: u64, jobs: &SyncSender<Job<'a>>) {
    let mut seq = 0;
    for (item, it) in items.iter().enumerate() {
        let (source, start) = match open(it, created) {
            Ok(opened) => opened,
            Err(e) => {
                let _ = jobs.send(Job {
                    seq,
                    item,
                    work: Err(e),
                });
                return;
            }
        };
        let size = start.size;
        let count = piece_count(size);
        let mut start = Some(start);
        for k in 0..count {
            let offset = k * PIECE_SIZE;
            // At most PIECE_SIZE, which fits any usize.
            let len = usize::try_from((size - offset).min(PIECE_SIZE)).unwrap_or(0);
            let work = Work {
                source: Arc::clone(&source),
                offset,
                len,
                start: start.take(),
                last: k + 1 == count,
            };
            let job = Job {
                seq,
                item,
                work: Ok(work),
            };
            if jobs.send(job).is_err() {
                return;
            }
            seq += 1;
        }
    }
}

/// Opens one item: its content and what its tar header says.
fn open(item: &Item, created: u64) -> anyhow::Result<(Arc<Opened<'_>>, FileStart)> {
    match &item.source {
        Source::Bytes(bytes) => Ok((
            Arc::new(Opened::Bytes(bytes)),
            FileStart {
                size: bytes.len() as u64,
                mtime: created,
            },
        )),
        Source::File(path) => {
            let file =
                File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
            let meta = file
                .metadata()
                .with_context(|| format!("cannot read {}", path.display()))?;
            let start = FileStart {
                size: meta.len(),
                mtime: meta.modified().map(crate::pack::mtime_of).unwrap_or(0),
            };
            Ok((Arc::new(Opened::File { file, path }), start))
        }
    }
}

/// A reader thread: takes a free buffer, then the next piece (in that
/// order, so the piece the packer waits for always has a buffer), reads and
/// hashes it, and hands it over; ends when the pieces run out or the packer
/// is gone.
fn read(jobs: &Mutex<Receiver<Job<'_>>>, pool: &Mutex<Receiver<Vec<u8>>>, done: &Sender<Done>) {
    loop {
        let Some(mut buf) = pool.lock().ok().and_then(|rx| rx.recv().ok()) else {
            return;
        };
        let Some(job) = jobs.lock().ok().and_then(|rx| rx.recv().ok()) else {
            return;
        };
        let piece = job.work.and_then(|work| {
            let sha256 = fill(&work, &mut buf)?;
            Ok(Piece {
                item: job.item,
                start: work.start,
                last: work.last,
                sha256,
                buf,
                len: work.len,
            })
        });
        if done.send((job.seq, piece)).is_err() {
            return;
        }
    }
}

/// Reads `work` into the front of `buf` (grown to fit), hashing each
/// [`READ_CHUNK`] as soon as it is in. A file that ends early (something
/// is writing to the archive) is an error.
fn fill(work: &Work<'_>, buf: &mut Vec<u8>) -> anyhow::Result<Sha256Digest> {
    if buf.len() < work.len {
        buf.resize(work.len, 0);
    }
    let mut hasher = Sha256::new();
    match &*work.source {
        Opened::Bytes(bytes) => {
            // The planner cut the pieces from these bytes' own length.
            let start = usize::try_from(work.offset).unwrap_or(usize::MAX);
            let part = start
                .checked_add(work.len)
                .and_then(|end| bytes.get(start..end))
                .context("a piece outside the bytes it was cut from")?;
            buf[..work.len].copy_from_slice(part);
            hasher.update(part);
        }
        Opened::File { file, path } => {
            let mut filled = 0;
            while filled < work.len {
                let want = (work.len - filled).min(READ_CHUNK);
                let chunk = &mut buf[filled..filled + want];
                let n = read_at(file, chunk, work.offset + filled as u64)
                    .with_context(|| format!("cannot read {}", path.display()))?;
                if n == 0 {
                    bail!(
                        "{} changed while it was being bundled; bundle an archive nothing is writing to",
                        path.display()
                    );
                }
                hasher.update(&chunk[..n]);
                filled += n;
            }
        }
    }
    Ok(hasher.finalize().into())
}

/// One positioned read, retried when interrupted.
fn read_at(file: &File, buf: &mut [u8], offset: u64) -> io::Result<usize> {
    loop {
        #[cfg(unix)]
        let r = std::os::unix::fs::FileExt::read_at(file, buf, offset);
        #[cfg(windows)]
        let r = std::os::windows::fs::FileExt::seek_read(file, buf, offset);
        match r {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            r => return r,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::manifest::Role;

    fn item(source: Source) -> Item {
        Item {
            path: "x".into(),
            role: Role::Archive,
            source,
        }
    }

    /// A piece as the tests compare it: item, size on its start, last, bytes.
    type Seen = (usize, Option<u64>, bool, Vec<u8>);

    /// Every piece of every item, in order, each checked to carry the
    /// SHA-256 of its bytes.
    fn all(items: &[Item]) -> Vec<anyhow::Result<Seen>> {
        std::thread::scope(|scope| {
            let mut pieces = Pieces::start(scope, items, 7).unwrap();
            let mut out = Vec::new();
            while let Some(p) = pieces.next() {
                out.push(p.map(|p| {
                    assert_eq!(p.sha256, <Sha256Digest>::from(Sha256::digest(p.bytes())));
                    let got = (
                        p.item,
                        p.start.as_ref().map(|s| s.size),
                        p.last,
                        p.bytes().to_vec(),
                    );
                    pieces.recycle(p);
                    got
                }));
            }
            out
        })
    }

    #[test]
    fn files_come_back_whole_in_order_cut_at_every_piece_size() {
        let dir = tempfile::tempdir().unwrap();
        let piece = PIECE_SIZE as usize;
        let big: Vec<u8> = (0..2 * piece + 3).map(|i| (i * 7 % 253) as u8).collect();
        let (a, b, c) = (
            dir.path().join("a"),
            dir.path().join("b"),
            dir.path().join("c"),
        );
        std::fs::write(&a, &big).unwrap();
        std::fs::write(&b, b"").unwrap();
        std::fs::write(&c, &big[..piece]).unwrap();
        let items = vec![
            item(Source::File(a)),
            item(Source::Bytes(b"finding".to_vec())),
            item(Source::File(b)),
            item(Source::File(c)),
            item(Source::Bytes(big[..piece + 1].to_vec())),
        ];
        let got: Vec<_> = all(&items).into_iter().map(Result::unwrap).collect();
        let expect = vec![
            (0, Some(big.len() as u64), false, big[..piece].to_vec()),
            (0, None, false, big[piece..2 * piece].to_vec()),
            (0, None, true, big[2 * piece..].to_vec()),
            (1, Some(7), true, b"finding".to_vec()),
            (2, Some(0), true, Vec::new()),
            (3, Some(piece as u64), true, big[..piece].to_vec()),
            (4, Some(piece as u64 + 1), false, big[..piece].to_vec()),
            (4, None, true, big[piece..piece + 1].to_vec()),
        ];
        assert_eq!(got, expect);
    }

    #[test]
    fn a_file_that_cannot_be_opened_ends_the_pieces_with_its_error() {
        let dir = tempfile::tempdir().unwrap();
        let ok = dir.path().join("ok");
        std::fs::write(&ok, b"fine").unwrap();
        let items = vec![
            item(Source::File(ok.clone())),
            item(Source::File(dir.path().join("missing"))),
            item(Source::File(ok)),
        ];
        let got = all(&items);
        assert_eq!(got.len(), 2);
        assert_eq!(got[0].as_ref().unwrap().3, b"fine");
        let err = format!("{:#}", got[1].as_ref().unwrap_err());
        assert!(
            err.starts_with("cannot open ") && err.contains("missing"),
            "{err}"
        );
    }

    #[test]
    fn a_file_shorter_than_when_it_was_opened_is_an_error_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("events.bin");
        std::fs::write(&path, [1u8; 10]).unwrap();
        let work = Work {
            source: Arc::new(Opened::File {
                file: File::open(&path).unwrap(),
                path: &path,
            }),
            offset: 0,
            len: 20,
            start: None,
            last: true,
        };
        let err = format!("{:#}", fill(&work, &mut Vec::new()).unwrap_err());
        assert_eq!(
            err,
            format!(
                "{} changed while it was being bundled; bundle an archive nothing is writing to",
                path.display()
            )
        );
    }
}
