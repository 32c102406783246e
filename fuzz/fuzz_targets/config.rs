//! cargo-fuzz target `config`: see [`hrr_fuzz::config`].
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| hrr_fuzz::config(data));
