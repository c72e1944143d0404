//! # switchml-firmware
//!
//! switchml-rs on a microcontroller or a SmartNIC's embedded core: the core's worker state
//! machine ([`switchml_core::worker::Worker`], unchanged) driven over a smoltcp
//! [`Interface`](smoltcp::iface::Interface) and UDP socket on any
//! [`smoltcp::phy::Device`]. `no_std`, no allocator: every buffer is sized by const
//! generics ([`Storage`], [`Buffers`]) and lives where the firmware puts it.
//!
//! The layers, bottom up:
//!
//! - a NIC driver implementing `phy::Device` (not here: e.g. `switchml-lan9118`, the
//!   LAN9118 of Arm's MPS2 boards, which QEMU emulates);
//! - [`clock`]: a monotonic clock from a free-running counter ([`TickClock`]) or, where a
//!   board only offers a delay, from `embedded-hal`'s `DelayNs` ([`DelayClock`]);
//! - [`time`]: the one conversion between smoltcp's instants and the core's;
//! - [`Node`]: the interface, the socket, and the poll loop that feeds the switch's
//!   datagrams to a worker lane and sends what it writes.
//!
//! What this crate does **not** do: anything of the protocol (joins, slots, quantization,
//! retransmission all live in `switchml-core`), DHCP (the address is static), or ICMP
//! errors (smoltcp does not report them to a UDP socket, so an absent switch shows as the
//! worker's join timeout rather than `PortUnreachable`).
//!
//! A firmware's main loop:
//!
//! ```text
//! let mut node = Node::new(nic, clock, &net_config, storage, buffers);
//! let mut worker = Worker::<_, SLOTS, QUEUE>::new(config)?;
//! worker.submit(node.now(), tensor, Op::Sum)?;
//! loop {
//!     node.poll(&mut worker);
//!     while let Some(event) = worker.poll_event() { ... }
//! }
//! ```
//!
//! ## Features
//!
//! - `defmt`: log through `defmt`, and forward it to the core and smoltcp.
//! - `log`: log through the `log` facade, forwarded likewise. Not both.
#![cfg_attr(not(test), no_std)]
#![forbid(unsafe_code)]
#![warn(missing_docs)]

#[cfg(all(feature = "defmt", feature = "log"))]
compile_error!("the `defmt` and `log` features are mutually exclusive: pick one logger");

pub mod clock;
mod logging;
mod node;
pub mod time;

pub use clock::{Clock, DelayClock, TickClock, TickSource};
pub use node::{Buffers, NetConfig, Node, NodeStats, Storage};
