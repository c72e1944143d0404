//! The data plane: frames in, [`P4appSwitch`] in the middle, frames out, and a counter
//! for every frame it does not answer.
//!
//! [`Engine`] is the part without a socket (tests feed it bytes);
//! [`frames_io::run`](crate::frames_io::run) is the thread that feeds it from the sockets
//! (AF_PACKET, or AF_XDP beside it). The control plane reaches it only through
//! [`Command`]s, which the thread applies before each frame: a rank's registration is sent
//! before the gRPC reply that lets the client send, so it is in place before its frames.

use std::collections::HashMap;
use std::net::Ipv4Addr;

use switchml_core::p4app::{P4appSlot, P4appSwitch, P4appVerdict};

use crate::frame::{self, Frame, Peer, REPLY_HEADERS_LEN};
use crate::stats::{FrameCounters, Stats};

/// 32-bit words of rank bitmap: 64 ranks (the original has 32).
pub const WORDS: usize = 2;
/// Values a slot holds: 256, so that one switch serves 64 and 256 values per packet.
pub const VALUES: usize = 256;
/// The slot registers of this switch.
pub type Slot = P4appSlot<WORDS, VALUES>;

/// What the control plane tells the data plane.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Command {
    /// A new session of `workers` ranks (rank 0's `UdpSession`): clear every slot and
    /// forget every rank.
    Reset {
        /// The session's worker count.
        workers: u16,
    },
    /// Rank `rank` is `peer`.
    Register {
        /// The rank.
        rank: u16,
        /// Its addresses.
        peer: Peer,
    },
}

/// The data plane without its socket.
#[derive(Debug)]
pub struct Engine<'s> {
    switch: P4appSwitch<'s, WORDS, VALUES>,
    ranks: HashMap<Peer, u16>,
    peers: Vec<Option<Peer>>,
    counters: FrameCounters,
    mac: [u8; 6],
    ip: Ipv4Addr,
}

impl<'s> Engine<'s> {
    /// A data plane for the switch (`mac`, `ip`) over the lent slots, with no session.
    pub fn new(slots: &'s mut [Slot], mac: [u8; 6], ip: Ipv4Addr) -> Engine<'s> {
        Engine {
            switch: P4appSwitch::new(slots),
            ranks: HashMap::new(),
            peers: Vec::new(),
            counters: FrameCounters::default(),
            mac,
            ip,
        }
    }

    /// Apply a control-plane command.
    pub fn apply(&mut self, command: Command) {
        match command {
            Command::Reset { workers } => {
                // The control plane bounds `workers` by the capacity; a refusal leaves the
                // switch without a session, so every request is counted `unknown_rank`.
                let _ = self.switch.reset(workers);
                self.ranks.clear();
                self.peers = vec![None; usize::from(workers)];
            }
            Command::Register { rank, peer } => {
                let Some(entry) = self.peers.get_mut(usize::from(rank)) else {
                    return;
                };
                if let Some(old) = entry.replace(peer) {
                    self.ranks.remove(&old);
                }
                self.ranks.insert(peer, rank);
            }
        }
    }

    /// Return the counters.
    pub fn stats(&self) -> Stats {
        Stats {
            frames: self.counters,
            paths: Default::default(),
            switch: self.switch.counters(),
            workers: self.switch.workers(),
            registered: self.ranks.len() as u16,
            registered_ranks: self
                .peers
                .iter()
                .take(64)
                .enumerate()
                .filter(|(_, p)| p.is_some())
                .fold(0, |mask, (rank, _)| mask | 1 << rank),
        }
    }

    /// Take one received frame of `wire_len` bytes (more than `frame.len()` if it was cut)
    /// and hand each frame to send to `send`, using `out` (at least 1,100 bytes) to build
    /// them. Never panics.
    pub fn handle(
        &mut self,
        frame: &[u8],
        wire_len: usize,
        out: &mut [u8],
        send: &mut dyn FnMut(&[u8]) -> std::io::Result<()>,
    ) {
        self.counters.received += 1;
        if wire_len > frame.len() {
            self.counters.malformed += 1;
            return;
        }
        match frame::classify(frame, self.mac, self.ip) {
            Frame::Other => self.counters.other += 1,
            Frame::Malformed => self.counters.malformed += 1,
            Frame::WrongPort => self.counters.wrong_port += 1,
            Frame::ArpRequest { peer } => {
                if let Some(len) = frame::arp_reply(out, self.mac, self.ip, peer) {
                    self.counters.arp_replies += 1;
                    self.transmit(&out[..len], send);
                }
            }
            Frame::Request {
                peer,
                src_port,
                dst_port,
                payload,
            } => {
                let Some(&rank) = self.ranks.get(&peer) else {
                    self.counters.unknown_sender += 1;
                    return;
                };
                let Some(body) = out.get_mut(REPLY_HEADERS_LEN..) else {
                    return;
                };
                // The reply goes from the port the request went to, to the port of the
                // request that completed the set (all workers share the client's port).
                let ports = (dst_port, src_port);
                match self.switch.process(rank, payload, body) {
                    P4appVerdict::Multicast { len } => {
                        for r in 0..self.peers.len() {
                            self.reply_to(r, ports, len, out, send);
                        }
                    }
                    P4appVerdict::Unicast { rank, len } => {
                        self.reply_to(usize::from(rank), ports, len, out, send)
                    }
                    P4appVerdict::Consumed | P4appVerdict::Drop(_) => {}
                }
            }
        }
    }

    fn reply_to(
        &mut self,
        rank: usize,
        (src_port, dst_port): (u16, u16),
        len: usize,
        out: &mut [u8],
        send: &mut dyn FnMut(&[u8]) -> std::io::Result<()>,
    ) {
        let Some(Some(peer)) = self.peers.get(rank).copied() else {
            self.counters.unregistered += 1;
            return;
        };
        let me = (self.mac, self.ip, src_port);
        if let Some(n) = frame::write_reply_headers(out, me, (peer, dst_port), len) {
            self.transmit(&out[..n], send);
        }
    }

    fn transmit(&mut self, frame: &[u8], send: &mut dyn FnMut(&[u8]) -> std::io::Result<()>) {
        match send(frame) {
            Ok(()) => self.counters.sent += 1,
            Err(_) => self.counters.send_errors += 1,
        }
    }
}

#[cfg(test)]
#[path = "dataplane_tests.rs"]
mod tests;
