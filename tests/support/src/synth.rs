//! Ready-made archives: the `examples/` capture root the README quick start
//! uses, and a large realistic `events.bin` for the benchmark.

use std::fs;
use std::io::{self, BufWriter};
use std::path::{Path, PathBuf};

use crate::archive::{gfx942_metadata, write_root_manifest, Manifest, ProcessArchive};
use crate::events::{api, kind, Arg, EventsFile, Launch};

/// Kernel of the crashed example process: the kernel of the recorded
/// fixture `info_crash.txt`.
pub const CRASH_KERNEL: &str = "crash_oob";
/// Kernel of the clean sibling: the kernel of the reference `--info` example.
pub const CLEAN_KERNEL: &str = "vector_add";

/// A code object's bytes naming `kernel` (an ELF magic, then text).
pub(crate) fn code_object_bytes(kernel: &str) -> Vec<u8> {
    let mut b = b"\x7fELF".to_vec();
    b.extend(
        format!(" synthetic code object holding {kernel} (hrr example; not a loadable ELF)")
            .as_bytes(),
    );
    b
}

fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
        .collect()
}

/// The crashed process of the example root (pid 4243): module load, malloc,
/// H2D copy, one `crash_oob` launch, device synchronize; no trailer, manifest
/// `complete: false`, metadata for one gfx942 device. Mirrors the shape of
/// the recorded `info_crash.txt` (5 events, 1 kernel, 1 thread).
pub fn crashed_process() -> ProcessArchive {
    crashed_process_in(CRASH_KERNEL)
}

/// The crashed example process with `kernel` as the kernel it died in.
pub fn crashed_process_in(kernel: &str) -> ProcessArchive {
    let mut p = ProcessArchive::new(4243, EventsFile::v7());
    p.parent_pid = 4242;
    p.events.thread = 4243;
    p.events.clock = 5_210_000_000;
    p.events.tick = 150_000;
    let co = p.add_code_object(&code_object_bytes(kernel));
    let input = p.add_blob(&pattern(256, 7));
    let buf = 0x7f91_da00_0000;
    let mut launch = Launch::new(kernel, [64, 1, 1], [64, 1, 1]);
    launch.code_object = co;
    launch.args = vec![Arg::Pointer(buf), Arg::Value(64u32.to_le_bytes().to_vec())];
    p.events
        .module_load(0x5a5a_0000_1000, co)
        .malloc(buf, 256)
        .memcpy(buf, 0x55d0_0000_2000, 256, kind::HOST_TO_DEVICE, input)
        .launch(api::HIP_MODULE_LAUNCH_KERNEL, &launch)
        .device_synchronize();
    p.manifest = Manifest::Incomplete;
    p.metadata = Some(gfx942_metadata());
    p
}

/// The clean sibling (pid 4242, parent of 4243): `vector_add` launched
/// once with an H2D input and a verified D2H copy, then a trailer and a
/// complete manifest.
pub fn clean_process() -> ProcessArchive {
    let mut p = ProcessArchive::new(4242, EventsFile::v7());
    p.events.thread = 4242;
    p.events.clock = 5_200_000_000;
    p.events.tick = 120_000;
    let co = p.add_code_object(&code_object_bytes(CLEAN_KERNEL));
    let input = p.add_blob(&pattern(4096, 1));
    let expected = p.add_blob(&pattern(4096, 2));
    let (a, b) = (0x7f10_0000_0000, 0x7f10_0010_0000);
    let mut launch = Launch::new(CLEAN_KERNEL, [4096, 1, 1], [256, 1, 1]);
    launch.code_object = co;
    launch.args = vec![
        Arg::Pointer(a),
        Arg::Pointer(b),
        Arg::Value(1024u32.to_le_bytes().to_vec()),
    ];
    p.events
        .module_load(0x5a5a_0000_2000, co)
        .malloc(a, 4096)
        .malloc(b, 4096)
        .memcpy(a, 0x55d0_0000_4000, 4096, kind::HOST_TO_DEVICE, input)
        .launch(api::HIP_MODULE_LAUNCH_KERNEL, &launch)
        .memcpy(0x55d0_0000_8000, b, 4096, kind::DEVICE_TO_HOST, expected)
        .free(a)
        .free(b)
        .device_synchronize()
        .trailer();
    p.metadata = Some(gfx942_metadata());
    p
}

/// Writes the example capture root `dir/crash.hrr/` (clean 4242 + crashed
/// 4243 + the root manifest the clean process wrote last). Returns its path.
pub fn write_examples(dir: &Path) -> io::Result<PathBuf> {
    let root = dir.join("crash.hrr");
    if root.exists() {
        fs::remove_dir_all(&root)?;
    }
    fs::create_dir_all(&root)?;
    let clean = clean_process();
    let crashed = crashed_process();
    clean.write(&root)?;
    crashed.write(&root)?;
    write_root_manifest(&root, &[&clean, &crashed])?;
    Ok(root)
}

/// What [`write_big`] produced.
#[derive(Debug, Clone, Copy)]
pub struct BigStats {
    /// Events written.
    pub events: u64,
    /// Launch events among them.
    pub launches: u64,
    /// D2H copies carrying an expected-output blob.
    pub d2h_checks: u64,
    /// Allocations after the first 1024.
    pub allocations: u64,
    /// Frees.
    pub frees: u64,
    /// File size.
    pub bytes: u64,
}

/// Distinct blobs the big archive's copies reference (real captures
/// deduplicate blobs by content; the pool is written as files).
const BLOB_POOL: usize = 256;
/// Distinct synthetic kernels of the big archive.
const KERNELS: usize = 48;

/// Writes a process archive `dir/pid-<pid>/` whose `events.bin` is at least
/// `target` bytes of launches (3–10 args, pointing into live buffers),
/// async H2D and D2H copies with blobs, mallocs, frees and stream
/// synchronizes on four threads, then a trailer. Streams to disk; memory stays small.
pub fn write_big(dir: &Path, pid: u64, target: u64) -> io::Result<BigStats> {
    write_big_mix(dir, pid, target, Mix::default())
}

/// Symbols of [`Mix::symbols`]: addresses in no allocation.
const SYMBOLS: u64 = 16;

/// What [`write_big_mix`] changes in [`write_big`]'s stream.
#[derive(Debug, Clone, Copy, Default)]
pub struct Mix {
    /// Percent of the launches passing, as their first pointer, one of 16
    /// fixed addresses in no allocation (a module's globals, which the
    /// format records no allocation for), in place of a buffer.
    pub symbols: u64,
    /// Allocations are segments of 2 to 64 MiB, 2 MiB aligned, and
    /// launches pass tensors anywhere in them (512-byte aligned), as
    /// behind PyTorch's caching allocator, in place of buffers of 4 KiB to
    /// 1 MiB passed at their first bytes.
    pub segments: bool,
}

/// [`write_big`] with the changes `mix` names.
pub fn write_big_mix(dir: &Path, pid: u64, target: u64, mix: Mix) -> io::Result<BigStats> {
    let mut p = ProcessArchive::new(pid, EventsFile::v7());
    let pool: Vec<(u64, u64)> = (0..BLOB_POOL)
        .map(|i| p.add_blob(&pattern(1024, i as u8)))
        .collect();
    let cos: Vec<(u64, u64)> = (0..4)
        .map(|i| p.add_code_object(&code_object_bytes(&format!("bench module {i}"))))
        .collect();
    let names: Vec<String> = (0..KERNELS)
        .map(|i| format!("hrr_bench_kernel_{i:02}_{}", "x".repeat(20 + (i * 7) % 60)))
        .collect();
    let pdir = dir.join(format!("pid-{pid}"));
    // Write blobs, code objects and the manifest through the normal path
    // with an empty stream, then replace events.bin by the streamed one.
    p.manifest = Manifest::Complete;
    p.write(dir)?;
    let mut out = BufWriter::with_capacity(1 << 20, fs::File::create(pdir.join("events.bin"))?);
    let mut ev = EventsFile::v7();
    let mut rng: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut next = move || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    let mut stats = BigStats {
        events: 0,
        launches: 0,
        d2h_checks: 0,
        allocations: 0,
        frees: 0,
        bytes: 0,
    };
    let mut written: u64 = 0;
    for (i, co) in cos.iter().enumerate() {
        ev.module_load(0x5a5a_0000_0000 + i as u64 * 0x1000, *co);
    }
    // The allocation mix: buffers of 4 KiB to 1 MiB in 4096 address slots
    // of 1 MiB, a thousand live from the start, then allocated and freed
    // at random, one of each per thousand events (thousands a GiB, as a
    // workload behind a caching allocator makes them); launches and
    // copies use live buffers (a launch's pointer arguments several of
    // them), the first pointer of a launch in 200 is an address in no
    // allocation (a symbol) and of one in 2000 a buffer freed just before
    // (a stale pointer).
    //
    // With `mix.segments` the slots are 64 MiB apart, the buffers
    // segments of 2 to 64 MiB, and a launch's pointers tensors anywhere in
    // them.
    let (slot_bytes, least, sizes) = match mix.segments {
        true => (0x400_0000, 2 << 20, 6),
        false => (0x10_0000, 4096, 9),
    };
    let slot = |i: u64| 0x7f00_0000_0000 + i * slot_bytes;
    let size_of = |r: u64| least << ((r >> 40) % sizes);
    // A pointer into live buffer `(base, size)`, by random `t`: its first
    // bytes at offset `at`, or with `mix.segments` a tensor in it.
    let tensor = |(base, size): (u64, u64), t: u64, at: u64| match mix.segments {
        true => base + (t.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 20) % (size >> 9) * 512,
        false => base + at,
    };
    let mut free_slots: Vec<u64> = (0..4096).map(slot).collect();
    let mut live: Vec<(u64, u64)> = Vec::new();
    let mut last_freed = slot(0);
    for _ in 0..1024 {
        let r = next();
        let ptr = free_slots.swap_remove((r % free_slots.len() as u64) as usize);
        let size = size_of(r);
        ev.malloc(ptr, size);
        live.push((ptr, size));
    }
    while written < target {
        let r = next();
        ev.thread = 7000 + (r >> 60) % 4;
        let buffer = live[(r >> 8) as usize % live.len()];
        let ptr = buffer.0;
        match r % 1000 {
            0..=599 => {
                let k = (r >> 20) as usize % KERNELS;
                let mut l = Launch::new(
                    &names[k],
                    [((r >> 32) % 8192) as u32 + 1, 1, 1],
                    [256, 1, 1],
                );
                l.code_object = cos[k % cos.len()];
                l.stream = 0x5000 + (r >> 40) % 4;
                let ptr = match (r >> 44) % 2000 {
                    0 => last_freed,
                    1..=10 => 0x7fd0_0000_0000 + (r >> 48) * 0x100,
                    n if n < 11 + mix.symbols * 20 => 0x7fe0_0000_0000 + (r >> 60) % SYMBOLS * 0x40,
                    _ => tensor(buffer, r, 0),
                };
                // A kernel has one signature: 3-10 args whose kinds are
                // fixed per kernel; only the values change between launches.
                // The first pointer is `ptr`, each later one points into a
                // buffer of its own (inputs, weights, outputs), at an offset.
                let sig = (k as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
                let nargs = 3 + sig % 8;
                let mut first = true;
                for a in 0..nargs {
                    let kind = (sig >> (a * 3 + 8)) % 4;
                    let buffer = match first {
                        true => ptr,
                        false => tensor(
                            live[((r >> 8) + a * 7919) as usize % live.len()],
                            r ^ a,
                            a * 0x100,
                        ),
                    };
                    first &= kind == 0;
                    l.args.push(match kind {
                        0 => Arg::Value(((r >> a) as u32).to_le_bytes().to_vec()),
                        3 => Arg::Embedded(buffer.to_le_bytes().repeat(2), vec![8]),
                        _ => Arg::Pointer(buffer),
                    });
                }
                ev.launch(api::HIP_MODULE_LAUNCH_KERNEL, &l);
                stats.launches += 1;
            }
            600..=749 => {
                let blob = pool[(r >> 24) as usize % BLOB_POOL];
                ev.fixed(
                    api::HIP_MEMCPY_ASYNC,
                    88,
                    &[
                        (36, ptr),
                        (44, 0x55d0_0000_0000),
                        (52, 1024),
                        (60, 1),
                        (64, 0x5000),
                        (72, blob.0),
                        (80, blob.1),
                    ],
                );
            }
            750..=849 => {
                let blob = pool[(r >> 24) as usize % BLOB_POOL];
                ev.memcpy(0x55d0_0001_0000, ptr, 1024, kind::DEVICE_TO_HOST, blob);
                stats.d2h_checks += 1;
            }
            850 if !free_slots.is_empty() => {
                let p = free_slots.swap_remove((r >> 16) as usize % free_slots.len());
                let size = size_of(r);
                ev.malloc(p, size);
                live.push((p, size));
                stats.allocations += 1;
            }
            851 if live.len() > 1 => {
                let (p, _) = live.swap_remove((r >> 8) as usize % live.len());
                ev.free(p);
                free_slots.push(p);
                last_freed = p;
                stats.frees += 1;
            }
            _ => {
                ev.fixed(api::HIP_STREAM_SYNCHRONIZE, 44, &[(36, 0x5000)]);
            }
        }
        if ev.bytes().len() >= 1 << 20 {
            written += ev.bytes().len() as u64;
            ev.drain_to(&mut out)?;
        }
    }
    ev.trailer();
    written += ev.bytes().len() as u64;
    ev.drain_to(&mut out)?;
    io::Write::flush(&mut out)?;
    stats.events = ev.events();
    stats.bytes = written;
    // The manifest written above counted an empty stream: rewrite it.
    p.events = ev;
    if let Some(text) = p.manifest_text() {
        fs::write(pdir.join("manifest.json"), text)?;
    }
    Ok(stats)
}

/// Writes a process archive `dir/pid-<pid>/` that ends with `ranges`
/// allocations live: `ranges` hipMallocs of 4 KiB at distinct addresses,
/// each followed by a launch passing a pointer into it and one into the
/// allocation made half the list earlier, then a trailer. What the
/// allocation map holds at its largest, for measuring its memory.
pub fn write_live(dir: &Path, pid: u64, ranges: u64) -> io::Result<PathBuf> {
    let mut p = ProcessArchive::new(pid, EventsFile::v7());
    p.manifest = Manifest::Complete;
    let base = |i: u64| 0x7e00_0000_0000 + i * 0x2000;
    for i in 0..ranges {
        p.events.malloc(base(i), 4096);
        let mut l = Launch::new("hrr_live_kernel", [64, 1, 1], [64, 1, 1]);
        l.args = vec![
            Arg::Pointer(base(i) + 0x10),
            Arg::Pointer(base(i / 2) + 0x20),
        ];
        p.events.launch(api::HIP_MODULE_LAUNCH_KERNEL, &l);
    }
    p.events.trailer();
    p.write(dir)
}
