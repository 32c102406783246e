//! Starting the player with `CreateProcessW`: suspended, put into its Job
//! object, then resumed, so nothing it starts can escape the job. Its
//! standard handles are either the pseudo console's (the
//! `STARTF_USESTDHANDLES` flag with null handles, as ConPTY hosts whose own
//! handles are redirected do: without the flag the child would inherit
//! `hrr`'s redirected handles and bypass the console) or two pipes, the only
//! handles it inherits.

use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::os::windows::ffi::OsStrExt;
use std::os::windows::io::{AsRawHandle, FromRawHandle, OwnedHandle, RawHandle};

use anyhow::bail;
use windows_sys::Win32::Foundation::HANDLE;
use windows_sys::Win32::System::Console::HPCON;
use windows_sys::Win32::System::Threading::{
    CreateProcessW, DeleteProcThreadAttributeList, InitializeProcThreadAttributeList, ResumeThread,
    TerminateProcess, UpdateProcThreadAttribute, CREATE_NEW_PROCESS_GROUP, CREATE_SUSPENDED,
    CREATE_UNICODE_ENVIRONMENT, EXTENDED_STARTUPINFO_PRESENT, LPPROC_THREAD_ATTRIBUTE_LIST,
    PROCESS_INFORMATION, PROC_THREAD_ATTRIBUTE_HANDLE_LIST, PROC_THREAD_ATTRIBUTE_PSEUDOCONSOLE,
    STARTF_USESTDHANDLES, STARTUPINFOEXW,
};

use super::job::Job;

/// Where the player's standard handles go.
pub enum Stdio<'a> {
    /// The pseudo console: all three standard handles are its own.
    Console(HPCON),
    /// Inheritable pipe write ends for stdout and stderr; stdin is none.
    Pipes {
        /// stdout's write end.
        stdout: &'a OwnedHandle,
        /// stderr's write end.
        stderr: &'a OwnedHandle,
    },
}

/// Starts `argv` with `hrr`'s environment changed by `env`, inside `job`;
/// returns the process handle.
pub fn spawn(
    argv: &[OsString],
    env: &[(OsString, Option<OsString>)],
    stdio: Stdio<'_>,
    job: &Job,
) -> anyhow::Result<OwnedHandle> {
    let Some(program) = argv.first() else {
        bail!("empty replay command line");
    };
    let mut application = wide(program);
    application.push(0);
    let mut command_line = command_line(argv);
    let mut environment = environment_block(std::env::vars_os(), env);
    let mut attributes = AttributeList::new(1)?;
    let inherited: Vec<HANDLE>;
    let mut startup = STARTUPINFOEXW::default();
    startup.StartupInfo.cb = std::mem::size_of::<STARTUPINFOEXW>() as u32;
    startup.StartupInfo.dwFlags = STARTF_USESTDHANDLES;
    let mut flags = EXTENDED_STARTUPINFO_PRESENT | CREATE_UNICODE_ENVIRONMENT | CREATE_SUSPENDED;
    let inherit = match stdio {
        Stdio::Console(console) => {
            // The value is the console handle itself, not a pointer to it.
            attributes.set(
                PROC_THREAD_ATTRIBUTE_PSEUDOCONSOLE,
                console as *const core::ffi::c_void,
                std::mem::size_of::<HPCON>(),
            )?;
            0
        }
        Stdio::Pipes { stdout, stderr } => {
            inherited = vec![stdout.as_raw_handle(), stderr.as_raw_handle()];
            attributes.set(
                PROC_THREAD_ATTRIBUTE_HANDLE_LIST,
                inherited.as_ptr().cast(),
                std::mem::size_of_val(inherited.as_slice()),
            )?;
            startup.StartupInfo.hStdOutput = inherited[0];
            startup.StartupInfo.hStdError = inherited[1];
            // Ctrl-C at hrr's console reaches hrr only, as on a pseudo console.
            flags |= CREATE_NEW_PROCESS_GROUP;
            1
        }
    };
    startup.lpAttributeList = attributes.as_ptr();
    let mut info = PROCESS_INFORMATION::default();
    // SAFETY: every string is NUL-terminated UTF-16 that outlives the
    // call, the environment block ends with two NULs, the attribute list is
    // initialised and its values (the console, the handle array) outlive
    // the call.
    let ok = unsafe {
        CreateProcessW(
            application.as_ptr(),
            command_line.as_mut_ptr(),
            std::ptr::null(),
            std::ptr::null(),
            inherit,
            flags,
            environment.as_mut_ptr().cast(),
            std::ptr::null(),
            &raw const startup.StartupInfo,
            &raw mut info,
        )
    };
    if ok == 0 {
        bail!(
            "cannot start {}: {}",
            program.to_string_lossy(),
            std::io::Error::last_os_error()
        );
    }
    // SAFETY: CreateProcessW returned these two new handles to us.
    let (process, thread) = unsafe {
        (
            OwnedHandle::from_raw_handle(info.hProcess as RawHandle),
            OwnedHandle::from_raw_handle(info.hThread as RawHandle),
        )
    };
    if let Err(e) = job.assign(&process) {
        // SAFETY: the process is ours and has not run a single instruction.
        unsafe { TerminateProcess(process.as_raw_handle(), 1) };
        return Err(e);
    }
    // SAFETY: the thread handle is open; the thread was created suspended.
    if unsafe { ResumeThread(thread.as_raw_handle()) } == u32::MAX {
        let e = std::io::Error::last_os_error();
        job.terminate();
        bail!("cannot start {}: {e}", program.to_string_lossy());
    }
    Ok(process)
}

fn wide(s: &OsStr) -> Vec<u16> {
    s.encode_wide().collect()
}

/// The command line for `argv` (NUL-terminated UTF-16), each argument
/// quoted so the C runtime's parser gives it back unchanged: inside quotes,
/// backslashes are literal unless they precede a quote, where each is
/// doubled and the quote escaped.
fn command_line(argv: &[OsString]) -> Vec<u16> {
    let mut out: Vec<u16> = Vec::new();
    for (i, arg) in argv.iter().enumerate() {
        if i > 0 {
            out.push(u16::from(b' '));
        }
        out.extend(quote(&wide(arg)));
    }
    out.push(0);
    out
}

/// One argument quoted for the command line; an argument without spaces,
/// tabs or quotes (and not empty) stays as it is.
fn quote(arg: &[u16]) -> Vec<u16> {
    let special = |c: &u16| {
        [b' ', b'\t', b'"', b'\n']
            .iter()
            .any(|s| *c == u16::from(*s))
    };
    if !arg.is_empty() && !arg.iter().any(special) {
        return arg.to_vec();
    }
    let (quote, backslash) = (u16::from(b'"'), u16::from(b'\\'));
    let mut out = vec![quote];
    let mut slashes = 0usize;
    for &c in arg {
        if c == backslash {
            slashes += 1;
            continue;
        }
        if c == quote {
            out.extend(std::iter::repeat_n(backslash, slashes * 2 + 1));
        } else {
            out.extend(std::iter::repeat_n(backslash, slashes));
        }
        slashes = 0;
        out.push(c);
    }
    out.extend(std::iter::repeat_n(backslash, slashes * 2));
    out.push(quote);
    out
}

/// The environment block: `inherited` with `changes` applied (names
/// compared without case, as Windows does), sorted by name, each
/// `NAME=value` NUL-terminated, the block ending with one more NUL.
fn environment_block(
    inherited: impl Iterator<Item = (OsString, OsString)>,
    changes: &[(OsString, Option<OsString>)],
) -> Vec<u16> {
    let key = |k: &OsStr| k.to_string_lossy().to_uppercase();
    let mut vars: BTreeMap<String, (OsString, OsString)> =
        inherited.map(|(k, v)| (key(&k), (k, v))).collect();
    for (k, v) in changes {
        match v {
            Some(v) => vars.insert(key(k), (k.clone(), v.clone())),
            None => vars.remove(&key(k)),
        };
    }
    let mut block: Vec<u16> = Vec::new();
    for (k, v) in vars.values() {
        block.extend(wide(k));
        block.push(u16::from(b'='));
        block.extend(wide(v));
        block.push(0);
    }
    if block.is_empty() {
        block.push(0);
    }
    block.push(0);
    block
}

/// A process-thread attribute list (the pseudo console, or the handles to
/// inherit), deleted on drop.
struct AttributeList {
    storage: Vec<usize>,
}

impl AttributeList {
    fn new(count: u32) -> anyhow::Result<AttributeList> {
        let mut size = 0usize;
        // SAFETY: the first call only reports the size it needs.
        unsafe { InitializeProcThreadAttributeList(std::ptr::null_mut(), count, 0, &mut size) };
        let mut storage = vec![0usize; size.div_ceil(std::mem::size_of::<usize>())];
        // SAFETY: `storage` holds at least `size` bytes, pointer-aligned.
        let ok = unsafe {
            InitializeProcThreadAttributeList(storage.as_mut_ptr().cast(), count, 0, &mut size)
        };
        if ok == 0 {
            bail!(
                "cannot prepare the player's start attributes: {}",
                std::io::Error::last_os_error()
            );
        }
        Ok(AttributeList { storage })
    }

    fn as_ptr(&mut self) -> LPPROC_THREAD_ATTRIBUTE_LIST {
        self.storage.as_mut_ptr().cast()
    }

    fn set(
        &mut self,
        attribute: u32,
        value: *const core::ffi::c_void,
        size: usize,
    ) -> anyhow::Result<()> {
        // SAFETY: the list is initialised; the caller keeps `value` alive
        // until the process is created.
        let ok = unsafe {
            UpdateProcThreadAttribute(
                self.as_ptr(),
                0,
                attribute as usize,
                value,
                size,
                std::ptr::null_mut(),
                std::ptr::null(),
            )
        };
        if ok == 0 {
            bail!(
                "cannot set the player's start attributes: {}",
                std::io::Error::last_os_error()
            );
        }
        Ok(())
    }
}

impl Drop for AttributeList {
    fn drop(&mut self) {
        // SAFETY: the list was initialised in `new`.
        unsafe { DeleteProcThreadAttributeList(self.as_ptr()) };
    }
}

/// The text of a wide string, for tests.
#[cfg(test)]
fn text(w: &[u16]) -> String {
    use std::os::windows::ffi::OsStringExt;
    OsString::from_wide(w).to_string_lossy().into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_survive_the_c_runtimes_parser() {
        let argv: Vec<OsString> = [
            r"C:\Program Files\AMD\ROCm\6.2\bin\hrr-playback.exe",
            "--max-wall-seconds",
            "",
            r#"a "quoted" arg"#,
            r"C:\cap dir\",
            r"C:\plain\pid-1",
        ]
        .iter()
        .map(OsString::from)
        .collect();
        let line = command_line(&argv);
        assert_eq!(
            text(&line[..line.len() - 1]),
            r#""C:\Program Files\AMD\ROCm\6.2\bin\hrr-playback.exe" --max-wall-seconds "" "a \"quoted\" arg" "C:\cap dir\\" C:\plain\pid-1"#
        );
    }

    #[test]
    fn the_environment_block_applies_changes_without_case() {
        let inherited = [
            ("Path", r"C:\Windows"),
            ("HIP_VISIBLE_DEVICES", "3"),
            ("KEEP", "1"),
        ]
        .map(|(k, v)| (OsString::from(k), OsString::from(v)));
        let changes = [
            (
                OsString::from("PATH"),
                Some(OsString::from(r"C:\p;C:\Windows")),
            ),
            (OsString::from("hip_visible_devices"), None),
        ];
        let block = environment_block(inherited.into_iter(), &changes);
        assert_eq!(text(&block), "KEEP=1\0PATH=C:\\p;C:\\Windows\0\0");
    }
}
