//! The kernel table of one pass: launches and code object per distinct
//! kernel name, in bounded memory.
//!
//! A launch-heavy archive looks a name up millions of times, and hashing a
//! long mangled name each time (and comparing it) was a sixth of `archive
//! info`. So a small direct-mapped cache sits in front of the hash table,
//! keyed by a fingerprint of the name's length and three 8-byte samples; a hit is
//! confirmed by comparing the whole name, so a fingerprint collision costs
//! time, never a wrong count. The table itself hashes whole names, so
//! crafted names that share their samples cannot degrade it.

use std::hash::BuildHasher;

use hashbrown::HashTable;
use rustc_hash::FxBuildHasher;

use crate::archive::format::blobs::BlobHash;

/// Distinct kernel names tracked.
const MAX_KERNELS: usize = 1 << 17;
/// Bytes of distinct kernel names kept.
const MAX_KERNEL_NAME_BYTES: usize = 16 << 20;
/// Slots of the fingerprint cache (a power of two).
const CACHE_SLOTS: usize = 1024;

/// Launch count and code object of one kernel.
pub(in crate::archive) struct KernelTally {
    /// The mangled name, raw bytes.
    pub(in crate::archive) name: Box<[u8]>,
    /// Launches counted.
    pub(in crate::archive) launches: u64,
    /// The code object of the first launch that named one.
    pub(in crate::archive) code_object: BlobHash,
    /// File offset of the launch that gave `code_object` (u64::MAX: none),
    /// so merging workers keeps the first launch's code object.
    pub(in crate::archive) co_offset: u64,
    /// The code object of the last launch added, so a caller can skip
    /// recording a reference it has just recorded.
    last_code_object: BlobHash,
}

/// One cache slot: a fingerprint and the entry it last led to.
#[derive(Clone, Copy)]
struct Slot {
    fingerprint: u64,
    entry: u32,
}

/// Distinct kernels of a pass, in first-seen order.
pub(in crate::archive) struct KernelTable {
    entries: Vec<KernelTally>,
    index: HashTable<u32>,
    cache: Box<[Slot; CACHE_SLOTS]>,
    name_bytes: usize,
    /// Launches of kernels that did not fit under the caps.
    pub(in crate::archive) untracked: u64,
}

/// A cheap fingerprint of a name: its length and its first, middle and
/// last eight bytes (mangled names share long prefixes, so the later
/// samples carry most of the difference). Shorter names are read whole.
#[inline]
pub(in crate::archive) fn fingerprint(name: &[u8]) -> u64 {
    let n = name.len();
    let word = |at: usize| {
        name.get(at..at + 8)
            .map_or(0, |w| u64::from_le_bytes(w.try_into().expect("8 bytes")))
    };
    let samples = if n >= 8 {
        let last = n - 8;
        [word(0), word(last / 2), word(last)]
    } else {
        let mut w = [0u8; 8];
        w[..n].copy_from_slice(name);
        [u64::from_le_bytes(w), 0, 0]
    };
    // One multiply over the combined samples: the cache only needs its
    // top bits spread, and this sits on every launch's critical path.
    let [a, b, c] = samples;
    (a ^ b.rotate_left(21) ^ c.rotate_left(42) ^ (n as u64)).wrapping_mul(0x9E37_79B9_7F4A_7C15)
}

impl KernelTable {
    /// An empty table.
    pub(in crate::archive) fn new() -> KernelTable {
        KernelTable {
            entries: Vec::new(),
            index: HashTable::new(),
            cache: Box::new(
                [Slot {
                    fingerprint: 0,
                    entry: u32::MAX,
                }; CACHE_SLOTS],
            ),
            name_bytes: 0,
            untracked: 0,
        }
    }

    /// The kernels, in first-seen order.
    pub(in crate::archive) fn iter(&self) -> impl Iterator<Item = &KernelTally> {
        self.entries.iter()
    }

    /// Adds `launches` of kernel `name` (whose [`fingerprint`] is `fp`: a
    /// launch's is computed once for every cache keyed by it), whose code
    /// object `code_object` came from the launch at file offset `co_offset`
    /// (u64::MAX: none). `fp` is not checked against `name`: under a mapped
    /// window another program can change the bytes between the two reads
    /// (`mapped.rs`), which may only misfile that launch.
    /// Gives whether `code_object` differs from the one of the kernel's
    /// previous launch (or the kernel is new or untracked): only then can it
    /// be a code object the caller has not referenced yet.
    #[inline]
    pub(in crate::archive) fn add(
        &mut self,
        name: &[u8],
        fp: u64,
        launches: u64,
        code_object: BlobHash,
        co_offset: u64,
    ) -> bool {
        let slot = (fp >> 54) as usize % CACHE_SLOTS;
        let cached = self.cache[slot];
        let entry = match self.entries.get(cached.entry as usize) {
            Some(e) if cached.fingerprint == fp && *e.name == *name => Some(cached.entry),
            _ => self.lookup(name, fp, slot),
        };
        let Some(entry) = entry else {
            self.untracked += launches;
            return true;
        };
        let k = &mut self.entries[entry as usize];
        k.launches += launches;
        if co_offset < k.co_offset {
            k.code_object = code_object;
            k.co_offset = co_offset;
        }
        let changed = k.launches == launches || k.last_code_object != code_object;
        k.last_code_object = code_object;
        changed
    }

    /// The entry of `name` from the hash table, inserted if new and under
    /// the caps (`None` past them); remembered in cache slot `slot`.
    #[cold]
    fn lookup(&mut self, name: &[u8], fp: u64, slot: usize) -> Option<u32> {
        let hash = FxBuildHasher.hash_one(name);
        let entries = &self.entries;
        let found = self
            .index
            .find(hash, |&i| *entries[i as usize].name == *name)
            .copied();
        let entry = match found {
            Some(i) => i,
            None => {
                if self.entries.len() >= MAX_KERNELS
                    || self.name_bytes + name.len() > MAX_KERNEL_NAME_BYTES
                {
                    return None;
                }
                let i = self.entries.len() as u32;
                self.name_bytes += name.len();
                self.entries.push(KernelTally {
                    name: name.into(),
                    launches: 0,
                    code_object: BlobHash::default(),
                    co_offset: u64::MAX,
                    last_code_object: BlobHash::default(),
                });
                let entries = &self.entries;
                self.index.insert_unique(hash, i, |&j| {
                    FxBuildHasher.hash_one(&*entries[j as usize].name)
                });
                i
            }
        };
        self.cache[slot] = Slot {
            fingerprint: fp,
            entry,
        };
        Some(entry)
    }

    /// Folds another worker's table into this one.
    pub(in crate::archive) fn merge(&mut self, other: KernelTable) {
        self.untracked += other.untracked;
        for k in other.entries {
            let fp = fingerprint(&k.name);
            self.add(&k.name, fp, k.launches, k.code_object, k.co_offset);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_sharing_every_sample_are_still_told_apart() {
        // Same length, same first/middle/last eight bytes: same fingerprint.
        let a = b"_ZN2at6native_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAA_1_kernelEv".to_vec();
        let mut b = a.clone();
        b[20] = b'B';
        assert_eq!(fingerprint(&a), fingerprint(&b));
        let mut t = KernelTable::new();
        for _ in 0..3 {
            t.add(&a, fingerprint(&a), 1, BlobHash::default(), u64::MAX);
            t.add(&b, fingerprint(&b), 2, BlobHash::default(), u64::MAX);
        }
        let counts: Vec<(&[u8], u64)> = t.iter().map(|k| (&*k.name, k.launches)).collect();
        assert_eq!(counts, vec![(&a[..], 3), (&b[..], 6)]);
    }

    #[test]
    fn short_and_empty_names_count_separately() {
        let mut t = KernelTable::new();
        for name in [&b""[..], b"k", b"k\0", b"k", b""] {
            t.add(name, fingerprint(name), 1, BlobHash::default(), u64::MAX);
        }
        let counts: Vec<u64> = t.iter().map(|k| k.launches).collect();
        assert_eq!(counts, vec![2, 2, 1]);
    }

    #[test]
    fn a_code_object_is_new_only_when_it_changes_for_its_kernel() {
        let co = |n| BlobHash::new(n, n);
        let mut t = KernelTable::new();
        let seen: Vec<bool> = [(b"a", 1), (b"a", 1), (b"b", 1), (b"a", 2), (b"a", 1)]
            .iter()
            .map(|(name, c)| t.add(&name[..], fingerprint(&name[..]), 1, co(*c), 0))
            .collect();
        assert_eq!(seen, vec![true, false, true, true, true]);
    }

    #[test]
    fn the_earliest_code_object_wins_across_merges() {
        let co = |n| BlobHash::new(n, n);
        let mut a = KernelTable::new();
        a.add(b"k", fingerprint(b"k"), 1, co(2), 200);
        let mut b = KernelTable::new();
        b.add(b"k", fingerprint(b"k"), 1, BlobHash::default(), u64::MAX);
        b.add(b"k", fingerprint(b"k"), 1, co(1), 100);
        a.merge(b);
        let k = a.iter().next().unwrap();
        assert_eq!((k.launches, k.code_object), (3, co(1)));
    }

    #[test]
    fn names_past_the_cap_are_counted_as_untracked() {
        let mut t = KernelTable::new();
        for i in 0..MAX_KERNELS + 5 {
            let name = format!("k{i}");
            let name = name.as_bytes();
            t.add(name, fingerprint(name), 1, BlobHash::default(), u64::MAX);
        }
        t.add(b"k0", fingerprint(b"k0"), 1, BlobHash::default(), u64::MAX);
        assert_eq!(t.iter().count(), MAX_KERNELS);
        assert_eq!(t.untracked, 5);
        assert_eq!(t.iter().next().unwrap().launches, 2);
    }
}
