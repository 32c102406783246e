//! The `hrr` binary: argv in, exit code out. Its front ends live here, apart
//! from the library: the argv grammar ([`cli`]), the command router
//! ([`dispatch`]), the one list of commands it and `--list`, completions,
//! `help` and did-you-mean read ([`registry`]), one module per builtin
//! ([`commands`]), `hrr-<name>` programs ([`external`]) and the MCP server
//! ([`mcp`]). Each turns its input
//! into typed requests and calls the `hrr` library; the library never calls
//! back into them.

mod cli;
mod commands;
mod dispatch;
mod external;
mod mcp;
mod registry;

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
    std::process::exit(dispatch::run(args));
}
