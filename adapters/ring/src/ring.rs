//! The host ring that the communicator falls back to: one TCP connection to each ring
//! neighbour, set up through a rendezvous at rank 0, and framed messages over them.
//!
//! **Rendezvous.** Rank 0 listens at the fallback address (the worker's `fallback` setting); every
//! other rank connects to it (retrying until the fallback timeout), proves the job key,
//! says where its own ring listener is, and gets back every rank's ring address (each
//! rank's address as rank 0 saw it). Then rank `r` connects to rank `r + 1 mod P` while it
//! accepts rank `r − 1 mod P` (both at once: each connection's handshake needs the other
//! side to answer). The rendezvous runs when the communicator connects, before the switch
//! is joined, so a fallback never waits for a peer to appear.
//!
//! **Authenticated.** Every connection, the rendezvous's and the ring's, opens with a
//! handshake that proves the job key both ways, and every frame carries a tag
//! ([`crate::link`]); the connecting side retries a failed handshake until the
//! fallback timeout ([`crate::dial`]), and the accepting side takes connections
//! through a gate that no silent or hostile connection can hold up
//! ([`crate::gate`]).
//!
//! **Frames.** A 24-byte header (magic `SMLR`, kind, sender rank, tensor number, payload
//! length, all little-endian; `switchml_core::wire::ring_frame`), a 16-byte tag and the
//! payload. Every read and write has the fallback timeout; a timeout or a closed
//! connection is an error that names the neighbour's rank. The reductions over these connections are in [`crate::ring_reduce`].

use std::io::ErrorKind;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, TcpListener};
use std::time::{Duration, Instant};

use crate::config::RingConfig;
use crate::dial::dial;
use crate::error::Error;
use crate::gate::Gate;
pub(crate) use crate::link::Kind;
use crate::link::{FrameError, Link, Role};
use crate::rendezvous;

/// One rank's two ring connections.
pub struct Ring {
    /// This rank.
    pub rank: u16,
    /// The number of ranks.
    pub world: u16,
    /// How long any step waits for a neighbour.
    pub timeout: Duration,
    /// To rank `rank + 1 mod world` (None when alone).
    right: Option<Link>,
    /// From rank `rank − 1 mod world` (None when alone).
    left: Option<Link>,
    /// Connections to this rank's rendezvous and ring listener closed for failing the
    /// handshake.
    pub refused: u64,
}

impl Ring {
    /// Meet the other ranks at rank 0's fallback address and connect the ring.
    pub fn connect(config: &RingConfig, at: SocketAddr) -> Result<Ring, Error> {
        let (rank, world, timeout) = (config.rank, config.world, config.timeout);
        let mut ring = Ring {
            rank,
            world,
            timeout,
            right: None,
            left: None,
            refused: 0,
        };
        if world == 1 {
            return Ok(ring);
        }
        let deadline = Instant::now() + timeout;
        let listen_ip = if rank == 0 { at.ip() } else { unspecified(at) };
        let listener = TcpListener::bind((listen_ip, 0))
            .map_err(|e| Error::io("fallback ring: bind this rank's ring listener", &e))?;
        let port = listener.local_addr().map_or(0, |a| a.port());
        let mut gate = Gate::default();
        let table = if rank == 0 {
            rendezvous::host(config, at, port, deadline, &mut gate)?
        } else {
            rendezvous::guest(config, at, port, deadline)?
        };
        let (right, left) = (ring.right_rank(), ring.left_rank());
        let to = table[usize::from(right)];
        let (dialed, gathered) = std::thread::scope(|s| {
            let dialer = s.spawn(|| dial(config, Role::Ring, right, to, port, deadline));
            let gathered = gate.gather(&listener, config, Role::Ring, &[left], deadline);
            (dialer.join(), gathered)
        });
        ring.refused = gate.refused;
        let link = match dialed {
            Ok(Ok(link)) => link,
            Ok(Err(e)) => {
                let why = e
                    .last
                    .map_or(String::new(), |w| format!(" (the last attempt: {w})"));
                return Err(ring.timed_out(
                    right,
                    &format!("to accept this rank's ring connection at {to}{why}"),
                ));
            }
            Err(_) => {
                return Err(Error::Config(
                    "fallback ring: the connecting thread panicked".into(),
                ))
            }
        };
        ring.prepare(&link, right)?;
        ring.right = Some(link);
        let Some(from) = gathered.ok().and_then(|mut a| a.pop()) else {
            let why = gate.last_refusal.as_ref().map_or(String::new(), |w| {
                format!(
                    " ({} connection(s) failed the handshake, the last {w})",
                    gate.refused
                )
            });
            return Err(ring.timed_out(
                left,
                &format!("to connect to this rank's ring listener{why}"),
            ));
        };
        ring.prepare(&from.link, left)?;
        ring.left = Some(from.link);
        Ok(ring)
    }

    fn prepare(&self, link: &Link, peer: u16) -> Result<(), Error> {
        let s = link.stream();
        let set = s
            .set_nodelay(true)
            .and_then(|()| s.set_read_timeout(Some(self.timeout)))
            .and_then(|()| s.set_write_timeout(Some(self.timeout)));
        set.map_err(|e| {
            Error::io(
                format!("fallback ring: set up the socket to rank {peer}"),
                &e,
            )
        })
    }

    /// Return the rank this rank sends to.
    pub(crate) fn right_rank(&self) -> u16 {
        (self.rank + 1) % self.world
    }

    /// Return the rank this rank receives from.
    pub(crate) fn left_rank(&self) -> u16 {
        (self.rank + self.world - 1) % self.world
    }

    /// Send `payload` to the right while receiving a frame of `kind` for `tensor` of at
    /// most `max` bytes from the left; return the left's payload.
    pub(crate) fn exchange(
        &mut self,
        kind: Kind,
        tensor: u64,
        payload: &[u8],
        max: usize,
    ) -> Result<Vec<u8>, Error> {
        let (rank, right_rank, left_rank) = (self.rank, self.right_rank(), self.left_rank());
        let (Some(right), Some(left)) = (self.right.as_mut(), self.left.as_mut()) else {
            return Err(no_neighbour());
        };
        // Both at once: a rank that only sent would block once the neighbour's buffer is
        // full, while the neighbour blocks sending to it.
        let (sent, got) = std::thread::scope(|s| {
            let sender = s.spawn(|| right.send(kind, rank, tensor, payload));
            let got = left.recv(kind, tensor, max);
            (sender.join(), got)
        });
        let got = got.map_err(|e| self.failed(left_rank, "its share", &e))?;
        match sent {
            Ok(Ok(())) => Ok(got),
            Ok(Err(e)) => Err(self.failed(right_rank, "this rank's share", &e)),
            Err(_) => Err(Error::Config(
                "fallback ring: the sending thread panicked".into(),
            )),
        }
    }

    /// Send `payload` to the right.
    pub(crate) fn send(&mut self, kind: Kind, tensor: u64, payload: &[u8]) -> Result<(), Error> {
        let (rank, right_rank) = (self.rank, self.right_rank());
        let right = self.right.as_mut().ok_or_else(no_neighbour)?;
        right
            .send(kind, rank, tensor, payload)
            .map_err(|e| self.failed(right_rank, "this rank's share", &e))
    }

    /// Receive a frame of `kind` for `tensor` of at most `max` bytes from the left.
    pub(crate) fn recv(&mut self, kind: Kind, tensor: u64, max: usize) -> Result<Vec<u8>, Error> {
        let left_rank = self.left_rank();
        let left = self.left.as_mut().ok_or_else(no_neighbour)?;
        left.recv(kind, tensor, max)
            .map_err(|e| self.failed(left_rank, "its share", &e))
    }

    fn timed_out(&self, peer: u16, what: &str) -> Error {
        Error::Timeout {
            what: format!("rank {peer} {what} (fallback ring, rank {})", self.rank),
            after: self.timeout,
        }
    }

    /// The error for a failed read or write with rank `peer`, naming it.
    fn failed(&self, peer: u16, what: &str, e: &FrameError) -> Error {
        match e {
            FrameError::Io(e)
                if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) =>
            {
                self.timed_out(peer, &format!("to pass on {what}"))
            }
            FrameError::Io(e) => Error::io(
                format!(
                    "fallback ring: rank {peer} is gone (its connection to rank {} broke)",
                    self.rank
                ),
                e,
            ),
            FrameError::Bad(m) => Error::Config(format!("fallback ring: rank {peer} sent {m}")),
            FrameError::Forged(m) => Error::Config(format!(
                "fallback ring: the connection with rank {peer} carried {m}"
            )),
        }
    }
}

fn no_neighbour() -> Error {
    Error::Config("fallback ring: no neighbours".into())
}

fn unspecified(like: SocketAddr) -> IpAddr {
    match like {
        SocketAddr::V4(_) => Ipv4Addr::UNSPECIFIED.into(),
        SocketAddr::V6(_) => Ipv6Addr::UNSPECIFIED.into(),
    }
}
