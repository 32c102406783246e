//! cargo-fuzz target `classifier_lines`: see [`hrr_fuzz::classifier_lines`].
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| hrr_fuzz::classifier_lines(data));
