//! The original SwitchML's dialect (p4lang/p4app-switchML), beside our own protocol
//! (protocol.md §8).
//!
//! The original's client and Tofino program speak a smaller protocol than [`crate::wire`]:
//! one 10-byte header after UDP, ranks known to the switch by their (MAC, IP), no sessions
//! on the wire, no sequence numbers, recovery by per-packet timers alone. This module speaks
//! it, so that the original client can use a switchml-rs switch and our workers a Tofino
//! that runs the original program:
//!
//! - [`packet`]: the zero-copy view [`P4appPacket`] and the validated [`P4appRepr`];
//! - [`switch`]: [`P4appSwitch`], what the original program does per (slot, set);
//! - [`worker`]: [`P4appWorker`], what the original client does, sans-IO;
//! - [`quant`]: the dialect's block exponent and scale, which differ from ours.
//!
//! Ethernet, IPv4 and UDP are the adapters' business: they map a frame's (MAC, IP) to a
//! rank, hand the UDP payload in, and rewrite addresses on the way out. Only the errors of
//! [`crate::wire`] are shared: the two formats have nothing else in common.

pub mod packet;
pub mod quant;
pub mod switch;
pub mod worker;

pub use packet::{P4appPacket, P4appRepr, P4appSize};
pub use quant::P4appScale;
pub use switch::{P4appCounters, P4appDrop, P4appSlot, P4appSwitch, P4appVerdict, TooManyWorkers};
pub use worker::{
    P4appConfig, P4appConfigError, P4appEvent, P4appSubmitError, P4appTensor, P4appWorker,
};
