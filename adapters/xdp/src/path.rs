//! One shard's or lane's AF_XDP path beside its UDP socket: the seam the daemon and the
//! worker call instead of `RecvBatch::recv`, `SendBatch::flush` and `wait_readable` when
//! `--io xdp` is on.
//!
//! The socket stays bound and keeps working: whatever the XDP program passes to the kernel
//! for the socket's port (a datagram that arrived on another queue, an IP fragment) is read
//! from it, and a datagram for a peer whose MAC we do not know yet goes out through it (the
//! kernel resolves the peer with ARP). So the path is never less correct than the socket
//! alone; it is faster wherever the NIC's steering and the neighbour table let it be.

use std::io;
use std::net::{SocketAddr, SocketAddrV4, UdpSocket};
use std::os::fd::RawFd;
use std::sync::Arc;
use std::time::Duration;

use switchml_udp::batch::{Flushed, RecvBatch, SendBatch};
use switchml_udp::socket::{wait_any, Ready};

use crate::frame::{emit, parse, Route, HEADERS};
use crate::frames::FrameQueue;
use crate::iface::{unavailable, Attached, Unavailable};
use crate::neighbour::Neighbours;
use crate::xsk::Mode;

/// Receives from the AF_XDP socket between two reads of the UDP socket while frames keep
/// coming (when the AF_XDP socket is idle, `wait` says whether the UDP socket has any).
const SOCKET_EVERY: u32 = 16;

/// An AF_XDP socket on one queue, steered the UDP socket's port, beside that socket.
pub struct XdpPath {
    /// The queue's AF_XDP socket, steered the UDP socket's port (unsteered when it goes).
    frames: FrameQueue,
    /// Our address: the socket's (a connected socket's has the source IP the kernel picked
    /// for the peer), its IP learned from the first unicast frame if the socket is bound to
    /// the unspecified address (a daemon on 0.0.0.0 answers from the address it was first
    /// sent to: on an interface with several, bind the daemon to the one workers use).
    local: SocketAddrV4,
    /// Where datagrams queued with no destination go: the connected socket's peer.
    peer: Option<SocketAddrV4>,
    neighbours: Neighbours,
    turn: u32,
    socket_ready: bool,
    counters: XdpCounters,
}

/// What went through the AF_XDP socket rather than the UDP socket.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct XdpCounters {
    /// Datagrams received as frames.
    pub received: u64,
    /// Datagrams sent as frames.
    pub sent: u64,
}

impl XdpPath {
    /// Open an AF_XDP socket on `queue` of `iface` for UDP `socket`'s port (IPv4 only).
    pub fn open(
        iface: &Arc<Attached>,
        queue: u32,
        socket: &UdpSocket,
    ) -> Result<XdpPath, Unavailable> {
        let name = &iface.name;
        let local = match socket
            .local_addr()
            .map_err(unavailable("the socket's address"))?
        {
            SocketAddr::V4(a) => a,
            SocketAddr::V6(_) => {
                return Err(Unavailable {
                    step: "the socket's address".into(),
                    error: io::Error::new(io::ErrorKind::Unsupported, "IPv6 (AF_XDP path is IPv4)"),
                })
            }
        };
        let peer = match socket.peer_addr() {
            Ok(SocketAddr::V4(p)) => Some(p),
            _ => None,
        };
        let frames = FrameQueue::open(iface, queue, local.port()..=local.port())?;
        Ok(XdpPath {
            frames,
            local,
            peer,
            neighbours: Neighbours::new(name),
            turn: 0,
            socket_ready: false,
            counters: XdpCounters::default(),
        })
    }

    /// The connected socket now sends to `to` (a lane moved to another shard): so do the
    /// frames sent with no destination.
    pub fn peer_moved(&mut self, to: SocketAddr) {
        self.peer = match to {
            SocketAddr::V4(p) => Some(p),
            SocketAddr::V6(_) => None,
        };
    }

    /// What went through the AF_XDP socket so far.
    pub fn counters(&self) -> XdpCounters {
        self.counters
    }

    /// Whether the socket is zero-copy or copy mode.
    pub fn mode(&self) -> Mode {
        self.frames.mode()
    }

    /// Receive a batch: frames from the AF_XDP socket, and what the UDP socket `socket`
    /// holds every so often or when [`XdpPath::wait`] saw it readable. As
    /// [`RecvBatch::recv`], but the batch may hold both.
    pub fn recv(&mut self, socket: RawFd, batch: &mut RecvBatch) -> io::Result<usize> {
        self.turn += 1;
        if self.socket_ready || self.turn >= SOCKET_EVERY {
            self.turn = 0;
            self.socket_ready = false;
            batch.recv(socket)?;
        } else {
            batch.clear_received();
        }
        let XdpPath {
            frames,
            local,
            neighbours,
            counters,
            ..
        } = self;
        frames.receive(batch.room_left(), |frame| {
            let Some(f) = parse(frame) else { return };
            if f.dst.port() != local.port() {
                return;
            }
            let unicast = !f.dst.ip().is_broadcast() && !f.dst.ip().is_multicast();
            if local.ip().is_unspecified() && unicast {
                local.set_ip(*f.dst.ip());
            }
            neighbours.learn(*f.src.ip(), f.src_mac);
            if let Some(payload) = frame.get(HEADERS..HEADERS + f.len) {
                counters.received += u64::from(batch.push_copy(payload, SocketAddr::V4(f.src)));
            }
        });
        Ok(batch.len())
    }

    /// Send what `batch` holds: as frames where we know the next hop, through `socket`
    /// otherwise. As [`SendBatch::flush`].
    pub fn flush(&mut self, socket: RawFd, batch: &mut SendBatch) -> io::Result<Flushed> {
        let XdpPath {
            frames,
            local,
            peer,
            neighbours,
            ..
        } = self;
        let mut sent = 0;
        if !local.ip().is_unspecified() {
            batch.take_queued(|bytes, to| {
                let dst = match to {
                    Some(SocketAddr::V4(a)) => *a,
                    Some(SocketAddr::V6(_)) => return false,
                    None => match peer {
                        Some(p) => *p,
                        None => return false,
                    },
                };
                let Some(dst_mac) = neighbours.lookup(*dst.ip()) else {
                    return false;
                };
                let route = Route {
                    src_mac: frames.iface.mac,
                    dst_mac,
                    src: *local,
                    dst,
                };
                let pushed = frames.xsk.push(|buf| {
                    let Some(payload) = buf.get_mut(HEADERS..HEADERS + bytes.len()) else {
                        return 0;
                    };
                    payload.copy_from_slice(bytes);
                    emit(buf, &route, bytes.len()).unwrap_or(0)
                });
                sent += usize::from(pushed);
                pushed
            });
        }
        let mut done = Flushed::default();
        if sent > 0 {
            if let Err(e) = self.frames.kick_tx() {
                log::debug!(
                    "AF_XDP send on {} queue {}: {e}",
                    self.frames.iface.name,
                    self.frames.queue()
                );
            }
        }
        if !batch.is_empty() {
            done = batch.flush(socket)?;
        }
        done.sent += sent;
        self.counters.sent += sent as u64;
        Ok(done)
    }

    /// Wait up to `timeout` for a frame, a datagram on `socket` or the eventfd `wake` (-1:
    /// none).
    pub fn wait(&mut self, socket: RawFd, wake: RawFd, timeout: Duration) -> io::Result<Ready> {
        let [socket, frames, woken] = wait_any([socket, self.frames.fd(), wake], timeout)?;
        self.socket_ready |= socket;
        Ok(Ready {
            socket: socket || frames,
            woken,
        })
    }
}
