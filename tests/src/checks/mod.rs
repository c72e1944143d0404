//! The invariant checks behind the fuzz targets in `fuzz/`, as library code.
//!
//! Each check takes the fuzzer's raw bytes, decodes them into inputs with [`input::Input`]
//! (no `arbitrary` derive, so a corpus file means the same thing forever), drives one layer
//! of `switchml-core` with them, and panics with a description when an invariant breaks.
//! The fuzz targets are one line each; `tests/tests/fuzz_corpus.rs` runs every committed
//! corpus and regression file through the same checks in `cargo test`, without a fuzzer.
//!
//! | check | target | what it holds the core to |
//! |-------|--------|---------------------------|
//! | [`wire::check_wire`] | `wire_roundtrip` | parse never panics; parse/emit are exact inverses |
//! | [`switch::check_switch`] | `switch_sequence` | no double count, no early completion, right sums, counters add up |
//! | [`worker::check_worker`] | `worker_sequence` | nothing sent outside the window, no completion with missing chunks, sane timers |
//! | [`quant::check_quant`] | `quant` | the §5.2 error bound for finite input; NaN and ∞ always reported |
//! | [`model::check_model`] | `model_vs_reference` | the P4 model answers every `switch_sequence` datagram as the reference does, byte for byte |
//!
//! [`seeds`] builds the seed corpora from the golden wire vectors.

pub mod input;
pub mod model;
pub mod quant;
pub mod seeds;
pub mod switch;
pub mod wire;
pub mod worker;
