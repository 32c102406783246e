//! The replay log's name. Writing it is `sink.rs` (Unix hosts only, where
//! replay runs in this version).

use std::path::Path;

/// `hrr-replay-<pid-dir>-<UTC YYYYMMDDTHHMMSSZ>-<pid>.log`.
pub fn default_name(pid_dir: &Path) -> String {
    let name: String = pid_dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "archive".into())
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "._-".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect();
    format!(
        "hrr-replay-{name}-{}-{}.log",
        utc_stamp(std::time::SystemTime::now()),
        std::process::id()
    )
}

/// `t` as `YYYYMMDDTHHMMSSZ` (the upstream triage's timestamp).
fn utc_stamp(t: std::time::SystemTime) -> String {
    humantime::format_rfc3339_seconds(t)
        .to_string()
        .chars()
        .filter(|c| *c != '-' && *c != ':')
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_the_upstream_pattern() {
        let t = std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_700_000_000);
        assert_eq!(utc_stamp(t), "20231114T221320Z");
        let name = default_name(Path::new("/data/cap.hrr/pid-42"));
        let re = regex::Regex::new(r"^hrr-replay-pid-42-\d{8}T\d{6}Z-\d+\.log$").unwrap();
        assert!(re.is_match(&name), "{name}");
    }
}
