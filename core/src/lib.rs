//! # switchml-core
//!
//! The protocol core of switchml-rs: in-network aggregation for data-parallel training, after
//! SwitchML (Sapio et al., NSDI'21). Everything here is `no_std`, allocation-free and
//! deterministic: no clock, no randomness, no I/O. Adapters hand it bytes and the current
//! time and do what it says; `docs/protocol.md` is the specification it implements.
//!
//! The layers, bottom up:
//!
//! - [`wire`]: zero-copy views and validated `Repr`s for every message (Contribution,
//!   Result, Join, JoinReply, Probe, ProbeReply, Abort, Status, StatusReply, Leave). Each
//!   fixed header is one `#[repr(C)]` struct of zerocopy's network-endian integers, so the
//!   layout is written once; parsing never panics on any bytes. Every `Repr` and
//!   [`wire::Message`] has a one-line `Display` (`Contribution job 7 rank 3 slot 5 ver 1 seq
//!   9 count 2 exp 130 session 0x0a0b0c0d flags RETRANSMIT`), the form a packet trace
//!   prints, and `defmt::Format` behind the `defmt` feature.
//! - [`quant`]: block floating point. Per block a biased exponent byte; after the switch
//!   returns the job-wide maximum, floats are scaled to int32 so that the `n`-way sum cannot
//!   overflow, and the summed int32 are scaled back (sum or average). f32, f16, bf16 and
//!   int32 tensors. A NaN or ∞ travels as a flag of its chunk (protocol.md §5.4), or is
//!   refused; the NaN/∞ check and every block's exponent come from one pass over a
//!   tensor, into an exponent cache that the tensor may keep (`quant::WithExponents`).
//! - [`switch`]: the reference aggregator: a pool of slots × 2 shadow versions, seen
//!   bitmaps, countdowns, max exponents, a job table for several jobs at once, drop counters
//!   by reason, probe answers, and who may take part: each job's key, its runs and their
//!   sessions (protocol.md §4.1). The P4 programs and their software model follow it. Its
//!   sans-IO front, [`switch::Endpoint`], adds what every switch adapter needs: each lane's
//!   address learned from accepted Joins, where an answer goes, and idle runs released.
//! - [`worker`]: the sans-IO worker state machine (quinn-proto style): `submit` tensors,
//!   feed it packets and timeouts, poll it for datagrams, timers and events. It streams
//!   chunks through a window of slots, primes exponents, retransmits with backoff, and names
//!   the slot and the missing ranks when a peer never contributes.
//! - [`shard`]: the rule that spreads a switch over several independent shards (threads,
//!   cores): lane `l` belongs to shard `l mod N`, on the switch's port plus `l mod N`.
//! - [`p4app`]: the original SwitchML's dialect (p4app-switchML) beside ours: its header,
//!   a switch that does what its P4 program does, and a worker that does what its client does.
//! - [`time`]: our own microsecond `Instant` and `Duration`.
//! - [`splitmix`]: a seeded SplitMix64 stream, the one generator of every seeded
//!   simulation, test and input formula (the core draws nothing itself).
//! - [`auth`]: proof of a job's key without sending it (HMAC-SHA-256 tags) and the switch's
//!   expiring, address-bound cookies (protocol.md §4.2).
//! - [`fallback`]: the host-ring fallback's decisions (docs/fallback.md): which failures of
//!   the switch path send a job to the ring, and how the ranks agree on the tensors in
//!   flight at the switch-to-ring transition; the ring's frame head is
//!   [`wire::ring_frame`].
//!
//! What this crate does **not** do: sockets, threads, clocks, sending the copies of a
//! multicast (the endpoint says where they go), or job set-up policy. Those live in the
//! adapters (`adapters/`), which call into this crate and never re-implement protocol
//! logic.
//!
//! ## Features
//!
//! - `std`: `Tensor` for `Vec<T>`, `std::error::Error` for the error types.
//! - `defmt`: `defmt::Format` on public types, for firmware.
//! - `log`: `log` records at protocol events.
#![no_std]
#![forbid(unsafe_code)]
#![warn(missing_docs)]

#[cfg(all(feature = "defmt", feature = "log"))]
compile_error!("the `defmt` and `log` features are mutually exclusive: pick one logger");

#[cfg(feature = "std")]
extern crate std;

pub mod auth;
pub mod fallback;
pub mod p4app;
pub mod quant;
pub mod ranks;
pub mod shard;
pub mod splitmix;
pub mod switch;
pub mod time;
mod trace;
pub mod wire;
pub mod worker;
