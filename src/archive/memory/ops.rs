//! What the allocation map needs from one piece of the stream, taken out
//! by the decoder of the piece before it tallies it: allocations and
//! frees, and where region records are left to merge or a watch listens,
//! the launches, each with the index of its record in the piece. The map
//! depends on event order, so pieces are applied one after the other in
//! stream order (`merge.rs`); the launches' pointers are then audited as
//! the piece is tallied (`view.rs`), in parallel.

use rustc_hash::FxHashMap;

use crate::archive::format::apis::{id, is_launch, ApiTable, V7_COUNT};
use crate::archive::format::framing::{le_u16, le_u64, EVENT_HEADER_LEN};
use crate::archive::format::launch::{self, Launch};
use crate::archive::format::payloads::{self, Payload};
use crate::archive::summary::arg_shapes::Listed;
use crate::archive::summary::chunks::Records;
use crate::archive::summary::kernel_table::fingerprint;

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

/// An allocation or free of a piece, with the index of its record.
#[derive(Debug, Clone, Copy)]
pub struct MemoryOp {
    /// Its header fields.
    pub stamp: Stamp,
    /// [`Op::Alloc`] or [`Op::Free`].
    pub op: Op,
    /// Index of its record among the piece's.
    pub at: u32,
}

/// A launch of a piece: what the region merge and a watch need.
#[derive(Debug, Clone, Copy)]
pub struct LaunchOp {
    /// `sequence_id`.
    pub seq: u64,
    /// `timestamp_ns`, where region records are merged.
    pub ns: u64,
    /// Index into [`PieceOps::names`] (a watch's launches only).
    pub kernel: u32,
    /// Its pointers: the piece's pointers `first..first + count`.
    pub first: u32,
    /// Number of its pointers.
    pub count: u32,
    /// Index of its record among the piece's.
    pub at: u32,
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

/// What the map takes of a piece's launches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Launches {
    /// Nothing: no region record is left to merge between them.
    Skip,
    /// Their stamps, where region records are merged by time.
    Stamps,
    /// Their kernels and pointers too, for a watch.
    Full,
}

/// The map's events of one piece: its allocations and frees, and apart
/// from them its launches when they are taken, each in file order.
#[derive(Default)]
pub struct PieceOps {
    /// Allocations and frees.
    pub memory: Vec<MemoryOp>,
    /// Launches.
    pub launches: Vec<LaunchOp>,
    /// The launches' pointers: their addresses and, apart, their argument
    /// indexes.
    pub addresses: Vec<u64>,
    /// The argument index of each address.
    pub args: Vec<u16>,
    /// Kernel names of this piece's launches, each once.
    pub names: Vec<Box<[u8]>>,
    /// Name index by fingerprint; checked against the bytes, so a
    /// fingerprint collision only adds a name.
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

/// Whether each v7 id allocates or frees, so a piece's records are sorted
/// with one load each.
const MEMORY_IDS: [bool; V7_COUNT as usize] = {
    let mut ids = [false; V7_COUNT as usize];
    let mut i = 0;
    while i < ALLOCS.len() {
        ids[ALLOCS[i] as usize] = true;
        i += 1;
    }
    let mut i = 0;
    while i < FREES.len() {
        ids[FREES[i] as usize] = true;
        i += 1;
    }
    ids
};

/// Per raw event type, one bit: whether the type is an allocating or
/// freeing API in any API table, so the framing walk marks the records the
/// map may need without knowing the file's table ([`may_be_memory`]).
static MAY_BE_MEMORY: std::sync::LazyLock<Box<[u64; 1 << 10]>> = std::sync::LazyLock::new(|| {
    let mut bits = Box::new([0u64; 1 << 10]);
    for t in 0..=u16::MAX {
        let tables = [ApiTable::V6, ApiTable::V7, ApiTable::V8AssumedV7];
        let memory = |table: ApiTable| {
            table
                .canonical(t)
                .is_some_and(|api| MEMORY_IDS[usize::from(api)])
        };
        if tables.into_iter().any(memory) {
            bits[usize::from(t >> 6)] |= 1 << (t & 63);
        }
    }
    bits
});

/// Whether a record of raw event type `event_type` may be an allocation
/// or a free (in some API table): the framing walk notes such records
/// ([`Records::memory`]), so taking a piece's allocations and frees out
/// reads only them.
#[inline]
pub(in crate::archive) fn may_be_memory(event_type: u16) -> bool {
    MAY_BE_MEMORY[usize::from(event_type >> 6)] >> (event_type & 63) & 1 == 1
}

/// Names of the allocating and freeing APIs the map follows, for the
/// README and `archive memory`.
pub fn covered_apis() -> impl Iterator<Item = u16> {
    ALLOCS.into_iter().chain(FREES)
}

fn stamp(head: &[u8; EVENT_HEADER_LEN]) -> Stamp {
    Stamp {
        seq: le_u64(head, 2),
        ns: le_u64(head, 10),
        thread: le_u64(head, 18),
    }
}

/// The non-null pointer words a layout lists for a launch.
#[inline]
pub(in crate::archive) fn listed_pointers(
    listed: Listed<'_>,
) -> impl Iterator<Item = Pointer> + '_ {
    listed.iter().filter_map(|(w, address)| {
        (address != 0).then_some(Pointer {
            arg: w.arg,
            address,
        })
    })
}

/// The non-null pointer words of `l`, found by walking its entries: whole
/// (kind 1, an 8-byte value) and embedded (kind 3, the 8-byte words at the
/// recorded offsets that lie inside the argument).
pub(in crate::archive) fn walked_pointers<'l>(
    l: &Launch<'l>,
) -> impl Iterator<Item = Pointer> + 'l {
    l.args().enumerate().flat_map(|(i, a)| {
        let bytes = a.bytes;
        launch::pointer_words(a.kind, bytes.len(), launch::offsets(a.pointer_offsets)).filter_map(
            move |at| {
                let address = le_u64(bytes, at);
                (address != 0).then_some(Pointer {
                    arg: i as u16,
                    address,
                })
            },
        )
    })
}

impl PieceOps {
    /// Empties the piece for reuse, keeping its buffers.
    pub(crate) fn clear(&mut self) {
        self.memory.clear();
        self.launches.clear();
        self.addresses.clear();
        self.args.clear();
        self.names.clear();
        self.by_fp.clear();
    }

    /// Takes the map's events out of the records of one piece (read with
    /// `table`): its allocations and frees, and its launches as `launches`
    /// says. A record shorter than its struct is left out, as is a launch
    /// whose payload does not parse: neither is decoded.
    pub(crate) fn scan(&mut self, records: Records<'_>, table: ApiTable, launches: Launches) {
        self.clear();
        match launches {
            // Only the records the framing walk noted can be allocations
            // or frees.
            Launches::Skip => {
                for &i in records.memory {
                    if let Some((record, _)) = records.get(i as usize) {
                        self.record(i, record, table, launches);
                    }
                }
            }
            _ => {
                for (i, record, _) in records.indexed() {
                    self.record(i as u32, record, table, launches);
                }
            }
        }
    }

    /// Takes what the map needs of record `at` of the piece.
    fn record(&mut self, at: u32, record: &[u8], table: ApiTable, launches: Launches) {
        let Some(head) = record.first_chunk::<EVENT_HEADER_LEN>() else {
            return;
        };
        let Some(api) = table.canonical(le_u16(head, 0)) else {
            return;
        };
        if MEMORY_IDS.get(usize::from(api)) == Some(&true) {
            self.memory_event(at, api, head, record);
        } else if launches != Launches::Skip && is_launch(api) {
            if let Ok(l) = Launch::parse(record) {
                self.launch(at, head, &l, launches == Launches::Full);
            }
        }
    }

    /// Takes an allocation or free of v7 id `api` from `record`.
    fn memory_event(&mut self, at: u32, api: u16, head: &[u8; EVENT_HEADER_LEN], record: &[u8]) {
        let op = match payloads::decode(Some(api), record) {
            Payload::Alloc { ptr, size, .. } => Op::Alloc {
                api,
                base: ptr,
                size,
            },
            Payload::Free { ptr, .. } => Op::Free { api, ptr },
            _ => return,
        };
        self.push(at, stamp(head), op);
    }

    /// Takes a parsed launch: its stamp, and with `full` its kernel and
    /// non-null pointer arguments.
    fn launch(&mut self, at: u32, head: &[u8; EVENT_HEADER_LEN], l: &Launch<'_>, full: bool) {
        let first = self.addresses.len() as u32;
        let kernel = match full {
            true => {
                for p in walked_pointers(l) {
                    self.pointer(p.arg, p.address);
                }
                self.name(l.name)
            }
            false => 0,
        };
        let count = self.addresses.len() as u32 - first;
        let op = Op::Launch {
            kernel,
            first,
            count,
        };
        self.push(at, stamp(head), op);
    }

    /// Adds the event of the piece's record `at` (after those added
    /// before); a launch's pointers are the piece's pointers
    /// `first..first + count`, taken already.
    pub(crate) fn push(&mut self, at: u32, stamp: Stamp, op: Op) {
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
                at,
            }),
            _ => self.memory.push(MemoryOp { stamp, op, at }),
        }
    }

    /// Every event of the piece in file order, each with the index of the
    /// first record the changes it makes are in effect for: a launch's own
    /// (what is applied before it is in effect at it), the next record's
    /// for an allocation or free.
    pub(crate) fn in_order(&self) -> impl Iterator<Item = (u32, Stamp, Op)> + '_ {
        let launch = |l: &LaunchOp| {
            let (stamp, op) = l.event();
            (l.at, stamp, op)
        };
        let mut next = 0;
        let memory = self.memory.iter().flat_map(move |m| {
            let end = self.launches[next..].partition_point(|l| l.at < m.at) + next;
            let before = self.launches[next..end].iter().map(launch);
            next = end;
            before.chain(std::iter::once((m.at + 1, m.stamp, m.op)))
        });
        let last = self
            .memory
            .last()
            .map_or(0, |m| self.launches.partition_point(|l| l.at < m.at));
        memory.chain(self.launches[last..].iter().map(launch))
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
    pub(crate) fn pointer(&mut self, arg: u16, address: u64) {
        if address != 0 {
            self.addresses.push(address);
            self.args.push(arg);
        }
    }

    fn name(&mut self, name: &[u8]) -> u32 {
        let fp = fingerprint(name);
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The raw types the framing walk notes: in a v7 file hipMalloc (215)
    /// and hipFree (90) are, a launch (hipModuleLaunchKernel) and
    /// hipMemcpy are not; every table's raw id of each covered API is.
    #[test]
    fn the_walk_notes_allocations_and_frees_of_every_table() {
        assert!(may_be_memory(215) && may_be_memory(90));
        assert!(!may_be_memory(id::HIP_MODULE_LAUNCH_KERNEL) && !may_be_memory(id::HIP_MEMCPY));
        for table in [ApiTable::V6, ApiTable::V7, ApiTable::V8AssumedV7] {
            for api in covered_apis() {
                let raw = (0..=u16::MAX).find(|&t| table.canonical(t) == Some(api));
                assert!(raw.is_none_or(may_be_memory), "{table:?} id of v7 {api}");
            }
        }
    }
}
