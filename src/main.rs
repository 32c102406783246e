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
    std::process::exit(hrr::dispatch::run(std::env::args_os().collect()));
}
