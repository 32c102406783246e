//! `hrr-test-player`: stands in for `hrr-playback` in hrr's tests (see
//! `hrr_testkit::player`). Test-only; never installed.

#[cfg(unix)]
fn main() {
    hrr_testkit::player::main()
}

#[cfg(not(unix))]
fn main() {
    eprintln!("hrr-test-player runs on Unix only");
    std::process::exit(1);
}
