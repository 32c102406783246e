//! cargo-fuzz target `manifest`: see [`hrr_fuzz::manifest`].
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| hrr_fuzz::manifest(data));
