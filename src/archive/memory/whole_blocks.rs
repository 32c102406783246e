//! Which aligned blocks of memory one live range holds whole, so that
//! every pointer into such a block is live and costs one probe. The audit
//! keeps two of them ([`super::page_cache::PageCache`]): 4 KiB pages, for
//! buffers of any size, and 2 MiB granules, for the large segments a
//! caching allocator carves tensors from (whose pages would be far more
//! than the page table holds).

/// Bits of an entry's index.
const INDEX_BITS: u32 = 12;
/// Entries of a table; 4 bytes each.
pub(crate) const ENTRIES: usize = 1 << INDEX_BITS;
/// The least of the values too large for a tag.
const NO_TAG: u32 = u32::MAX >> 1;
/// An entry that knows no block: that of the first block with no tag, not
/// whole, which no block's entry is.
const EMPTY: u32 = NO_TAG << 1;

/// Whether blocks of 2^`BITS` bytes are whole, direct-mapped by block.
pub(crate) struct WholeBlocks<const BITS: u32> {
    /// Per entry, `tag << 1 | whole` ([`Self::tag`]), or [`EMPTY`].
    known: Box<[u32; ENTRIES]>,
}

impl<const BITS: u32> Default for WholeBlocks<BITS> {
    fn default() -> WholeBlocks<BITS> {
        WholeBlocks {
            known: Box::new([EMPTY; ENTRIES]),
        }
    }
}

impl<const BITS: u32> WholeBlocks<BITS> {
    /// The entry for `block`: its low index bits folded with the next
    /// ones. Consecutive blocks (one buffer's) and buffers aligned to large
    /// powers of two (whose blocks share their low bits) mostly fall in
    /// entries of their own; blocks that share one (such as two pages
    /// 16 MiB apart) are told apart by their tags. Folding in the bits
    /// above too would cost the probe three instructions a pointer, for
    /// blocks that are told apart all the same.
    #[inline]
    fn entry(block: u64) -> usize {
        (block ^ (block >> INDEX_BITS)) as usize % ENTRIES
    }

    /// The tag an entry keeps of `block`: the block's bits above the
    /// entry's index, which with the index tell the block. `None` for a
    /// block too high for a tag (for pages, an address of 2^55 or more),
    /// which no entry knows; no tag is [`EMPTY`]'s.
    #[inline]
    fn tag(block: u64) -> Option<u32> {
        u32::try_from(Self::above_index(block))
            .ok()
            .filter(|&t| t < NO_TAG)
    }

    /// The bits of `block` above its entry's index, of which a tag is made.
    #[inline]
    fn above_index(block: u64) -> u64 {
        block >> INDEX_BITS
    }

    /// Whether the table already knows the block of address `a` is whole;
    /// it asks nothing and changes no entry. The entry is compared as a
    /// `u64` with the block's tag and whole bit, so a block with no tag
    /// (whose tag does not fit 31 bits) matches none.
    #[inline]
    pub(crate) fn knows_whole(&self, a: u64) -> bool {
        let block = a >> BITS;
        u64::from(self.known[Self::entry(block)]) == Self::above_index(block) << 1 | 1
    }

    /// Whether the table knows the block of address `a` is whole or not
    /// (`None`: it does not know, or the block has no tag); it asks
    /// nothing and changes no entry.
    #[inline]
    pub(crate) fn known(&self, a: u64) -> Option<bool> {
        let block = a >> BITS;
        let e = self.known[Self::entry(block)];
        (Self::tag(block) == Some(e >> 1)).then_some(e & 1 == 1)
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
        let e = &mut self.known[Self::entry(block)];
        if *e >> 1 != tag {
            *e = tag << 1 | u32::from(holds(block << BITS));
        }
        *e & 1 == 1
    }

    /// Forgets the blocks that the bytes `first..=last` meet: block by
    /// block, or, when they meet more blocks than the table has entries,
    /// entry by entry (each entry's block follows from its index and tag),
    /// so that a large segment coming or going costs at most one look at
    /// each entry and leaves what is known of other blocks.
    pub(crate) fn forget(&mut self, first: u64, last: u64) {
        let (low, high) = (first >> BITS, last >> BITS);
        if high - low < ENTRIES as u64 {
            for block in low..=high {
                let e = &mut self.known[Self::entry(block)];
                if Self::tag(block) == Some(*e >> 1) {
                    *e = EMPTY;
                }
            }
            return;
        }
        for (index, e) in self.known.iter_mut().enumerate() {
            if *e != EMPTY && (low..=high).contains(&Self::block_of(index, *e >> 1)) {
                *e = EMPTY;
            }
        }
    }

    /// The block whose entry is `index` and whose tag is `tag`: the
    /// inverse of [`Self::entry`] and [`Self::tag`].
    fn block_of(index: usize, tag: u32) -> u64 {
        let above = u64::from(tag);
        above << INDEX_BITS | ((index as u64 ^ above) % ENTRIES as u64)
    }

    /// Forgets every block.
    pub(crate) fn clear(&mut self) {
        self.known.fill(EMPTY);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Pages, as the audit keeps them.
    type Pages = WholeBlocks<12>;

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
        let high = 1u64 << (56 - 12);
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

    /// The probe that asks nothing knows no page of an empty table: not
    /// the null page, nor the pages whose tags lie at or past the largest
    /// (whose entries would read as an empty one's), nor the last page.
    #[test]
    fn an_empty_table_knows_no_page_whole() {
        let cache = Pages::default();
        let first_untagged = u64::from(NO_TAG) << INDEX_BITS;
        for page in [
            0,
            1,
            first_untagged - 1,
            first_untagged,
            first_untagged + 0xfff,
        ]
        .into_iter()
        .chain([first_untagged << 1, u64::MAX >> 12])
        {
            assert!(!cache.knows_whole(page << 12), "{page:#x}");
        }
    }

    /// Granules are asked about by their first address, and forgetting
    /// the bytes of a range forgets exactly the granules it meets.
    #[test]
    fn forgetting_bytes_forgets_the_blocks_they_meet() {
        let mut granules = WholeBlocks::<21>::default();
        let base = 0x7f00_0000_0000u64;
        for g in 0..4 {
            let first = base + (g << 21);
            assert!(granules.whole(first + 0x1234, |start| {
                assert_eq!(start, first);
                true
            }));
        }
        granules.forget(base + (1 << 21) + 5, base + (2 << 21));
        let known: Vec<bool> = (0..4)
            .map(|g| granules.knows_whole(base + (g << 21)))
            .collect();
        assert_eq!(known, [true, false, false, true]);
    }

    /// Bytes that meet more pages than the table has entries forget, entry
    /// by entry, exactly the pages among them, and no other: they meet
    /// every entry, so each page outside shares its entry with one inside.
    #[test]
    fn a_range_wider_than_the_table_forgets_only_its_own_pages() {
        let mut pages = Pages::default();
        let segment = 0x7f00_4000_0000u64;
        let wide = (ENTRIES as u64 + 100) << 12;
        let inside = [segment, segment + 0x5000, segment + wide - 1];
        let outside = [segment - 1, segment + wide, segment + (1 << 36), 0x1000];
        for a in inside.iter().chain(&outside) {
            assert!(pages.whole(*a, |_| true));
        }
        pages.forget(segment, segment + wide - 1);
        for a in inside {
            assert!(!pages.knows_whole(a), "{a:#x} was in the range");
        }
        for a in outside {
            assert!(pages.knows_whole(a), "{a:#x} was not in the range");
        }
    }

    /// An entry's block follows from its index and tag.
    #[test]
    fn an_entry_tells_its_block() {
        for block in [
            0,
            1,
            0xfff,
            0x1000,
            0x7_f000_0000,
            0x7_ffff_ffff,
            0x1_2345_6789,
        ] {
            let tag = Pages::tag(block).expect("a tag");
            assert_eq!(Pages::block_of(Pages::entry(block), tag), block);
        }
    }
}
