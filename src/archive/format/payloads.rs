//! Fixed-layout events that matter for triage (reference §11) and the memcpy
//! family (§12), plus the dispatch from an event to its decoded payload.
//!
//! Offsets are from the record start (header included). A record shorter
//! than its struct is kept but not decoded ([`Payload::Short`]), as upstream
//! does; an unknown id or an API without a documented layout is
//! [`Payload::Opaque`].

use crate::archive::format::apis::{id, is_launch};
use crate::archive::format::blobs::BlobHash;
use crate::archive::format::framing::{le_u32, le_u64};
use crate::archive::format::launch::{kernel_node_struct_len, KernelNode, Launch, PayloadError};

/// hipMemcpyKind (§12).
pub fn memcpy_kind_name(kind: i32) -> &'static str {
    match kind {
        0 => "HostToHost",
        1 => "HostToDevice",
        2 => "DeviceToHost",
        3 => "DeviceToDevice",
        4 => "Default",
        _ => "unknown",
    }
}

/// A memcpy-family event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemCopy {
    /// Destination (address or descriptor pointer for pitched copies).
    pub dst: u64,
    /// Source address (0 for descriptor-based copies).
    pub src: u64,
    /// Bytes copied (1-D copies; width×height for 2-D; 0 when in a descriptor).
    pub size: u64,
    /// hipMemcpyKind when the event carries one.
    pub kind: Option<i32>,
    /// Stream of async variants.
    pub stream: Option<u64>,
    /// Host-side blob: H2D source bytes, or (1-D D2H) the expected output.
    pub blob: BlobHash,
    /// Pitched/3-D copies: the D2H expected-output blob.
    pub d2h_blob: BlobHash,
    /// True when replay verifies this copy against an expected-output blob.
    pub d2h_check: bool,
}

/// The decoded payload of one event.
#[derive(Debug, Clone, Copy)]
pub enum Payload<'a> {
    /// A kernel launch (any of the ten launch ids).
    Launch(Launch<'a>),
    /// A graph kernel-node event with its kernel tail.
    KernelNode(KernelNode<'a>),
    /// An allocation; `ptr` is the returned address.
    Alloc {
        /// Returned address.
        ptr: u64,
        /// Bytes requested.
        size: u64,
        /// Flags, for the variants that take them.
        flags: Option<u32>,
        /// Stream of hipMallocAsync.
        stream: Option<u64>,
    },
    /// A free.
    Free {
        /// Address freed.
        ptr: u64,
        /// Stream of hipFreeAsync.
        stream: Option<u64>,
    },
    /// A memcpy-family copy.
    Copy(MemCopy),
    /// hipHostRegister with the snapshot of the host range.
    HostRegister {
        /// Host address.
        ptr: u64,
        /// Bytes registered.
        size: u64,
        /// Registration flags.
        flags: u32,
        /// Blob holding the range.
        blob: BlobHash,
    },
    /// hipModuleLoad / LoadData / LoadDataEx.
    ModuleLoad {
        /// Created module handle.
        module: u64,
        /// Hash of the code object written to `code_objects/`.
        code_object: BlobHash,
    },
    /// __hipRegisterFatBinary: the offload bundle stored as a blob.
    FatBinary {
        /// Blob holding the bundle.
        blob: BlobHash,
        /// Bundle bytes (0 = no blob).
        size: u64,
    },
    /// hipModuleGetFunction.
    GetFunction {
        /// Returned function handle.
        function: u64,
        /// Module it was looked up in.
        module: u64,
    },
    /// Stream create/destroy/synchronize, module unload, graph launch, event
    /// record: one handle worth showing.
    Handle {
        /// Field name.
        field: &'static str,
        /// Raw handle.
        value: u64,
    },
    /// hipSetDevice.
    SetDevice {
        /// Device ordinal.
        device: i32,
    },
    /// The record is shorter than the documented struct: kept, not decoded.
    Short {
        /// Documented struct size.
        expected: usize,
    },
    /// A variable-length payload that runs past its record.
    Malformed(PayloadError),
    /// No documented layout for this id (or an id beyond the table).
    Opaque,
}

fn u64_at(r: &[u8], at: usize) -> u64 {
    le_u64(r, at)
}

fn hash_at(r: &[u8], at: usize) -> BlobHash {
    BlobHash::new(le_u64(r, at), le_u64(r, at + 8))
}

/// Decodes a record whose event type maps to `v7_id` (see
/// `ApiTable::canonical`); `None` ids (beyond the table) are opaque.
pub fn decode(v7_id: Option<u16>, r: &[u8]) -> Payload<'_> {
    let Some(api) = v7_id else {
        return Payload::Opaque;
    };
    if is_launch(api) {
        return match Launch::parse(r) {
            Ok(l) => Payload::Launch(l),
            Err(e) => Payload::Malformed(e),
        };
    }
    if let Some(struct_len) = kernel_node_struct_len(api) {
        return match KernelNode::parse(r, struct_len) {
            Some(Ok(node)) => Payload::KernelNode(node),
            Some(Err(e)) => Payload::Malformed(e),
            None if r.len() < struct_len => Payload::Short {
                expected: struct_len,
            },
            None => Payload::Opaque,
        };
    }
    let Some(expected) = struct_len(api) else {
        return Payload::Opaque;
    };
    if r.len() < expected {
        return Payload::Short { expected };
    }
    decode_fixed(api, r).unwrap_or(Payload::Opaque)
}

/// What the archive summary needs from an event of one API. The summary
/// counts launches and their kernels, referenced blobs and code objects, D2H
/// checks and undersized records; the other decoded fields matter only to
/// `archive events`, so the summary skips decoding them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SummaryNeed {
    /// No documented layout: nothing beyond the header.
    Nothing,
    /// A kernel launch: parse it ([`Launch::parse`]).
    Launch,
    /// A fixed struct with no hash or check in it: only whether the record
    /// is shorter than this documented size.
    Size(usize),
    /// A memcpy-family struct of this documented size: its blob hashes and
    /// D2H check ([`copy`]), the most frequent decode after launches.
    Copy(usize),
    /// Module loads, fat binaries, host registrations, kernel nodes:
    /// [`decode`] it.
    Decode,
}

/// The [`SummaryNeed`] of a v7 id; agrees with [`decode`] (tested).
pub fn summary_need(api: u16) -> SummaryNeed {
    use id::*;
    if is_launch(api) {
        return SummaryNeed::Launch;
    }
    if kernel_node_struct_len(api).is_some() {
        return SummaryNeed::Decode;
    }
    let Some(expected) = struct_len(api) else {
        return SummaryNeed::Nothing;
    };
    match api {
        HIP_MALLOC
        | HIP_MALLOC_HOST
        | HIP_MEM_ALLOC_HOST
        | HIP_MALLOC_MANAGED
        | HIP_EXT_MALLOC_WITH_FLAGS
        | HIP_HOST_MALLOC
        | HIP_HOST_ALLOC
        | HIP_MALLOC_ASYNC
        | HIP_FREE
        | HIP_HOST_FREE
        | HIP_FREE_HOST
        | HIP_FREE_ASYNC
        | HIP_MODULE_GET_FUNCTION
        | HIP_MODULE_UNLOAD
        | HIP_STREAM_CREATE
        | HIP_STREAM_CREATE_WITH_FLAGS
        | HIP_STREAM_CREATE_WITH_PRIORITY
        | HIP_STREAM_DESTROY
        | HIP_STREAM_SYNCHRONIZE
        | HIP_GRAPH_LAUNCH
        | HIP_EVENT_RECORD
        | HIP_SET_DEVICE => SummaryNeed::Size(expected),
        _ if is_copy(api, expected) => SummaryNeed::Copy(expected),
        _ => SummaryNeed::Decode,
    }
}

/// True for the memcpy family: the ids [`copy`] decodes, asked of `copy`
/// itself on a zeroed struct of the documented size so the list lives in
/// one place.
fn is_copy(api: u16, struct_len: usize) -> bool {
    copy(api, &vec![0; struct_len]).is_some()
}

/// `payload_length` of the fixed structs this module decodes (§11, §12.1).
fn struct_len(api: u16) -> Option<usize> {
    use id::*;
    Some(match api {
        HIP_MALLOC => 52,
        HIP_FREE | HIP_HOST_FREE | HIP_FREE_HOST => 44,
        HIP_MALLOC_ASYNC => 60,
        HIP_FREE_ASYNC => 52,
        HIP_MALLOC_MANAGED | HIP_EXT_MALLOC_WITH_FLAGS | HIP_HOST_MALLOC | HIP_HOST_ALLOC => 56,
        HIP_MALLOC_HOST | HIP_MEM_ALLOC_HOST => 52,
        HIP_HOST_REGISTER => 72,
        HIP_MODULE_LOAD | HIP_MODULE_LOAD_DATA => 72,
        HIP_MODULE_LOAD_DATA_EX => 92,
        HIP_MODULE_UNLOAD => 44,
        HIP_MODULE_GET_FUNCTION => 60,
        HIP_REGISTER_FAT_BINARY => 64,
        HIP_STREAM_CREATE | HIP_STREAM_DESTROY | HIP_STREAM_SYNCHRONIZE => 44,
        HIP_STREAM_CREATE_WITH_FLAGS => 48,
        HIP_STREAM_CREATE_WITH_PRIORITY => 52,
        HIP_GRAPH_LAUNCH | HIP_EVENT_RECORD => 52,
        HIP_SET_DEVICE => 40,
        HIP_MEMCPY => 80,
        HIP_MEMCPY_ASYNC | HIP_MEMCPY_WITH_STREAM => 88,
        HIP_MEMCPY_DTOH | HIP_MEMCPY_HTOD | HIP_MEMCPY_DTOD => 76,
        HIP_MEMCPY_DTOH_ASYNC | HIP_MEMCPY_HTOD_ASYNC | HIP_MEMCPY_DTOD_ASYNC => 84,
        HIP_MEMCPY_2D => 120,
        HIP_MEMCPY_2D_ASYNC => 128,
        HIP_MEMCPY_3D | HIP_MEMCPY_3D_SPT => 236,
        HIP_MEMCPY_3D_ASYNC | HIP_MEMCPY_3D_ASYNC_SPT => 244,
        HIP_MEMCPY_PARAM_2D | HIP_DRV_MEMCPY_2D_UNALIGNED => 212,
        HIP_MEMCPY_PARAM_2D_ASYNC => 220,
        HIP_DRV_MEMCPY_3D => 268,
        HIP_DRV_MEMCPY_3D_ASYNC => 276,
        HIP_MEMCPY_SPT => 64,
        HIP_MEMCPY_ASYNC_SPT => 72,
        _ => return None,
    })
}

fn decode_fixed(api: u16, r: &[u8]) -> Option<Payload<'_>> {
    use id::*;
    let p = match api {
        HIP_MALLOC | HIP_MALLOC_HOST | HIP_MEM_ALLOC_HOST => Payload::Alloc {
            ptr: u64_at(r, 36),
            size: u64_at(r, 44),
            flags: None,
            stream: None,
        },
        HIP_MALLOC_MANAGED | HIP_EXT_MALLOC_WITH_FLAGS | HIP_HOST_MALLOC | HIP_HOST_ALLOC => {
            Payload::Alloc {
                ptr: u64_at(r, 36),
                size: u64_at(r, 44),
                flags: Some(le_u32(r, 52)),
                stream: None,
            }
        }
        HIP_MALLOC_ASYNC => Payload::Alloc {
            ptr: u64_at(r, 36),
            size: u64_at(r, 44),
            flags: None,
            stream: Some(u64_at(r, 52)),
        },
        HIP_FREE | HIP_HOST_FREE | HIP_FREE_HOST => Payload::Free {
            ptr: u64_at(r, 36),
            stream: None,
        },
        HIP_FREE_ASYNC => Payload::Free {
            ptr: u64_at(r, 36),
            stream: Some(u64_at(r, 44)),
        },
        HIP_HOST_REGISTER => Payload::HostRegister {
            ptr: u64_at(r, 36),
            size: u64_at(r, 44),
            flags: le_u32(r, 52),
            blob: hash_at(r, 56),
        },
        HIP_MODULE_LOAD | HIP_MODULE_LOAD_DATA => Payload::ModuleLoad {
            module: u64_at(r, 36),
            code_object: hash_at(r, 52),
        },
        HIP_MODULE_LOAD_DATA_EX => Payload::ModuleLoad {
            module: u64_at(r, 36),
            code_object: hash_at(r, 72),
        },
        HIP_MODULE_GET_FUNCTION => Payload::GetFunction {
            function: u64_at(r, 36),
            module: u64_at(r, 44),
        },
        HIP_REGISTER_FAT_BINARY => Payload::FatBinary {
            blob: hash_at(r, 40),
            size: u64_at(r, 56),
        },
        HIP_MODULE_UNLOAD => Payload::Handle {
            field: "module",
            value: u64_at(r, 36),
        },
        HIP_STREAM_CREATE
        | HIP_STREAM_CREATE_WITH_FLAGS
        | HIP_STREAM_CREATE_WITH_PRIORITY
        | HIP_STREAM_DESTROY
        | HIP_STREAM_SYNCHRONIZE => Payload::Handle {
            field: "stream",
            value: u64_at(r, 36),
        },
        HIP_GRAPH_LAUNCH => Payload::Handle {
            field: "graph_exec",
            value: u64_at(r, 36),
        },
        HIP_EVENT_RECORD => Payload::Handle {
            field: "event",
            value: u64_at(r, 36),
        },
        HIP_SET_DEVICE => Payload::SetDevice {
            device: le_u32(r, 36) as i32,
        },
        _ => Payload::Copy(copy(api, r)?),
    };
    Some(p)
}

fn kind_at(r: &[u8], at: usize) -> i32 {
    le_u32(r, at) as i32
}

/// Decodes a memcpy-family record of documented size (§12.1, §12.2); the
/// caller has checked the record holds the struct.
pub fn copy(api: u16, r: &[u8]) -> Option<MemCopy> {
    use id::*;
    let plain = |stream_at: Option<usize>, kind_at_: Option<usize>, blob_at: Option<usize>| {
        let kind = kind_at_.map(|k| kind_at(r, k));
        let blob = blob_at.map(|b| hash_at(r, b)).unwrap_or_default();
        MemCopy {
            dst: u64_at(r, 36),
            src: u64_at(r, 44),
            size: u64_at(r, 52),
            kind,
            stream: stream_at.map(|s| u64_at(r, s)),
            blob,
            d2h_blob: BlobHash::default(),
            d2h_check: false,
        }
    };
    let mut c = match api {
        HIP_MEMCPY => plain(None, Some(60), Some(64)),
        HIP_MEMCPY_ASYNC | HIP_MEMCPY_WITH_STREAM => plain(Some(64), Some(60), Some(72)),
        HIP_MEMCPY_DTOH | HIP_MEMCPY_HTOD | HIP_MEMCPY_DTOD => plain(None, None, Some(60)),
        HIP_MEMCPY_DTOH_ASYNC | HIP_MEMCPY_HTOD_ASYNC | HIP_MEMCPY_DTOD_ASYNC => {
            plain(Some(60), None, Some(68))
        }
        HIP_MEMCPY_SPT => plain(None, Some(60), None),
        HIP_MEMCPY_ASYNC_SPT => plain(Some(64), Some(60), None),
        HIP_MEMCPY_2D | HIP_MEMCPY_2D_ASYNC => {
            let stream = (api == HIP_MEMCPY_2D_ASYNC).then(|| u64_at(r, 88));
            let base = if stream.is_some() { 96 } else { 88 };
            MemCopy {
                dst: u64_at(r, 36),
                src: u64_at(r, 52),
                size: u64_at(r, 68).saturating_mul(u64_at(r, 76)),
                kind: Some(kind_at(r, 84)),
                stream,
                blob: hash_at(r, base),
                d2h_blob: hash_at(r, base + 16),
                d2h_check: false,
            }
        }
        _ => {
            // Descriptor-based pitched/3-D copies: pointer (+ stream), the
            // descriptor copy, then blob and d2h hashes.
            let (stream, blob_at) = match api {
                HIP_MEMCPY_3D | HIP_MEMCPY_3D_SPT => (None, 204),
                HIP_MEMCPY_3D_ASYNC | HIP_MEMCPY_3D_ASYNC_SPT => (Some(44), 212),
                HIP_MEMCPY_PARAM_2D | HIP_DRV_MEMCPY_2D_UNALIGNED => (None, 180),
                HIP_MEMCPY_PARAM_2D_ASYNC => (Some(44), 188),
                HIP_DRV_MEMCPY_3D => (None, 236),
                HIP_DRV_MEMCPY_3D_ASYNC => (Some(44), 244),
                _ => return None,
            };
            MemCopy {
                dst: u64_at(r, 36),
                src: 0,
                size: 0,
                kind: None,
                stream: stream.map(|s| u64_at(r, s)),
                blob: hash_at(r, blob_at),
                d2h_blob: hash_at(r, blob_at + 16),
                d2h_check: false,
            }
        }
    };
    c.d2h_check = match api {
        HIP_MEMCPY | HIP_MEMCPY_ASYNC | HIP_MEMCPY_WITH_STREAM => {
            c.kind == Some(2) && !c.blob.is_zero()
        }
        HIP_MEMCPY_DTOH | HIP_MEMCPY_DTOH_ASYNC => !c.blob.is_zero(),
        HIP_MEMCPY_SPT | HIP_MEMCPY_ASYNC_SPT => false,
        HIP_MEMCPY_HTOD | HIP_MEMCPY_HTOD_ASYNC | HIP_MEMCPY_DTOD | HIP_MEMCPY_DTOD_ASYNC => false,
        _ => !c.d2h_blob.is_zero(),
    };
    Some(c)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(len: usize, fields: &[(usize, u64)]) -> Vec<u8> {
        let mut r = vec![0u8; len];
        for &(at, v) in fields {
            r[at..at + 8].copy_from_slice(&v.to_le_bytes());
        }
        r
    }

    #[test]
    fn memcpy_d2h_with_blob_is_a_check_and_kind_default_is_not() {
        let d2h = rec(
            80,
            &[
                (36, 0x1000),
                (44, 0x7f00),
                (52, 64),
                (60, 2),
                (64, 5),
                (72, 6),
            ],
        );
        let Payload::Copy(c) = decode(Some(id::HIP_MEMCPY), &d2h) else {
            panic!("not a copy")
        };
        assert!(c.d2h_check);
        assert_eq!(c.blob, BlobHash::new(5, 6));
        let default = rec(80, &[(60, 4), (64, 5)]);
        let Payload::Copy(c) = decode(Some(id::HIP_MEMCPY), &default) else {
            panic!("not a copy")
        };
        assert!(!c.d2h_check);
    }

    #[test]
    fn pitched_copy_counts_only_with_d2h_hash() {
        let with = rec(120, &[(104, 9)]);
        let Payload::Copy(c) = decode(Some(id::HIP_MEMCPY_2D), &with) else {
            panic!()
        };
        assert!(c.d2h_check);
        let async3d = rec(244, &[(44, 0x55), (212, 1), (228, 0)]);
        let Payload::Copy(c) = decode(Some(id::HIP_MEMCPY_3D_ASYNC), &async3d) else {
            panic!()
        };
        assert_eq!(
            (c.stream, c.blob, c.d2h_check),
            (Some(0x55), BlobHash::new(1, 0), false)
        );
    }

    /// For every v7 id and record length, the summary's shortcut sees what
    /// a full decode sees: `Nothing` ids decode as opaque, `Size(n)` ids as
    /// short below n and otherwise as a payload with no hash or check.
    #[test]
    fn summary_need_agrees_with_decode_for_every_id() {
        let mut decoded = 0;
        for api in 0..crate::archive::format::apis::V7_COUNT {
            for len in [0, 32, 40, 43, 44, 51, 52, 56, 60, 64, 72, 88, 92, 300] {
                let r = vec![0xA5u8; len];
                let p = decode(Some(api), &r);
                match summary_need(api) {
                    SummaryNeed::Nothing => assert!(matches!(p, Payload::Opaque), "{api}"),
                    SummaryNeed::Launch => {
                        assert!(matches!(p, Payload::Launch(_) | Payload::Malformed(_)))
                    }
                    SummaryNeed::Size(n) if len < n => {
                        assert!(matches!(p, Payload::Short { expected } if expected == n))
                    }
                    SummaryNeed::Size(_) => assert!(
                        matches!(
                            p,
                            Payload::Alloc { .. }
                                | Payload::Free { .. }
                                | Payload::Handle { .. }
                                | Payload::SetDevice { .. }
                                | Payload::GetFunction { .. }
                        ),
                        "{api}: {p:?}"
                    ),
                    SummaryNeed::Copy(n) if len < n => {
                        assert!(matches!(p, Payload::Short { expected } if expected == n))
                    }
                    SummaryNeed::Copy(_) => {
                        let want = copy(api, &r).unwrap();
                        assert!(matches!(p, Payload::Copy(c) if c == want), "{api}: {p:?}");
                    }
                    SummaryNeed::Decode => {
                        assert!(!matches!(p, Payload::Copy(_)), "{api}: {p:?}");
                        decoded += 1;
                    }
                }
            }
        }
        assert!(decoded > 0);
    }

    #[test]
    fn undersized_records_are_kept_not_decoded() {
        let r = vec![0u8; 32];
        assert!(matches!(
            decode(Some(id::HIP_MALLOC), &r),
            Payload::Short { expected: 52 }
        ));
        assert!(matches!(decode(None, &r), Payload::Opaque));
    }
}
