//! # switchml-p4model-harness
//!
//! The P4 model's test harness, a dev-dependency only: [`equivalence`] runs one packet
//! sequence through the model (`switchml-p4model`) and the reference switch and says where
//! they differ (the model's property tests, the `model_vs_reference` fuzz target and the
//! corpus replay in `tests/` share it); [`testbed`] builds the beds the golden vectors and
//! scenarios are replayed on, in the model and on BMv2, and the `expected` binary prints
//! them for `p4/replay/replay.sh`. It reads the vectors through `switchml-tests`, which is
//! why it is a crate of its own: the model's library, and so the switch daemon, the CLI and
//! the Python wheel, link no test code.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod equivalence;
pub mod testbed;
