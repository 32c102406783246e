//! A byte-exact region sidecar writer (`regions/<producer>.hrrr`,
//! reference §14): the 8-byte "HRRR" header, then batch records of
//! 32-byte region records.

use std::fs;
use std::io;
use std::path::Path;

/// One region record (reference §14).
#[derive(Debug, Clone, Copy)]
pub struct Region {
    /// 0 ADD, 1 DEL.
    pub op: u8,
    /// 0 BLOCK, 1 SEGMENT.
    pub kind: u8,
    pub base: u64,
    pub size: u64,
    pub mono_ns: u64,
}

impl Region {
    /// A BLOCK becoming live at `mono_ns`.
    pub fn add_block(base: u64, size: u64, mono_ns: u64) -> Region {
        Region {
            op: 0,
            kind: 0,
            base,
            size,
            mono_ns,
        }
    }

    /// A BLOCK dying at `mono_ns`.
    pub fn del_block(base: u64, size: u64, mono_ns: u64) -> Region {
        Region {
            op: 1,
            kind: 0,
            base,
            size,
            mono_ns,
        }
    }

    /// A SEGMENT becoming live at `mono_ns`.
    pub fn add_segment(base: u64, size: u64, mono_ns: u64) -> Region {
        Region {
            op: 0,
            kind: 1,
            base,
            size,
            mono_ns,
        }
    }
}

/// The bytes of a region stream holding `batches`, each one batch record.
pub fn stream(batches: &[&[Region]]) -> Vec<u8> {
    let mut b = b"HRRR".to_vec();
    b.extend(1u16.to_le_bytes());
    b.extend(0u16.to_le_bytes());
    for batch in batches {
        let ts = batch.first().map_or(0, |r| r.mono_ns);
        b.extend(0xFFFDu16.to_le_bytes());
        b.extend(0u64.to_le_bytes());
        b.extend(ts.to_le_bytes());
        b.extend(0u64.to_le_bytes());
        b.extend((40 + 32 * batch.len() as u32).to_le_bytes());
        b.extend([0u8; 2]);
        b.extend((batch.len() as u32).to_le_bytes());
        b.extend(0u32.to_le_bytes());
        for r in *batch {
            b.extend([r.op, r.kind, 0, 0]);
            b.extend(0u32.to_le_bytes());
            b.extend(r.base.to_le_bytes());
            b.extend(r.size.to_le_bytes());
            b.extend(r.mono_ns.to_le_bytes());
        }
    }
    b
}

/// Writes `process_dir/regions/<producer>.hrrr` holding `batches`.
pub fn write(process_dir: &Path, producer: &str, batches: &[&[Region]]) -> io::Result<()> {
    let dir = process_dir.join("regions");
    fs::create_dir_all(&dir)?;
    fs::write(dir.join(format!("{producer}.hrrr")), stream(batches))
}
