//! Any floats: the protocol.md §5.2 error bound for finite input; NaN and infinity always reported.
//! The invariants, and why they matter, are documented in `switchml_tests::checks::quant`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| switchml_tests::checks::quant::check_quant(data));
