//! Test support for switchml-rs, shared by the tests here and by later crates (the P4
//! model, the adapters):
//!
//! - [`sim`]: the deterministic network simulator (workers + switch + a seeded lossy net);
//! - [`harness`]: switches with a job, inputs from a seed, the host-side f32 reference;
//! - [`scenarios`]: the golden switch scenarios in `tests/vectors/switch.txt`;
//! - [`vectors`]: the loader for the golden packet vectors in `tests/vectors/`;
//! - [`checks`]: the invariant checks the fuzz targets in `fuzz/` run, replayable in
//!   `cargo test`.

pub mod checks;
pub mod harness;
pub mod scenarios;
pub mod sim;
pub mod vectors;
