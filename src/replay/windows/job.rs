//! The Job object that holds the player (or `wsl.exe`, see
//! [`crate::replay::wsl`]) and everything it starts. It is
//! created with kill-on-close: when its last handle closes (the replay
//! ends, or `hrr` itself dies and Windows closes its handles), every
//! process still in it is terminated. A timeout or Ctrl-C terminates the
//! job at once, which takes every descendant, however it was started.

use std::os::windows::io::{AsRawHandle, FromRawHandle, OwnedHandle};

use anyhow::bail;
use windows_sys::Win32::System::JobObjects::{
    AssignProcessToJobObject, CreateJobObjectW, JobObjectExtendedLimitInformation,
    SetInformationJobObject, TerminateJobObject, JOBOBJECT_EXTENDED_LIMIT_INFORMATION,
    JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE,
};

/// The exit code the processes of a job that `hrr` terminates get.
const TERMINATED: u32 = 1;

/// A kill-on-close Job object.
pub struct Job {
    handle: OwnedHandle,
}

impl Job {
    /// A new anonymous job with kill-on-close set.
    pub fn new() -> anyhow::Result<Job> {
        // SAFETY: no security attributes and no name; the result is checked.
        let raw = unsafe { CreateJobObjectW(std::ptr::null(), std::ptr::null()) };
        if raw.is_null() {
            bail!(
                "cannot create a Job object: {}",
                std::io::Error::last_os_error()
            );
        }
        // SAFETY: `raw` is a new handle that nothing else owns.
        let handle = unsafe { OwnedHandle::from_raw_handle(raw) };
        let mut limits = JOBOBJECT_EXTENDED_LIMIT_INFORMATION::default();
        limits.BasicLimitInformation.LimitFlags = JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE;
        // SAFETY: the structure and its size match the information class.
        let ok = unsafe {
            SetInformationJobObject(
                handle.as_raw_handle(),
                JobObjectExtendedLimitInformation,
                (&raw const limits).cast(),
                std::mem::size_of::<JOBOBJECT_EXTENDED_LIMIT_INFORMATION>() as u32,
            )
        };
        if ok == 0 {
            bail!(
                "cannot make a Job object kill its processes on close: {}",
                std::io::Error::last_os_error()
            );
        }
        Ok(Job { handle })
    }

    /// Puts `process` into the job; what it starts from then on follows it
    /// in (the player is started suspended, so it has started nothing yet).
    pub fn assign(&self, process: &impl AsRawHandle) -> anyhow::Result<()> {
        // SAFETY: both handles are open for the duration of the call.
        let ok = unsafe {
            AssignProcessToJobObject(self.handle.as_raw_handle(), process.as_raw_handle())
        };
        if ok == 0 {
            bail!(
                "cannot put a process into its Job object: {}",
                std::io::Error::last_os_error()
            );
        }
        Ok(())
    }

    /// A new job holding `child`, a program started a moment ago (not
    /// suspended, as the player is): what it started before this call
    /// would stay outside, and a program just started has started nothing
    /// yet. Used for the children that run as long as a replay (cmake,
    /// `wsl.exe`), so they end with `hrr`. When that fails, `child` is
    /// killed: nothing would stop it with `hrr`.
    pub fn holding(child: &mut std::process::Child) -> anyhow::Result<Job> {
        let job = Job::new().and_then(|job| job.assign(&*child).map(|()| job));
        if job.is_err() {
            let _ = child.kill();
            let _ = child.wait();
        }
        job
    }

    /// Terminates every process in the job.
    pub fn terminate(&self) {
        // SAFETY: the handle is open; failure leaves kill-on-close to act.
        unsafe { TerminateJobObject(self.handle.as_raw_handle(), TERMINATED) };
    }
}
