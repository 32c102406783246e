//! Argument layouts of recently seen launches, checked in place of the
//! argument walk.
//!
//! Where a launch's argument entries end is only known by walking them, as
//! each entry's size says where the next one starts. That walk is a large
//! share of `archive info`'s CPU time on a launch-heavy archive (measured
//! in docs/performance.md). But a kernel's arguments have the same kinds and sizes at every launch, so the
//! header bytes of the last walk of a kernel (kind and size of each entry,
//! and the pointer count of a kind-3 entry) can be checked at their known
//! offsets instead: in groups of a fixed size, no load waiting for another,
//! in fewer instructions than the walk. When every one matches, the walk
//! would visit exactly the same offsets and end where the last one did;
//! when any differs, the launch is walked as before and its layout kept
//! instead.
//!
//! A layout is found by a fingerprint of the kernel name, but it is never
//! trusted for the name: a layout that matches the bytes gives the walk's
//! answer whichever launch it came from, so a fingerprint collision costs a
//! walk, never a wrong result.

/// Layouts kept (a power of two).
const SLOTS: usize = 1024;
/// Checks are made in groups of this many (unused ones compare nothing), so
/// the loop's length is the same for most kernels.
const GROUP: usize = 8;
/// Header checks per layout at most (entries, plus one per kind-3 entry);
/// launches with more are always walked.
const MAX_CHECKS: usize = 2 * GROUP;
/// `span` of a layout whose launches are always walked (more entries than
/// a layout checks): no record holds that many bytes past its entries'
/// start, so such a layout never matches.
const WIDE: u32 = u32::MAX;
/// Mask of a check on an entry's kind and size (the last three bytes of the
/// four loaded).
const HEADER_MASK: u32 = 0xFFFF_FF00;
/// Mask of a check on a kind-3 entry's pointer count (the last two bytes).
const POINTERS_MASK: u32 = 0xFFFF_0000;

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
}

impl Layout {
    const EMPTY: Layout = Layout {
        count: u32::MAX,
        span: 0,
        checks: 0,
        end: [0; MAX_CHECKS],
        want: [0; MAX_CHECKS],
        mask: [0; MAX_CHECKS],
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
    /// them. A [`WIDE`] one when they need more checks than a layout holds
    /// (or do not hold `count` entries after all).
    fn of(args: &[u8], count: u16) -> Layout {
        Layout::checked(args, count).unwrap_or(Layout {
            count: u32::from(count),
            span: WIDE,
            ..Layout::EMPTY
        })
    }

    /// [`Layout::of`], `None` where it is [`WIDE`].
    fn checked(args: &[u8], count: u16) -> Option<Layout> {
        let mut l = Layout {
            count: u32::from(count),
            span: u32::from(u16::try_from(args.len()).ok()?),
            ..Layout::EMPTY
        };
        let u16_at = |at: usize| Some(u16::from_le_bytes(*args.get(at..)?.first_chunk()?));
        let mut pos = 0;
        for _ in 0..count {
            let kind = *args.get(pos)?;
            let size = u16_at(pos + 1)?;
            l.check(
                pos + 3,
                u32::from(kind) << 8 | u32::from(size) << 16,
                HEADER_MASK,
            )?;
            pos += 3 + usize::from(size);
            if kind == 3 {
                let n = u16_at(pos)?;
                l.check(pos + 2, u32::from(n) << 16, POINTERS_MASK)?;
                pos += 2 + 2 * usize::from(n);
            }
        }
        (pos == args.len()).then_some(l)
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
    use crate::archive::format::launch::Launch;
    use crate::archive::summary::chunks::testing::xorshift;
    use crate::archive::summary::kernel_table::fingerprint;
    use hrr_testkit::events;

    /// One argument entry: kind, value bytes, embedded pointer count.
    type Entry = (u8, u16, u16);

    /// A launch record (§10.1, by the test-support writer) of kernel `name`
    /// with argument `entries` and an empty attribute tail; also where its
    /// entries start.
    fn launch(name: &[u8], entries: &[Entry]) -> (Vec<u8>, usize) {
        let mut l = events::Launch::new("", [1, 1, 1], [64, 1, 1]);
        l.name = name.to_vec();
        l.args = entries
            .iter()
            .map(|&(kind, size, n_ptrs)| {
                let bytes = vec![kind ^ 0x5A; usize::from(size)];
                match kind {
                    3 => events::Arg::Embedded(bytes, vec![0; usize::from(n_ptrs)]),
                    _ => events::Arg::Raw(kind, bytes),
                }
            })
            .collect();
        let mut f = events::EventsFile::v7();
        f.record(308, &l.encode());
        // Header, stream, name length, name, then 48 fixed bytes (§10.1).
        (f.bytes()[8..].to_vec(), 32 + 8 + 2 + name.len() + 48)
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
    /// then with a changed entry, a cut record or a stray byte: parsing
    /// with the kept layouts gives exactly what the plain parse gives, and
    /// most unchanged launches are answered by a layout, not a walk.
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
                    (kind, (next() % 40) as u16, (next() % 3) as u16)
                })
                .collect()
        };
        let mut signatures: Vec<Vec<Entry>> = names.iter().map(|_| signature(&mut next)).collect();
        let mut shapes = ArgShapes::default();
        let (mut plain, mut answered) = (0, 0);
        for _ in 0..20_000 {
            let k = (next() % names.len() as u64) as usize;
            match next() % 10 {
                // The kernel's layout changes (another kernel of the same
                // name, a kind-3 entry with another pointer count).
                0 => signatures[k] = signature(&mut next),
                1 if !signatures[k].is_empty() => {
                    let i = (next() % signatures[k].len() as u64) as usize;
                    signatures[k][i].2 = (next() % 3) as u16;
                }
                _ => {}
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
            if !mutated {
                plain += 1;
                if shapes.end(fingerprint(&names[k]), &r, start, count) == Some(r.len() - 8) {
                    answered += 1;
                }
            }
            let shaped = Launch::parse_shaped(&r, &mut shapes).map(|(l, _)| l);
            assert_eq!(seen(shaped), seen(Launch::parse(&r)), "{r:?}");
        }
        assert!(answered * 2 > plain, "{answered} of {plain}");
    }

    #[test]
    fn launches_with_more_entries_than_a_layout_checks_are_walked() {
        let many: Vec<Entry> = (0..MAX_CHECKS as u16 + 1).map(|i| (0, i, 0)).collect();
        let (r, start) = launch(b"wide", &many);
        let mut shapes = ArgShapes::default();
        let fp = fingerprint(b"wide");
        let slot = ArgShapes::slot(fp, many.len() as u16);
        for _ in 0..3 {
            let (l, got) = Launch::parse_shaped(&r, &mut shapes).unwrap();
            assert_eq!((l.num_args, got), (many.len() as u16, fp));
            assert_eq!(shapes.end(fp, &r, start, many.len() as u16), None);
            assert_eq!(shapes.slots[slot].span, WIDE);
        }
        // One fewer fits, and is then answered without a walk.
        let (r, start) = launch(b"wide", &many[1..]);
        Launch::parse_shaped(&r, &mut shapes).unwrap();
        assert_eq!(
            shapes.end(fp, &r, start, MAX_CHECKS as u16),
            Some(r.len() - 8)
        );
    }

    /// A layout never reads outside the entries it was taken from, even
    /// for a record that ends right after them.
    #[test]
    fn a_layout_is_checked_inside_the_record_only() {
        let entries = [(3, 0, 0), (0, 0, 0)];
        let (r, start) = launch(b"k", &entries);
        let layout = Layout::of(&r[start..r.len() - 8], 2);
        assert_eq!(
            layout.end_in(&r[..r.len() - 8], start, 2),
            Some(r.len() - 8)
        );
        assert_eq!(layout.end_in(&r[..r.len() - 9], start, 2), None);
        assert_eq!(layout.end_in(&r, 3, 2), None);
        assert_eq!(layout.end_in(&r, start, 1), None);
    }
}
