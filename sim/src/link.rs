//! A one-way link: a transmitter with a FIFO queue (the node's side, in ns-3's terms) feeding
//! a channel with a rate, a propagation delay and random loss.
//!
//! A packet handed to [`Link::transmit`] at time `t` waits behind the bytes already queued,
//! is serialised at the link's rate, and arrives one propagation delay after its last bit
//! left. Because the queue is FIFO and nothing overtakes, the arrival time is known at
//! once: the link keeps only when its transmitter will be free and the departures still
//! ahead, and no event is needed when a packet starts or ends serialisation. Busy time is
//! kept in picoseconds, so the per-packet rounding to nanoseconds never accumulates (at
//! 100 Gb/s a byte takes exactly 80 ps).
//!
//! A packet that finds the queue full (bytes or packets) is tail-dropped and never
//! serialised; a packet lost in the channel has used the link's time before it is lost
//! (like a frame corrupted on the wire), decided by the link's own seeded stream.

use std::collections::VecDeque;

use crate::clock::Nanos;
use switchml_core::splitmix::SplitMix64 as Rng;

/// Bytes a UDP datagram of `payload` bytes occupies on an Ethernet link: Ethernet header
/// (14), IPv4 (20), UDP (8), FCS (4), padded to the 64-byte minimum frame, plus preamble
/// and start delimiter (8) and the inter-frame gap (12).
pub fn wire_bytes(payload: usize) -> u64 {
    let frame = (14 + 20 + 8 + payload + 4).max(64);
    (frame + 8 + 12) as u64
}

/// Bytes of a full-sized datagram that are not its payload, on the wire.
pub const FRAME_OVERHEAD: u64 = 14 + 20 + 8 + 4 + 8 + 12;

/// A link's parameters: the channel's rate, delay and loss, and its transmit queue's limits.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LinkConfig {
    /// Line rate in bits per second.
    pub bits_per_sec: u64,
    /// One-way propagation delay.
    pub propagation: Nanos,
    /// Probability that a packet is lost in the channel.
    pub loss: f64,
    /// The most bytes the queue holds, the packet in service included.
    pub queue_bytes: u64,
    /// The most packets the queue holds, the packet in service included.
    pub queue_packets: usize,
    /// A packet that finds at least this many bytes queued ahead of it is marked, as an
    /// ECN-capable queue sets CE (`u64::MAX`: never).
    pub mark_bytes: u64,
}

impl LinkConfig {
    /// Return the picoseconds `bytes` take to serialise.
    pub fn serialisation_ps(&self, bytes: u64) -> u64 {
        (u128::from(bytes) * 8 * 1_000_000_000_000 / u128::from(self.bits_per_sec)) as u64
    }
}

/// What became of a packet handed to a link.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Delivery {
    /// It arrives at the far end at this time.
    At(Nanos),
    /// It was serialised and lost in the channel.
    Lost,
    /// The queue was full: dropped before serialisation.
    TailDropped,
}

/// A link's counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LinkStats {
    /// Packets serialised (lost ones included).
    pub packets: u64,
    /// Bytes serialised, on the wire (framing included).
    pub wire_bytes: u64,
    /// Time the transmitter spent serialising, in picoseconds.
    pub busy_ps: u64,
    /// Packets lost in the channel.
    pub lost: u64,
    /// Packets dropped at a full queue.
    pub tail_dropped: u64,
    /// The largest queue seen, in bytes.
    pub max_queue_bytes: u64,
    /// Packets marked (the queue ahead of them was at least `mark_bytes`).
    pub marked: u64,
    /// The queue each packet found ahead of it, summed over the packets serialised, in
    /// bytes: divided by `packets`, the mean queue a packet waited behind.
    pub queued_bytes_sum: u64,
    /// When the last bit of the last packet left, in picoseconds.
    pub last_departure_ps: u64,
}

/// A one-way link with its transmit queue.
pub struct Link {
    config: LinkConfig,
    loss: Rng,
    /// When the transmitter finishes what is queued, in picoseconds.
    busy_until_ps: u64,
    /// Departure time (ps) and size of every packet not yet fully serialised.
    queued: VecDeque<(u64, u64)>,
    queued_bytes: u64,
    stats: LinkStats,
    /// Whether the last packet handed to the link was marked.
    last_marked: bool,
}

impl Link {
    /// A link with `config`, its losses drawn from `seed`.
    pub fn new(config: LinkConfig, seed: u64) -> Link {
        Link {
            config,
            loss: Rng::new(seed),
            busy_until_ps: 0,
            queued: VecDeque::new(),
            queued_bytes: 0,
            stats: LinkStats::default(),
            last_marked: false,
        }
    }

    /// Return the configuration.
    pub fn config(&self) -> &LinkConfig {
        &self.config
    }

    /// Return the counters.
    pub fn stats(&self) -> &LinkStats {
        &self.stats
    }

    /// Return whether the last packet handed to [`Link::transmit`] was marked.
    pub fn last_marked(&self) -> bool {
        self.last_marked
    }

    /// Return the bytes queued at `now`, the packet in service included.
    pub fn queued_bytes(&mut self, now: Nanos) -> u64 {
        self.drain(now * 1000);
        self.queued_bytes
    }

    fn drain(&mut self, now_ps: u64) {
        while let Some(&(departs, bytes)) = self.queued.front() {
            if departs > now_ps {
                break;
            }
            self.queued.pop_front();
            self.queued_bytes -= bytes;
        }
    }

    /// Forget the counters (the queue and its timing stay).
    pub fn reset_stats(&mut self) {
        self.stats = LinkStats::default();
    }

    /// Hand the link a packet of `wire_bytes` at time `now`.
    pub fn transmit(&mut self, now: Nanos, wire_bytes: u64) -> Delivery {
        let now_ps = now * 1000;
        self.drain(now_ps);
        self.last_marked = false;
        if self.queued_bytes + wire_bytes > self.config.queue_bytes
            || self.queued.len() >= self.config.queue_packets
        {
            self.stats.tail_dropped += 1;
            return Delivery::TailDropped;
        }
        self.last_marked = self.queued_bytes >= self.config.mark_bytes;
        self.stats.marked += u64::from(self.last_marked);
        self.stats.queued_bytes_sum += self.queued_bytes;
        let serialisation = self.config.serialisation_ps(wire_bytes);
        let departs = self.busy_until_ps.max(now_ps) + serialisation;
        self.busy_until_ps = departs;
        self.queued.push_back((departs, wire_bytes));
        self.queued_bytes += wire_bytes;
        self.stats.max_queue_bytes = self.stats.max_queue_bytes.max(self.queued_bytes);
        self.stats.packets += 1;
        self.stats.wire_bytes += wire_bytes;
        self.stats.busy_ps += serialisation;
        self.stats.last_departure_ps = departs;
        if self.config.loss > 0.0 && self.loss.unit() < self.config.loss {
            self.stats.lost += 1;
            return Delivery::Lost;
        }
        Delivery::At(departs.div_ceil(1000) + self.config.propagation)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn link(queue_packets: usize) -> Link {
        let config = LinkConfig {
            bits_per_sec: 100_000_000_000,
            propagation: 1000,
            loss: 0.0,
            queue_bytes: u64::MAX,
            queue_packets,
            mark_bytes: u64::MAX,
        };
        Link::new(config, 1)
    }

    #[test]
    fn back_to_back_packets_queue_behind_each_other() {
        let mut l = link(usize::MAX);
        // 1,250 bytes at 100 Gb/s: 100 ns each.
        assert_eq!(l.transmit(0, 1250), Delivery::At(1100));
        assert_eq!(l.transmit(0, 1250), Delivery::At(1200));
        // After an idle gap the transmitter starts at once.
        assert_eq!(l.transmit(5000, 1250), Delivery::At(6100));
        assert_eq!(l.stats().busy_ps, 300_000);
    }

    #[test]
    fn a_full_queue_tail_drops_until_it_drains() {
        let mut l = link(2);
        assert!(matches!(l.transmit(0, 1250), Delivery::At(_)));
        assert!(matches!(l.transmit(0, 1250), Delivery::At(_)));
        assert_eq!(l.transmit(0, 1250), Delivery::TailDropped);
        // The first has left by 100 ns: room for one more.
        assert_eq!(l.transmit(100, 1250), Delivery::At(1300));
        assert_eq!(l.stats().tail_dropped, 1);
    }

    #[test]
    fn loss_follows_the_configured_rate() {
        let mut l = link(usize::MAX);
        l.config.loss = 0.01;
        let lost = (0..100_000)
            .filter(|&i| l.transmit(i * 1000, 100) == Delivery::Lost)
            .count();
        assert!((800..1200).contains(&lost), "{lost} lost of 100,000");
    }

    #[test]
    fn a_packet_behind_a_deep_queue_is_marked() {
        let mut l = link(usize::MAX);
        l.config.mark_bytes = 2000;
        l.transmit(0, 1250);
        assert!(!l.last_marked(), "an empty queue");
        l.transmit(0, 1250);
        assert!(!l.last_marked(), "1,250 bytes ahead");
        l.transmit(0, 1250);
        assert!(l.last_marked(), "2,500 bytes ahead");
        assert_eq!(l.stats().marked, 1);
        // Drained by 300 ns.
        l.transmit(300, 1250);
        assert!(!l.last_marked());
    }

    #[test]
    fn wire_bytes_count_framing_and_pad_short_frames() {
        assert_eq!(wire_bytes(1048), 1048 + FRAME_OVERHEAD);
        assert_eq!(wire_bytes(0), 64 + 20);
    }
}
