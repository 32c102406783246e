//! The recorded fixtures of ../shared/fixtures read exactly as their README
//! states (and as the upstream tools concluded), unedited.

use hrr::classify::classify;
use hrr::finding::{FaultClass, KernelSource, Label, Outcome};
use std::path::PathBuf;

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/fixtures")).join(name)
}

#[test]
fn replay_pass_log() {
    let f = classify(&[fixture("replay_pass.log")], None, None, None).unwrap();
    println!("{}", f.to_json_pretty());
    assert_eq!(f.outcome, Outcome::Pass);
    assert_eq!(f.fault_class, FaultClass::ReplayPass);
    assert_eq!(f.kernel_name, None);
    assert_eq!(f.kernels_launched, Some(13_233));
    assert_eq!(
        (f.d2h_pass, f.d2h_fail, f.d2h_attempted),
        (Some(32), Some(0), Some(32))
    );
}

#[test]
fn memory_fault_with_info() {
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
    println!("{}", f.to_json_pretty());
    assert_eq!(f.outcome, Outcome::Maf);
    assert_eq!(f.fault_class, FaultClass::IllegalMemoryAccess);
    assert_eq!(f.fault_address.as_deref(), Some("0x7f91da000000"));
    assert_eq!(f.kernel_name.as_deref(), Some("crash_oob"));
    assert_eq!(f.kernel_source, Some(KernelSource::SingleKernelArchive));
    assert_eq!(f.archive_health.complete, Some(false));
    assert!(f.has_label(Label::CrashTruncated));
}

#[test]
fn hang_timeout() {
    let f = classify(&[fixture("replay_hang_timeout.log")], None, None, None).unwrap();
    println!("{}", f.to_json_pretty());
    assert_eq!(f.outcome, Outcome::Hang);
}

#[test]
fn version_mismatch() {
    let f = classify(&[fixture("version_mismatch.log")], None, None, None).unwrap();
    println!("{}", f.to_json_pretty());
    assert_eq!(f.outcome, Outcome::Abort);
}

#[test]
fn show_md() {
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
    println!("{}", hrr::render::markdown(&f));
}
