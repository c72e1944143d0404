//! # switchml-ring
//!
//! The host ring the worker library falls back to when the switch cannot serve a job: the
//! ranks meet at rank 0's rendezvous, connect a TCP ring, and all-reduce over it.
//!
//! - [`Ring::connect`]: the rendezvous ([`rendezvous`](crate::rendezvous)) and the ring's
//!   two connections, each opened by a handshake that proves the job key both ways
//!   ([`link`](crate::link), [`dial`](crate::dial) connecting, [`gate`](crate::gate)
//!   accepting);
//! - [`Ring::allreduce`], [`Ring::broadcast`], [`Ring::allgather`]: the classic ring
//!   reductions over typed copies of tensors ([`Values`]).
//!
//! When to fall back, and how the ranks agree on the tensors in flight, are the core's
//! decisions (`switchml_core::fallback`), which the worker library's `fallback` module
//! carries out over this ring; the handshake's and the frames' layouts are the core's too
//! (`switchml_core::wire::ring_handshake`, `switchml_core::wire::ring_frame`). It has no `unsafe` code.

#![warn(missing_docs)]
#![forbid(unsafe_code)]

mod config;
mod dial;
mod error;
mod gate;
mod link;
mod rendezvous;
mod ring;
mod ring_reduce;

pub use config::RingConfig;
pub use error::Error;
pub use ring::Ring;
pub use ring_reduce::Values;
