//! Argument layouts of recently seen launches, checked in place of the
//! argument walk.
//!
//! Where a launch's argument entries end is only known by walking them, as
//! each entry's size says where the next one starts. That walk is a large
//! share of `archive info`'s CPU time on a launch-heavy archive (measured
//! in docs/performance.md). But a kernel's arguments have the same kinds and sizes at every launch, so the
//! header bytes of the last walk of a kernel (kind and size of each entry,
//! and the pointer count and offsets of a kind-3 entry) can be checked at their known
//! offsets instead: in groups of a fixed size, no load waiting for another,
//! in fewer instructions than the walk. When every one matches, the walk
//! would visit exactly the same offsets and end where the last one did;
//! when any differs, the launch is walked as before and its layout kept
//! instead.
//!
//! A layout also knows where the launch's pointer words lie (the 8-byte
//! values of kind-1 entries and the words at a kind-3 entry's recorded
//! offsets), so the allocation map reads them at those offsets instead of
//! walking the entries a second time. It lists them in whole groups too,
//! the last padded with copies of the last word, so that a question asked
//! of every word ([`Listed::misses`]) runs the same loop for most kernels
//! and its end is not mispredicted at each launch of another kernel.
//! Where checking every offset would take more checks than a layout holds,
//! the layout checks only the pointer counts, as it did before it listed
//! words, and lists none: its launches' pointers are walked, their ends
//! still found by the layout.
//!
//! A layout is found by a fingerprint of the kernel name, but it is never
//! trusted for the name: a layout that matches the bytes gives the walk's
//! answer whichever launch it came from, so a fingerprint collision costs a
//! walk, never a wrong result.

use crate::archive::format::launch::{offsets, pointer_words, ArgKind};

/// Layouts kept (a power of two).
const SLOTS: usize = 1024;
/// Checks are made in groups of this many (unused ones compare nothing), so
/// the loop's length is the same for most kernels.
pub(in crate::archive) const GROUP: usize = 8;
/// Header checks per layout at most (one per entry, and for each kind-3
/// entry one per pointer offset past the first, or one for a count of
/// none); launches with more are always walked.
const MAX_CHECKS: usize = 2 * GROUP;
/// `span` of a layout whose launches are always walked (more entries than
/// a layout checks): no record holds that many bytes past its entries'
/// start, so such a layout never matches.
const WIDE: u32 = u32::MAX;
/// Mask of a check on an entry's kind and size (the last three bytes of the
/// four loaded).
const HEADER_MASK: u32 = 0xFFFF_FF00;
/// Mask of a check on a kind-3 entry's pointer count or one of its
/// offsets (the last two bytes).
const POINTERS_MASK: u32 = 0xFFFF_0000;
/// Mask of a check on a kind-3 entry's pointer count and first offset.
const WHOLE_MASK: u32 = 0xFFFF_FFFF;
/// Pointer words a layout lists at most: each is found by a check of its
/// own (a kind-1 entry's header, a kind-3 entry's offset), so a layout
/// that fits its checks fits its words, and they pad to whole groups.
pub(in crate::archive) const MAX_WORDS: usize = MAX_CHECKS;
const _: () = assert!(MAX_WORDS.is_multiple_of(GROUP));
/// How many words a layout keeps for `words` of its own: whole groups of
/// [`GROUP`].
const fn padded(words: usize) -> usize {
    words.next_multiple_of(GROUP)
}
/// Pads the first `len` of `words` to whole groups of [`GROUP`] with
/// copies of the last, so that asking every word of the groups asks only
/// the launch's own.
fn pad(words: &mut [Word], len: usize) {
    if let Some(&last) = words[..len].last() {
        words[len..padded(len)].fill(last);
    }
}
/// `words` of a layout that lists no words (its kind-3 offsets are not
/// checked).
const UNLISTED: u8 = u8::MAX;

/// Where one pointer word of a launch lies. Laid out as written, so that
/// a group of eight is eight 32-bit lanes whose low halves are the
/// offsets, which a vector gather of the words reads
/// ([`crate::archive::memory::whole_blocks`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[repr(C)]
pub(in crate::archive) struct Word {
    /// Offset of its 8 bytes from the first argument entry.
    pub(in crate::archive) at: u16,
    /// Index of the argument it belongs to.
    pub(in crate::archive) arg: u16,
}

/// The pointer words a layout lists, with the argument bytes of a launch
/// it matched, which are as long as its span: every word lies inside them.
#[derive(Clone, Copy)]
pub(in crate::archive) struct Listed<'l> {
    /// The words in whole groups of [`GROUP`], the last padded with
    /// copies of the last word.
    padded: &'l [Word],
    /// How many of them are the launch's own.
    len: usize,
    args: &'l [u8],
}

impl<'l> Listed<'l> {
    /// Each word with its value (null included), in argument order.
    #[inline]
    pub(in crate::archive) fn iter(self) -> impl Iterator<Item = (Word, u64)> + 'l {
        let args = self.args;
        self.padded[..self.len]
            .iter()
            .map(move |&w| (w, Self::value(args, w)))
    }

    /// The or of `misses` of every word's value, read in whole groups
    /// without a branch per word: zero when `misses` is zero for each. The
    /// padding repeats a word, which changes no or.
    #[inline]
    pub(in crate::archive) fn misses(self, misses: impl Fn(u64) -> u64) -> u64 {
        let mut any = 0;
        for group in self.padded.chunks_exact(GROUP) {
            for &w in group {
                any |= misses(Self::value(self.args, w));
            }
        }
        any
    }

    /// The value of word `w` in `args`.
    #[inline]
    fn value(args: &[u8], w: Word) -> u64 {
        // SAFETY: a layout lists only words that end inside its span
        // (`Layout::word`), and pads with copies of them; `args` is as long
        // as the span (`ArgShapes::words`).
        let value = unsafe {
            args.as_ptr()
                .add(usize::from(w.at))
                .cast::<u64>()
                .read_unaligned()
        };
        u64::from_le(value)
    }

    /// The words in whole groups of eight, padding included, and the
    /// argument bytes every one of them lies in, for a vector ask of all of
    /// them ([`Self::misses`] asks one word at a time).
    #[inline]
    pub(in crate::archive) fn groups(self) -> (&'l [[Word; GROUP]], &'l [u8]) {
        (self.padded.as_chunks().0, self.args)
    }

    /// How many words it lists.
    pub(in crate::archive) fn len(&self) -> usize {
        self.len
    }

    /// The list a layout of the words at `at` (in argument order) would
    /// make for a launch whose argument bytes are `args`, in `buf`: padded
    /// to whole groups with copies of the last, as [`Layout::of`] pads.
    #[cfg(test)]
    pub(in crate::archive) fn of(at: &[u16], args: &'l [u8], buf: &'l mut Vec<Word>) -> Listed<'l> {
        assert!(at.iter().all(|&a| usize::from(a) + 8 <= args.len()));
        buf.clear();
        buf.extend(
            at.iter()
                .enumerate()
                .map(|(i, &at)| Word { at, arg: i as u16 }),
        );
        buf.resize(padded(at.len()), Word::default());
        pad(buf, at.len());
        Listed {
            padded: buf,
            len: at.len(),
            args,
        }
    }
}

/// The argument layout of one walked launch.
#[derive(Clone, Copy)]
struct Layout {
    /// Entry count (`u32::MAX`: no layout yet; a count is a u16).
    count: u32,
    /// Bytes the entries span.
    span: u32,
    /// Checks in use; the last group is padded with unused ones.
    checks: u8,
    /// Per check, the offset from the first entry where its four loaded
    /// bytes end (the checked bytes end the load, so it never reads past
    /// the entries). Unused checks end at 0: they load the four bytes
    /// before the entries and compare none.
    end: [u16; MAX_CHECKS],
    /// Per check, the expected bytes under `mask`.
    want: [u32; MAX_CHECKS],
    /// Per check, which loaded bytes are compared.
    mask: [u32; MAX_CHECKS],
    /// Pointer words listed, or [`UNLISTED`].
    words: u8,
    /// Where the pointer words lie, in argument order, then copies of the
    /// last up to a whole group.
    word: [Word; MAX_WORDS],
}

impl Layout {
    const EMPTY: Layout = Layout {
        count: u32::MAX,
        span: 0,
        checks: 0,
        end: [0; MAX_CHECKS],
        want: [0; MAX_CHECKS],
        mask: [0; MAX_CHECKS],
        words: 0,
        word: [Word { at: 0, arg: 0 }; MAX_WORDS],
    };

    /// Where `count` entries starting at `start` of `record` end, if this
    /// layout's header bytes are all there. The loads do not depend on each
    /// other, unlike the steps of a walk.
    #[inline]
    fn end_in(&self, record: &[u8], start: usize, count: u16) -> Option<usize> {
        let span = self.span as usize;
        if self.count != u32::from(count) || start < 4 {
            return None;
        }
        let base = record.get(start - 4..start.checked_add(span)?)?.as_ptr();
        let mut diff = 0;
        for g in 0..usize::from(self.checks).div_ceil(GROUP) {
            for j in g * GROUP..(g + 1) * GROUP {
                // SAFETY: `end[j] <= span` (see `checked`; unused checks
                // are 0), so the four bytes ending `end[j]` past `start`
                // lie in `record[start - 4..start + span]`, where `base`
                // points.
                let loaded = unsafe {
                    base.add(usize::from(self.end[j]))
                        .cast::<u32>()
                        .read_unaligned()
                };
                diff |= (u32::from_le(loaded) ^ self.want[j]) & self.mask[j];
            }
        }
        (diff == 0).then_some(start + span)
    }

    /// The layout of `count` entries already walked: `args` holds exactly
    /// them. One that lists no words when listing them needs more checks
    /// than a layout holds, a [`WIDE`] one when even that does (or they do
    /// not hold `count` entries after all).
    fn of(args: &[u8], count: u16) -> Layout {
        Layout::checked(args, count, true)
            .or_else(|| Layout::checked(args, count, false))
            .unwrap_or(Layout {
                count: u32::from(count),
                span: WIDE,
                ..Layout::EMPTY
            })
    }

    /// [`Layout::of`] listing the pointer words or not, `None` where it is
    /// [`WIDE`].
    fn checked(args: &[u8], count: u16, listed: bool) -> Option<Layout> {
        let mut l = Layout {
            count: u32::from(count),
            span: u32::from(u16::try_from(args.len()).ok()?),
            words: if listed { 0 } else { UNLISTED },
            ..Layout::EMPTY
        };
        let u16_at = |at: usize| Some(u16::from_le_bytes(*args.get(at..)?.first_chunk()?));
        let mut pos = 0;
        for i in 0..count {
            let kind = *args.get(pos)?;
            let size = u16_at(pos + 1)?;
            l.check(
                pos + 3,
                u32::from(kind) << 8 | u32::from(size) << 16,
                HEADER_MASK,
            )?;
            let value = pos + 3;
            pos = value + usize::from(size);
            let mut list: &[u8] = &[];
            if kind == 3 {
                let n = u16_at(pos)?;
                let at = pos + 2;
                list = args.get(at..at + 2 * usize::from(n))?;
                l.check_offsets(at, n, list, listed)?;
                pos = at + list.len();
            }
            if listed {
                let kind = ArgKind::from_byte(kind);
                for at in pointer_words(kind, usize::from(size), offsets(list)) {
                    l.word(value + at, i)?;
                }
            }
        }
        if listed {
            pad(&mut l.word, usize::from(l.words));
        }
        (pos == args.len()).then_some(l)
    }

    /// Checks a kind-3 entry's pointer count `n` and, when its words are
    /// `listed`, its offsets `list`, which start at `at`: the first offset
    /// in the load that checks the count, each later one in a load of its
    /// own. `None` when full.
    fn check_offsets(&mut self, at: usize, n: u16, list: &[u8], listed: bool) -> Option<()> {
        if !listed || n == 0 {
            return self.check(at, u32::from(n) << 16, POINTERS_MASK);
        }
        for (k, off) in offsets(list).enumerate() {
            match k {
                0 => self.check(at + 2, u32::from(n) | u32::from(off) << 16, WHOLE_MASK)?,
                _ => self.check(at + 2 * k + 2, u32::from(off) << 16, POINTERS_MASK)?,
            }
        }
        Some(())
    }

    /// Lists a pointer word of argument `arg` at `at`, which ends inside
    /// the span; `None` when full.
    fn word(&mut self, at: usize, arg: u16) -> Option<()> {
        if at + 8 > self.span as usize {
            return None;
        }
        *self.word.get_mut(usize::from(self.words))? = Word {
            at: u16::try_from(at).ok()?,
            arg,
        };
        self.words += 1;
        Some(())
    }

    /// Adds a check of the bytes ending at `end`; `None` when full.
    fn check(&mut self, end: usize, want: u32, mask: u32) -> Option<()> {
        let j = usize::from(self.checks);
        // `end` is at most the span: the walk that found it stayed inside.
        *self.end.get_mut(j)? = u16::try_from(end).ok()?;
        self.want[j] = want;
        self.mask[j] = mask;
        self.checks += 1;
        Some(())
    }
}

/// Recently walked argument layouts, by kernel-name fingerprint.
pub(in crate::archive) struct ArgShapes {
    slots: Box<[Layout]>,
}

impl Default for ArgShapes {
    fn default() -> ArgShapes {
        ArgShapes {
            slots: vec![Layout::EMPTY; SLOTS].into_boxed_slice(),
        }
    }
}

impl ArgShapes {
    /// The slot of a kernel whose name has fingerprint `fp`, launched with
    /// `count` arguments.
    #[inline]
    fn slot(fp: u64, count: u16) -> usize {
        ((fp >> 54) as usize ^ usize::from(count)) % SLOTS
    }

    /// Where the `count` argument entries at `start` of `record` end, when
    /// the layout kept for the kernel whose name has fingerprint `fp`
    /// matches them; `None` means walk.
    #[inline]
    pub(in crate::archive) fn end(
        &self,
        fp: u64,
        record: &[u8],
        start: usize,
        count: u16,
    ) -> Option<usize> {
        self.slots
            .get(Self::slot(fp, count))?
            .end_in(record, start, count)
    }

    /// The pointer words of a launch of `count` entries whose argument
    /// bytes are `args`, right after it was parsed with the layouts (so the
    /// layout kept for `fp` matched it or was just taken from it); `None`
    /// when its launches are walked.
    #[inline]
    pub(in crate::archive) fn words<'l>(
        &'l self,
        fp: u64,
        count: u16,
        args: &'l [u8],
    ) -> Option<Listed<'l>> {
        let l = self.slots.get(Self::slot(fp, count))?;
        let kept = l.span as usize == args.len() && l.count == u32::from(count);
        (kept && l.words != UNLISTED).then(|| {
            let len = usize::from(l.words);
            Listed {
                padded: &l.word[..padded(len)],
                len,
                args,
            }
        })
    }

    /// Keeps the layout of `count` walked entries `args` of the kernel
    /// whose name has fingerprint `fp`, unless the slot already says that
    /// launches of `count` entries there are too wide for a layout (such a
    /// kernel is walked at every launch, and would otherwise pay for a
    /// layout it cannot keep each time).
    #[cold]
    pub(in crate::archive) fn keep(&mut self, fp: u64, args: &[u8], count: u16) {
        if let Some(slot) = self.slots.get_mut(Self::slot(fp, count)) {
            if slot.span != WIDE || slot.count != u32::from(count) {
                *slot = Layout::of(args, count);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::archive::format::framing::le_u64;
    use crate::archive::format::launch::Launch;
    use crate::archive::summary::chunks::testing::xorshift;
    use crate::archive::summary::kernel_table::fingerprint;
    use hrr_testkit::events;

    /// One argument entry: kind, value bytes, embedded pointer offsets.
    type Entry = (u8, Vec<u8>, Vec<u16>);

    /// An entry of kind `kind` and `size` bytes (none of them zero) with
    /// `n_ptrs` embedded pointer offsets, all drawn from `next`; some
    /// offsets leave no room for a word inside the value.
    fn entry(next: &mut dyn FnMut() -> u64, kind: u8, size: u16, n_ptrs: u16) -> Entry {
        let bytes = (0..size).map(|_| next() as u8 | 1).collect();
        let offsets = (0..n_ptrs)
            .map(|_| (next() % (u64::from(size) + 4)) as u16)
            .collect();
        (kind, bytes, offsets)
    }

    /// A launch record (§10.1, by the test-support writer) of kernel `name`
    /// with argument `entries` and an empty attribute tail; also where its
    /// entries start.
    fn launch(name: &[u8], entries: &[Entry]) -> (Vec<u8>, usize) {
        let mut l = events::Launch::new("", [1, 1, 1], [64, 1, 1]);
        l.name = name.to_vec();
        l.args = entries
            .iter()
            .map(|(kind, bytes, offsets)| match kind {
                3 => events::Arg::Embedded(bytes.clone(), offsets.clone()),
                _ => events::Arg::Raw(*kind, bytes.clone()),
            })
            .collect();
        let mut f = events::EventsFile::v7();
        f.record(308, &l.encode());
        // Header, stream, name length, name, then 48 fixed bytes (§10.1).
        (f.bytes()[8..].to_vec(), 32 + 8 + 2 + name.len() + 48)
    }

    /// The pointer words of `entries` by reference §10.2: the value of a
    /// kind-1 entry of 8 bytes, and the words at a kind-3 entry's offsets
    /// that lie inside its value; with their argument index.
    fn words_by_reference(entries: &[Entry]) -> Vec<(u16, u64)> {
        let mut words = Vec::new();
        for (i, (kind, bytes, offsets)) in entries.iter().enumerate() {
            let word = |at: usize| bytes.get(at..at + 8).map(|w| le_u64(w, 0));
            match kind {
                1 if bytes.len() == 8 => words.extend(word(0).map(|w| (i as u16, w))),
                3 => {
                    let inside = offsets.iter().filter_map(|&o| word(usize::from(o)));
                    words.extend(inside.map(|w| (i as u16, w)));
                }
                _ => {}
            }
        }
        words
    }

    /// What a caller sees of a parse: the name, argument bytes and tail, or
    /// the failing field and its offset.
    fn seen(parsed: Result<Launch<'_>, crate::archive::format::launch::PayloadError>) -> String {
        match parsed {
            Ok(l) => format!(
                "{:?} {} args {:?} attrs {} {} snapshots {}",
                l.name,
                l.num_args,
                l.args()
                    .map(|a| (a.kind, a.bytes.len()))
                    .collect::<Vec<_>>(),
                l.attr_count,
                l.attr_stride,
                l.num_snapshots
            ),
            Err(e) => format!("error {} at {}", e.field, e.at),
        }
    }

    /// Kernels launched again and again with their own signatures, now and
    /// then with a changed entry (another pointer count or offset), a cut
    /// record or a stray byte: parsing with the kept layouts gives exactly
    /// what the plain parse gives, the words a layout lists are the
    /// launch's pointer words, and most unchanged launches are answered by
    /// a layout that lists them, not a walk.
    #[test]
    fn kept_layouts_parse_exactly_as_the_walk() {
        let mut next = xorshift(0x2545_F491_4F6C_DD1D);
        let names: Vec<Vec<u8>> = (0..40)
            .map(|k| format!("_Z{k}kernel_{}", "t".repeat(k * 3)).into_bytes())
            .collect();
        let signature = |next: &mut dyn FnMut() -> u64| -> Vec<Entry> {
            (0..next() % 20)
                .map(|_| {
                    let kind = (next() % 5) as u8;
                    let size = [8, 16, (next() % 40) as u16][(next() % 3) as usize];
                    let n_ptrs = (next() % 3) as u16;
                    entry(next, kind, size, n_ptrs)
                })
                .collect()
        };
        let mut signatures: Vec<Vec<Entry>> = names.iter().map(|_| signature(&mut next)).collect();
        let mut shapes = ArgShapes::default();
        let (mut plain, mut answered, mut listed) = (0, 0, 0);
        for _ in 0..20_000 {
            let k = (next() % names.len() as u64) as usize;
            match next() % 10 {
                // The kernel's layout changes (another kernel of the same
                // name, a kind-3 entry with other pointer offsets).
                0 => signatures[k] = signature(&mut next),
                1 if !signatures[k].is_empty() => {
                    let i = (next() % signatures[k].len() as u64) as usize;
                    let (kind, bytes, _) = &signatures[k][i];
                    let (kind, size) = (*kind, bytes.len() as u16);
                    let n_ptrs = (next() % 3) as u16;
                    signatures[k][i] = entry(&mut next, kind, size, n_ptrs);
                }
                _ => {}
            }
            // Values change from launch to launch; the layout does not.
            for (_, bytes, _) in signatures[k].iter_mut() {
                bytes.iter_mut().for_each(|b| *b = next() as u8 | 1);
            }
            let (mut r, start) = launch(&names[k], &signatures[k]);
            let mutated = match next() % 12 {
                0 => {
                    r.truncate((next() % r.len() as u64) as usize);
                    true
                }
                1 => {
                    let at = start + (next() as usize) % (r.len() - start);
                    r[at] = next() as u8;
                    true
                }
                _ => false,
            };
            let count = signatures[k].len() as u16;
            let fp = fingerprint(&names[k]);
            if !mutated {
                plain += 1;
                if shapes.end(fp, &r, start, count) == Some(r.len() - 8) {
                    answered += 1;
                }
            }
            let shaped = Launch::parse_shaped(&r, &mut shapes);
            if let (Ok((l, _)), false) = (&shaped, mutated) {
                if let Some(words) = shapes.words(fp, count, l.arg_bytes()) {
                    listed += 1;
                    let read: Vec<(u16, u64)> = words.iter().map(|(w, v)| (w.arg, v)).collect();
                    assert_eq!(read, words_by_reference(&signatures[k]), "{r:?}");
                }
            }
            assert_eq!(
                seen(shaped.map(|(l, _)| l)),
                seen(Launch::parse(&r)),
                "{r:?}"
            );
        }
        assert!(answered * 2 > plain, "{answered} of {plain}");
        assert!(listed * 2 > plain, "{listed} of {plain}");
    }

    #[test]
    fn launches_with_more_entries_than_a_layout_checks_are_walked() {
        let many: Vec<Entry> = (0..MAX_CHECKS + 1)
            .map(|i| (0, vec![1; i], vec![]))
            .collect();
        let (r, start) = launch(b"wide", &many);
        let mut shapes = ArgShapes::default();
        let fp = fingerprint(b"wide");
        let slot = ArgShapes::slot(fp, many.len() as u16);
        for _ in 0..3 {
            let (l, got) = Launch::parse_shaped(&r, &mut shapes).unwrap();
            assert_eq!((l.num_args, got), (many.len() as u16, fp));
            assert_eq!(shapes.end(fp, &r, start, many.len() as u16), None);
            assert_eq!(shapes.slots[slot].span, WIDE);
            assert!(shapes.words(fp, many.len() as u16, l.arg_bytes()).is_none());
        }
        // One fewer fits, and is then answered without a walk.
        let (r, start) = launch(b"wide", &many[1..]);
        Launch::parse_shaped(&r, &mut shapes).unwrap();
        assert_eq!(
            shapes.end(fp, &r, start, MAX_CHECKS as u16),
            Some(r.len() - 8)
        );
    }

    /// A layout full of checks lists every pointer word: each costs a
    /// check.
    #[test]
    fn a_full_layout_lists_every_word() {
        let mut shapes = ArgShapes::default();
        let fp = fingerprint(b"many");
        // Sixteen pointers: sixteen checks, sixteen words.
        let full: Vec<Entry> = (0..MAX_CHECKS)
            .map(|i| (1, (0..8).map(|b| (b + i) as u8).collect(), vec![]))
            .collect();
        let (r, start) = launch(b"many", &full);
        let count = full.len() as u16;
        let (l, _) = Launch::parse_shaped(&r, &mut shapes).unwrap();
        assert_eq!(shapes.end(fp, &r, start, count), Some(r.len() - 8));
        let words = shapes.words(fp, count, l.arg_bytes()).unwrap();
        let read: Vec<(u16, u64)> = words.iter().map(|(w, v)| (w.arg, v)).collect();
        assert_eq!(read, words_by_reference(&full));
        assert_eq!(read.len(), MAX_WORDS);
    }

    /// The words are asked of in whole groups: every word of the launch
    /// is asked, the padding asks only of the launch's own words again, and
    /// a word's miss shows in the or, the last word's included.
    #[test]
    fn words_are_asked_of_in_whole_groups() {
        for n in [1, 5, GROUP - 1, GROUP, GROUP + 1, MAX_WORDS] {
            let name = format!("k{n}");
            let entries: Vec<Entry> = (0..n)
                .map(|i| (1, (0..8).map(|b| (b * 16 + i) as u8 + 1).collect(), vec![]))
                .collect();
            let (r, _) = launch(name.as_bytes(), &entries);
            let mut shapes = ArgShapes::default();
            let (l, fp) = Launch::parse_shaped(&r, &mut shapes).unwrap();
            let listed = shapes.words(fp, n as u16, l.arg_bytes()).unwrap();
            let own: Vec<u64> = words_by_reference(&entries).iter().map(|w| w.1).collect();
            let asked = std::cell::RefCell::new(Vec::new());
            let none = listed.misses(|v| {
                asked.borrow_mut().push(v);
                0
            });
            let asked = asked.into_inner();
            assert_eq!(none, 0, "{n}");
            assert_eq!(asked.len(), n.next_multiple_of(GROUP), "{n}");
            assert_eq!(asked[..n], own[..], "{n}: the launch's words first");
            assert!(asked[n..].iter().all(|v| own.contains(v)), "{n}");
            for (k, &w) in own.iter().enumerate() {
                assert_ne!(listed.misses(|v| u64::from(v == w)), 0, "{n}: word {k}");
            }
        }
    }

    /// A signature whose kind-3 offsets need more checks than a layout
    /// holds keeps a layout that finds where its entries end and lists no
    /// words, so its pointers are walked.
    #[test]
    fn offsets_past_the_checks_leave_the_words_to_the_walk() {
        let mut shapes = ArgShapes::default();
        let fp = fingerprint(b"structs");
        // Two headers and fifteen offsets: seventeen checks with offsets,
        // three without.
        let entries: Vec<Entry> = vec![
            (3, vec![9; 64], (0..15).map(|o| o * 4).collect()),
            (1, vec![5; 8], vec![]),
        ];
        let (r, start) = launch(b"structs", &entries);
        for _ in 0..2 {
            let (l, _) = Launch::parse_shaped(&r, &mut shapes).unwrap();
            assert_eq!(shapes.end(fp, &r, start, 2), Some(r.len() - 8));
            assert!(shapes.words(fp, 2, l.arg_bytes()).is_none());
        }
    }

    /// A layout never reads outside the entries it was taken from, even
    /// for a record that ends right after them.
    #[test]
    fn a_layout_is_checked_inside_the_record_only() {
        let entries = [(3, vec![], vec![]), (0, vec![], vec![])];
        let (r, start) = launch(b"k", &entries);
        let layout = Layout::of(&r[start..r.len() - 8], 2);
        assert_eq!(layout.words, 0);
        assert_eq!(
            layout.end_in(&r[..r.len() - 8], start, 2),
            Some(r.len() - 8)
        );
        assert_eq!(layout.end_in(&r[..r.len() - 9], start, 2), None);
        assert_eq!(layout.end_in(&r, 3, 2), None);
        assert_eq!(layout.end_in(&r, start, 1), None);
    }
}
