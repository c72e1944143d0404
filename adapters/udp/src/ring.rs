//! The host ring that the communicator falls back to: one TCP connection to each ring
//! neighbour, set up through a rendezvous at rank 0, and framed messages over them.
//!
//! **Rendezvous.** Rank 0 listens at the fallback address ([`CommConfig::fallback`]); every
//! other rank connects to it (retrying until the fallback timeout), says its rank, job,
//! world size and the port of its own ring listener, and gets back every rank's ring
//! address (each rank's address as rank 0 saw it). Then rank `r` connects to rank
//! `r + 1 mod P` and accepts rank `r − 1 mod P`. The rendezvous runs when the communicator
//! connects, before the switch is joined, so a fallback never waits for a peer to appear.
//!
//! **Frames.** A 24-byte header (magic `SMLR`, kind, sender rank, tensor number, payload
//! length, all little-endian) and the payload. Every read and write has the fallback
//! timeout; a timeout or a closed connection is an error that names the neighbour's rank.
//! The reductions over these connections are in [`crate::ring_reduce`].
//!
//! [`CommConfig::fallback`]: crate::CommConfig::fallback

use std::io::{ErrorKind, Read, Write};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, TcpListener, TcpStream};
use std::time::{Duration, Instant};

use crate::config::CommConfig;
use crate::error::Error;
use crate::rendezvous::{self, accept_until, connect_until};

/// The first four bytes of every frame: "SMLR".
const MAGIC: u32 = 0x524C_4D53;
/// The frame header's length.
pub(crate) const HEADER_LEN: usize = 24;

/// What a frame carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum Kind {
    /// A rank introduces itself: job, world, ring port.
    Hello = 1,
    /// Rank 0's table of ring addresses.
    Table = 2,
    /// A rank's record of its tensors at the switch-to-ring transition.
    Status = 3,
    /// Partial sums of one segment (reduce-scatter).
    Partial = 4,
    /// A reduced segment (all-gather).
    Reduced = 5,
    /// A whole tensor passed on from a rank that holds it.
    Whole = 6,
}

/// One rank's two ring connections.
pub(crate) struct Ring {
    pub(crate) rank: u16,
    pub(crate) world: u16,
    pub(crate) timeout: Duration,
    /// To rank `rank + 1 mod world` (None when alone).
    right: Option<TcpStream>,
    /// From rank `rank − 1 mod world` (None when alone).
    left: Option<TcpStream>,
}

impl Ring {
    /// Meet the other ranks at rank 0's fallback address and connect the ring.
    pub(crate) fn connect(config: &CommConfig, at: SocketAddr) -> Result<Ring, Error> {
        let (rank, world, timeout) = (config.rank, config.world, config.fallback_timeout);
        let mut ring = Ring {
            rank,
            world,
            timeout,
            right: None,
            left: None,
        };
        if world == 1 {
            return Ok(ring);
        }
        let deadline = Instant::now() + timeout;
        let listen_ip = if rank == 0 { at.ip() } else { unspecified(at) };
        let listener = TcpListener::bind((listen_ip, 0))
            .map_err(|e| Error::io("fallback ring: bind this rank's ring listener", &e))?;
        let port = listener.local_addr().map_or(0, |a| a.port());
        let table = if rank == 0 {
            rendezvous::host(config, at, port, deadline)?
        } else {
            rendezvous::guest(config, at, port, deadline)?
        };
        let right = (rank + 1) % world;
        let left = (rank + world - 1) % world;
        let to = table[usize::from(right)];
        let mut stream = connect_until(to, deadline).map_err(|e| match e {
            Some(e) => Error::io(
                format!("fallback ring: connect to rank {right} at {to}"),
                &e,
            ),
            None => ring.timed_out(right, "to accept this rank's ring connection"),
        })?;
        ring.prepare(&stream, right)?;
        write_frame(&mut stream, Kind::Hello, rank, 0, &hello(config, port))
            .map_err(|e| ring.failed(right, "its ring connection", &e))?;
        ring.right = Some(stream);
        let mut from = accept_until(&listener, deadline)
            .map_err(|_| ring.timed_out(left, "to connect to this rank's ring listener"))?;
        ring.prepare(&from, left)?;
        let (who, _) = read_frame(&mut from, Kind::Hello, u64::MAX, 6)
            .map_err(|e| ring.failed(left, "its ring connection", &e))?;
        if who != left {
            return Err(Error::Config(format!(
                "fallback ring: rank {who} connected where rank {left} was expected"
            )));
        }
        ring.left = Some(from);
        Ok(ring)
    }

    fn prepare(&self, s: &TcpStream, peer: u16) -> Result<(), Error> {
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
            return Err(Error::Config("fallback ring: no neighbours".into()));
        };
        // Both at once: a rank that only sent would block once the neighbour's buffer is
        // full, while the neighbour blocks sending to it.
        let (sent, got) = std::thread::scope(|s| {
            let sender = s.spawn(|| write_frame(right, kind, rank, tensor, payload));
            let got = read_frame(left, kind, tensor, max);
            (sender.join(), got)
        });
        let got = got.map_err(|e| self.failed(left_rank, "its share", &e))?;
        match sent {
            Ok(Ok(())) => Ok(got.1),
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
        write_frame(right, kind, rank, tensor, payload)
            .map_err(|e| self.failed(right_rank, "this rank's share", &e))
    }

    /// Receive a frame of `kind` for `tensor` of at most `max` bytes from the left.
    pub(crate) fn recv(&mut self, kind: Kind, tensor: u64, max: usize) -> Result<Vec<u8>, Error> {
        let left_rank = self.left_rank();
        let left = self.left.as_mut().ok_or_else(no_neighbour)?;
        read_frame(left, kind, tensor, max)
            .map(|(_, p)| p)
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
        }
    }
}

fn no_neighbour() -> Error {
    Error::Config("fallback ring: no neighbours".into())
}

/// Why a frame could not be read or written.
#[derive(Debug)]
pub(crate) enum FrameError {
    Io(std::io::Error),
    Bad(String),
}

impl From<std::io::Error> for FrameError {
    fn from(e: std::io::Error) -> Self {
        FrameError::Io(e)
    }
}

pub(crate) fn write_frame(
    s: &mut TcpStream,
    kind: Kind,
    rank: u16,
    tensor: u64,
    payload: &[u8],
) -> Result<(), FrameError> {
    let mut h = [0u8; HEADER_LEN];
    h[0..4].copy_from_slice(&MAGIC.to_le_bytes());
    h[4] = kind as u8;
    h[6..8].copy_from_slice(&rank.to_le_bytes());
    h[8..16].copy_from_slice(&tensor.to_le_bytes());
    h[16..24].copy_from_slice(&(payload.len() as u64).to_le_bytes());
    s.write_all(&h)?;
    s.write_all(payload)?;
    Ok(())
}

/// Read one frame; it must be of `kind`, for `tensor` (any with `u64::MAX`), and at most
/// `max` bytes long. Return the sender's rank and the payload.
pub(crate) fn read_frame(
    s: &mut TcpStream,
    kind: Kind,
    tensor: u64,
    max: usize,
) -> Result<(u16, Vec<u8>), FrameError> {
    let mut h = [0u8; HEADER_LEN];
    s.read_exact(&mut h)?;
    let word = |r: std::ops::Range<usize>| {
        let mut b = [0u8; 8];
        b[..r.len()].copy_from_slice(&h[r]);
        u64::from_le_bytes(b)
    };
    if word(0..4) != u64::from(MAGIC) {
        return Err(FrameError::Bad("a frame without the SMLR magic".into()));
    }
    let (got_kind, got_tensor, len) = (h[4], word(8..16), word(16..24));
    if got_kind != kind as u8 || (tensor != u64::MAX && got_tensor != tensor) {
        return Err(FrameError::Bad(format!(
            "message kind {got_kind} for tensor {got_tensor} where this rank expected {kind:?} \
             for tensor {tensor}: the ranks did not submit the same tensors in the same order"
        )));
    }
    if len > max as u64 {
        return Err(FrameError::Bad(format!(
            "{len} bytes for tensor {got_tensor} where at most {max} fit: the ranks' tensors differ"
        )));
    }
    let mut payload = vec![0u8; len as usize];
    s.read_exact(&mut payload)?;
    Ok((word(6..8) as u16, payload))
}

/// A Hello's payload: job, world, ring port.
pub(crate) fn hello(config: &CommConfig, port: u16) -> Vec<u8> {
    [config.job, config.world, port]
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect()
}

fn unspecified(like: SocketAddr) -> IpAddr {
    match like {
        SocketAddr::V4(_) => Ipv4Addr::UNSPECIFIED.into(),
        SocketAddr::V6(_) => Ipv6Addr::UNSPECIFIED.into(),
    }
}
