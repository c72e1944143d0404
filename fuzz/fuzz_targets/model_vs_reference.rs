//! The P4 model and the reference switch, fed the steps of a `switch_sequence` input (its
//! datagrams, and control-plane actions on its job restarts): the same verdicts, answer
//! bytes, counters and registers. See `switchml_tests::checks::model`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    switchml_p4model_harness::equivalence::check_switch_sequence(data);
});
