//! The `hrr` binary: argv in, exit code out.

fn main() {
    #[cfg(unix)]
    // SAFETY: called first, before any thread exists; restores the default
    // SIGPIPE action so `hrr … | head` ends quietly instead of erroring.
    unsafe {
        let _ = nix::sys::signal::signal(
            nix::sys::signal::Signal::SIGPIPE,
            nix::sys::signal::SigHandler::SigDfl,
        );
    }
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    #[cfg(target_os = "linux")]
    // `hrr` re-executed as the supervisor of a program it starts.
    if let Some(code) = hrr::supervisor::take_over(&args) {
        std::process::exit(code);
    }
    std::process::exit(hrr::dispatch::run(args));
}
