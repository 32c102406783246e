//! SIGINT/SIGTERM/SIGHUP to `hrr` while a replay, or the workers of a
//! triage over many archives, run. The player and each worker live in a
//! process group of their own, so Ctrl-C at the terminal reaches only
//! `hrr`; without these handlers `hrr` would die and leave them running.
//! The handler only records the signal; the replay's capture loop stops the
//! player's group, writes the marker and returns, and a run over many
//! archives passes the signal on to its workers
//! ([`crate::subprocess::ExecOptions::interrupt_grace`]).

use std::sync::atomic::{AtomicI32, Ordering};

use nix::sys::signal::{sigaction, SaFlags, SigAction, SigHandler, SigSet, Signal};

/// The last signal received (0 = none).
static PENDING: AtomicI32 = AtomicI32::new(0);

const SIGNALS: [Signal; 3] = [Signal::SIGINT, Signal::SIGTERM, Signal::SIGHUP];

extern "C" fn record(sig: nix::libc::c_int) {
    PENDING.store(sig, Ordering::SeqCst);
}

/// The handlers while a replay or workers run; dropping it restores the
/// previous ones.
pub struct Guard {
    previous: Vec<(Signal, SigAction)>,
}

/// Installs the recording handlers (no `SA_RESTART`, so a blocked `poll`
/// returns at once). A signal that was ignored when `hrr` started (`nohup`,
/// a background job of a non-interactive shell) stays ignored.
pub fn install() -> anyhow::Result<Guard> {
    PENDING.store(0, Ordering::SeqCst);
    let action = SigAction::new(
        SigHandler::Handler(record),
        SaFlags::empty(),
        SigSet::empty(),
    );
    let mut previous = Vec::new();
    for sig in SIGNALS {
        // SAFETY: `record` only stores to an atomic, which is
        // async-signal-safe; the previous action is restored by `Guard`.
        let old = unsafe { sigaction(sig, &action) }
            .map_err(|e| anyhow::anyhow!("cannot install the {sig} handler: {e}"))?;
        if old.handler() == SigHandler::SigIgn {
            // SAFETY: puts back SIG_IGN, which runs no code.
            let _ = unsafe { sigaction(sig, &old) };
            continue;
        }
        previous.push((sig, old));
    }
    Ok(Guard { previous })
}

/// The signal `hrr` received since [`install`], if any.
pub fn pending() -> Option<i32> {
    match PENDING.load(Ordering::SeqCst) {
        0 => None,
        sig => Some(sig),
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        for (sig, old) in self.previous.drain(..) {
            // SAFETY: reinstalls the action that was in place before.
            let _ = unsafe { sigaction(sig, &old) };
        }
    }
}
