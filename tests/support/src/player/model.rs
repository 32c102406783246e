//! The two archives the test player pretends to replay. Their numbers are
//! invented but consistent with each other, the way the example logs of
//! reference playback-output.md §2a/§3 are: a clean 3-launch module-API
//! capture and the single-kernel crash capture.

/// One recorded kernel launch.
pub struct Launch {
    /// Full recorded kernel name.
    pub name: &'static str,
    /// Recorded sequence id of the launch event.
    pub seq: u64,
    /// 0-based index of the launch event in the sorted event list.
    pub event: u64,
    /// grid.x (y = z = 1).
    pub grid: u32,
    /// block.x (y = z = 1).
    pub block: u32,
}

/// What `--info` and the replay report about the archive.
pub struct Archive {
    /// Events in `events.bin`.
    pub events: u64,
    /// Blob files.
    pub blobs: u64,
    /// `*.hsaco` files.
    pub code_objects: u64,
    /// The capture died: no clean-shutdown trailer.
    pub crashed: bool,
    /// API call counts, in the Event Type Breakdown order.
    pub apis: &'static [(&'static str, u64)],
    /// Kernel launches in replay order.
    pub kernels: &'static [Launch],
    /// The API name of launch events.
    pub launch_api: &'static str,
}

/// A clean capture: 23 events, 3 module launches.
pub const CLEAN: Archive = Archive {
    events: 23,
    blobs: 4,
    code_objects: 1,
    crashed: false,
    apis: &[
        ("hipSetDevice", 1),
        ("hipMalloc", 3),
        ("hipFree", 3),
        ("hipMemcpy", 5),
        ("hipDeviceSynchronize", 1),
        ("hipStreamCreate", 1),
        ("hipStreamDestroy", 1),
        ("hipModuleLoadData", 1),
        ("hipModuleUnload", 1),
        ("hipModuleGetFunction", 3),
        ("hipModuleLaunchKernel", 3),
    ],
    kernels: &[
        Launch {
            name: "fill_ones",
            seq: 12,
            event: 11,
            grid: 4096,
            block: 256,
        },
        Launch {
            name: "vector_add",
            seq: 15,
            event: 14,
            grid: 4096,
            block: 256,
        },
        Launch {
            name: "saxpy",
            seq: 18,
            event: 17,
            grid: 4096,
            block: 256,
        },
    ],
    launch_api: "hipModuleLaunchKernel",
};

/// The crash capture of reference §2a/§3b: 17 events, one `<<<>>>` launch.
pub const CRASH: Archive = Archive {
    events: 17,
    blobs: 2,
    code_objects: 0,
    crashed: true,
    apis: &[
        ("hipMalloc", 2),
        ("hipMemcpy", 2),
        ("hipLaunchKernel", 1),
        ("hipStreamCreateWithFlags", 1),
        ("__hipPushCallConfiguration", 1),
        ("__hipRegisterFatBinary", 10),
    ],
    kernels: &[Launch {
        name: "_Z9crash_oobPKiPii",
        seq: 17,
        event: 16,
        grid: 1024,
        block: 256,
    }],
    launch_api: "hipLaunchKernel",
};

/// The recorded thread id used in `Fatal:` lines.
pub const THREAD: u64 = 48213;
