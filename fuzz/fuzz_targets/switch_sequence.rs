//! Any datagram sequence into the reference switch: no double count, no early completion, right sums, counters that add up.
//! The invariants, and why they matter, are documented in `switchml_tests::checks::switch`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| switchml_tests::checks::switch::check_switch(data));
