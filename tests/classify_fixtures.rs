//! The recorded fixtures of ../shared/fixtures (unedited, real gfx950 output)
//! read as their README states.

use hrr::classify::classify;
use hrr::finding::{FaultClass, KernelSource, Label, Outcome};
use std::path::PathBuf;

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/fixtures")).join(name)
}

#[test]
fn replay_pass_log() {
    let f = classify(&[fixture("replay_pass.log")], None, None, None).unwrap();
    assert_eq!(f.outcome, Outcome::Pass);
    assert_eq!(f.fault_class, FaultClass::ReplayPass);
    assert_eq!(
        (
            f.kernel_name.clone(),
            f.kernel_source,
            f.failing_api.clone()
        ),
        (None, None, None)
    );
    assert_eq!(f.kernels_launched, Some(13_233));
    assert_eq!(
        (f.d2h_pass, f.d2h_fail, f.d2h_attempted),
        (Some(32), Some(0), Some(32))
    );
    assert_eq!(f.d2h_within_tol, Some(0));
    assert_eq!(f.archive_health.events, Some(185_469));
    // four NOOP handler lines: the replay is not CLEAN
    let noop = f
        .labels
        .iter()
        .find(|l| l.label == Label::NoopApi)
        .expect("NOOP-API");
    for api in [
        "hipDevicePrimaryCtxGetState",
        "hipGetProcAddress",
        "hipFuncGetAttribute",
        "hipPointerGetAttribute",
    ] {
        assert!(noop.detail.contains(api), "{api} in {}", noop.detail);
    }
    assert!(!f.has_label(Label::Clean));
}

#[test]
fn memory_fault_log_with_its_info_dump() {
    let f = classify(
        &[
            fixture("replay_memory_fault.log"),
            fixture("info_crash.txt"),
        ],
        None,
        None,
        None,
    )
    .unwrap();
    assert_eq!(f.outcome, Outcome::Maf);
    assert_eq!(f.fault_class, FaultClass::IllegalMemoryAccess);
    assert_eq!(f.fault_address.as_deref(), Some("0x7f91da000000"));
    assert_eq!(f.fault_reason.as_deref(), Some("Unknown"));
    assert_eq!(f.gpu_node, Some(2));
    assert_eq!(f.kernel_name.as_deref(), Some("crash_oob"));
    assert_eq!(f.kernel_source, Some(KernelSource::SingleKernelArchive));
    assert!(f
        .notes
        .iter()
        .any(|n| n.contains("inferred") && n.contains("crash_oob")));
    assert_eq!(f.archive_health.complete, Some(false));
    assert_eq!(f.archive_health.recovered_events, Some(5));
    assert!(f.has_label(Label::CrashTruncated));
    assert_eq!(f.archive.as_deref(), Some("/captures/crash_v4.hrr/pid-79"));
}

#[test]
fn memory_fault_log_alone_names_no_kernel() {
    let f = classify(&[fixture("replay_memory_fault.log")], None, None, None).unwrap();
    assert_eq!(
        (f.outcome, f.fault_class),
        (Outcome::Maf, FaultClass::IllegalMemoryAccess)
    );
    assert_eq!(
        f.kernel_name, None,
        "the log names no kernel and the archive is unknown"
    );
    assert_eq!(
        f.archive_health.complete,
        Some(false),
        "the reader's no-trailer line"
    );
}

#[test]
fn info_then_log_reads_the_same() {
    let a = classify(
        &[
            fixture("replay_memory_fault.log"),
            fixture("info_crash.txt"),
        ],
        None,
        None,
        None,
    )
    .unwrap();
    let b = classify(
        &[
            fixture("info_crash.txt"),
            fixture("replay_memory_fault.log"),
        ],
        None,
        None,
        None,
    )
    .unwrap();
    assert_eq!(a, b);
}

#[test]
fn hang_timeout_log() {
    let f = classify(&[fixture("replay_hang_timeout.log")], None, None, None).unwrap();
    assert_eq!(
        (f.outcome, f.fault_class),
        (Outcome::Hang, FaultClass::Hang)
    );
    assert_eq!(f.kernel_name, None);
    assert_eq!(f.timed_out_after_s, Some(1800));
    let with_info = classify(
        &[
            fixture("replay_hang_timeout.log"),
            fixture("info_crash.txt"),
        ],
        None,
        None,
        None,
    )
    .unwrap();
    assert_eq!(
        with_info.kernel_name, None,
        "a hang is not attributed to the single kernel"
    );
}

#[test]
fn version_mismatch_log() {
    let f = classify(&[fixture("version_mismatch.log")], None, None, None).unwrap();
    assert_eq!(
        (f.outcome, f.fault_class),
        (Outcome::Abort, FaultClass::VersionMismatch)
    );
    assert_eq!(
        (f.archive_format_version, f.reader_format_version),
        (Some(3), Some(4))
    );
    assert_eq!(f.kernel_name, None);
}

#[test]
fn info_dump_alone_is_metadata_only() {
    let f = classify(&[fixture("info_crash.txt")], None, None, None).unwrap();
    assert_eq!(
        (f.outcome, f.fault_class),
        (Outcome::Unknown, FaultClass::MetadataOnly)
    );
    assert_eq!(
        (f.archive_health.events, f.archive_health.kernel_launches),
        (Some(5), Some(1))
    );
}
