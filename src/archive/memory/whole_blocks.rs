//! Which aligned blocks of memory one live range holds whole, so that
//! every pointer into such a block is live and costs one probe. The audit
//! keeps two of them ([`super::page_cache::PageCache`]): 4 KiB pages, for
//! buffers of any size, and 2 MiB granules, for the large segments a
//! caching allocator carves tensors from (whose pages would be far more
//! than the page table holds).

use crate::archive::summary::arg_shapes::Listed;
#[cfg(target_arch = "x86_64")]
use crate::archive::summary::arg_shapes::{Word, GROUP};

/// The odd multiplier of the scattering hash (2^64 over the golden ratio).
const SPREAD: u64 = 0x9E37_79B9_7F4A_7C15;

/// Proof that the CPU runs AVX2, which [`WholeBlocks::listed_misses`]
/// needs: found once per view, so that a launch pays no test for it.
#[derive(Debug, Clone, Copy)]
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
pub(crate) struct Avx2(());

impl Avx2 {
    /// The proof, where the CPU has AVX2 (never off x86-64).
    pub(crate) fn detect() -> Option<Avx2> {
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx2") {
            return Some(Avx2(()));
        }
        None
    }
}

/// How an entry is kept, in as few bytes as the table's tags need, so
/// that a table of blocks whose tags are short holds more entries in the
/// same bytes. An entry of a block is `tag << shift` with the `shift` bits
/// below it all set when the block is whole, all but the lowest when it is
/// not ([`WholeBlocks::code`]).
pub(crate) trait Entry: Copy + Into<u64> {
    /// The largest entry.
    const MAX: u64;
    /// Whether an entry has room for every block's number, so that its
    /// tag is the block itself, kept in place as the block's last address
    /// (`shift` is the block's bits): a pointer is then told by one `or`.
    /// Otherwise the tag is the block's bits above its entry's index, and
    /// `shift` is the one bit that says whether it is whole.
    const WHOLE_TAG: bool;

    /// The entry of value `v`, which is at most [`Self::MAX`].
    fn of(v: u64) -> Self;
}

impl Entry for u16 {
    const MAX: u64 = u16::MAX as u64;
    const WHOLE_TAG: bool = false;

    fn of(v: u64) -> u16 {
        v as u16
    }
}

impl Entry for u64 {
    const MAX: u64 = u64::MAX;
    const WHOLE_TAG: bool = true;

    fn of(v: u64) -> u64 {
        v
    }
}

/// Whether blocks of 2^`BITS` bytes are whole, direct-mapped by block
/// into `ENTRIES` entries (a power of two) of type `E`. The null block
/// (the first) is never kept, so no table knows a null pointer's block
/// whole, and the audit tells a null pointer only when a table misses.
pub(crate) struct WholeBlocks<E, const BITS: u32, const ENTRIES: usize, const SCATTER: bool> {
    /// Per entry, a block's code ([`Self::code`]), or [`Self::EMPTY`].
    known: Box<[E; ENTRIES]>,
    /// The entries filled since the table was last empty, while they are
    /// at most an eighth of them (`None` past it): forgetting a wide range
    /// or every block then looks at these alone.
    filled: Option<Vec<u32>>,
}

impl<E: Entry, const BITS: u32, const ENTRIES: usize, const SCATTER: bool> Default
    for WholeBlocks<E, BITS, ENTRIES, SCATTER>
{
    fn default() -> WholeBlocks<E, BITS, ENTRIES, SCATTER> {
        const { assert!(ENTRIES.is_power_of_two() && ENTRIES <= 1 << 32) };
        let known = vec![E::of(Self::EMPTY); ENTRIES].into_boxed_slice();
        WholeBlocks {
            known: known.try_into().unwrap_or_else(|_| unreachable!()),
            filled: Some(Vec::new()),
        }
    }
}

impl<E: Entry, const BITS: u32, const ENTRIES: usize, const SCATTER: bool>
    WholeBlocks<E, BITS, ENTRIES, SCATTER>
{
    /// How far an entry's tag is shifted ([`Entry::WHOLE_TAG`]).
    const SHIFT: u32 = if E::WHOLE_TAG { BITS } else { 1 };

    /// The least of the values too large for a tag.
    const NO_TAG: u64 = E::MAX >> Self::SHIFT;

    /// An entry that knows no block: the first tag too large, with the
    /// bits below it clear, which no block's code has.
    const EMPTY: u64 = Self::NO_TAG << Self::SHIFT;

    /// Entries listed at most in `filled`.
    const LISTED: usize = ENTRIES / 8;

    /// Bits of an entry's index.
    const INDEX_BITS: u32 = ENTRIES.trailing_zeros();

    /// The entry for `block`: its low index bits folded with the next
    /// ones. Consecutive blocks (one buffer's) and buffers aligned to large
    /// powers of two (whose blocks share their low bits) mostly fall in
    /// entries of their own; blocks that share one (such as two pages
    /// 16 MiB apart) are told apart by their tags. Folding in the bits
    /// above too would cost the probe three instructions a pointer, for
    /// blocks that are told apart all the same.
    #[inline]
    fn entry(block: u64) -> usize {
        (block ^ Self::scatter(block >> Self::INDEX_BITS)) as usize % ENTRIES
    }

    /// What the bits above the index are folded in as: themselves, or with
    /// `SCATTER`, a hash of them, so that blocks sharing their low bits
    /// (segments at a common stride) fall in entries far apart while the
    /// consecutive blocks of one segment still fall in entries of their own.
    #[inline]
    fn scatter(above: u64) -> u64 {
        match SCATTER {
            true => above.wrapping_mul(SPREAD) >> (u64::BITS - Self::INDEX_BITS),
            false => above,
        }
    }

    /// The tag an entry keeps of `block` ([`Entry::WHOLE_TAG`]), which
    /// with the entry's index tells the block. `None` for a block too high
    /// for a tag (for the audit's granules, from an address just under
    /// 2^53; for its pages, the last page of the address space), which no
    /// entry knows, and for the null block, which none keeps.
    #[inline]
    fn tag(block: u64) -> Option<u64> {
        Some(Self::untested_tag(block)).filter(|&t| t < Self::NO_TAG && block != 0)
    }

    /// [`Self::tag`] without the tests, for the probe that compares a
    /// whole entry.
    #[inline]
    fn untested_tag(block: u64) -> u64 {
        match E::WHOLE_TAG {
            true => block,
            false => block >> Self::INDEX_BITS,
        }
    }

    /// The entry of a block whose tag is `tag`, whole or not.
    #[inline]
    fn code(tag: u64, whole: bool) -> u64 {
        tag << Self::SHIFT | ((1 << Self::SHIFT) - 1) ^ u64::from(!whole)
    }

    /// Zero when the table already knows the block of address `a` is
    /// whole, else not: the entry, as a `u64`, xor the whole code of the
    /// block's tag, which a block with no tag (whose tag does not fit an
    /// entry) and the null block match in no entry. It asks nothing and
    /// changes no entry, and the misses of many pointers can be or-ed
    /// together without a branch each.
    #[inline]
    pub(crate) fn misses(&self, a: u64) -> u64 {
        let block = a >> BITS;
        self.known[Self::entry(block)].into() ^ Self::code(Self::untested_tag(block), true)
    }

    /// Whether the table already knows the block of address `a` is whole.
    #[cfg(test)]
    fn knows_whole(&self, a: u64) -> bool {
        self.misses(a) == 0
    }

    /// Whether the table knows the block of address `a` is whole or not
    /// (`None`: it does not know, or the block has no tag); it asks
    /// nothing and changes no entry.
    #[inline]
    pub(crate) fn known(&self, a: u64) -> Option<bool> {
        let block = a >> BITS;
        let e: u64 = self.known[Self::entry(block)].into();
        (Self::tag(block) == Some(e >> Self::SHIFT)).then_some(e & 1 == 1)
    }

    /// Whether the block of address `a` is whole, asking `holds` (with the
    /// block's first address) the first time, after a change met it, and
    /// every time for a block with no tag.
    #[inline]
    pub(crate) fn whole(&mut self, a: u64, holds: impl FnOnce(u64) -> bool) -> bool {
        let block = a >> BITS;
        let Some(tag) = Self::tag(block) else {
            return holds(block << BITS);
        };
        let index = Self::entry(block);
        let e: u64 = self.known[index].into();
        if e >> Self::SHIFT == tag {
            return e & 1 == 1;
        }
        if e == Self::EMPTY {
            self.fill(index);
        }
        let whole = holds(block << BITS);
        self.known[index] = E::of(Self::code(tag, whole));
        whole
    }

    /// Lists entry `index` as filled, or stops listing past
    /// [`Self::LISTED`].
    fn fill(&mut self, index: usize) {
        if let Some(filled) = &mut self.filled {
            match filled.len() < Self::LISTED {
                true => filled.push(index as u32),
                false => self.filled = None,
            }
        }
    }

    /// The first and last of the blocks the bytes `base..end` hold whole,
    /// if any: only a range that holds a block whole can make it whole by
    /// coming or not by going (a block is whole when one live range holds
    /// it), so those are all a change of the range has to forget.
    fn held(base: u64, end: u64) -> Option<(u64, u64)> {
        let low = (base >> BITS) + u64::from(base & ((1 << BITS) - 1) != 0);
        let past = end >> BITS;
        (low < past).then(|| (low, past - 1))
    }

    /// Whether the bytes `base..end` hold a block whole.
    pub(crate) fn hold_one(base: u64, end: u64) -> bool {
        Self::held(base, end).is_some()
    }

    /// How many entries forgetting the blocks the bytes `base..end` hold
    /// whole looks at ([`Self::forget`]).
    pub(crate) fn forget_looks(&self, base: u64, end: u64) -> u64 {
        Self::held(base, end).map_or(0, |(low, high)| self.sweep(low, high).1)
    }

    /// How forgetting blocks `low..=high` looks at entries, and at how
    /// many: at the filled entries when the table lists fewer than the
    /// blocks, else at each block's entry while the blocks are fewer than
    /// the entries, else at every entry.
    fn sweep(&self, low: u64, high: u64) -> (Sweep, u64) {
        let blocks = high - low + 1;
        match &self.filled {
            Some(filled) if (filled.len() as u64) < blocks => (Sweep::Filled, filled.len() as u64),
            _ if blocks < ENTRIES as u64 => (Sweep::Blocks, blocks),
            _ => (Sweep::Every, ENTRIES as u64),
        }
    }

    /// Forgets the blocks that the bytes `base..end` hold whole
    /// ([`Self::held`]), the way [`Self::sweep`] picks (each entry's block
    /// follows from its index and tag), so that a large segment coming or
    /// going costs at most one look at each filled entry and leaves what is
    /// known of other blocks, and a buffer smaller than a block forgets
    /// none of that size.
    pub(crate) fn forget(&mut self, base: u64, end: u64) {
        let Some((low, high)) = Self::held(base, end) else {
            return;
        };
        // Every entry looked at is stored again, emptied or as it was, with
        // no branch (one taken at random, mispredicted about as often); an
        // empty entry whose block seems held is emptied again, which changes
        // nothing.
        let forget = |known: &mut [E; ENTRIES], index: usize| {
            let e: u64 = known[index].into();
            let held = Self::block_of(index, e >> Self::SHIFT).wrapping_sub(low) <= high - low;
            known[index] = E::of(if held { Self::EMPTY } else { e });
        };
        match (self.sweep(low, high).0, &self.filled) {
            (Sweep::Filled, Some(filled)) => {
                for &index in filled {
                    forget(&mut self.known, index as usize);
                }
            }
            (Sweep::Blocks, _) => {
                for block in low..=high {
                    forget(&mut self.known, Self::entry(block));
                }
            }
            _ => (0..ENTRIES).for_each(|index| forget(&mut self.known, index)),
        }
    }

    /// What a live range of the bytes `base..end` coming does to the
    /// table: forgets the blocks they hold whole, as [`Self::forget`], then
    /// knows the first of them whole (this range holds it) in place of what
    /// its entry held. That block holds the range's base when the base is
    /// aligned, as buffers are, and kernels are passed their buffers' bases:
    /// the first pointer into a new buffer is then not asked of the map.
    pub(crate) fn came_whole(&mut self, base: u64, end: u64) {
        self.forget(base, end);
        let Some((first, _)) = Self::held(base, end) else {
            return;
        };
        if let Some(tag) = Self::tag(first) {
            let index = Self::entry(first);
            if self.known[index].into() == Self::EMPTY {
                self.fill(index);
            }
            self.known[index] = E::of(Self::code(tag, true));
        }
    }

    /// The block whose entry is `index` and whose tag is `tag`: the
    /// inverse of [`Self::entry`] and [`Self::tag`].
    fn block_of(index: usize, tag: u64) -> u64 {
        match E::WHOLE_TAG {
            true => tag,
            false => {
                tag << Self::INDEX_BITS | ((index as u64 ^ Self::scatter(tag)) % ENTRIES as u64)
            }
        }
    }

    /// Forgets every block.
    pub(crate) fn clear(&mut self) {
        match self.filled.as_mut() {
            Some(filled) => filled
                .drain(..)
                .for_each(|i| self.known[i as usize] = E::of(Self::EMPTY)),
            None => self.known.fill(E::of(Self::EMPTY)),
        }
        self.filled = Some(Vec::new());
    }
}

impl<E: Entry, const BITS: u32, const ENTRIES: usize, const SCATTER: bool>
    WholeBlocks<E, BITS, ENTRIES, SCATTER>
{
    /// [`Self::misses`] of every word `listed` lists, or-ed, padding
    /// included: zero when the table knows every word's block whole, else
    /// not. With `avx2`, eight words at a time, in vector lanes: two
    /// gathers read the words, their entries are folded from them in the
    /// lanes and two more gathers read those, so a group of the page table
    /// takes about twenty instructions where one word at a time takes
    /// eleven a word. Without, one word at a time.
    #[inline]
    pub(in crate::archive) fn listed_misses(&self, listed: Listed<'_>, avx2: Option<Avx2>) -> u64 {
        #[cfg(target_arch = "x86_64")]
        if avx2.is_some() {
            let (groups, args) = listed.groups();
            // SAFETY: `avx2` proves the CPU has AVX2, and a layout lists
            // only words whose eight bytes lie inside the arguments it
            // matched (`Listed`).
            return unsafe { self.gathered(groups, args) };
        }
        let _ = avx2;
        listed.misses(|a| self.misses(a))
    }

    /// [`Self::listed_misses`] with AVX2: lane by lane, [`Self::misses`].
    /// The entry ([`Self::entry`]) is the block's low index bits xor the
    /// next ones, scattered by the low 64 bits of their product with
    /// [`SPREAD`] (made of three 32-bit products, as AVX2 has no 64-bit
    /// one). The whole code ([`Self::code`]) of a table whose tag is the
    /// block kept in place is the address with the bits below the block
    /// set; of one whose tag is the bits above the index, that tag shifted
    /// by one with the lowest bit set. Two-byte entries are read in pairs,
    /// four bytes at an even entry, so no read passes the table's end, and
    /// the entry's half is shifted down.
    ///
    /// # Safety
    ///
    /// The CPU has AVX2, and the eight bytes at every word's offset lie
    /// inside `args`.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    unsafe fn gathered(&self, groups: &[[Word; GROUP]], args: &[u8]) -> u64 {
        use std::arch::x86_64::*;
        const {
            assert!(GROUP == 8 && size_of::<Word>() == 4 && ENTRIES <= 1 << 32);
            assert!(size_of::<E>() == 8 && E::WHOLE_TAG || size_of::<E>() == 2 && !E::WHOLE_TAG);
        };
        let block_bits = _mm_set_epi64x(0, i64::from(BITS));
        let index_bits = _mm_set_epi64x(0, i64::from(Self::INDEX_BITS));
        let scatter_bits = _mm_set_epi64x(0, i64::from(u64::BITS - Self::INDEX_BITS));
        let spread = _mm256_set1_epi64x(SPREAD as i64);
        let spread_high = _mm256_set1_epi64x((SPREAD >> 32) as i64);
        let below_block = _mm256_set1_epi64x((1 << BITS) - 1);
        let index_mask = _mm256_set1_epi64x(ENTRIES as i64 - 1);
        let one = _mm256_set1_epi64x(1);
        let half_mask = _mm256_set1_epi64x(0xFFFF);
        let offset_mask = _mm256_set1_epi32(0xFFFF);
        let known = self.known.as_ptr();
        let mut any = _mm256_setzero_si256();
        for group in groups {
            // SAFETY: a group is eight 4-byte words, 32 bytes.
            let lanes = unsafe { _mm256_loadu_si256(group.as_ptr().cast()) };
            // Each lane's low half is a word's offset (`Word` is laid out
            // as written, offset first, little-endian).
            let offsets = _mm256_and_si256(lanes, offset_mask);
            for half in [
                _mm256_castsi256_si128(offsets),
                _mm256_extracti128_si256::<1>(offsets),
            ] {
                // SAFETY: every offset is a word's, whose eight bytes lie
                // inside `args` (the caller's promise).
                let a = unsafe { _mm256_i32gather_epi64::<1>(args.as_ptr().cast(), half) };
                let block = _mm256_srl_epi64(a, block_bits);
                let above = _mm256_srl_epi64(block, index_bits);
                let folded = match SCATTER {
                    true => {
                        let low = _mm256_mul_epu32(above, spread);
                        let cross = _mm256_add_epi64(
                            _mm256_mul_epu32(_mm256_srli_epi64::<32>(above), spread),
                            _mm256_mul_epu32(above, spread_high),
                        );
                        let product = _mm256_add_epi64(low, _mm256_slli_epi64::<32>(cross));
                        _mm256_srl_epi64(product, scatter_bits)
                    }
                    false => above,
                };
                let index = _mm256_and_si256(_mm256_xor_si256(block, folded), index_mask);
                let (entry, code) = match E::WHOLE_TAG {
                    // SAFETY: `index` is masked below `ENTRIES`, the
                    // table's length in 8-byte entries.
                    true => (
                        unsafe { _mm256_i64gather_epi64::<8>(known.cast(), index) },
                        _mm256_or_si256(a, below_block),
                    ),
                    false => {
                        // SAFETY: the pair of 2-byte entries at an even
                        // index below `ENTRIES` (a power of two) lies
                        // inside the table.
                        let pair = unsafe {
                            _mm256_i64gather_epi32::<4>(known.cast(), _mm256_srli_epi64::<1>(index))
                        };
                        let shift = _mm256_slli_epi64::<4>(_mm256_and_si256(index, one));
                        let entry = _mm256_and_si256(
                            _mm256_srlv_epi64(_mm256_cvtepu32_epi64(pair), shift),
                            half_mask,
                        );
                        (entry, _mm256_or_si256(_mm256_slli_epi64::<1>(above), one))
                    }
                };
                any = _mm256_or_si256(any, _mm256_xor_si256(entry, code));
            }
        }
        u64::from(_mm256_testz_si256(any, any) == 0)
    }
}

/// Which entries forgetting a range of blocks looks at ([`WholeBlocks::sweep`]).
enum Sweep {
    /// The filled entries the table lists.
    Filled,
    /// Each block's entry.
    Blocks,
    /// Every entry.
    Every,
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    use crate::archive::memory::page_cache::{Granules, Pages};

    const INDEX_BITS: u32 = Pages::INDEX_BITS;
    const ENTRIES: usize = 1 << INDEX_BITS;

    /// A block is asked about once and then answered from its entry; a
    /// second block of the same entry (its bits above the index differ) is
    /// told apart and takes the entry over, so the first is asked about
    /// again; a block too high for a tag is asked about at every probe.
    #[test]
    fn blocks_sharing_an_entry_or_too_high_are_never_mistaken() {
        let mut cache = Pages::default();
        let mut asks = 0;
        let mut probe = |cache: &mut Pages, page: u64, whole: bool| {
            cache.whole(page << 12, |_| {
                asks += 1;
                whole
            })
        };
        let low = 0x7f00_0000_0000u64 >> 12;
        let twin = (1..u64::from(u32::MAX))
            .map(|t| (low & 0xfff) | ((t + (low >> INDEX_BITS)) << INDEX_BITS))
            .find(|&p| Pages::entry(p) == Pages::entry(low))
            .expect("a page of the same entry");
        assert!(probe(&mut cache, low, true));
        assert!(probe(&mut cache, low, false), "answered from the entry");
        assert!(
            !probe(&mut cache, twin, false),
            "the twin page was answered from the first page's entry"
        );
        assert!(probe(&mut cache, low, true));
        let high = u64::MAX >> 12;
        for _ in 0..3 {
            assert!(probe(&mut cache, high, true));
        }
        assert_eq!(
            asks,
            1 + 1 + 1 + 3,
            "low, twin, low again, and high each time"
        );
        assert!(cache.knows_whole(low << 12));
        assert!(!cache.knows_whole(twin << 12), "taken over by low");
        assert!(!cache.knows_whole(high << 12), "no tag, never known");
        assert_eq!(cache.known(low << 12), Some(true));
        assert_eq!(cache.known(twin << 12), None, "taken over by low");
        assert_eq!(cache.known(high << 12), None, "no tag, never known");
        assert!(!cache.whole(twin << 12, |_| false));
        assert_eq!(cache.known(twin << 12), Some(false), "known not whole");
    }

    /// The probe that asks nothing knows no block of an empty table: not
    /// the null block, nor the last block with a tag, nor the blocks past
    /// it (whose codes could read as an empty entry's), in either table.
    #[test]
    fn an_empty_table_knows_no_block_whole() {
        let pages = Pages::default();
        let untagged = Pages::NO_TAG;
        for page in [0, 1, untagged - 1, untagged] {
            assert!(!pages.knows_whole(page << 12), "page {page:#x}");
        }
        let granules = Granules::default();
        let untagged = Granules::NO_TAG << Granules::INDEX_BITS;
        for granule in [0, 1, untagged - 1, untagged, untagged << 1, u64::MAX >> 21] {
            assert!(!granules.knows_whole(granule << 21), "granule {granule:#x}");
        }
    }

    /// The null block is asked about at every probe and never kept, so a
    /// null pointer is never known whole, even where a range holds the
    /// null page (the audit then tells nulls apart only on a miss).
    #[test]
    fn the_null_block_is_never_kept() {
        let mut pages = Pages::default();
        let mut granules = Granules::default();
        let mut asks = 0;
        for a in [0, 0x10, 0xfff, 0] {
            assert!(pages.whole(a, |start| {
                asks += 1;
                start == 0
            }));
            assert!(granules.whole(a, |start| {
                asks += 1;
                start == 0
            }));
        }
        assert_eq!(asks, 8, "every probe of either table asks");
        assert!(!pages.knows_whole(0));
        assert!(!granules.knows_whole(0));
        assert_eq!(pages.known(0), None);
        assert_eq!(granules.known(0), None);
    }

    /// Granules are asked about by their first address, and forgetting
    /// the bytes of a range forgets exactly the granules it holds whole: a
    /// buffer within one granule forgets none, since no granule is whole
    /// by it.
    #[test]
    fn forgetting_bytes_forgets_the_blocks_they_hold() {
        let mut granules = Granules::default();
        let base = 0x7f00_0000_0000u64;
        for g in 0..4 {
            let first = base + (g << 21);
            assert!(granules.whole(first + 0x1234, |start| {
                assert_eq!(start, first);
                true
            }));
        }
        let known = |granules: &Granules| -> Vec<bool> {
            (0..4)
                .map(|g| granules.knows_whole(base + (g << 21)))
                .collect()
        };
        granules.forget(base + (1 << 21) + 5, base + (1 << 21) + 0x10_0000);
        assert_eq!(known(&granules), [true; 4], "within one granule");
        granules.forget(base + (1 << 21) + 5, base + (3 << 21) + 7);
        assert_eq!(known(&granules), [true, true, false, true]);
        granules.forget(base, base + (1 << 21));
        assert_eq!(known(&granules), [false, true, false, true], "exactly one");
    }

    /// A live range that comes is known whole at its first held block, in
    /// place of another block of that entry, and at no other; a range
    /// holding no block whole teaches nothing.
    #[test]
    fn a_range_that_comes_is_known_whole_at_its_first_block() {
        let mut pages = Pages::default();
        let base = 0x7f00_0010_0000u64;
        // The next page of the same entry, known not whole.
        let page = base >> 12;
        let rival = (page + 1..).find(|&p| Pages::entry(p) == Pages::entry(page));
        let rival = rival.unwrap() << 12;
        assert!(!pages.whole(rival, |_| false));
        pages.came_whole(base, base + 0x4000);
        assert!(pages.knows_whole(base + 0xfff), "asked nothing");
        assert_eq!(pages.known(rival), None, "its entry was taken over");
        assert!(!pages.knows_whole(base + 0x1000), "only the first page");
        pages.came_whole(base + 0x4001, base + 0x5fff);
        assert!(!pages.knows_whole(base + 0x4001), "not the base's page");
        assert!(!pages.knows_whole(base + 0x5000), "no page held whole");
        pages.forget(base, base + 0x4000);
        assert!(!pages.knows_whole(base), "gone again");
    }

    /// Bytes that meet more pages than the table has entries forget
    /// exactly the pages among them, and no other: they meet every entry,
    /// so each page outside shares its entry with one inside. Whether the
    /// table lists its few filled entries or has filled too many to list
    /// (the pages of other buffers around, filled first).
    #[test]
    fn a_range_wider_than_the_table_forgets_only_its_own_pages() {
        for others in [0, ENTRIES as u64 / 4] {
            let mut pages = Pages::default();
            let segment = 0x7f00_4000_0000u64;
            let wide = (ENTRIES as u64 + 100) << 12;
            let inside = [segment, segment + 0x5000, segment + wide - 1];
            let outside = [segment - 1, segment + wide, segment + (1 << 36), 0x1000];
            let around = (0..others).map(|p| 0x5500_0000_0000 + (p << 12));
            for a in around.chain(inside).chain(outside) {
                assert!(pages.whole(a, |_| true));
            }
            assert_eq!(pages.filled.is_some(), others == 0, "{others}");
            pages.forget(segment, segment + wide);
            for a in inside {
                assert!(!pages.knows_whole(a), "{a:#x} was in the range");
            }
            for a in outside {
                assert!(pages.knows_whole(a), "{a:#x} was not in the range");
            }
        }
    }

    /// Forgetting every block forgets them all, whether the table lists
    /// its filled entries or has filled too many to list, and the table
    /// lists what it fills from then on.
    #[test]
    fn clearing_forgets_every_block() {
        for count in [10, ENTRIES as u64] {
            let mut pages = Pages::default();
            let all: Vec<u64> = (0..count).map(|p| 0x7f00_0000_0000 + (p << 12)).collect();
            for &a in &all {
                assert!(pages.whole(a, |_| true));
            }
            pages.clear();
            assert!(all.iter().all(|&a| !pages.knows_whole(a)), "{count}");
            assert!(pages.whole(all[0], |_| true));
            assert_eq!(
                pages.filled.as_deref(),
                Some(&[Pages::entry(all[0] >> 12) as u32][..])
            );
        }
    }

    /// Segments of 32 granules whose bases share their low bits (as at a
    /// common stride of 64 MiB) fall in entries of their own in a
    /// scattering table, where folding alone would stack them in the same
    /// few entries.
    #[test]
    fn scattering_spreads_segments_at_a_common_stride() {
        type Folded = WholeBlocks<u16, 21, 4096, false>;
        type Scattered = WholeBlocks<u16, 21, 4096, true>;
        let granules: Vec<u64> = (0..64u64)
            .flat_map(|s| (0..32).map(move |g| (0x7f00_0000_0000u64 >> 21) + (s << 12) + g))
            .collect();
        let distinct = |entry: fn(u64) -> usize| {
            let mut e: Vec<usize> = granules.iter().map(|&g| entry(g)).collect();
            e.sort_unstable();
            e.dedup();
            e.len()
        };
        assert!(
            distinct(Folded::entry) <= 128,
            "folded: {}",
            distinct(Folded::entry)
        );
        assert!(
            distinct(Scattered::entry) >= 1600,
            "scattered: {}",
            distinct(Scattered::entry)
        );
    }

    /// An entry's block follows from its index and tag, in both tables
    /// (the null block has no tag: it is never kept).
    #[test]
    fn an_entry_tells_its_block() {
        assert_eq!((Granules::tag(0), Pages::tag(0)), (None, None));
        let low = [1, 0xfff, 0x1000, 0x1234_5678];
        for block in low.into_iter().chain([0x3f8_0000, 0xfffd_ffff]) {
            let tag = Granules::tag(block).expect("a tag");
            assert_eq!(Granules::block_of(Granules::entry(block), tag), block);
        }
        for block in low.into_iter().chain([
            0x7_f000_0000,
            0x7_ffff_ffff,
            0x1_2345_6789,
            Pages::NO_TAG - 1,
        ]) {
            let tag = Pages::tag(block).expect("a tag");
            assert_eq!(Pages::block_of(Pages::entry(block), tag), block);
        }
    }

    /// The granule table keeps two-byte entries: the last granule below
    /// 32,767 × 2^38 (just under 2^53, above the address space of any GPU
    /// today) is answered from its entry, the next is asked about at every
    /// probe, and neither is mistaken for the other.
    #[test]
    fn granules_are_tagged_below_two_to_the_53() {
        let last = (Granules::NO_TAG << 38) - 1;
        let mut granules = Granules::default();
        let mut asks = 0;
        for a in [last, last + 1, last, last + 1, last] {
            assert_eq!(
                granules.whole(a, |_| {
                    asks += 1;
                    a == last
                }),
                a == last,
                "{a:#x}"
            );
        }
        assert_eq!(
            asks,
            1 + 2,
            "the last tagged granule once, the next each time"
        );
        assert!(granules.knows_whole(last));
        assert!(!granules.knows_whole(last + 1));
        assert!(!Granules::default().knows_whole(last + 1), "an empty entry");
    }

    /// The pages the gathered ask is tried on: the pages of a few
    /// buffers, pages sharing their entries (which the fold of the bits
    /// above the index tells apart), the null page and the last page of the
    /// address space (which has no tag).
    fn page() -> impl Strategy<Value = u64> + Clone {
        const BUFFER_PAGE: u64 = 0x7f00_0000_0000 >> 12;
        prop_oneof![
            8 => BUFFER_PAGE..BUFFER_PAGE + 64,
            8 => (0u64..4).prop_map(|t| (BUFFER_PAGE + 3) ^ (t << (INDEX_BITS + 1))),
            1 => Just(0u64),
            1 => Just(u64::MAX >> 12),
        ]
    }

    /// The granules the gathered ask is tried on: those of a few segments,
    /// granules whose scattered entry is one segment granule's (found by
    /// search, as the scatter is a hash), the null granule, the first
    /// granule with no tag and the last of the address space.
    fn granule() -> impl Strategy<Value = u64> + Clone {
        const SEGMENT: u64 = 0x7f00_0000_0000 >> 21;
        static TWINS: std::sync::OnceLock<Vec<u64>> = std::sync::OnceLock::new();
        let twins = TWINS.get_or_init(|| {
            let index = |g: u64| Granules::entry(g);
            (1u64..)
                .map(|k| (SEGMENT + 3) ^ (k << Granules::INDEX_BITS))
                .filter(|&g| index(g) == index(SEGMENT + 3))
                .take(3)
                .collect()
        });
        prop_oneof![
            8 => SEGMENT..SEGMENT + 64,
            8 => prop::sample::select(twins.clone()),
            1 => Just(0u64),
            1 => Just(Granules::NO_TAG << Granules::INDEX_BITS),
            1 => Just(u64::MAX >> 21),
        ]
    }

    /// Whether the table `blocks` of 2^`BITS`-byte blocks, having learnt
    /// the blocks of `pool` whole or not and forgotten those of
    /// `forgotten`, misses the words drawn from `words` (a block of the
    /// pool, an offset in it) asked eight at a time exactly when it misses
    /// them asked one at a time. Each word lies in an 8-byte slot of its
    /// own, the slots in the order of `slots`, all shifted by `shift`.
    fn gathered_as_one_by_one<
        E: Entry,
        const BITS: u32,
        const ENTRIES: usize,
        const SCATTER: bool,
    >(
        mut blocks: WholeBlocks<E, BITS, ENTRIES, SCATTER>,
        pool: &[(u64, bool)],
        forgotten: &[u64],
        words: &[(prop::sample::Index, u64)],
        slots: &[u16],
        shift: u16,
    ) -> Result<(), TestCaseError> {
        let avx2 = Avx2::detect().expect("this test needs a CPU with AVX2");
        for &(b, whole) in pool {
            blocks.whole(b << BITS, |_| whole);
        }
        for &b in forgotten {
            blocks.forget(b << BITS, (b << BITS).saturating_add(1 << BITS));
        }
        let mut args = vec![0u8; 16 * 8 + 8];
        let mut at = Vec::new();
        for ((i, offset), slot) in words.iter().zip(slots) {
            let a = (pool[i.index(pool.len())].0 << BITS) | (offset % (1 << BITS));
            let o = usize::from(shift + slot * 8);
            args[o..o + 8].copy_from_slice(&a.to_le_bytes());
            at.push(shift + slot * 8);
        }
        let mut buf = Vec::new();
        let listed = Listed::of(&at, &args, &mut buf);
        let one_by_one = blocks.listed_misses(listed, None);
        let gathered = blocks.listed_misses(listed, Some(avx2));
        prop_assert_eq!(gathered != 0, one_by_one != 0);
        Ok(())
    }

    /// The pool, the forgotten blocks, the words, the slots and the shift
    /// of one case of [`gathered_as_one_by_one`].
    type Case = (
        Vec<(u64, bool)>,
        Vec<u64>,
        Vec<(prop::sample::Index, u64)>,
        Vec<u16>,
        u16,
    );

    /// What [`gathered_as_one_by_one`] is tried on, with the blocks drawn
    /// from `block`: the pool the table learns (mostly whole, so that
    /// launches of every word known whole are common), the blocks it then
    /// forgets, 0 to 16 words (a block of the pool each, anywhere in it),
    /// the order of their slots and the shift of them all.
    fn case(block: impl Strategy<Value = u64> + Clone) -> impl Strategy<Value = Case> {
        (
            prop::collection::vec((block.clone(), prop::bool::weighted(0.95)), 1..24),
            prop::collection::vec(block, 0..3),
            prop::collection::vec((any::<prop::sample::Index>(), any::<u64>()), 0..=16),
            Just((0u16..16).collect::<Vec<_>>()).prop_shuffle(),
            0u16..8,
        )
    }

    proptest! {
        /// The page table asked of a launch's words eight at a time with
        /// vector gathers misses exactly when asking one word at a time
        /// misses, whatever the table knows, wherever the words lie in the
        /// arguments and however many there are.
        #[test]
        #[cfg(target_arch = "x86_64")]
        fn the_gathered_ask_of_pages_misses_when_the_ask_word_by_word_misses(
            (pool, forgotten, words, slots, shift) in case(page()),
        ) {
            gathered_as_one_by_one(Pages::default(), &pool, &forgotten, &words, &slots, shift)?;
        }

        /// The same of the granule table, whose two-byte entries are read
        /// in pairs and whose entries are scattered by a hash.
        #[test]
        #[cfg(target_arch = "x86_64")]
        fn the_gathered_ask_of_granules_misses_when_the_ask_word_by_word_misses(
            (pool, forgotten, words, slots, shift) in case(granule()),
        ) {
            gathered_as_one_by_one(Granules::default(), &pool, &forgotten, &words, &slots, shift)?;
        }
    }
}
