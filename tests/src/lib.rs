//! Test support for switchml-rs: the deterministic network simulator and the golden
//! vector loader, shared by the property tests here and by later crates (the P4 model, the
//! adapters).

pub mod harness;
pub mod sim;
