//! SIGINT, SIGTERM and SIGHUP on Unix, recorded by [`super::record`].

use nix::sys::signal::{sigaction, SaFlags, SigAction, SigHandler, SigSet, Signal};

const SIGNALS: [Signal; 3] = [Signal::SIGINT, Signal::SIGTERM, Signal::SIGHUP];

extern "C" fn record(sig: nix::libc::c_int) {
    super::record(sig);
}

/// The recording handlers; dropping it restores the previous ones.
pub(super) struct Installed {
    previous: Vec<(Signal, SigAction)>,
}

impl Installed {
    /// Installs the handlers (no `SA_RESTART`, so a blocked `poll` returns
    /// at once). A signal that was ignored when `hrr` started (`nohup`, a
    /// background job of a non-interactive shell) stays ignored.
    pub(super) fn new() -> anyhow::Result<Installed> {
        let action = SigAction::new(
            SigHandler::Handler(record),
            SaFlags::empty(),
            SigSet::empty(),
        );
        let mut previous = Vec::new();
        for sig in SIGNALS {
            // SAFETY: `record` only stores to an atomic, which is
            // async-signal-safe; the previous action is restored on drop.
            let old = unsafe { sigaction(sig, &action) }
                .map_err(|e| anyhow::anyhow!("cannot install the {sig} handler: {e}"))?;
            if old.handler() == SigHandler::SigIgn {
                // SAFETY: puts back SIG_IGN, which runs no code.
                let _ = unsafe { sigaction(sig, &old) };
                continue;
            }
            previous.push((sig, old));
        }
        Ok(Installed { previous })
    }
}

impl Drop for Installed {
    fn drop(&mut self) {
        for (sig, old) in self.previous.drain(..) {
            // SAFETY: reinstalls the action that was in place before.
            let _ = unsafe { sigaction(sig, &old) };
        }
    }
}
