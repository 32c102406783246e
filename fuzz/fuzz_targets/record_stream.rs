//! cargo-fuzz target `record_stream`: see [`hrr_fuzz::record_stream`].
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| hrr_fuzz::record_stream(data));
