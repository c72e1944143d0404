//! # switchml-xdp
//!
//! The AF_XDP data path of switchml-rs's host adapters (issue 30): kernel bypass for the
//! switch daemon's shards, the worker's lanes and the p4app dialect switch's frames, on an
//! unmodified Linux kernel.
//!
//! - [`program`]: the XDP program, assembled in Rust: IPv4/UDP datagrams to a queue's port
//!   go to that queue's AF_XDP socket (`bpf_redirect_map` on an XSKMAP); everything else,
//!   ARP included, to the kernel (`XDP_PASS`), so the interface keeps its address;
//! - [`iface`]: loading it (`bpf(BPF_PROG_LOAD)`), its two maps, and attaching it in
//!   native mode through a BPF link that detaches when the process ends;
//! - [`xsk`]: one socket per queue with its own UMEM and fill, completion, RX and TX rings,
//!   bound zero-copy where the driver can and in copy mode otherwise, with need-wakeup;
//! - [`frame`]: Ethernet/IPv4/UDP headers read and written, checksums valid;
//! - [`FrameQueue`]: one queue's socket steered a range of ports, whole frames in and out,
//!   for a caller that parses its own (the p4app dialect switch);
//! - [`neighbour`]: the next hop's MAC, from the kernel's neighbour table and from frames;
//! - [`netns`]: namespaces joined by veths, for the tests and the benchmark;
//! - [`Io`]: the seam the daemon and the worker call — the UDP socket alone, or an
//!   [`XdpPath`] — a shard's or lane's AF_XDP socket beside its UDP socket, with
//!   the same three calls as the socket path (`recv` into a `RecvBatch`, `flush` a
//!   `SendBatch`, `wait`), falling back datagram by datagram to the socket where it must.
//!
//! ## Why direct syscalls
//!
//! `xsk-rs` binds `libxdp`/`libbpf` through `bindgen`: a C toolchain, `libclang` and the
//! `-dev` packages on every machine that builds, for what is a handful of `setsockopt`s and
//! `mmap`s. `aya` loads programs well but wants the program built by `bpf-linker` on a
//! nightly toolchain (or a C compiler for BPF). The program here is 42 instructions and
//! its whole life is three `bpf(2)` commands and a link, so this crate speaks to the kernel
//! through `libc` (already a dependency of the socket layer): it builds wherever the rest
//! of the workspace builds, and every `unsafe` is in view, each with the reason it is sound.
//! Build cost, measured on the busy 2-core development machine (debug, no incremental):
//! this crate 1.7 s and no crate added (libc and log are already the socket layer's);
//! `aya` 0.13's loader alone 38 s and 37 crates, before any toolchain for the program.
//! `xsk-rs` was not measured: its `libxdp-sys` needs clang and `libclang`, which this
//! machine does not have (installing them for a build is the cost).
//!
//! What this crate does **not** do: read or write a protocol message, or decide anything;
//! IPv6, VLAN tags, IP options or fragments (all passed to the kernel, so the UDP socket
//! beside gets them); several processes on one interface (one XDP program per interface:
//! the second is refused, and falls back to its sockets).

#![warn(missing_docs)]

mod bpf;
pub mod frame;
mod frames;
pub mod iface;
pub mod io;
pub mod neighbour;
pub mod netns;
mod path;
pub mod program;
mod ring;
pub mod xsk;

pub use frames::FrameQueue;
pub use iface::{Attached, Unavailable};
pub use io::Io;
pub use path::{XdpCounters, XdpPath};
pub use xsk::Mode;
