//! cargo-fuzz target `launch_payload`: see [`hrr_fuzz::launch_payload`].
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| hrr_fuzz::launch_payload(data));
