//! (being written by the control-message work; placeholder keeps the crate compiling)
#![allow(missing_docs)]
/// Placeholder.
pub enum Message {}
