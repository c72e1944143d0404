//! A switch for the original SwitchML's client (p4lang/p4app-switchML) without a Tofino.
//!
//! The original client sends raw frames whose IPv4 checksum is 0 and whose UDP checksum
//! covers only the pseudo-header (its NIC offload is absent on a software NIC), so a kernel
//! UDP socket would drop them all. This crate reads and writes whole Ethernet frames on one
//! interface (an AF_PACKET socket, or AF_XDP sockets beside it) and runs the core's
//! [`P4appSwitch`](switchml_core::p4app::P4appSwitch) on them (`docs/protocol.md` §8,
//! `docs/p4app.md`). The layers, bottom up:
//!
//! - [`raw`]: an AF_PACKET socket through `libc` (every `unsafe` of the crate, justified);
//! - [`frame`]: Ethernet/IPv4/UDP and ARP through smoltcp's `wire` views; checksums of
//!   requests ignored, replies with a valid IPv4 checksum and UDP checksum 0;
//! - [`dataplane`]: (MAC, IP) → rank, the dialect switch, one reply frame per worker for a
//!   multicast, a counter for every frame not answered; one thread, no async runtime;
//! - [`frames_io`]: the data-plane thread (`run`), on that socket alone, or (`--io xdp`)
//!   AF_XDP sockets beside it for the dialect's UDP ports, one per receive queue, through
//!   switchml-xdp's safe API;
//! - [`control`] and [`client`]: the original controller's gRPC services
//!   (`Sync.Broadcast`, `Sync.Barrier`, `Session.UdpSession`, port 50099) and a client;
//! - [`RunningP4appSwitch`]: the two threads, started and stopped together;
//! - [`worker`]: one of our ranks over a kernel UDP socket, for this switch or a Tofino
//!   that runs the original program.
//!
//! **Why tonic.** The client speaks gRPC over HTTP/2, so the choice is between tonic (the
//! maintained gRPC stack of the tokio project, on hyper and h2; prost for the messages) and
//! grpcio (C++ core through bindings, a cmake build) or a hand-rolled HTTP/2 server; only
//! tonic is pure Rust, maintained and builds without a C++ toolchain. It brings tokio, but
//! only on the control-plane thread: the data plane never waits on it. Without protoc, the
//! messages are `#[derive(prost::Message)]` structs ([`proto`]) and the services are
//! described in `build.rs` with `tonic_build::manual`. Measured on a clean release build
//! (2 shared cores): 93 crates in 79 s against 32 crates in 14 s for the crate's other
//! dependencies alone, so gRPC costs 61 crates and about a minute (`docs/p4app.md`).
//!
//! What it does not do: RDMA (`Session.RdmaSession` is answered "unimplemented"), more than
//! one session at a time (the header cannot tell two apart), one interface per worker.

pub mod client;
pub mod control;
pub mod dataplane;
pub mod frame;
pub mod frames_io;
pub mod proto;
pub mod raw;
pub mod stats;
pub mod worker;

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::thread::JoinHandle;

pub use client::ControlClient;
pub use frame::Peer;
pub use stats::{Counter, CounterKind, FrameCounters, PathCounters, Stats};
pub use worker::{DialectError, DialectSetup, UdpDialectWorker};

/// The port of the original controller.
pub const CONTROL_PORT: u16 = 50099;

/// How to run the switch.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct P4appSwitchConfig {
    /// The interface whose frames the switch takes (it uses the interface's MAC).
    pub iface: String,
    /// The switch's IPv4 address: it answers ARP for it and takes UDP to it. It must not be
    /// an address of the host's own stack.
    pub ip: Ipv4Addr,
    /// Where the gRPC control plane listens (port 0: any).
    pub control: SocketAddr,
    /// Slots (each of 256 values, two sets): 8,192 as in the original; at most 16,384.
    pub slots: usize,
    /// Take the dialect's UDP frames through AF_XDP sockets, one per receive queue of
    /// `iface`, beside the AF_PACKET socket (`--io xdp`; root, or CAP_NET_ADMIN, CAP_BPF
    /// and CAP_NET_RAW); where the interface refuses XDP, the AF_PACKET socket alone, with
    /// a warning that says why ([`frames_io`]).
    pub xdp: bool,
}

impl P4appSwitchConfig {
    /// The defaults for `iface` and `ip`: control on 0.0.0.0:50099, 8,192 slots.
    pub fn new(iface: &str, ip: Ipv4Addr) -> P4appSwitchConfig {
        P4appSwitchConfig {
            iface: iface.into(),
            ip,
            control: SocketAddr::from(([0, 0, 0, 0], CONTROL_PORT)),
            slots: 8192,
            xdp: false,
        }
    }
}

/// The switch at work: a data-plane thread and a control-plane thread.
#[derive(Debug)]
pub struct RunningP4appSwitch {
    stop: Arc<AtomicBool>,
    stats: Arc<Mutex<Stats>>,
    control: SocketAddr,
    mac: [u8; 6],
    xdp_queues: usize,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
    threads: Vec<JoinHandle<()>>,
}

impl RunningP4appSwitch {
    /// Open the interface and the control port, and start both threads (in the calling
    /// thread's network namespace).
    pub fn start(config: &P4appSwitchConfig) -> std::io::Result<RunningP4appSwitch> {
        let invalid =
            |m: &str| std::io::Error::new(std::io::ErrorKind::InvalidInput, m.to_string());
        if config.slots == 0
            || config.slots > usize::from(switchml_core::p4app::packet::MAX_SLOT) + 1
        {
            return Err(invalid("slots must be in 1..=16384"));
        }
        let socket = raw::RawSocket::open(&config.iface, frames_io::WAIT)?;
        let frames = match config.xdp {
            true => frames_io::Frames::xdp(socket, &config.iface),
            false => frames_io::Frames::packet(socket),
        };
        let (mac, xdp_queues) = (frames.mac(), frames.xdp_queues());
        let listener = std::net::TcpListener::bind(config.control)?;
        let control = listener.local_addr()?;
        let (tx, rx) = mpsc::channel();
        let stop = Arc::new(AtomicBool::new(false));
        let stats = Arc::new(Mutex::new(Stats::default()));
        let controller = Arc::new(control::Controller::new(tx, mac, config.ip));
        let (control_thread, shutdown) = control::spawn(listener, controller)?;
        let (ip, slots) = (config.ip, config.slots);
        let (s, st) = (stop.clone(), stats.clone());
        let data_thread = std::thread::Builder::new()
            .name("p4app-data".into())
            .spawn(move || frames_io::run(frames, ip, slots, rx, st, s))?;
        Ok(RunningP4appSwitch {
            stop,
            stats,
            control,
            mac,
            xdp_queues,
            shutdown: Some(shutdown),
            threads: vec![control_thread, data_thread],
        })
    }

    /// Return where the control plane listens.
    pub fn control_addr(&self) -> SocketAddr {
        self.control
    }

    /// Return the switch's MAC (its interface's).
    pub fn mac(&self) -> [u8; 6] {
        self.mac
    }

    /// Return how many AF_XDP sockets the data plane reads (0: the AF_PACKET socket alone).
    pub fn xdp_queues(&self) -> usize {
        self.xdp_queues
    }

    /// Return the counters (as of the last frame).
    pub fn stats(&self) -> Stats {
        self.stats.lock().map(|s| *s).unwrap_or_default()
    }

    /// Stop both threads and return the final counters.
    pub fn stop(mut self) -> Stats {
        self.halt();
        self.stats()
    }

    fn halt(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(s) = self.shutdown.take() {
            let _ = s.send(());
        }
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

impl Drop for RunningP4appSwitch {
    fn drop(&mut self) {
        self.halt();
    }
}
