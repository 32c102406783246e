//! Ctrl-C, Ctrl-Break and closing the console while a replay runs. The
//! player has its own pseudo console, so these reach only `hrr`; the
//! handler records the event, and the capture loop terminates the player's
//! job, writes the marker and returns. Events are recorded as the signal
//! numbers a Unix `hrr` reports for the same act, so the exit code is
//! 128 + that number on both: Ctrl-C is SIGINT (2), Ctrl-Break the C
//! runtime's SIGBREAK (21), closing the console, logging off or shutting
//! down SIGHUP (1).

use std::sync::atomic::{AtomicI32, Ordering};
use std::time::Duration;

use windows_sys::core::BOOL;
use windows_sys::Win32::System::Console::{
    SetConsoleCtrlHandler, CTRL_BREAK_EVENT, CTRL_CLOSE_EVENT, CTRL_C_EVENT,
};

/// The last event received, as a signal number (0 = none).
static PENDING: AtomicI32 = AtomicI32::new(0);

/// How long a close, logoff or shutdown handler holds the process, so the
/// loop can stop the job and end the log before Windows ends `hrr`.
const CLOSE_GRACE: Duration = Duration::from_secs(3);

unsafe extern "system" fn record(event: u32) -> BOOL {
    let sig = match event {
        CTRL_C_EVENT => 2,
        CTRL_BREAK_EVENT => 21,
        _ => 1,
    };
    PENDING.store(sig, Ordering::SeqCst);
    if event >= CTRL_CLOSE_EVENT {
        // Windows ends the process when this handler returns.
        std::thread::sleep(CLOSE_GRACE);
    }
    1
}

/// The handler while a replay runs; dropping it removes it.
pub struct Guard;

/// Installs the recording handler.
pub fn install() -> anyhow::Result<Guard> {
    PENDING.store(0, Ordering::SeqCst);
    // SAFETY: `record` only stores to an atomic and sleeps.
    if unsafe { SetConsoleCtrlHandler(Some(record), 1) } == 0 {
        anyhow::bail!(
            "cannot install the console control handler: {}",
            std::io::Error::last_os_error()
        );
    }
    Ok(Guard)
}

/// The event `hrr` received since [`install`], as a signal number.
pub fn pending() -> Option<i32> {
    match PENDING.load(Ordering::SeqCst) {
        0 => None,
        sig => Some(sig),
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        // SAFETY: removes the handler installed by `install`.
        unsafe { SetConsoleCtrlHandler(Some(record), 0) };
    }
}
