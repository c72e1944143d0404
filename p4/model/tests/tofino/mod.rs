//! The rules of `tofino_rules.rs`, one module each, with their tests.

mod counters;
mod depth;
mod fields;
mod gateways;
mod salu;
