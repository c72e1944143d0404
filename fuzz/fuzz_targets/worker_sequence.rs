//! Any inbound datagrams and timeouts into a worker lane: nothing sent outside its window, no tensor done with missing chunks.
//! The invariants, and why they matter, are documented in `switchml_tests::checks::worker`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| switchml_tests::checks::worker::check_worker(data));
