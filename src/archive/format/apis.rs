//! Event type → HIP API name, per archive format version.
//!
//! The v7 table is `api_ids_v7.txt` (line N is the name of `event_type` N),
//! taken from `hrr_api_names[]` of upstream `hrr_api_args.h` at `HRR_VERSION`
//! 7. Format 6 shares runtime ids 0..543 with 7 and has the nine compiler APIs
//! at 544..552 (7 inserted two runtime APIs at 544/545 and moved the compiler
//! tail to 546..554). Format 8's table is not published upstream; it is read
//! with the v7 table and the summary says so (DESIGN §3.2).
//!
//! Decoding code works in v7 numbering: [`ApiTable::canonical`] maps a raw
//! `event_type` of the archive's version to the v7 id of the same API, so the
//! payload layouts in `launch.rs` and `payloads.rs` are written once.

use std::borrow::Cow;
use std::sync::OnceLock;

/// The v7 name table, one name per line, embedded at build time.
const V7_TEXT: &str = include_str!("api_ids_v7.txt");

/// Number of ids in the v7 table (`HRR_API_COUNT` at `HRR_VERSION` 7).
pub const V7_COUNT: u16 = 555;
/// First v7 id that does not exist in the v6 table (`hipModuleEnumerateFunctions`).
const V7_FIRST_NEW: u16 = 544;
/// First v7 compiler-table id (`__hipPopCallConfiguration`).
const V7_COMPILER_BASE: u16 = 546;
/// First v6 compiler-table id (`__hipPopCallConfiguration` in format 6).
const V6_COMPILER_BASE: u16 = 544;
/// Number of ids in the v6 table.
pub const V6_COUNT: u16 = 553;

fn v7_names() -> &'static [&'static str] {
    static NAMES: OnceLock<Vec<&'static str>> = OnceLock::new();
    NAMES.get_or_init(|| V7_TEXT.lines().map(str::trim).collect())
}

/// Which id → name table an archive is read with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ApiTable {
    /// Format 6: runtime ids 0..543, compiler ids 544..552.
    V6,
    /// Format 7: `api_ids_v7.txt` exactly.
    V7,
    /// Format 8: read with the v7 table, because upstream has not published
    /// a v8 table; reported as an assumption.
    V8AssumedV7,
}

impl ApiTable {
    /// The table for a format version, or `None` for versions `hrr` does not
    /// decode (≤ 5 and ≥ 9 use other layouts or unknown ids).
    pub fn for_version(version: u16) -> Option<ApiTable> {
        match version {
            6 => Some(ApiTable::V6),
            7 => Some(ApiTable::V7),
            8 => Some(ApiTable::V8AssumedV7),
            _ => None,
        }
    }

    /// Short label for the `api_table` field of the summary.
    pub fn label(self) -> &'static str {
        match self {
            ApiTable::V6 => "v6",
            ApiTable::V7 => "v7",
            ApiTable::V8AssumedV7 => "v7 (assumed for format 8)",
        }
    }

    /// Maps a raw `event_type` to the v7 id of the same API, or `None` when
    /// the id is beyond this version's table (sentinels included).
    pub fn canonical(self, id: u16) -> Option<u16> {
        match self {
            ApiTable::V7 | ApiTable::V8AssumedV7 => (id < V7_COUNT).then_some(id),
            ApiTable::V6 => {
                if id < V6_COMPILER_BASE {
                    Some(id)
                } else if id < V6_COUNT {
                    Some(id - V6_COMPILER_BASE + V7_COMPILER_BASE)
                } else {
                    None
                }
            }
        }
    }

    /// Maps a v7 id back to this version's raw id (inverse of [`canonical`](Self::canonical)).
    fn raw(self, v7_id: u16) -> Option<u16> {
        match self {
            ApiTable::V7 | ApiTable::V8AssumedV7 => (v7_id < V7_COUNT).then_some(v7_id),
            ApiTable::V6 => {
                if v7_id < V7_FIRST_NEW {
                    Some(v7_id)
                } else if (V7_COMPILER_BASE..V7_COUNT).contains(&v7_id) {
                    Some(v7_id - V7_COMPILER_BASE + V6_COMPILER_BASE)
                } else {
                    None
                }
            }
        }
    }

    /// The API name of a raw `event_type`, or `None` beyond the table.
    pub fn name(self, id: u16) -> Option<&'static str> {
        self.canonical(id)
            .and_then(|v7| v7_names().get(usize::from(v7)).copied())
    }

    /// The name to print: the API name, or `unknown(<id>)` beyond the table.
    pub fn display_name(self, id: u16) -> Cow<'static, str> {
        match self.name(id) {
            Some(name) => Cow::Borrowed(name),
            None => Cow::Owned(format!("unknown({id})")),
        }
    }

    /// The raw `event_type` of an API name in this version's table (used by
    /// `archive events --api NAME`).
    pub fn id_of(self, name: &str) -> Option<u16> {
        let v7 = v7_names().iter().position(|n| *n == name)?;
        self.raw(u16::try_from(v7).ok()?)
    }
}

/// v7 ids of the APIs whose payloads `hrr` decodes (reference §0, §10–§12).
pub mod id {
    #![allow(missing_docs)]
    pub const HIP_DEVICE_SYNCHRONIZE: u16 = 66;
    pub const HIP_DRV_MEMCPY_2D_UNALIGNED: u16 = 72;
    pub const HIP_DRV_MEMCPY_3D: u16 = 73;
    pub const HIP_DRV_MEMCPY_3D_ASYNC: u16 = 74;
    pub const HIP_EVENT_RECORD: u16 = 81;
    pub const HIP_EXT_MALLOC_WITH_FLAGS: u16 = 86;
    pub const HIP_FREE: u16 = 90;
    pub const HIP_FREE_ASYNC: u16 = 92;
    pub const HIP_FREE_HOST: u16 = 93;
    pub const HIP_GRAPH_ADD_KERNEL_NODE: u16 = 124;
    pub const HIP_GRAPH_EXEC_KERNEL_NODE_SET_PARAMS: u16 = 147;
    pub const HIP_GRAPH_KERNEL_NODE_SET_PARAMS: u16 = 165;
    pub const HIP_GRAPH_LAUNCH: u16 = 166;
    pub const HIP_HOST_ALLOC: u16 = 193;
    pub const HIP_HOST_FREE: u16 = 194;
    pub const HIP_HOST_MALLOC: u16 = 197;
    pub const HIP_HOST_REGISTER: u16 = 198;
    pub const HIP_LAUNCH_BY_PTR: u16 = 210;
    pub const HIP_LAUNCH_COOPERATIVE_KERNEL: u16 = 211;
    pub const HIP_LAUNCH_KERNEL: u16 = 214;
    pub const HIP_MALLOC: u16 = 215;
    pub const HIP_MALLOC_ASYNC: u16 = 219;
    pub const HIP_MALLOC_HOST: u16 = 221;
    pub const HIP_MALLOC_MANAGED: u16 = 222;
    pub const HIP_MEM_ALLOC_HOST: u16 = 228;
    pub const HIP_MEMCPY: u16 = 259;
    pub const HIP_MEMCPY_2D: u16 = 260;
    pub const HIP_MEMCPY_2D_ASYNC: u16 = 261;
    pub const HIP_MEMCPY_3D: u16 = 266;
    pub const HIP_MEMCPY_3D_ASYNC: u16 = 267;
    pub const HIP_MEMCPY_ASYNC: u16 = 268;
    pub const HIP_MEMCPY_DTOD: u16 = 270;
    pub const HIP_MEMCPY_DTOD_ASYNC: u16 = 271;
    pub const HIP_MEMCPY_DTOH: u16 = 272;
    pub const HIP_MEMCPY_DTOH_ASYNC: u16 = 273;
    pub const HIP_MEMCPY_HTOD: u16 = 278;
    pub const HIP_MEMCPY_HTOD_ASYNC: u16 = 279;
    pub const HIP_MEMCPY_PARAM_2D: u16 = 280;
    pub const HIP_MEMCPY_PARAM_2D_ASYNC: u16 = 281;
    pub const HIP_MEMCPY_WITH_STREAM: u16 = 287;
    pub const HIP_MODULE_GET_FUNCTION: u16 = 303;
    pub const HIP_MODULE_LAUNCH_COOPERATIVE_KERNEL: u16 = 306;
    pub const HIP_MODULE_LAUNCH_KERNEL: u16 = 308;
    pub const HIP_MODULE_LOAD: u16 = 309;
    pub const HIP_MODULE_LOAD_DATA: u16 = 310;
    pub const HIP_MODULE_LOAD_DATA_EX: u16 = 311;
    pub const HIP_MODULE_UNLOAD: u16 = 316;
    pub const HIP_SET_DEVICE: u16 = 327;
    pub const HIP_STREAM_CREATE: u16 = 334;
    pub const HIP_STREAM_CREATE_WITH_FLAGS: u16 = 335;
    pub const HIP_STREAM_CREATE_WITH_PRIORITY: u16 = 336;
    pub const HIP_STREAM_DESTROY: u16 = 337;
    pub const HIP_STREAM_SYNCHRONIZE: u16 = 346;
    pub const HIP_STREAM_WAIT_EVENT: u16 = 348;
    pub const HIP_EXT_MODULE_LAUNCH_KERNEL: u16 = 388;
    pub const HIP_MEMCPY_SPT: u16 = 390;
    pub const HIP_MEMCPY_3D_SPT: u16 = 395;
    pub const HIP_MEMCPY_ASYNC_SPT: u16 = 402;
    pub const HIP_MEMCPY_3D_ASYNC_SPT: u16 = 403;
    pub const HIP_LAUNCH_COOPERATIVE_KERNEL_SPT: u16 = 418;
    pub const HIP_LAUNCH_KERNEL_SPT: u16 = 419;
    pub const HIP_GRAPH_LAUNCH_SPT: u16 = 420;
    pub const HIP_LAUNCH_KERNEL_EX_C: u16 = 474;
    pub const HIP_DRV_LAUNCH_KERNEL_EX: u16 = 475;
    pub const HIP_PUSH_CALL_CONFIGURATION: u16 = 547;
    pub const HIP_REGISTER_FAT_BINARY: u16 = 548;
    pub const HIP_UNREGISTER_FAT_BINARY: u16 = 554;
}

/// The ten event types that carry the kernel-launch payload (reference §10).
pub const LAUNCH_IDS: [u16; 10] = [
    id::HIP_MODULE_LAUNCH_KERNEL,
    id::HIP_EXT_MODULE_LAUNCH_KERNEL,
    id::HIP_LAUNCH_KERNEL,
    id::HIP_LAUNCH_BY_PTR,
    id::HIP_MODULE_LAUNCH_COOPERATIVE_KERNEL,
    id::HIP_LAUNCH_COOPERATIVE_KERNEL,
    id::HIP_LAUNCH_COOPERATIVE_KERNEL_SPT,
    id::HIP_LAUNCH_KERNEL_SPT,
    id::HIP_LAUNCH_KERNEL_EX_C,
    id::HIP_DRV_LAUNCH_KERNEL_EX,
];

/// True when a v7 id carries the kernel-launch payload.
#[inline]
pub fn is_launch(v7_id: u16) -> bool {
    use id::*;
    matches!(
        v7_id,
        HIP_MODULE_LAUNCH_KERNEL
            | HIP_EXT_MODULE_LAUNCH_KERNEL
            | HIP_LAUNCH_KERNEL
            | HIP_LAUNCH_BY_PTR
            | HIP_MODULE_LAUNCH_COOPERATIVE_KERNEL
            | HIP_LAUNCH_COOPERATIVE_KERNEL
            | HIP_LAUNCH_COOPERATIVE_KERNEL_SPT
            | HIP_LAUNCH_KERNEL_SPT
            | HIP_LAUNCH_KERNEL_EX_C
            | HIP_DRV_LAUNCH_KERNEL_EX
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn v7_table_has_555_names_matching_reference_ids() {
        assert_eq!(v7_names().len(), usize::from(V7_COUNT));
        let t = ApiTable::V7;
        assert_eq!(t.name(215), Some("hipMalloc"));
        assert_eq!(t.name(308), Some("hipModuleLaunchKernel"));
        assert_eq!(t.name(548), Some("__hipRegisterFatBinary"));
        assert_eq!(t.name(554), Some("__hipUnregisterFatBinary"));
        assert_eq!(t.name(544), Some("hipModuleEnumerateFunctions"));
        assert_eq!(t.name(555), None);
        assert_eq!(t.display_name(0xFFFF), "unknown(65535)");
    }

    #[test]
    fn v6_compiler_tail_sits_at_544() {
        let t = ApiTable::V6;
        assert_eq!(t.name(544), Some("__hipPopCallConfiguration"));
        assert_eq!(t.name(546), Some("__hipRegisterFatBinary"));
        assert_eq!(t.name(552), Some("__hipUnregisterFatBinary"));
        assert_eq!(t.name(553), None);
        assert_eq!(t.name(215), Some("hipMalloc"));
        assert_eq!(t.canonical(546), Some(id::HIP_REGISTER_FAT_BINARY));
        assert_eq!(t.id_of("__hipRegisterFatBinary"), Some(546));
        assert_eq!(t.id_of("hipModuleEnumerateFunctions"), None);
    }

    #[test]
    fn launch_ids_are_exactly_the_ten_of_the_reference() {
        let all: Vec<u16> = (0..=u16::MAX).filter(|&i| is_launch(i)).collect();
        let mut want = LAUNCH_IDS.to_vec();
        want.sort_unstable();
        assert_eq!(all, want);
    }

    #[test]
    fn v8_reads_with_the_v7_table() {
        let t = ApiTable::for_version(8).unwrap();
        assert_eq!(t.name(548), Some("__hipRegisterFatBinary"));
        assert!(t.label().contains("assumed"));
        assert_eq!(ApiTable::for_version(5), None);
        assert_eq!(ApiTable::for_version(9), None);
    }
}
