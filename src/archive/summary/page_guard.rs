//! Keeps a file cut shorter under a mapped window from killing `hrr`
//! (Linux).
//!
//! A window of `events.bin` is mapped and decoded in place (`mapped.rs`).
//! When another program truncates the file meanwhile, the first touch of a
//! page past the new end raises SIGBUS, whose default action ends the
//! process. Each mapped window is registered here while it is mapped; a
//! SIGBUS whose fault address lies in a registered window maps a page of
//! zeros over the faulting page, marks the window, and returns, so the
//! access is retried and reads zeros. The pass then reports the file as cut
//! while being read (`truncated_while_reading`) instead of dying.
//!
//! A SIGBUS anywhere else puts back the handler that was there before
//! (Rust's own, or the default) and lets the signal happen again, so it
//! still ends the process as it would without `hrr`'s handler.
//!
//! The handler only loads atomics, calls `mmap` and `sigaction` (system
//! calls) and stores atomics. A window's slot is freed before the window is
//! unmapped (it is read no more by then), so an active slot never names
//! memory that another mapping could take: a bus error on a later mapping
//! at the same address is never mistaken for the window's.

use std::io;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, Once, OnceLock};

use nix::libc;
use nix::sys::signal::{sigaction, SaFlags, SigAction, SigHandler, SigSet, Signal};

/// Windows mapped at once, at most: a few per decoder thread.
const SLOTS: usize = 64;

const FREE: u8 = 0;
const CLAIMED: u8 = 1;
const ACTIVE: u8 = 2;

/// One registered window: the address range and whether a page of it was
/// replaced.
struct Slot {
    state: AtomicU8,
    start: AtomicUsize,
    end: AtomicUsize,
    faulted: AtomicBool,
}

impl Slot {
    const fn new() -> Slot {
        Slot {
            state: AtomicU8::new(FREE),
            start: AtomicUsize::new(0),
            end: AtomicUsize::new(0),
            faulted: AtomicBool::new(false),
        }
    }
}

static TABLE: [Slot; SLOTS] = [const { Slot::new() }; SLOTS];
static PAGE_SIZE: AtomicUsize = AtomicUsize::new(4096);
static PREVIOUS: OnceLock<SigAction> = OnceLock::new();
static INSTALL: Once = Once::new();

/// A mapped window registered with the guard. Dropping it after the window
/// is unmapped frees the slot and, if a page of the window was replaced,
/// raises the pass's `cut` flag.
pub(in crate::archive) struct Registration {
    slot: usize,
    cut: Arc<AtomicBool>,
}

/// Registers the `len` bytes at `start` (a mapped window) so that a SIGBUS
/// inside them is survived and raises `cut` when the registration is
/// dropped.
pub(in crate::archive) fn register(
    start: *const u8,
    len: usize,
    cut: &Arc<AtomicBool>,
) -> io::Result<Registration> {
    install()?;
    for (i, s) in TABLE.iter().enumerate() {
        if s.state
            .compare_exchange(FREE, CLAIMED, Ordering::AcqRel, Ordering::Relaxed)
            .is_ok()
        {
            s.start.store(start as usize, Ordering::Relaxed);
            s.end.store(start as usize + len, Ordering::Relaxed);
            s.faulted.store(false, Ordering::Relaxed);
            s.state.store(ACTIVE, Ordering::Release);
            return Ok(Registration {
                slot: i,
                cut: Arc::clone(cut),
            });
        }
    }
    Err(io::Error::other(format!(
        "more than {SLOTS} windows of events.bin mapped at once"
    )))
}

impl Drop for Registration {
    fn drop(&mut self) {
        let s = &TABLE[self.slot];
        if s.faulted.load(Ordering::Acquire) {
            self.cut.store(true, Ordering::Release);
        }
        s.state.store(FREE, Ordering::Release);
    }
}

/// Installs the SIGBUS handler once per process; the handler it replaces
/// is kept for signals that are not about a registered window.
fn install() -> io::Result<()> {
    let mut failed = None;
    INSTALL.call_once(|| {
        if let Ok(Some(size)) = nix::unistd::sysconf(nix::unistd::SysconfVar::PAGE_SIZE) {
            PAGE_SIZE.store(size as usize, Ordering::Relaxed);
        }
        let action = SigAction::new(
            SigHandler::SigAction(on_sigbus),
            SaFlags::SA_SIGINFO | SaFlags::SA_ONSTACK,
            SigSet::empty(),
        );
        // SAFETY: `on_sigbus` only touches atomics and makes the mmap and
        // sigaction system calls; the replaced action is kept in
        // `PREVIOUS` before any window is registered.
        match unsafe { sigaction(Signal::SIGBUS, &action) } {
            Ok(old) => {
                let _ = PREVIOUS.set(old);
            }
            Err(e) => failed = Some(e),
        }
    });
    match failed {
        Some(e) => Err(io::Error::other(format!(
            "cannot install the SIGBUS handler for mapped reading: {e}"
        ))),
        None => Ok(()),
    }
}

extern "C" fn on_sigbus(_: libc::c_int, info: *mut libc::siginfo_t, _: *mut libc::c_void) {
    // SAFETY: the kernel passes a valid siginfo for an SA_SIGINFO handler.
    let (addr, code) = unsafe { ((*info).si_addr() as usize, (*info).si_code) };
    if code > 0 && replace_page(addr) {
        return;
    }
    if let Some(previous) = PREVIOUS.get() {
        // SAFETY: reinstalls the action that was in place before `hrr`'s.
        let _ = unsafe { sigaction(Signal::SIGBUS, previous) };
    }
    if code <= 0 {
        // Sent, not raised by an access: retrying nothing would drop it.
        // SAFETY: raise is async-signal-safe; SIGBUS is blocked until this
        // handler returns, then delivered to the action put back above.
        unsafe { libc::raise(libc::SIGBUS) };
    }
}

/// Maps a page of zeros over the page holding `addr` when `addr` lies in a
/// registered window; false when it does not, or the page cannot be mapped.
fn replace_page(addr: usize) -> bool {
    let page = PAGE_SIZE.load(Ordering::Relaxed);
    for s in &TABLE {
        if s.state.load(Ordering::Acquire) != ACTIVE {
            continue;
        }
        if !(s.start.load(Ordering::Relaxed)..s.end.load(Ordering::Relaxed)).contains(&addr) {
            continue;
        }
        let base = addr & !(page - 1);
        // SAFETY: `base` is a page of a read-only window `hrr` mapped and
        // has not unmapped (its slot is active); replacing it with an
        // anonymous page of zeros keeps the range mapped and readable.
        let mapped = unsafe {
            libc::mmap(
                base as *mut libc::c_void,
                page,
                libc::PROT_READ,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_FIXED,
                -1,
                0,
            )
        };
        if mapped == libc::MAP_FAILED {
            return false;
        }
        s.faulted.store(true, Ordering::Release);
        return true;
    }
    false
}

#[cfg(test)]
mod tests {
    use std::io::Write;
    use std::os::unix::process::ExitStatusExt;
    use std::process::Command;

    use super::*;

    /// A file of `len` bytes of 0xA5, mapped whole, and a handle to cut it.
    fn mapped_file(len: usize) -> (std::fs::File, memmap2::Mmap) {
        let mut f = tempfile::tempfile().unwrap();
        f.write_all(&vec![0xA5; len]).unwrap();
        // SAFETY: a private temporary file; the test cuts it on purpose.
        let map = unsafe { memmap2::Mmap::map(&f) }.unwrap();
        (f, map)
    }

    #[test]
    fn a_window_cut_under_its_reader_reads_zeros_and_raises_the_cut() {
        let (f, map) = mapped_file(64 << 10);
        let cut = Arc::new(AtomicBool::new(false));
        let registration = register(map.as_ptr(), map.len(), &cut).unwrap();
        f.set_len(4096).unwrap();
        // The first page is still in the file; every later one faults.
        let sum: u64 = map.iter().map(|&b| u64::from(b)).sum();
        assert_eq!(sum, 4096 * 0xA5, "pages past the cut read as zeros");
        assert!(!cut.load(Ordering::Acquire), "raised only when released");
        drop(registration);
        drop(map);
        assert!(cut.load(Ordering::Acquire));
    }

    #[test]
    fn a_window_left_whole_raises_no_cut() {
        let (_f, map) = mapped_file(16 << 10);
        let cut = Arc::new(AtomicBool::new(false));
        let registration = register(map.as_ptr(), map.len(), &cut).unwrap();
        assert!(map.iter().all(|&b| b == 0xA5));
        drop(registration);
        drop(map);
        assert!(!cut.load(Ordering::Acquire));
    }

    /// The child half of the next test: a bus error on a mapping that is
    /// not a registered window, with the guard installed.
    #[test]
    fn foreign_bus_error_child() {
        if std::env::var_os("HRR_TEST_FOREIGN_BUS_ERROR").is_none() {
            return;
        }
        let (_f, registered) = mapped_file(8 << 10);
        let cut = Arc::new(AtomicBool::new(false));
        let _registration = register(registered.as_ptr(), registered.len(), &cut).unwrap();
        let (f, foreign) = mapped_file(64 << 10);
        f.set_len(0).unwrap();
        let sum: u64 = foreign.iter().map(|&b| u64::from(b)).sum();
        // Unreachable when the signal ends the process, as it must.
        std::process::exit(if sum == 0 { 3 } else { 4 });
    }

    #[test]
    fn a_bus_error_outside_the_windows_still_ends_the_process() {
        let status = Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "archive::summary::page_guard::tests::foreign_bus_error_child",
                "--test-threads=1",
            ])
            .env("HRR_TEST_FOREIGN_BUS_ERROR", "1")
            .output()
            .unwrap()
            .status;
        assert_eq!(status.signal(), Some(libc::SIGBUS), "{status:?}");
    }
}
