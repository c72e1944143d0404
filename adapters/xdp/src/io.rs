//! Which path a shard's or a lane's datagrams take: the one enum the switch daemon and the
//! worker call where they used to call the socket layer directly. The socket arm is the
//! very calls it replaces, so the socket path does what it did, at the cost of a match.

use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::os::fd::{AsRawFd, RawFd};
use std::sync::Arc;
use std::time::Duration;

use switchml_udp::batch::{Flushed, RecvBatch, SendBatch};
use switchml_udp::socket::{wait_readable, Ready, Wake};

use crate::iface::Attached;
use crate::path::{XdpCounters, XdpPath};

/// The UDP socket alone, or an AF_XDP path beside it.
pub enum Io {
    /// `recvmmsg`/`sendmmsg` with GSO/GRO ([`switchml_udp::batch`]).
    Socket,
    /// Frames through an AF_XDP socket, the UDP socket for what they cannot carry.
    Xdp(Box<XdpPath>),
}

impl Io {
    /// The AF_XDP path on queue `queue` of `iface` for `socket` (`None`: no XDP asked for,
    /// or the interface refused it), or the socket alone; logged as `who` (`shard 1`,
    /// `lane 0`): which path, and if the socket, why.
    pub fn open(iface: Option<&Arc<Attached>>, queue: u32, socket: &UdpSocket, who: &str) -> Io {
        let Some(iface) = iface else {
            return Io::Socket;
        };
        match XdpPath::open(iface, queue, socket) {
            Ok(path) => {
                log::info!(
                    "{who}: AF_XDP on {} queue {queue} ({:?} mode)",
                    iface.name(),
                    path.mode()
                );
                Io::Xdp(Box::new(path))
            }
            Err(e) => {
                log::warn!("{who}: AF_XDP: {e}; on its UDP socket instead");
                Io::Socket
            }
        }
    }

    /// Whether this is the AF_XDP path.
    pub fn is_xdp(&self) -> bool {
        matches!(self, Io::Xdp(_))
    }

    /// The UDP socket was connected to `to`: datagrams queued with no destination go there.
    pub fn peer_moved(&mut self, to: SocketAddr) {
        if let Io::Xdp(p) = self {
            p.peer_moved(to);
        }
    }

    /// What went through the AF_XDP socket (zero on the socket path).
    pub fn counters(&self) -> XdpCounters {
        match self {
            Io::Socket => XdpCounters::default(),
            Io::Xdp(p) => p.counters(),
        }
    }

    /// Receive a batch ([`RecvBatch::recv`] on the socket path).
    pub fn recv(&mut self, socket: RawFd, batch: &mut RecvBatch) -> io::Result<usize> {
        match self {
            Io::Socket => batch.recv(socket),
            Io::Xdp(p) => p.recv(socket, batch),
        }
    }

    /// Send what `batch` holds ([`SendBatch::flush`] on the socket path).
    pub fn flush(&mut self, socket: RawFd, batch: &mut SendBatch) -> io::Result<Flushed> {
        match self {
            Io::Socket => batch.flush(socket),
            Io::Xdp(p) => p.flush(socket, batch),
        }
    }

    /// Wait for something to read or `wake` ([`wait_readable`] on the socket path).
    pub fn wait(
        &mut self,
        socket: RawFd,
        wake: Option<&Wake>,
        timeout: Duration,
    ) -> io::Result<Ready> {
        match self {
            Io::Socket => wait_readable(socket, wake, timeout),
            Io::Xdp(p) => p.wait(socket, wake.map_or(-1, |w| w.as_raw_fd()), timeout),
        }
    }
}
