//! Kernel-launch payloads (reference §10): the variable-length record shared
//! by the ten launch ids, its argument entries, the launch-attribute tail, the
//! v8 pinned-host snapshot records, and the kernel tail of graph kernel-node
//! events (§10.4).
//!
//! Every read is bounds-checked against the record: a payload that runs past
//! its record is a [`PayloadError`], never a panic. Parsing allocates nothing;
//! arguments and snapshots are walked once to validate and can be iterated
//! again for display.

use std::fmt;

use crate::archive::format::apis::id;
use crate::archive::format::blobs::BlobHash;
use crate::archive::format::framing::{le_u16, le_u32, le_u64, EVENT_HEADER_LEN};
use crate::archive::summary::arg_shapes::ArgShapes;
use crate::archive::summary::kernel_table::fingerprint;

/// A payload field that does not fit in its record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PayloadError {
    /// What was being read.
    pub field: &'static str,
    /// Offset in the record where it starts.
    pub at: usize,
    /// Bytes it needs.
    pub need: usize,
    /// Record length.
    pub record_len: usize,
}

impl fmt::Display for PayloadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} at offset {} needs {} bytes but the {}-byte record ends first",
            self.field, self.at, self.need, self.record_len
        )
    }
}

/// A bounds-checked cursor over one record.
pub(crate) struct Cursor<'a> {
    b: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    pub(crate) fn new(b: &'a [u8], pos: usize) -> Cursor<'a> {
        Cursor { b, pos }
    }

    #[inline]
    pub(crate) fn remaining(&self) -> usize {
        self.b.len().saturating_sub(self.pos)
    }

    #[inline]
    pub(crate) fn take(&mut self, n: usize, field: &'static str) -> Result<&'a [u8], PayloadError> {
        if self.remaining() < n {
            return Err(overrun(self.b, self.pos, n, field));
        }
        let s = &self.b[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }

    #[inline]
    pub(crate) fn u16(&mut self, field: &'static str) -> Result<u16, PayloadError> {
        Ok(le_u16(self.take(2, field)?, 0))
    }

    #[inline]
    pub(crate) fn u32(&mut self, field: &'static str) -> Result<u32, PayloadError> {
        Ok(le_u32(self.take(4, field)?, 0))
    }

    #[inline]
    pub(crate) fn u64(&mut self, field: &'static str) -> Result<u64, PayloadError> {
        Ok(le_u64(self.take(8, field)?, 0))
    }

    #[inline]
    fn dim3(&mut self, field: &'static str) -> Result<[u32; 3], PayloadError> {
        let b = self.take(12, field)?;
        Ok([le_u32(b, 0), le_u32(b, 4), le_u32(b, 8)])
    }

    #[inline]
    fn hash(&mut self, field: &'static str) -> Result<BlobHash, PayloadError> {
        let b = self.take(16, field)?;
        Ok(BlobHash::new(le_u64(b, 0), le_u64(b, 8)))
    }
}

/// `value_kind` of an argument entry (§10.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArgKind {
    /// 0: scalar or by-value struct.
    Value,
    /// 1: the whole argument is a GPU pointer.
    Pointer,
    /// 2: hidden runtime argument (defined by the reader, never written).
    Hidden,
    /// 3: scalar/struct with embedded pointer words at the listed offsets.
    Embedded,
    /// Any other byte (kept for display).
    Other(u8),
}

impl ArgKind {
    /// The kind of `value_kind` byte `b`.
    pub(in crate::archive) fn from_byte(b: u8) -> ArgKind {
        match b {
            0 => ArgKind::Value,
            1 => ArgKind::Pointer,
            2 => ArgKind::Hidden,
            3 => ArgKind::Embedded,
            other => ArgKind::Other(other),
        }
    }

    /// Name used in decoded output.
    pub fn label(self) -> &'static str {
        match self {
            ArgKind::Value => "value",
            ArgKind::Pointer => "pointer",
            ArgKind::Hidden => "hidden",
            ArgKind::Embedded => "embedded_pointers",
            ArgKind::Other(_) => "unknown",
        }
    }
}

/// One kernel argument entry.
#[derive(Debug, Clone, Copy)]
pub struct Arg<'a> {
    /// How replay treats the bytes.
    pub kind: ArgKind,
    /// Raw argument bytes.
    pub bytes: &'a [u8],
    /// Kind 3 only: the u16 offsets of embedded pointer words, raw LE pairs.
    pub pointer_offsets: &'a [u8],
}

impl Arg<'_> {
    /// The embedded pointer offsets (kind 3).
    pub fn offsets(&self) -> impl Iterator<Item = u16> + '_ {
        offsets(self.pointer_offsets)
    }
}

/// The u16 offsets of a kind-3 entry's raw offset list.
pub(in crate::archive) fn offsets(list: &[u8]) -> impl Iterator<Item = u16> + '_ {
    list.chunks_exact(2)
        .map(|c| u16::from_le_bytes([c[0], c[1]]))
}

/// Bytes of a pointer word.
const WORD: usize = 8;

/// Where the pointer words of an argument entry of `kind` lie in its value
/// of `size` bytes (§10.2): the whole value of a kind-1 entry of one word,
/// and for a kind-3 entry the word at each of its embedded `offsets` that
/// lies inside the value. The allocation map's walk and the argument
/// layouts both follow this one rule.
pub(in crate::archive) fn pointer_words(
    kind: ArgKind,
    size: usize,
    offsets: impl Iterator<Item = u16>,
) -> impl Iterator<Item = usize> {
    let whole = (kind == ArgKind::Pointer && size == WORD).then_some(0);
    let embedded = offsets
        .map(usize::from)
        .filter(move |&o| kind == ArgKind::Embedded && o + WORD <= size);
    whole.into_iter().chain(embedded)
}

/// Walks `count` argument entries from `c`; returns the bytes they span.
/// This is the hot loop of a launch-heavy archive, so the common case only
/// checks that each step stays inside the record (keeping the position at
/// or before its end means no overflow checks); any overrun is re-walked by
/// [`check_args`] to name the field that does not fit.
#[inline]
fn skip_args<'a>(c: &mut Cursor<'a>, count: u16) -> Result<&'a [u8], PayloadError> {
    let b = c.b;
    let start = c.pos;
    let end = b.len();
    // `pos <= end` at the top of every step, so no sum below can overflow.
    let mut pos = start.min(end);
    let mut fits = start <= end;
    for _ in 0..count {
        let Some(&[kind, lo, hi]) = b.get(pos..pos + 3) else {
            fits = false;
            break;
        };
        pos += 3 + usize::from(u16::from_le_bytes([lo, hi]));
        // Kinds vary from argument to argument, so the pointer count of a
        // kind-3 entry is added through a mask rather than a branch; a count
        // past the end reads as `end`, which carries `pos` past it.
        let embedded = usize::from(kind == 3);
        let n_ptrs = b
            .get(pos..pos + 2)
            .map_or(end, |n| usize::from(u16::from_le_bytes([n[0], n[1]])));
        pos += embedded.wrapping_neg() & n_ptrs.wrapping_mul(2).wrapping_add(2);
        if pos > end {
            fits = false;
            break;
        }
    }
    if !fits {
        pos = check_args(b, start, count)?;
    }
    c.pos = pos;
    Ok(&b[start..pos])
}

/// The field-by-field argument walk behind [`skip_args`]: where the entries
/// end, or the first field, in record order, that does not fit.
#[cold]
#[inline(never)]
fn check_args(b: &[u8], start: usize, count: u16) -> Result<usize, PayloadError> {
    let mut pos = start;
    for _ in 0..count {
        if b.len() < pos + 3 {
            return Err(overrun(b, pos, 3, "argument value_kind and size"));
        }
        let kind = b[pos];
        let size = usize::from(le_u16(b, pos + 1));
        pos += 3;
        if b.len() - pos < size {
            return Err(overrun(b, pos, size, "argument bytes"));
        }
        pos += size;
        if kind == 3 {
            if b.len() - pos < 2 {
                return Err(overrun(b, pos, 2, "argument n_ptrs"));
            }
            let n = usize::from(le_u16(b, pos)) * 2;
            pos += 2;
            if b.len() - pos < n {
                return Err(overrun(b, pos, n, "argument pointer offsets"));
            }
            pos += n;
        }
    }
    Ok(pos)
}

/// The error for `field` at `at` needing `need` bytes of record `b`.
#[cold]
fn overrun(b: &[u8], at: usize, need: usize, field: &'static str) -> PayloadError {
    PayloadError {
        field,
        at,
        need,
        record_len: b.len(),
    }
}

/// Iterates argument entries already validated by [`skip_args`].
#[derive(Clone)]
pub struct Args<'a> {
    c: Cursor<'a>,
    left: u16,
}

impl<'a> Iterator for Args<'a> {
    type Item = Arg<'a>;
    /// Plain bounds-checked slicing, no error values: the entries were
    /// validated, and the allocation map walks the entries of a launch
    /// whose layout lists no pointer words. An entry that does not fit
    /// ends the iteration.
    #[inline]
    fn next(&mut self) -> Option<Arg<'a>> {
        if self.left == 0 {
            return None;
        }
        let entry = self.entry();
        self.left = if entry.is_some() { self.left - 1 } else { 0 };
        entry
    }
}

impl<'a> Args<'a> {
    /// The entry at the cursor, which moves past it; `None` when it does
    /// not fit.
    #[inline]
    fn entry(&mut self) -> Option<Arg<'a>> {
        let b = self.c.b;
        let pos = self.c.pos;
        let &[kind, lo, hi] = b.get(pos..)?.first_chunk::<3>()?;
        let start = pos + 3;
        let end = start + usize::from(u16::from_le_bytes([lo, hi]));
        let bytes = b.get(start..end)?;
        let (pointer_offsets, next) = if kind == 3 {
            let &[lo, hi] = b.get(end..)?.first_chunk::<2>()?;
            let list = end + 2;
            let list_end = list + 2 * usize::from(u16::from_le_bytes([lo, hi]));
            (b.get(list..list_end)?, list_end)
        } else {
            (&[][..], end)
        };
        self.c.pos = next;
        Some(Arg {
            kind: ArgKind::from_byte(kind),
            bytes,
            pointer_offsets,
        })
    }
}

impl Clone for Cursor<'_> {
    fn clone(&self) -> Self {
        Cursor {
            b: self.b,
            pos: self.pos,
        }
    }
}

/// One v8 pinned-host snapshot record (§10.3, 41 bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Snapshot {
    /// Capture-time base of the pinned host allocation.
    pub ptr: u64,
    /// Byte offset of this chunk.
    pub offset: u64,
    /// Chunk length.
    pub length: u64,
    /// Blob holding the chunk (0 when unchanged and not written).
    pub blob: BlobHash,
    /// 0 = restore before the launch; 1 = unchanged, leave alone.
    pub direction: u8,
}

/// Size of one snapshot record.
pub const SNAPSHOT_LEN: usize = 41;

/// A decoded kernel-launch payload, borrowing the record.
#[derive(Debug, Clone, Copy)]
pub struct Launch<'a> {
    /// Raw `hipStream_t` at capture (0 = null stream).
    pub stream: u64,
    /// Mangled kernel name, raw bytes.
    pub name: &'a [u8],
    /// Code object the kernel came from; zero = unknown.
    pub code_object: BlobHash,
    /// Grid in workgroups (388 in old captures: global work items).
    pub grid: [u32; 3],
    /// Workgroup size.
    pub block: [u32; 3],
    /// Dynamic LDS bytes.
    pub shared_mem: u32,
    /// Number of argument entries.
    pub num_args: u16,
    args: &'a [u8],
    /// Launch-attribute count (0 for plain launches or an absent tail).
    pub attr_count: u32,
    /// `sizeof(hipLaunchAttribute)` at capture.
    pub attr_stride: u32,
    /// Number of snapshot records (v8).
    pub num_snapshots: u16,
    snapshots: &'a [u8],
}

/// The fixed fields between the kernel name and the argument entries.
struct FixedPart {
    code_object: BlobHash,
    grid: [u32; 3],
    block: [u32; 3],
    shared_mem: u32,
    num_args: u16,
    num_snapshots: u16,
}

/// Bytes of [`FixedPart`] with its code-object hash.
const FIXED_PART_LEN: usize = 48;

impl FixedPart {
    /// Reads the fixed part at the cursor: in one bounds check when all of
    /// it is there (every capture that records a code-object hash), field by
    /// field otherwise.
    #[inline]
    fn read(c: &mut Cursor<'_>) -> Result<FixedPart, PayloadError> {
        let Some(f) = c.b.get(c.pos..c.pos + FIXED_PART_LEN) else {
            return FixedPart::read_short(c);
        };
        let f: &[u8; FIXED_PART_LEN] = f.try_into().expect("48 bytes");
        c.pos += FIXED_PART_LEN;
        let u32_at = |at: usize| le_u32(f, at);
        Ok(FixedPart {
            code_object: BlobHash::new(le_u64(f, 0), le_u64(f, 8)),
            grid: [u32_at(16), u32_at(20), u32_at(24)],
            block: [u32_at(28), u32_at(32), u32_at(36)],
            shared_mem: u32_at(40),
            num_args: le_u16(f, 44),
            num_snapshots: le_u16(f, 46),
        })
    }

    /// The fixed part of a record with fewer than 48 bytes after the name:
    /// an old capture without a code-object hash, or a record that ends
    /// early (the error names the first field that does not fit).
    #[cold]
    fn read_short(c: &mut Cursor<'_>) -> Result<FixedPart, PayloadError> {
        // Legacy tolerance of the upstream reader: co_hash only if 16 bytes remain.
        let code_object = if c.remaining() >= 16 {
            c.hash("co_hash")?
        } else {
            BlobHash::default()
        };
        Ok(FixedPart {
            code_object,
            grid: c.dim3("grid")?,
            block: c.dim3("block")?,
            shared_mem: c.u32("shared_mem")?,
            num_args: c.u16("num_args")?,
            num_snapshots: c.u16("num_snapshots")?,
        })
    }
}

impl<'a> Launch<'a> {
    /// Parses the launch payload of a whole record (header included).
    pub fn parse(record: &'a [u8]) -> Result<Launch<'a>, PayloadError> {
        Launch::parse_walking(record, |c, _, count| skip_args(c, count))
    }

    /// [`Launch::parse`] for a pass over many launches, with the
    /// [`fingerprint`] of the kernel name: the argument entries are checked
    /// against the layout `shapes` keeps for the kernel and walked only when
    /// it does not match (then its layout is kept). Same launch as
    /// [`Launch::parse`] whatever `shapes` holds.
    #[inline(always)]
    pub(in crate::archive) fn parse_shaped(
        record: &'a [u8],
        shapes: &mut ArgShapes,
    ) -> Result<(Launch<'a>, u64), PayloadError> {
        let mut fp = 0;
        let launch = Launch::parse_walking(record, |c, name, count| {
            fp = fingerprint(name);
            if let Some(end) = shapes.end(fp, c.b, c.pos, count) {
                let args = &c.b[c.pos..end];
                c.pos = end;
                return Ok(args);
            }
            let args = skip_args(c, count)?;
            shapes.keep(fp, args, count);
            Ok(args)
        })?;
        Ok((launch, fp))
    }

    /// The launch payload of `record`, its argument entries skipped by
    /// `walk(cursor, kernel name, entry count)`. Always inlined: the archive
    /// summary calls it for most events and uses three of its fields, and as
    /// a call the whole struct went back through memory (a visible stall in
    /// profiles).
    #[inline(always)]
    fn parse_walking(
        record: &'a [u8],
        walk: impl FnOnce(&mut Cursor<'a>, &'a [u8], u16) -> Result<&'a [u8], PayloadError>,
    ) -> Result<Launch<'a>, PayloadError> {
        let mut c = Cursor::new(record, EVENT_HEADER_LEN);
        let stream = c.u64("stream")?;
        let name_len = c.u16("name_len")?;
        let name = c.take(usize::from(name_len), "kernel name")?;
        let FixedPart {
            code_object,
            grid,
            block,
            shared_mem,
            num_args,
            num_snapshots,
        } = FixedPart::read(&mut c)?;
        let args = walk(&mut c, name, num_args)?;
        // Attribute tail: written by every current capture, absent in older
        // ones (readers that stop after the arguments ignore it).
        let (attr_count, attr_stride) = if c.remaining() == 0 && num_snapshots == 0 {
            (0, 0)
        } else {
            let n = c.u32("attribute count")?;
            let stride = c.u32("attribute stride")?;
            let bytes = u64::from(n) * u64::from(stride);
            let bytes = usize::try_from(bytes).unwrap_or(usize::MAX);
            c.take(bytes, "launch attributes")?;
            (n, stride)
        };
        let snapshots = c.take(
            usize::from(num_snapshots) * SNAPSHOT_LEN,
            "snapshot records",
        )?;
        Ok(Launch {
            stream,
            name,
            code_object,
            grid,
            block,
            shared_mem,
            num_args,
            args,
            attr_count,
            attr_stride,
            num_snapshots,
            snapshots,
        })
    }

    /// The argument entries in signature order.
    pub fn args(&self) -> Args<'a> {
        Args {
            c: Cursor::new(self.args, 0),
            left: self.num_args,
        }
    }

    /// The bytes the argument entries span, where a layout's pointer words
    /// are read.
    pub(in crate::archive) fn arg_bytes(&self) -> &'a [u8] {
        self.args
    }

    /// The v8 snapshot records.
    pub fn snapshots(&self) -> impl Iterator<Item = Snapshot> + 'a {
        self.snapshots.chunks_exact(SNAPSHOT_LEN).map(|s| Snapshot {
            ptr: le_u64(s, 0),
            offset: le_u64(s, 8),
            length: le_u64(s, 16),
            blob: BlobHash::new(le_u64(s, 24), le_u64(s, 32)),
            direction: s[40],
        })
    }
}

/// The kernel tail of a graph kernel-node event (§10.4).
#[derive(Debug, Clone, Copy)]
pub struct KernelNode<'a> {
    /// Kernel name; empty when the capture could not name it.
    pub name: &'a [u8],
    /// Code object of the kernel; zero = unknown.
    pub code_object: BlobHash,
    /// Number of argument entries.
    pub num_args: u16,
    args: &'a [u8],
}

/// `sizeof(hrr_args_<API>)` of the three kernel-node events whose records
/// carry the tail, from upstream `hrr_api_args.h` at `HRR_VERSION` 7:
/// hipGraphAddKernelNode (header, ret, five u64, 128-byte dependency copy,
/// present, u32 count, 64-byte params copy, present), hipGraphKernelNodeSetParams
/// and hipGraphExecKernelNodeSetParams (64-byte params copy and present).
pub fn kernel_node_struct_len(v7_id: u16) -> Option<usize> {
    match v7_id {
        id::HIP_GRAPH_ADD_KERNEL_NODE => Some(274),
        id::HIP_GRAPH_KERNEL_NODE_SET_PARAMS => Some(117),
        id::HIP_GRAPH_EXEC_KERNEL_NODE_SET_PARAMS => Some(125),
        _ => None,
    }
}

impl<'a> KernelNode<'a> {
    /// Parses the tail that follows a `struct_len`-byte fixed struct; `None`
    /// when the record has no tail (an older capture).
    pub fn parse(
        record: &'a [u8],
        struct_len: usize,
    ) -> Option<Result<KernelNode<'a>, PayloadError>> {
        if record.len() <= struct_len {
            return None;
        }
        let mut c = Cursor::new(record, struct_len);
        let parsed = (|| {
            let name_len = c.u16("kernel-node name_len")?;
            let name = c.take(usize::from(name_len), "kernel-node name")?;
            let code_object = c.hash("kernel-node co_hash")?;
            let num_args = c.u16("kernel-node num_args")?;
            let args = skip_args(&mut c, num_args)?;
            Ok(KernelNode {
                name,
                code_object,
                num_args,
                args,
            })
        })();
        Some(parsed)
    }

    /// The argument entries.
    pub fn args(&self) -> Args<'a> {
        Args {
            c: Cursor::new(self.args, 0),
            left: self.num_args,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Builds the §15 v8 probe launch by hand from the §10.1 table.
    fn probe_launch(snapshots: u16, present: u16) -> Vec<u8> {
        let mut r = vec![0u8; 32];
        r.extend(0x5000u64.to_le_bytes());
        r.extend(12u16.to_le_bytes());
        r.extend(b"probe_kernel");
        r.extend(0x1111u64.to_le_bytes());
        r.extend(0x2222u64.to_le_bytes());
        for v in [4u32, 1, 1, 64, 1, 1, 0] {
            r.extend(v.to_le_bytes());
        }
        r.extend(2u16.to_le_bytes());
        r.extend(snapshots.to_le_bytes());
        r.push(1);
        r.extend(8u16.to_le_bytes());
        r.extend([0xAA; 8]);
        r.push(3);
        r.extend(16u16.to_le_bytes());
        r.extend([0xBB; 16]);
        r.extend(1u16.to_le_bytes());
        r.extend(8u16.to_le_bytes());
        r.extend(2u32.to_le_bytes());
        r.extend(24u32.to_le_bytes());
        r.extend([0xCC; 48]);
        for i in 0..present {
            r.extend(0x7000u64.to_le_bytes());
            r.extend((u64::from(i) * 262_144).to_le_bytes());
            r.extend(262_144u64.to_le_bytes());
            r.extend(0x33u64.to_le_bytes());
            r.extend(0x44u64.to_le_bytes());
            r.push((i % 2) as u8);
        }
        let len = r.len() as u32;
        r[26..30].copy_from_slice(&len.to_le_bytes());
        r
    }

    #[test]
    fn v8_probe_launch_reads_back_exactly() {
        let r = probe_launch(2, 2);
        let l = Launch::parse(&r).unwrap();
        assert_eq!(l.stream, 0x5000);
        assert_eq!(l.name, b"probe_kernel");
        assert_eq!(l.code_object, BlobHash::new(0x1111, 0x2222));
        assert_eq!((l.grid, l.block), ([4, 1, 1], [64, 1, 1]));
        let args: Vec<_> = l.args().collect();
        assert_eq!(args.len(), 2);
        assert_eq!((args[0].kind, args[0].bytes.len()), (ArgKind::Pointer, 8));
        assert_eq!((args[1].kind, args[1].bytes.len()), (ArgKind::Embedded, 16));
        assert_eq!(args[1].offsets().collect::<Vec<_>>(), vec![8]);
        assert_eq!((l.attr_count, l.attr_stride), (2, 24));
        let snaps: Vec<_> = l.snapshots().collect();
        assert_eq!(snaps.len(), 2);
        assert_eq!((snaps[0].direction, snaps[1].direction), (0, 1));
        assert_eq!(snaps[1].offset, 262_144);
    }

    /// Cutting the §15 probe launch at every length names the field that
    /// the §10.1 layout puts across the cut (offsets worked out by hand),
    /// with the two legacy rules: no co_hash when fewer than 16 bytes follow
    /// the name, and no attribute tail when the record ends after the args.
    #[test]
    fn a_launch_cut_anywhere_names_the_field_across_the_cut() {
        let full = probe_launch(0, 0);
        assert_eq!(full.len(), 192);
        // (end offset, field) in record order for the full layout.
        let layout = [
            (40, "stream"),
            (42, "name_len"),
            (54, "kernel name"),
            (70, "co_hash"),
            (82, "grid"),
            (94, "block"),
            (98, "shared_mem"),
            (100, "num_args"),
            (102, "num_snapshots"),
            (105, "argument value_kind and size"),
            (113, "argument bytes"),
            (116, "argument value_kind and size"),
            (132, "argument bytes"),
            (134, "argument n_ptrs"),
            (136, "argument pointer offsets"),
            (140, "attribute count"),
            (144, "attribute stride"),
            (192, "launch attributes"),
        ];
        for len in 32..full.len() {
            let r = &full[..len];
            let got = Launch::parse(r).map(|l| l.num_args);
            let want = if len == 136 {
                Ok(2)
            } else if (54..70).contains(&len) {
                // No co_hash: grid starts right after the name.
                Err(if len < 66 { "grid" } else { "block" })
            } else {
                Err(layout.iter().find(|(end, _)| *end > len).unwrap().1)
            };
            assert_eq!(got.map_err(|e| e.field), want, "cut at {len}");
        }
        assert_eq!(Launch::parse(&full).unwrap().attr_count, 2);
    }

    #[test]
    fn snapshot_count_past_the_end_is_an_error() {
        let r = probe_launch(3, 2);
        let e = Launch::parse(&r).unwrap_err();
        assert_eq!(e.field, "snapshot records");
    }

    #[test]
    fn attribute_count_past_the_end_is_an_error() {
        let mut r = probe_launch(0, 0);
        let at = r.len() - 48 - 8;
        r[at..at + 4].copy_from_slice(&1000u32.to_le_bytes());
        assert_eq!(Launch::parse(&r).unwrap_err().field, "launch attributes");
    }

    /// The fast argument walk agrees with the field-by-field one on random
    /// argument lists cut at every length: same end when they fit, and an
    /// error exactly when the careful walk finds one.
    #[test]
    fn the_fast_argument_walk_agrees_with_the_careful_one() {
        let mut next = crate::archive::summary::chunks::testing::xorshift(0x9E37_79B9_7F4A_7C15);
        for _ in 0..300 {
            let count = (next() % 6) as u16;
            let mut b = Vec::new();
            for _ in 0..count {
                let kind = (next() % 5) as u8;
                let size = (next() % 12) as u16;
                b.push(kind);
                b.extend(size.to_le_bytes());
                b.extend(std::iter::repeat_n(0xAB, usize::from(size)));
                if kind == 3 {
                    let n = (next() % 4) as u16;
                    b.extend(n.to_le_bytes());
                    b.extend(std::iter::repeat_n(0xCD, usize::from(n) * 2));
                }
            }
            // Occasionally a huge announced size or pointer count.
            if !b.is_empty() && next().is_multiple_of(4) {
                let at = (next() as usize) % b.len();
                b[at] = 0xFF;
            }
            for len in 0..=b.len() {
                let r = &b[..len];
                let careful = check_args(r, 0, count);
                let fast = skip_args(&mut Cursor::new(r, 0), count).map(|s| s.len());
                assert_eq!(
                    fast.map_err(|e| (e.field, e.at)),
                    careful.map_err(|e| (e.field, e.at)),
                    "{r:?} count {count}"
                );
            }
        }
    }
}
