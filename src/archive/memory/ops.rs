//! What the allocation map needs from one piece of the stream, taken out
//! by the decoder that tallies the piece: allocations, frees and the
//! pointer arguments of launches, in file order. The map itself depends
//! on event order, so pieces are applied one after the other in stream
//! order (`merge.rs`), while the decoding that finds these events stays
//! parallel.

use rustc_hash::FxHashMap;

use crate::archive::format::apis::id;
use crate::archive::format::framing::{le_u64, EVENT_HEADER_LEN};
use crate::archive::format::launch::Launch;
use crate::archive::format::payloads::{self, Payload};
use crate::archive::summary::arg_shapes::Word;

/// Where an event came from: the header fields the map keeps.
#[derive(Debug, Clone, Copy, Default)]
pub struct Stamp {
    /// `sequence_id`.
    pub seq: u64,
    /// `timestamp_ns` (CLOCK_MONOTONIC, the clock of region records).
    pub ns: u64,
    /// `thread_id`.
    pub thread: u64,
}

/// One event of the map, as it is handed to [`PieceOps::push`] and comes
/// back from [`PieceOps::in_order`].
#[derive(Debug, Clone, Copy)]
pub enum Op {
    /// A range becomes live (reference §11: the returned address and size).
    Alloc { api: u16, base: u64, size: u64 },
    /// The range allocated at `ptr` dies.
    Free { api: u16, ptr: u64 },
    /// A launch of kernel `kernel` (an index into [`PieceOps::names`]) whose
    /// non-null pointer arguments are the piece's pointers `first..first + count`.
    Launch { kernel: u32, first: u32, count: u32 },
}

/// A pointer a launch passes: whole-argument (kind 1) or embedded (kind 3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pointer {
    /// Argument index in the kernel's signature.
    pub arg: u16,
    /// The capture-time address.
    pub address: u64,
}

/// Pointers of a piece, as it holds them.
#[derive(Clone, Copy)]
pub(crate) struct Pointers<'a> {
    addresses: &'a [u64],
    args: &'a [u16],
}

impl Pointers<'_> {
    /// Each pointer, in argument order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = Pointer> + '_ {
        let pointer = |(&address, &arg)| Pointer { arg, address };
        self.addresses.iter().zip(self.args).map(pointer)
    }
}

/// An allocation or free of a piece, with the number of the piece's
/// launches before it.
#[derive(Debug, Clone, Copy)]
pub struct MemoryOp {
    /// Its header fields.
    pub stamp: Stamp,
    /// [`Op::Alloc`] or [`Op::Free`].
    pub op: Op,
    /// Launches of the piece before it: the index of the next one.
    pub before: u32,
}

/// A launch of a piece: what the audit and the region merge need, in 32
/// bytes (most of a piece's events are launches).
#[derive(Debug, Clone, Copy)]
pub struct LaunchOp {
    /// `sequence_id`.
    pub seq: u64,
    /// `timestamp_ns`, where region records are merged.
    pub ns: u64,
    /// Index into [`PieceOps::names`].
    pub kernel: u32,
    /// Its pointers: the piece's pointers `first..first + count`.
    pub first: u32,
    /// Number of its pointers.
    pub count: u32,
}

impl LaunchOp {
    /// Where its pointers lie among the piece's.
    pub(crate) fn pointers(&self) -> std::ops::Range<usize> {
        self.first as usize..(self.first + self.count) as usize
    }

    /// It as an [`Op`], with its stamp (a launch's thread is not kept).
    fn event(&self) -> (Stamp, Op) {
        let stamp = Stamp {
            seq: self.seq,
            ns: self.ns,
            thread: 0,
        };
        let op = Op::Launch {
            kernel: self.kernel,
            first: self.first,
            count: self.count,
        };
        (stamp, op)
    }
}

/// The map's events of one piece: its allocations and frees, and apart
/// from them its launches, each in file order, so the map walks the few
/// allocations and frees alone.
#[derive(Default)]
pub struct PieceOps {
    /// Allocations and frees.
    pub memory: Vec<MemoryOp>,
    /// Launches.
    pub launches: Vec<LaunchOp>,
    /// The launches' pointers: their addresses (the audit's loop reads
    /// only these) and, apart, their argument indexes.
    pub addresses: Vec<u64>,
    /// The argument index of each address.
    pub args: Vec<u16>,
    /// Kernel names of this piece's launches, each once.
    pub names: Vec<Box<[u8]>>,
    /// Name index by the kernel's entry in the decoder's kernel table
    /// (`u32::MAX`: not in this piece yet), so a launch's name is found
    /// with no second hash or compare.
    by_entry: Vec<u32>,
    /// The entries set in `by_entry`, to reset them for the next piece.
    entries: Vec<u32>,
    /// Name index of untracked kernels (past the kernel table's caps) by
    /// fingerprint; checked against the bytes, so a fingerprint collision
    /// only adds a name.
    by_fp: FxHashMap<u64, u32>,
}

/// The allocating APIs whose payload records address and size (§11); their
/// layouts are decoded by [`payloads::decode`].
const ALLOCS: [u16; 8] = [
    id::HIP_MALLOC,
    id::HIP_MALLOC_ASYNC,
    id::HIP_MALLOC_MANAGED,
    id::HIP_EXT_MALLOC_WITH_FLAGS,
    id::HIP_HOST_MALLOC,
    id::HIP_HOST_ALLOC,
    id::HIP_MALLOC_HOST,
    id::HIP_MEM_ALLOC_HOST,
];

/// The freeing APIs (§11).
const FREES: [u16; 4] = [
    id::HIP_FREE,
    id::HIP_FREE_ASYNC,
    id::HIP_HOST_FREE,
    id::HIP_FREE_HOST,
];

/// Names of the allocating and freeing APIs the map follows, for the
/// README and `archive memory`.
pub fn covered_apis() -> impl Iterator<Item = u16> {
    ALLOCS.into_iter().chain(FREES)
}

/// Whether v7 id `api` allocates or frees a range the map follows.
pub(crate) fn is_memory_api(api: u16) -> bool {
    covered_apis().any(|a| a == api)
}

fn stamp(head: &[u8; EVENT_HEADER_LEN]) -> Stamp {
    Stamp {
        seq: le_u64(head, 2),
        ns: le_u64(head, 10),
        thread: le_u64(head, 18),
    }
}

impl PieceOps {
    /// Empties the piece for reuse, keeping its buffers.
    pub(crate) fn clear(&mut self) {
        self.memory.clear();
        self.launches.clear();
        self.addresses.clear();
        self.args.clear();
        self.names.clear();
        for e in self.entries.drain(..) {
            self.by_entry[e as usize] = u32::MAX;
        }
        self.by_fp.clear();
    }

    /// Takes an allocation or free of v7 id `api` (one of
    /// [`is_memory_api`]) from `record`; a record shorter than its struct
    /// is left out, as it is not decoded.
    pub(crate) fn memory_event(&mut self, api: u16, head: &[u8; EVENT_HEADER_LEN], record: &[u8]) {
        let op = match payloads::decode(Some(api), record) {
            Payload::Alloc { ptr, size, .. } => Op::Alloc {
                api,
                base: ptr,
                size,
            },
            Payload::Free { ptr, .. } => Op::Free { api, ptr },
            _ => return,
        };
        self.push(stamp(head), op);
    }

    /// Adds the next event of the piece; a launch's pointers are
    /// the piece's pointers `first..first + count`, taken already.
    pub(crate) fn push(&mut self, stamp: Stamp, op: Op) {
        match op {
            Op::Launch {
                kernel,
                first,
                count,
            } => self.launches.push(LaunchOp {
                seq: stamp.seq,
                ns: stamp.ns,
                kernel,
                first,
                count,
            }),
            _ => self.memory.push(MemoryOp {
                stamp,
                op,
                before: self.launches.len() as u32,
            }),
        }
    }

    /// Every event of the piece in file order, each with the index of the
    /// next launch (a launch's own index).
    pub(crate) fn in_order(&self) -> impl Iterator<Item = (u32, Stamp, Op)> + '_ {
        let launch = |k: usize| {
            let (stamp, op) = self.launches[k].event();
            (k as u32, stamp, op)
        };
        let mut next = 0;
        let memory = self.memory.iter().flat_map(move |m| {
            let before = (next..m.before as usize).map(launch);
            next = m.before as usize;
            before.chain(std::iter::once((m.before, m.stamp, m.op)))
        });
        let last = self.memory.last().map_or(0, |m| m.before as usize);
        memory.chain((last..self.launches.len()).map(launch))
    }

    /// Takes a parsed launch: its non-null pointer arguments, whole (kind
    /// 1, an 8-byte value) and embedded (kind 3, the 8-byte words at the
    /// recorded offsets that lie inside the argument), read at `words`
    /// when its argument layout lists them, found by walking its entries
    /// otherwise. `entry` is its kernel's entry in the decoder's kernel
    /// table, `fp` the fingerprint of its name.
    pub(in crate::archive) fn launch(
        &mut self,
        head: &[u8; EVENT_HEADER_LEN],
        l: &Launch<'_>,
        words: Option<&[Word]>,
        entry: Option<u32>,
        fp: u64,
    ) {
        let first = self.addresses.len() as u32;
        match words {
            Some(words) => self.words(l.arg_bytes(), words),
            None => self.walk(l),
        }
        let kernel = match entry {
            Some(e) => self.name_of_entry(l.name, e),
            None => self.name(l.name, fp),
        };
        let count = self.addresses.len() as u32 - first;
        let op = Op::Launch {
            kernel,
            first,
            count,
        };
        self.push(stamp(head), op);
    }

    /// Takes the pointer words of `args` at `words`.
    #[inline]
    fn words(&mut self, args: &[u8], words: &[Word]) {
        for w in words {
            if let Some(b) = args.get(usize::from(w.at)..).and_then(<[u8]>::first_chunk) {
                self.pointer(w.arg, u64::from_le_bytes(*b));
            }
        }
    }

    /// Takes the pointer words of `l` by walking its entries.
    fn walk(&mut self, l: &Launch<'_>) {
        for (i, a) in l.args().enumerate() {
            for at in a.pointer_words() {
                self.pointer(i as u16, le_u64(a.bytes, at));
            }
        }
    }

    /// The kernel name and pointers of `op` when it is a launch of this
    /// piece.
    pub(crate) fn launch_of(&self, op: Op) -> Option<(&[u8], Pointers<'_>)> {
        let Op::Launch {
            kernel,
            first,
            count,
        } = op
        else {
            return None;
        };
        let at = first as usize..(first + count) as usize;
        Some((&self.names[kernel as usize], self.pointers(at)))
    }

    /// The kernel name of launch `l`.
    pub(crate) fn name_of(&self, l: &LaunchOp) -> &[u8] {
        &self.names[l.kernel as usize]
    }

    /// The pointers `at` of the piece.
    pub(crate) fn pointers(&self, at: std::ops::Range<usize>) -> Pointers<'_> {
        Pointers {
            addresses: &self.addresses[at.clone()],
            args: &self.args[at],
        }
    }

    /// Takes a non-null pointer.
    #[inline]
    pub(crate) fn pointer(&mut self, arg: u16, address: u64) {
        if address != 0 {
            self.addresses.push(address);
            self.args.push(arg);
        }
    }

    fn name_of_entry(&mut self, name: &[u8], entry: u32) -> u32 {
        let e = entry as usize;
        if e >= self.by_entry.len() {
            self.by_entry.resize(e + 1, u32::MAX);
        }
        if self.by_entry[e] == u32::MAX {
            self.by_entry[e] = self.names.len() as u32;
            self.entries.push(entry);
            self.names.push(name.into());
        }
        self.by_entry[e]
    }

    fn name(&mut self, name: &[u8], fp: u64) -> u32 {
        if let Some(&i) = self.by_fp.get(&fp) {
            if self.names.get(i as usize).is_some_and(|n| **n == *name) {
                return i;
            }
        }
        let i = self.names.len() as u32;
        self.names.push(name.into());
        self.by_fp.insert(fp, i);
        i
    }
}
