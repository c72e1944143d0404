//! Any bytes into the p4app dialect's parser and switch: no panic, counters that add up, no
//! early completion, right sums. The check lives in `core/tests/p4app_fuzz.rs`, which
//! `cargo test -p switchml-core` also runs.
#![no_main]

#[path = "../../core/tests/p4app_fuzz.rs"]
mod check;

libfuzzer_sys::fuzz_target!(|data: &[u8]| check::check_p4app(data));
