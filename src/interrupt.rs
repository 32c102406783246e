//! Interrupting `hrr` while a replay, or the workers of a triage over many
//! archives, run. The player and each worker are out of reach of the
//! terminal's Ctrl-C (a process group of their own on Unix, a pseudo
//! console on Windows), so it reaches only `hrr`; without a handler `hrr`
//! would die and leave them running. The handler only records what came
//! ([`pending`]); the replay's capture loop stops the player, writes the
//! marker and returns, and a run over many archives passes the signal on
//! to its workers ([`crate::subprocess::ExecOptions::interrupt_grace`]).
//!
//! What is recorded is a signal number on both platforms, so the exit code
//! is 128 + that number on both: SIGINT, SIGTERM, SIGHUP on Unix
//! ([`signals`]); on Windows the console events, as the numbers a Unix
//! `hrr` reports for the same act ([`console`]).

#[cfg(windows)]
mod console;
#[cfg(unix)]
mod signals;

#[cfg(windows)]
use console as platform;
#[cfg(unix)]
use signals as platform;

use std::sync::atomic::{AtomicI32, Ordering};

/// The last signal received (0 = none).
static PENDING: AtomicI32 = AtomicI32::new(0);

/// Records `sig` (only an atomic store: safe in a signal handler).
fn record(sig: i32) {
    PENDING.store(sig, Ordering::SeqCst);
}

/// The handlers while a replay or workers run; dropping it puts back what
/// was there before.
pub struct Guard {
    _installed: platform::Installed,
}

/// Forgets any earlier interrupt and installs the recording handlers.
pub fn install() -> anyhow::Result<Guard> {
    PENDING.store(0, Ordering::SeqCst);
    Ok(Guard {
        _installed: platform::Installed::new()?,
    })
}

/// The signal `hrr` received since [`install`], if any.
pub fn pending() -> Option<i32> {
    match PENDING.load(Ordering::SeqCst) {
        0 => None,
        sig => Some(sig),
    }
}
