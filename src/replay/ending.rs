//! How the player ended, whatever ran it, and which limit ended it. This is
//! the one place where an exit
//! status as the operating system or a client program reports it becomes
//! "exited with code N" or "killed by signal N" (reference
//! playback-output.md §10.3, §10.6).
//!
//! Natively the status is the player's own. Under `docker run` it is the
//! docker client's: a player killed by signal N makes the client exit with
//! 128 + N, which must read as the same death by signal N, or one crash
//! would classify differently in the two modes. Docker's own failures (125:
//! the daemon or `docker run` failed, 126: the command cannot be run, 127:
//! the command was not found) are plain codes, never signals.
//!
//! Windows has no signals: a process that crashes ends with an NTSTATUS
//! exception code as its exit code. Under the UCRT `abort()` ends through
//! fast-fail with `0xC0000409`; the legacy abort behaviour exits with 3.
//! Both are aborts, and they and the known crash codes read as
//! [`PlayerEnd::Crashed`], never as an exit code a player chose.

/// Who reported the exit status a replay ended with.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum StatusSource {
    /// The player process itself (native replay).
    #[default]
    Player,
    /// The `docker run` client, which stands for the player in the
    /// container and reports its death by signal N as exit 128 + N.
    DockerClient,
}

/// How the player ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PlayerEnd {
    /// It exited with this code.
    Exited(i32),
    /// It was killed by this signal.
    Killed(i32),
    /// It crashed with this Windows exception code (NTSTATUS), or aborted
    /// (`0xC0000409`, or the legacy exit code 3).
    Crashed(u32),
    /// Neither is known (the status carried no code and no signal).
    Unknown,
}

/// Windows exit codes that mean the process crashed, with what each means
/// (the NTSTATUS names, in words). `3` is the legacy `abort()`.
const CRASH_CODES: &[(u32, &str)] = &[
    (3, "abort"),
    (0x8000_0003, "breakpoint"),
    (0xC000_0005, "access violation"),
    (0xC000_001D, "illegal instruction"),
    (0xC000_008C, "array bounds exceeded"),
    (0xC000_008E, "floating-point division by zero"),
    (0xC000_0094, "integer division by zero"),
    (0xC000_0096, "privileged instruction"),
    (0xC000_00FD, "stack overflow"),
    (0xC000_0135, "a DLL the player needs was not found"),
    (0xC000_0142, "a DLL failed to initialise"),
    (0xC000_0374, "heap corruption"),
    (0xC000_0409, "abort: fast fail"),
];

/// What the crash `code` means, in words, when it is one of [`CRASH_CODES`].
fn crash_meaning(code: u32) -> Option<&'static str> {
    CRASH_CODES
        .iter()
        .find(|(c, _)| *c == code)
        .map(|(_, m)| *m)
}

/// What a finding's `replay_exception` (`"0xC0000005"`, as
/// [`PlayerEnd::exception`] writes it) means, in words (`access
/// violation`); `None` for a code that is not a known crash code or not
/// written that way.
pub fn exception_meaning(exception: &str) -> Option<&'static str> {
    let hex = exception.strip_prefix("0x")?;
    if hex.len() != 8 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    crash_meaning(u32::from_str_radix(hex, 16).ok()?)
}

/// The highest signal number on Linux (`SIGRTMAX`); a client exit above
/// 128 + this is a plain code.
const MAX_SIGNAL: i32 = 64;

impl PlayerEnd {
    /// The player's ending from the status `source` reported: its exit
    /// `code`, or the `signal` that killed the reporting process.
    pub fn from_status(source: StatusSource, code: Option<i32>, signal: Option<i32>) -> PlayerEnd {
        match (source, code, signal) {
            (_, _, Some(sig)) => PlayerEnd::Killed(sig),
            (StatusSource::DockerClient, Some(c), None)
                if (129..=128 + MAX_SIGNAL).contains(&c) =>
            {
                PlayerEnd::Killed(c - 128)
            }
            (_, Some(c), None) => PlayerEnd::Exited(c),
            (_, None, None) => PlayerEnd::Unknown,
        }
    }

    /// The ending of a Windows player that exited with `code`: a crash
    /// code of [`CRASH_CODES`] is [`PlayerEnd::Crashed`], anything else a
    /// plain exit code (as Windows reports it, a `u32` shown signed).
    pub fn from_windows_exit(code: u32) -> PlayerEnd {
        if CRASH_CODES.iter().any(|(c, _)| *c == code) {
            PlayerEnd::Crashed(code)
        } else {
            PlayerEnd::Exited(code as i32)
        }
    }

    /// The exception code as the finding's `replay_exception` and the log
    /// marker write it (`0xC0000005`), when it crashed.
    pub fn exception(self) -> Option<String> {
        match self {
            PlayerEnd::Crashed(c) => Some(format!("0x{c:08X}")),
            _ => None,
        }
    }

    /// The log's stop marker for a crash:
    /// `[hrr] replay crashed with 0xC0000005 (access violation)`.
    pub fn crash_marker(self) -> Option<String> {
        let PlayerEnd::Crashed(code) = self else {
            return None;
        };
        let meaning = crash_meaning(code).unwrap_or("crash");
        Some(format!(
            "[hrr] replay crashed with 0x{code:08X} ({meaning})"
        ))
    }

    /// The exit code, when it exited.
    pub fn exit_code(self) -> Option<i32> {
        match self {
            PlayerEnd::Exited(c) => Some(c),
            _ => None,
        }
    }

    /// The signal, when it was killed by one.
    pub fn signal(self) -> Option<i32> {
        match self {
            PlayerEnd::Killed(s) => Some(s),
            _ => None,
        }
    }
}

/// Which limit ended a replay (`replay.stopped_by` of the finding): each
/// has its own line in the log, and a hang stopped by hrr reads differently
/// from one the player gave up on itself.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum StoppedBy {
    /// hrr's `replay.timeout` (`[hrr] replay timed out after <N>s`).
    HrrTimeout,
    /// The player's `--max-wall-seconds` (`[HRR] Fatal: replay still
    /// running after N s (--max-wall-seconds); ending it`, exit 124).
    PlayerWallLimit,
    /// The player's GPU-sync watchdog (`[HRR][WATCHDOG] GPU sync did not
    /// complete within N ms at: …`, exit 124).
    PlayerWatchdog,
}

impl StoppedBy {
    /// The limit that ended the replay, from what the log and the runner
    /// show: hrr's timeout first (its marker, or the runner's record), then
    /// the watchdog line, then the wall-limit line; `None` when no limit
    /// ended it (an exit 124 without either line names none).
    pub fn from_evidence(
        hrr_timeout: bool,
        watchdog_line: bool,
        wall_limit_line: bool,
    ) -> Option<StoppedBy> {
        if hrr_timeout {
            Some(StoppedBy::HrrTimeout)
        } else if watchdog_line {
            Some(StoppedBy::PlayerWatchdog)
        } else if wall_limit_line {
            Some(StoppedBy::PlayerWallLimit)
        } else {
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use StatusSource::{DockerClient, Player};

    #[test]
    fn a_docker_client_exit_above_128_is_the_players_signal() {
        // SIGABRT (the runtime's abort()), SIGSEGV, SIGKILL (docker kill).
        assert_eq!(
            PlayerEnd::from_status(DockerClient, Some(134), None),
            PlayerEnd::Killed(6)
        );
        assert_eq!(
            PlayerEnd::from_status(DockerClient, Some(139), None),
            PlayerEnd::Killed(11)
        );
        assert_eq!(
            PlayerEnd::from_status(DockerClient, Some(137), None),
            PlayerEnd::Killed(9)
        );
        assert_eq!(
            PlayerEnd::from_status(DockerClient, None, Some(15)),
            PlayerEnd::Killed(15)
        );
    }

    #[test]
    fn dockers_own_errors_and_the_players_codes_stay_codes() {
        for code in [0, 1, 2, 124, 125, 126, 127, 128, 193, 255] {
            assert_eq!(
                PlayerEnd::from_status(DockerClient, Some(code), None),
                PlayerEnd::Exited(code),
                "{code}"
            );
        }
    }

    #[test]
    fn a_native_status_is_taken_as_it_is() {
        assert_eq!(
            PlayerEnd::from_status(Player, Some(134), None),
            PlayerEnd::Exited(134)
        );
        assert_eq!(
            PlayerEnd::from_status(Player, None, Some(6)),
            PlayerEnd::Killed(6)
        );
        assert_eq!(
            PlayerEnd::from_status(Player, None, None),
            PlayerEnd::Unknown
        );
        assert_eq!(PlayerEnd::Killed(6).exit_code(), None);
        assert_eq!(PlayerEnd::Exited(1).signal(), None);
    }

    #[test]
    fn windows_crash_codes_and_both_aborts_are_crashes() {
        let av = PlayerEnd::from_windows_exit(0xC000_0005);
        assert_eq!(av, PlayerEnd::Crashed(0xC000_0005));
        assert_eq!(av.exception().as_deref(), Some("0xC0000005"));
        assert_eq!(
            av.crash_marker().as_deref(),
            Some("[hrr] replay crashed with 0xC0000005 (access violation)")
        );
        assert_eq!((av.exit_code(), av.signal()), (None, None));
        for (code, meaning) in [
            (0xC000_0409, "abort: fast fail"),
            (3, "abort"),
            (0xC000_00FD, "stack overflow"),
            (0xC000_0374, "heap corruption"),
        ] {
            let end = PlayerEnd::from_windows_exit(code);
            let marker = end.crash_marker().unwrap();
            assert!(marker.ends_with(&format!("({meaning})")), "{marker}");
        }
        assert_eq!(
            PlayerEnd::from_windows_exit(3).exception().as_deref(),
            Some("0x00000003")
        );
    }

    #[test]
    fn a_findings_exception_is_read_back_in_words() {
        assert_eq!(exception_meaning("0xC0000005"), Some("access violation"));
        assert_eq!(exception_meaning("0x00000003"), Some("abort"));
        assert_eq!(exception_meaning("0xC0000409"), Some("abort: fast fail"));
        for unknown in ["0xC0000001", "0x3", "C0000005", "0x+0000003", ""] {
            assert_eq!(exception_meaning(unknown), None, "{unknown}");
        }
    }

    #[test]
    fn windows_exit_codes_a_player_chooses_stay_codes() {
        for code in [0, 1, 2, 124] {
            let end = PlayerEnd::from_windows_exit(code);
            assert_eq!(end, PlayerEnd::Exited(code as i32));
            assert_eq!((end.exception(), end.crash_marker()), (None, None));
        }
        assert_eq!(
            PlayerEnd::from_windows_exit(u32::MAX),
            PlayerEnd::Exited(-1)
        );
        assert_eq!(PlayerEnd::Killed(6).exception(), None);
    }

    #[test]
    fn hrrs_timeout_comes_first_then_the_players_own_limits() {
        assert_eq!(
            StoppedBy::from_evidence(true, true, true),
            Some(StoppedBy::HrrTimeout)
        );
        assert_eq!(
            StoppedBy::from_evidence(false, true, false),
            Some(StoppedBy::PlayerWatchdog)
        );
        assert_eq!(
            StoppedBy::from_evidence(false, false, true),
            Some(StoppedBy::PlayerWallLimit)
        );
        assert_eq!(StoppedBy::from_evidence(false, false, false), None);
        assert_eq!(
            serde_json::to_value(StoppedBy::PlayerWallLimit).unwrap(),
            "player_wall_limit"
        );
    }
}
