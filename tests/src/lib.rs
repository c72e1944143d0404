//! Test support (being written).

pub mod vectors;
