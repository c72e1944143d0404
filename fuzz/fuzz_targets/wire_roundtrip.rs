//! Any bytes: parse never panics, and what parses re-emits to the same bytes.
//! The invariants, and why they matter, are documented in `switchml_tests::checks::wire`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| switchml_tests::checks::wire::check_wire(data));
