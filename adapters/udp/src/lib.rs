//! # switchml-udp
//!
//! The socket layer of switchml-rs's host adapters: batched datagram I/O and the few other
//! things that need the OS, and so every `unsafe` block of the host adapters, each with the
//! reason it is sound. The worker library (`switchml-worker`) and the switch daemon
//! (`switchml-switchd`) build on it; like `quinn-udp`, it knows nothing of the protocol.
//!
//! - [`batch`]: `recvmmsg`/`sendmmsg` batches ([`batch::RecvBatch`], [`batch::SendBatch`]),
//!   with UDP GSO runs and GRO buffers where the kernel has them ([`Offload`]);
//! - [`sockaddr`]: socket addresses to and from the kernel's form;
//! - [`socket`]: socket buffer sizing, `poll` with a wake-up ([`socket::Wake`]);
//! - [`backlog`]: the bytes a socket still has queued toward the network (`SIOCOUTQ`);
//! - [`source`]: source addresses no answer can go to; [`mtu`]: the path MTU to a peer;
//! - [`loss`]: seeded loss injection, for tests and benchmarks;
//! - [`clock`]: the one place where OS time becomes core time; [`cpu`]: a thread's CPU time;
//! - [`fresh`]: fresh keys, nonces and epochs from the host;
//! - [`log_limit`]: rate-limited log lines for the packet path;
//! - [`OsError`]: an OS error that the adapters' error enums hold as their `source()`.
//!
//! What this crate does **not** do: read or write a protocol message, or decide anything.

#![warn(missing_docs)]

pub mod backlog;
pub mod batch;
pub mod clock;
pub mod cpu;
pub mod fresh;
pub mod log_limit;
pub mod loss;
pub mod mtu;
mod offload;
mod os_error;
pub mod sockaddr;
pub mod socket;
pub mod source;

pub use offload::{Offload, NO_GSO_ENV};
pub use os_error::OsError;
