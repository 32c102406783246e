//! `hrr-test-player`: stands in for `hrr-playback` in hrr's tests (see
//! `hrr_testkit::player`). Test-only; never installed.

#[cfg(any(unix, windows))]
fn main() {
    hrr_testkit::player::main()
}

#[cfg(not(any(unix, windows)))]
fn main() {
    eprintln!("hrr-test-player runs on Unix and Windows only");
    std::process::exit(1);
}
