//! The pseudo console (ConPTY) the player's standard handles belong to.
//! The MSVC runtime buffers stdout (and a redirected stderr) in whole
//! blocks when it is a pipe or a file, and `abort()` or a crash drops the
//! block; on a console every write leaves the process at once. So the
//! player gets a console whose rendering arrives on a pipe.
//!
//! `CreatePseudoConsole` exists from Windows 10 1809 on; it is looked up at
//! run time, so `hrr.exe` still starts on an older Windows, where the
//! replay falls back to pipes. The console is as wide as ConPTY allows, so
//! that a long line (a long kernel name) is wrapped as little as possible.

use std::fs::File;
use std::os::windows::io::{AsRawHandle, FromRawHandle, OwnedHandle};

use anyhow::bail;
use windows_sys::core::HRESULT;
use windows_sys::Win32::Foundation::HANDLE;
use windows_sys::Win32::System::Console::{COORD, HPCON};
use windows_sys::Win32::System::LibraryLoader::{GetModuleHandleW, GetProcAddress};
use windows_sys::Win32::System::Pipes::CreatePipe;

type CreateFn = unsafe extern "system" fn(COORD, HANDLE, HANDLE, u32, *mut HPCON) -> HRESULT;
type CloseFn = unsafe extern "system" fn(HPCON);
/// What `GetProcAddress` returns.
type Proc = unsafe extern "system" fn() -> isize;

/// The widest console ConPTY accepts (a `COORD` holds an `i16`).
pub const COLUMNS: i16 = i16::MAX;
/// Rows of the console; the rendering scrolls, so few are needed.
const ROWS: i16 = 64;

/// An open pseudo console; closing it (drop) ends its rendering, and the
/// output pipe then reaches its end.
pub struct PseudoConsole {
    handle: HPCON,
    close: CloseFn,
    /// The write end of the console's input, kept open while it lives.
    _input: OwnedHandle,
}

/// A pipe's two ends: (read, write), neither inheritable.
pub fn pipe() -> anyhow::Result<(OwnedHandle, OwnedHandle)> {
    let (mut read, mut write): (HANDLE, HANDLE) = (std::ptr::null_mut(), std::ptr::null_mut());
    // SAFETY: both out-pointers are valid; default security, default size.
    if unsafe { CreatePipe(&mut read, &mut write, std::ptr::null(), 1 << 20) } == 0 {
        bail!(
            "cannot create a pipe for the player's output: {}",
            std::io::Error::last_os_error()
        );
    }
    // SAFETY: CreatePipe returned two new handles that nothing else owns.
    Ok(unsafe {
        (
            OwnedHandle::from_raw_handle(read),
            OwnedHandle::from_raw_handle(write),
        )
    })
}

/// `kernel32!name`, when this Windows has it.
fn kernel32(name: &std::ffi::CStr) -> Option<Proc> {
    let module: Vec<u16> = "kernel32.dll\0".encode_utf16().collect();
    // SAFETY: kernel32 is loaded in every process; the names are
    // NUL-terminated.
    unsafe {
        let handle = GetModuleHandleW(module.as_ptr());
        if handle.is_null() {
            return None;
        }
        GetProcAddress(handle, name.as_ptr().cast())
    }
}

impl PseudoConsole {
    /// A new pseudo console and the read end of its output; `None` when
    /// this Windows has no pseudo console.
    pub fn open() -> anyhow::Result<Option<(PseudoConsole, File)>> {
        let (Some(create), Some(close)) = (
            kernel32(c"CreatePseudoConsole"),
            kernel32(c"ClosePseudoConsole"),
        ) else {
            return Ok(None);
        };
        // SAFETY: the two entry points have these documented signatures.
        let (create, close) = unsafe {
            (
                std::mem::transmute::<Proc, CreateFn>(create),
                std::mem::transmute::<Proc, CloseFn>(close),
            )
        };
        let (input_read, input_write) = pipe()?;
        let (output_read, output_write) = pipe()?;
        let mut handle: HPCON = 0;
        let size = COORD {
            X: COLUMNS,
            Y: ROWS,
        };
        // SAFETY: the pipe ends are open; the console duplicates them, so
        // this process's copies of its ends are closed below.
        let hr = unsafe {
            create(
                size,
                input_read.as_raw_handle(),
                output_write.as_raw_handle(),
                0,
                &mut handle,
            )
        };
        drop((input_read, output_write));
        if hr < 0 {
            bail!("cannot create a pseudo console for the replay (HRESULT 0x{hr:08X})");
        }
        let console = PseudoConsole {
            handle,
            close,
            _input: input_write,
        };
        Ok(Some((console, File::from(output_read))))
    }

    /// The console handle the player is started on.
    pub fn handle(&self) -> HPCON {
        self.handle
    }
}

impl Drop for PseudoConsole {
    fn drop(&mut self) {
        // SAFETY: the handle came from CreatePseudoConsole and is closed once.
        unsafe { (self.close)(self.handle) };
    }
}
