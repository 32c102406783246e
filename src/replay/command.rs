//! The player's command line and the replay variables hrr sets, the same
//! for native and docker replays (DESIGN §7, reference playback-output.md
//! §10.1).
//!
//! The player takes its last argument that does not start with `-` as the
//! archive and silently ignores options it does not know, so a value meant
//! for an option of a newer player (`--max-wall-seconds 1860` given to an
//! older one) would become the archive if anything came after it. The
//! archive therefore goes last, after hrr's flags and `replay.extra_args`.

use std::ffi::OsString;
use std::time::Duration;

use anyhow::bail;

use super::ReplayRequest;

/// The player's wall-clock limit option (current players; older ones
/// ignore it).
const MAX_WALL: &str = "--max-wall-seconds";
/// The player's progress interval option, which
/// `HIP_HRR_REPLAY_PROGRESS_SECONDS` overrides.
const PROGRESS: &str = "--progress-seconds";
/// The variable the player reads after its command line.
pub const PROGRESS_ENV: &str = "HIP_HRR_REPLAY_PROGRESS_SECONDS";
/// How much longer than `replay.timeout` the player's own limit is, so
/// hrr's timeout (and its log marker) always comes first.
const WALL_MARGIN_S: u64 = 60;

impl ReplayRequest {
    /// The player's arguments after the program: `[sync flag]
    /// [--trace-kernels] [--max-wall-seconds N] [extra…] <archive>`.
    /// `--max-wall-seconds` is `replay.timeout` + 60 s (`0`, no limit, when
    /// there is no timeout) unless `extra_args` already gives one.
    /// `--repair` is never passed.
    pub fn player_args(&self, archive_arg: OsString) -> anyhow::Result<Vec<OsString>> {
        if self.extra_args.iter().any(|a| a == "--repair") {
            bail!("refusing to pass --repair to hrr-playback: it rewrites the archive in place and erases the crash evidence");
        }
        let mut args: Vec<OsString> = self.sync.flag().map(OsString::from).into_iter().collect();
        if self.trace_kernels {
            args.push("--trace-kernels".into());
        }
        if user_option(&self.extra_args, MAX_WALL).is_none() {
            args.push(MAX_WALL.into());
            args.push(wall_limit_s(self.timeout).to_string().into());
        }
        args.extend(self.extra_args.iter().map(OsString::from));
        args.push(archive_arg);
        Ok(args)
    }

    /// The value of `HIP_HRR_REPLAY_PROGRESS_SECONDS`: the user's own
    /// `--progress-seconds` from `extra_args` when given (the variable
    /// overrides the flag, so setting anything else would silently undo
    /// it), else `replay.progress_seconds`.
    pub fn progress_env(&self) -> String {
        match user_option(&self.extra_args, PROGRESS) {
            Some(Some(value)) => value.to_string(),
            _ => self.progress_seconds.to_string(),
        }
    }
}

/// The `--max-wall-seconds` value for an hrr timeout of `timeout`: whole
/// seconds rounded up, plus the margin; `0` (the player's "no limit") when
/// hrr has no timeout either.
pub fn wall_limit_s(timeout: Option<Duration>) -> u64 {
    match timeout {
        None => 0,
        Some(t) => {
            let whole = t.as_secs() + u64::from(t.subsec_nanos() > 0);
            whole.saturating_add(WALL_MARGIN_S)
        }
    }
}

/// Whether `args` gives option `name` (`--name value` or `--name=value`):
/// `None` when absent, else its value (`None` when nothing follows it).
fn user_option<'a>(args: &'a [String], name: &str) -> Option<Option<&'a str>> {
    let mut found = None;
    for (i, a) in args.iter().enumerate() {
        if a == name {
            found = Some(args.get(i + 1).map(String::as_str));
        } else if let Some(value) = a.strip_prefix(name).and_then(|r| r.strip_prefix('=')) {
            found = Some(Some(value));
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::replay::{GpuChoice, ReplayMode, SyncMode};

    fn request(timeout: Option<Duration>, extra: &[&str]) -> ReplayRequest {
        ReplayRequest {
            archive: "/data/cap.hrr/pid-1".into(),
            player: None,
            mode: ReplayMode::Native,
            gpu: GpuChoice::Auto,
            timeout,
            sync: SyncMode::Launch,
            trace_kernels: true,
            progress_seconds: 30,
            extra_args: extra.iter().map(|s| s.to_string()).collect(),
            log: None,
        }
    }

    fn args(req: &ReplayRequest) -> Vec<String> {
        req.player_args("/data/cap.hrr/pid-1".into())
            .unwrap()
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect()
    }

    #[test]
    fn the_archive_is_last_after_the_flags_and_extra_args() {
        // An option of a newer player with its value: the player ignores
        // the option and would take "7" as the archive if it came last.
        let req = request(Some(Duration::from_secs(1800)), &["--future-option", "7"]);
        assert_eq!(
            args(&req),
            [
                "--sync-after-launch",
                "--trace-kernels",
                "--max-wall-seconds",
                "1860",
                "--future-option",
                "7",
                "/data/cap.hrr/pid-1"
            ]
        );
    }

    #[test]
    fn the_wall_limit_is_the_timeout_plus_a_minute_and_zero_without_one() {
        assert_eq!(wall_limit_s(Some(Duration::from_secs(1800))), 1860);
        assert_eq!(wall_limit_s(Some(Duration::from_millis(1500))), 62);
        assert_eq!(wall_limit_s(None), 0);
        let got = args(&request(None, &[]));
        assert_eq!(got[2..4], ["--max-wall-seconds", "0"]);
    }

    #[test]
    fn a_users_own_wall_limit_is_never_overridden() {
        for extra in [
            &["--max-wall-seconds", "7200"][..],
            &["--max-wall-seconds=7200"][..],
        ] {
            let got = args(&request(Some(Duration::from_secs(60)), extra));
            let ours = got.iter().filter(|a| a.starts_with(MAX_WALL)).count();
            assert_eq!(ours, 1, "{got:?}");
            assert!(got.join(" ").contains("7200"), "{got:?}");
            assert_eq!(got.last().map(String::as_str), Some("/data/cap.hrr/pid-1"));
        }
    }

    #[test]
    fn a_users_progress_seconds_is_what_the_variable_carries() {
        assert_eq!(request(None, &[]).progress_env(), "30");
        assert_eq!(
            request(None, &["--progress-seconds", "5"]).progress_env(),
            "5"
        );
        assert_eq!(
            request(None, &["--progress-seconds=2.5"]).progress_env(),
            "2.5"
        );
        assert_eq!(request(None, &["--progress-seconds"]).progress_env(), "30");
    }

    #[test]
    fn repair_is_refused() {
        let req = request(None, &["--repair"]);
        assert!(req.player_args("/a".into()).is_err());
    }
}
