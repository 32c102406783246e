//! Ctrl-C, Ctrl-Break and closing the console on Windows, recorded by
//! [`super::record`] as the signal numbers a Unix `hrr` reports for the
//! same act: Ctrl-C is SIGINT (2), Ctrl-Break the C runtime's SIGBREAK
//! (21), closing the console, logging off or shutting down SIGHUP (1). The
//! player has its own pseudo console, so these reach only `hrr`.

use std::time::Duration;

use windows_sys::core::BOOL;
use windows_sys::Win32::System::Console::{
    SetConsoleCtrlHandler, CTRL_BREAK_EVENT, CTRL_CLOSE_EVENT, CTRL_C_EVENT,
};

/// How long a close, logoff or shutdown handler holds the process, so the
/// loop can stop the job and end the log before Windows ends `hrr`.
const CLOSE_GRACE: Duration = Duration::from_secs(3);

unsafe extern "system" fn record(event: u32) -> BOOL {
    super::record(match event {
        CTRL_C_EVENT => 2,
        CTRL_BREAK_EVENT => 21,
        _ => 1,
    });
    if event >= CTRL_CLOSE_EVENT {
        // Windows ends the process when this handler returns.
        std::thread::sleep(CLOSE_GRACE);
    }
    1
}

/// The console control handler; dropping it removes it.
pub(super) struct Installed;

impl Installed {
    /// Installs the recording handler.
    pub(super) fn new() -> anyhow::Result<Installed> {
        // SAFETY: `record` only stores to an atomic and sleeps.
        if unsafe { SetConsoleCtrlHandler(Some(record), 1) } == 0 {
            anyhow::bail!(
                "cannot install the console control handler: {}",
                std::io::Error::last_os_error()
            );
        }
        Ok(Installed)
    }
}

impl Drop for Installed {
    fn drop(&mut self) {
        // SAFETY: removes the handler installed by `new`.
        unsafe { SetConsoleCtrlHandler(Some(record), 0) };
    }
}
