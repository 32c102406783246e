//! Byte-exact `events.bin` writer (reference archive-format.md §5–§12),
//! written independently of `hrr`'s reader so tests compare two readings of
//! the spec rather than the reader with itself.

/// v7 ids used by the writer's typed helpers (reference §0 table).
pub mod api {
    #![allow(missing_docs)]
    pub const HIP_DEVICE_SYNCHRONIZE: u16 = 66;
    pub const HIP_FREE: u16 = 90;
    pub const HIP_GRAPH_ADD_KERNEL_NODE: u16 = 124;
    pub const HIP_LAUNCH_BY_PTR: u16 = 210;
    pub const HIP_LAUNCH_COOPERATIVE_KERNEL: u16 = 211;
    pub const HIP_LAUNCH_KERNEL: u16 = 214;
    pub const HIP_MALLOC: u16 = 215;
    pub const HIP_MEMCPY: u16 = 259;
    pub const HIP_MEMCPY_2D: u16 = 260;
    pub const HIP_MEMCPY_ASYNC: u16 = 268;
    pub const HIP_MEMCPY_DTOH: u16 = 272;
    pub const HIP_MEMCPY_SPT: u16 = 390;
    pub const HIP_MODULE_LAUNCH_COOPERATIVE_KERNEL: u16 = 306;
    pub const HIP_MODULE_LAUNCH_KERNEL: u16 = 308;
    pub const HIP_MODULE_LOAD: u16 = 309;
    pub const HIP_STREAM_SYNCHRONIZE: u16 = 346;
    pub const HIP_EXT_MODULE_LAUNCH_KERNEL: u16 = 388;
    pub const HIP_LAUNCH_COOPERATIVE_KERNEL_SPT: u16 = 418;
    pub const HIP_LAUNCH_KERNEL_SPT: u16 = 419;
    pub const HIP_LAUNCH_KERNEL_EX_C: u16 = 474;
    pub const HIP_DRV_LAUNCH_KERNEL_EX: u16 = 475;
    pub const HIP_REGISTER_FAT_BINARY_V7: u16 = 548;
    pub const HIP_REGISTER_FAT_BINARY_V6: u16 = 546;
    /// All ten ids that carry the launch payload (reference §10).
    pub const LAUNCH_IDS: [u16; 10] = [
        HIP_MODULE_LAUNCH_KERNEL,
        HIP_EXT_MODULE_LAUNCH_KERNEL,
        HIP_LAUNCH_KERNEL,
        HIP_LAUNCH_BY_PTR,
        HIP_MODULE_LAUNCH_COOPERATIVE_KERNEL,
        HIP_LAUNCH_COOPERATIVE_KERNEL,
        HIP_LAUNCH_COOPERATIVE_KERNEL_SPT,
        HIP_LAUNCH_KERNEL_SPT,
        HIP_LAUNCH_KERNEL_EX_C,
        HIP_DRV_LAUNCH_KERNEL_EX,
    ];
}

/// hipMemcpyKind values (reference §12).
pub mod kind {
    #![allow(missing_docs)]
    pub const HOST_TO_DEVICE: i32 = 1;
    pub const DEVICE_TO_HOST: i32 = 2;
    pub const DEFAULT: i32 = 4;
}

/// FNV-1a-128 as the capture writer computes it (reference §13).
pub fn fnv1a128(bytes: &[u8]) -> (u64, u64) {
    let mut lo: u64 = 0xcbf29ce484222325;
    let mut hi: u64 = 0x00000100000001b3;
    for &b in bytes {
        lo ^= u64::from(b);
        lo = lo.wrapping_mul(0x100000001b3);
        hi ^= u64::from(b);
        hi = hi.wrapping_mul(0xcbf29ce484222325);
    }
    (lo, hi)
}

/// `%016llx%016llx` of (lo, hi): the blob / code-object file name.
pub fn hash_name(h: (u64, u64)) -> String {
    format!("{:016x}{:016x}", h.0, h.1)
}

/// One kernel argument entry (reference §10.2).
#[derive(Debug, Clone)]
pub enum Arg {
    /// value_kind 0: raw bytes.
    Value(Vec<u8>),
    /// value_kind 1: an 8-byte device pointer.
    Pointer(u64),
    /// value_kind 3: bytes with embedded pointer words at the offsets.
    Embedded(Vec<u8>, Vec<u16>),
    /// Any value_kind byte with raw bytes (for hostile variants).
    Raw(u8, Vec<u8>),
}

impl Arg {
    fn encode(&self, out: &mut Vec<u8>) {
        let (kind, bytes): (u8, &[u8]) = match self {
            Arg::Value(b) => (0, b),
            Arg::Pointer(p) => {
                out.push(1);
                out.extend(8u16.to_le_bytes());
                out.extend(p.to_le_bytes());
                return;
            }
            Arg::Embedded(b, _) => (3, b),
            Arg::Raw(k, b) => (*k, b),
        };
        out.push(kind);
        out.extend((bytes.len() as u16).to_le_bytes());
        out.extend(bytes);
        if let Arg::Embedded(_, offs) = self {
            out.extend((offs.len() as u16).to_le_bytes());
            for o in offs {
                out.extend(o.to_le_bytes());
            }
        }
    }
}

/// A v8 pinned-host snapshot record (reference §10.3).
#[derive(Debug, Clone, Copy)]
pub struct Snapshot {
    pub ptr: u64,
    pub offset: u64,
    pub length: u64,
    pub hash: (u64, u64),
    pub direction: u8,
}

/// A kernel-launch payload (reference §10.1).
#[derive(Debug, Clone)]
pub struct Launch {
    pub stream: u64,
    pub name: Vec<u8>,
    pub code_object: (u64, u64),
    pub grid: [u32; 3],
    pub block: [u32; 3],
    pub shared_mem: u32,
    pub args: Vec<Arg>,
    /// (count, stride, raw attribute bytes); `None` writes no tail at all
    /// (an old capture).
    pub attributes: Option<(u32, u32, Vec<u8>)>,
    pub snapshots: Vec<Snapshot>,
    /// Overrides `num_snapshots` (hostile variants); default = snapshots.len().
    pub num_snapshots: Option<u16>,
}

impl Launch {
    /// A plain launch of `name` with no args and an empty attribute tail.
    pub fn new(name: &str, grid: [u32; 3], block: [u32; 3]) -> Launch {
        Launch {
            stream: 0,
            name: name.as_bytes().to_vec(),
            code_object: (0, 0),
            grid,
            block,
            shared_mem: 0,
            args: Vec::new(),
            attributes: Some((0, 0, Vec::new())),
            snapshots: Vec::new(),
            num_snapshots: None,
        }
    }

    /// The payload bytes after the 32-byte header.
    pub fn encode(&self) -> Vec<u8> {
        let mut b = Vec::with_capacity(64 + self.name.len());
        b.extend(self.stream.to_le_bytes());
        b.extend((self.name.len() as u16).to_le_bytes());
        b.extend(&self.name);
        b.extend(self.code_object.0.to_le_bytes());
        b.extend(self.code_object.1.to_le_bytes());
        for v in self.grid.iter().chain(&self.block) {
            b.extend(v.to_le_bytes());
        }
        b.extend(self.shared_mem.to_le_bytes());
        b.extend((self.args.len() as u16).to_le_bytes());
        let n_snap = self.num_snapshots.unwrap_or(self.snapshots.len() as u16);
        b.extend(n_snap.to_le_bytes());
        for a in &self.args {
            a.encode(&mut b);
        }
        if let Some((count, stride, raw)) = &self.attributes {
            b.extend(count.to_le_bytes());
            b.extend(stride.to_le_bytes());
            b.extend(raw);
        }
        for s in &self.snapshots {
            b.extend(s.ptr.to_le_bytes());
            b.extend(s.offset.to_le_bytes());
            b.extend(s.length.to_le_bytes());
            b.extend(s.hash.0.to_le_bytes());
            b.extend(s.hash.1.to_le_bytes());
            b.push(s.direction);
        }
        b
    }
}

/// Builds an `events.bin` in memory, record by record.
#[derive(Debug, Clone)]
pub struct EventsFile {
    buf: Vec<u8>,
    next_seq: u64,
    events: u64,
    /// Thread id written into the next records.
    pub thread: u64,
    /// Timestamp of the next record (advanced by `tick` per record).
    pub clock: u64,
    /// Nanoseconds between records.
    pub tick: u64,
}

impl EventsFile {
    /// A file with the 8-byte header of `version` and `flags`.
    pub fn new(version: u16, flags: u16) -> EventsFile {
        let mut buf = Vec::new();
        buf.extend(b"EHRR");
        buf.extend(version.to_le_bytes());
        buf.extend(flags.to_le_bytes());
        EventsFile {
            buf,
            next_seq: 0,
            events: 0,
            thread: 4242,
            clock: 1_000_000,
            tick: 1_000,
        }
    }

    /// A v7 file with the packed-host-rects flag the current writer sets.
    pub fn v7() -> EventsFile {
        EventsFile::new(7, 1)
    }

    /// Events written so far (trailers and raw bytes excluded).
    pub fn events(&self) -> u64 {
        self.events
    }

    /// The file so far.
    pub fn bytes(&self) -> &[u8] {
        &self.buf
    }

    /// Writes the bytes built so far to `w` and forgets them, keeping the
    /// sequence, clock and event count (for streaming huge files).
    pub fn drain_to(&mut self, w: &mut impl std::io::Write) -> std::io::Result<()> {
        w.write_all(&self.buf)?;
        self.buf.clear();
        Ok(())
    }

    fn header(&mut self, event_type: u16, seq: u64, ts: u64, thread: u64, len: u32) {
        self.buf.extend(event_type.to_le_bytes());
        self.buf.extend(seq.to_le_bytes());
        self.buf.extend(ts.to_le_bytes());
        self.buf.extend(thread.to_le_bytes());
        self.buf.extend(len.to_le_bytes());
        self.buf.extend([0u8; 2]);
    }

    /// Appends one event: header (auto seq, clock, thread) then `body`
    /// (everything after the 32-byte header).
    pub fn record(&mut self, event_type: u16, body: &[u8]) -> &mut Self {
        let (seq, ts, thread) = (self.next_seq, self.clock, self.thread);
        self.header(event_type, seq, ts, thread, 32 + body.len() as u32);
        self.buf.extend(body);
        self.next_seq += 1;
        self.clock += self.tick;
        self.events += 1;
        self
    }

    /// Appends a fixed-layout event of `total` bytes with `ret` 0 and the
    /// given (offset, value) fields (offsets from the record start), applied
    /// in order as little-endian u64s; a field at the end of the struct keeps
    /// only the bytes that fit (so a trailing i32 `kind` can be written).
    pub fn fixed(&mut self, event_type: u16, total: usize, fields: &[(usize, u64)]) -> &mut Self {
        let mut body = vec![0u8; total - 32];
        for &(at, v) in fields {
            let end = (at - 32 + 8).min(body.len());
            let n = end - (at - 32);
            body[at - 32..end].copy_from_slice(&v.to_le_bytes()[..n]);
        }
        self.record(event_type, &body)
    }

    /// Appends raw bytes (torn tails, stray bytes, hostile headers).
    pub fn raw(&mut self, bytes: &[u8]) -> &mut Self {
        self.buf.extend(bytes);
        self
    }

    /// Appends a bare header claiming `payload_length` (no body).
    pub fn bare_header(&mut self, event_type: u16, payload_length: u32) -> &mut Self {
        let seq = self.next_seq;
        self.header(event_type, seq, self.clock, self.thread, payload_length);
        self
    }

    /// Appends the clean-shutdown trailer counting every event so far.
    pub fn trailer(&mut self) -> &mut Self {
        let n = self.events;
        self.trailer_counting(n)
    }

    /// Appends a trailer with an explicit `total_events` (timestamp and
    /// thread 0, as the emergency path and `--repair` write them).
    pub fn trailer_counting(&mut self, total_events: u64) -> &mut Self {
        let seq = self.next_seq;
        self.header(0xFFFF, seq, 0, 0, 44);
        self.buf.extend(total_events.to_le_bytes());
        self.buf.extend(b"HEOF");
        self
    }

    /// hipMalloc (52 bytes): ptr, size.
    pub fn malloc(&mut self, ptr: u64, size: u64) -> &mut Self {
        self.fixed(api::HIP_MALLOC, 52, &[(36, ptr), (44, size)])
    }

    /// hipFree (44 bytes).
    pub fn free(&mut self, ptr: u64) -> &mut Self {
        self.fixed(api::HIP_FREE, 44, &[(36, ptr)])
    }

    /// hipMemcpy (80 bytes) with a blob hash (0,0 = none).
    pub fn memcpy(
        &mut self,
        dst: u64,
        src: u64,
        size: u64,
        kind: i32,
        blob: (u64, u64),
    ) -> &mut Self {
        self.fixed(
            api::HIP_MEMCPY,
            80,
            &[
                (36, dst),
                (44, src),
                (52, size),
                (60, kind as u32 as u64),
                (64, blob.0),
                (72, blob.1),
            ],
        )
    }

    /// hipMemcpyDtoH (76 bytes) with its expected-output blob.
    pub fn memcpy_dtoh(&mut self, dst: u64, src: u64, size: u64, blob: (u64, u64)) -> &mut Self {
        self.fixed(
            api::HIP_MEMCPY_DTOH,
            76,
            &[(36, dst), (44, src), (52, size), (60, blob.0), (68, blob.1)],
        )
    }

    /// hipModuleLoad (72 bytes) with the code-object hash.
    pub fn module_load(&mut self, module: u64, co: (u64, u64)) -> &mut Self {
        self.fixed(
            api::HIP_MODULE_LOAD,
            72,
            &[(36, module), (52, co.0), (60, co.1)],
        )
    }

    /// __hipRegisterFatBinary (64 bytes) under the given id (548 in v7, 546 in v6).
    pub fn fat_binary(&mut self, id: u16, blob: (u64, u64), size: u64) -> &mut Self {
        self.fixed(id, 64, &[(40, blob.0), (48, blob.1), (56, size)])
    }

    /// hipDeviceSynchronize (36 bytes, ret only).
    pub fn device_synchronize(&mut self) -> &mut Self {
        self.fixed(api::HIP_DEVICE_SYNCHRONIZE, 36, &[])
    }

    /// A kernel launch under `event_type`.
    pub fn launch(&mut self, event_type: u16, launch: &Launch) -> &mut Self {
        let body = launch.encode();
        self.record(event_type, &body)
    }

    /// hipGraphAddKernelNode: the 274-byte struct followed by the kernel tail
    /// (§10.4: name, co_hash, num_args, args).
    pub fn graph_kernel_node(&mut self, name: &str, co: (u64, u64), args: &[Arg]) -> &mut Self {
        let mut body = vec![0u8; 274 - 32];
        body.extend((name.len() as u16).to_le_bytes());
        body.extend(name.as_bytes());
        body.extend(co.0.to_le_bytes());
        body.extend(co.1.to_le_bytes());
        body.extend((args.len() as u16).to_le_bytes());
        for a in args {
            a.encode(&mut body);
        }
        self.record(api::HIP_GRAPH_ADD_KERNEL_NODE, &body)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hash_matches_reference_examples() {
        assert_eq!(
            hash_name(fnv1a128(b"a")),
            "af63dc4c8601ec8c61c4bcf88623f95a"
        );
        assert_eq!(
            hash_name(fnv1a128(b"hello")),
            "a430d84680aabd0b779c7cb5ec50a9a9"
        );
        assert_eq!(
            hash_name(fnv1a128(&[0u8; 16])),
            "88201fb960ff64658d44c0053e1a02f3"
        );
        assert_eq!(
            hash_name((0xF, 0xF000000000000000)),
            "000000000000000ff000000000000000"
        );
    }

    #[test]
    fn worked_example_is_byte_exact() {
        // Reference §16: the 104-byte minimal v7 file.
        let expected: [u8; 104] = [
            0x45, 0x48, 0x52, 0x52, 0x07, 0x00, 0x01, 0x00, 0xd7, 0x00, 0x00, 0x00, 0x00, 0x00,
            0x00, 0x00, 0x00, 0x00, 0x40, 0x42, 0x0f, 0x00, 0x00, 0x00, 0x00, 0x00, 0x92, 0x10,
            0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x34, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
            0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x7f, 0x00, 0x00, 0x00, 0x00, 0x10, 0x00,
            0x00, 0x00, 0x00, 0x00, 0xff, 0xff, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
            0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
            0x00, 0x00, 0x2c, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00,
            0x00, 0x00, 0x48, 0x45, 0x4f, 0x46,
        ];
        let mut f = EventsFile::v7();
        f.clock = 1_000_000;
        f.thread = 4242;
        f.malloc(0x0000_7f00_0000_0000, 1 << 20).trailer();
        assert_eq!(f.bytes(), &expected[..]);
    }
}
