//! When a process archive's `events.bin` was last written, as an RFC 3339
//! UTC time to the second. The archive's own timestamps come from monotonic
//! clocks and name no date, so the file's modification time is the one
//! wall-clock date a capture carries.

use std::fs::Metadata;
use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

/// The first second RFC 3339 cannot write (year 10000).
const YEAR_10000: u64 = 253_402_300_800;

/// `time` as `2026-12-01T22:14:05Z`; `None` before 1970 or after year 9999,
/// which a file's time can be but RFC 3339 (as written here) cannot.
pub fn rfc3339(time: SystemTime) -> Option<String> {
    let secs = time.duration_since(UNIX_EPOCH).ok()?.as_secs();
    (secs < YEAR_10000).then(|| humantime::format_rfc3339_seconds(time).to_string())
}

/// The modification time in `meta` ([`rfc3339`]); `None` where the
/// platform keeps none.
pub fn events_modified(meta: &Metadata) -> Option<String> {
    rfc3339(meta.modified().ok()?)
}

/// When `dir/events.bin` was last written, when it is a regular file; a
/// symlink there is not followed.
pub fn events_bin_modified(dir: &Path) -> Option<SystemTime> {
    let meta = std::fs::symlink_metadata(dir.join("events.bin")).ok()?;
    meta.is_file().then(|| meta.modified().ok()).flatten()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn seconds_in_utc_and_no_panic_outside_rfc3339() {
        let t = UNIX_EPOCH + Duration::from_millis(1_764_627_245_900);
        assert_eq!(rfc3339(t).as_deref(), Some("2025-12-01T22:14:05Z"));
        assert_eq!(rfc3339(UNIX_EPOCH).as_deref(), Some("1970-01-01T00:00:00Z"));
        assert_eq!(rfc3339(UNIX_EPOCH - Duration::from_secs(1)), None);
        assert_eq!(rfc3339(UNIX_EPOCH + Duration::from_secs(YEAR_10000)), None);
        assert!(rfc3339(UNIX_EPOCH + Duration::from_secs(YEAR_10000 - 1)).is_some());
    }

    #[test]
    fn a_missing_or_non_file_events_bin_has_no_time() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(events_bin_modified(dir.path()), None);
        std::fs::create_dir(dir.path().join("events.bin")).unwrap();
        assert_eq!(events_bin_modified(dir.path()), None);
        let file = tempfile::tempdir().unwrap();
        std::fs::write(file.path().join("events.bin"), b"EHRR").unwrap();
        assert!(events_bin_modified(file.path()).is_some());
    }
}
