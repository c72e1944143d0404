//! The P4 model and the reference switch, fed the datagrams of a `switch_sequence` input: the
//! same verdicts, answer bytes, counters and registers. See `switchml_tests::checks::model`.
#![no_main]

use switchml_p4model::equivalence::{run, Setup};
use switchml_tests::checks::{model, switch};

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let setup = Setup {
        slots: model::SLOTS,
        epoch: switch::EPOCH,
        jobs: switch::JOBS.to_vec(),
    };
    model::check_model(data, |packets| run(&setup, packets.iter().copied()));
});
