//! The baseline: ring all-reduce (reduce-scatter, then all-gather; what NCCL and Gloo run
//! on one switch) on the same star of modelled links, the switch forwarding each packet
//! from a rank's uplink to its successor's downlink.
//!
//! Each rank's tensor is cut into `P` chunks; in step `t` (of `2(P−1)`) rank `w` sends chunk
//! `(w − t) mod P` to rank `w + 1`, in packets of `k` values behind the same 24-byte header
//! and framing as SwitchML's, so the two carry payload equally well. It is pipelined per
//! packet: packet `j` of step `t + 1` leaves as soon as packet `j` of step `t` has arrived,
//! the most any ring implementation can overlap. A rank that starts late (a straggler)
//! forwards nothing before it starts: in the reduce-scatter it must add its own data to what
//! it passes on. Hosts are infinitely fast and the fabric lossless and flow-controlled (RDMA
//! over PFC, or TCP): modelled as links without loss and with unbounded queues, which for
//! work-conserving FIFO links gives the same times as back-pressure. This is the ring's best
//! case.

use std::time::Instant as WallClock;

use switchml_core::wire;

use crate::clock::Nanos;
use crate::events::EventQueue;
use crate::link::{wire_bytes, Delivery, Link, LinkConfig};
use crate::report::RunReport;
use crate::scenario::{Direction, Scenario};

enum Event {
    /// Packet `packet` of step `step`, from rank `from`, reaches the switch.
    AtSwitch { from: usize, step: u32, packet: u32 },
    /// It reaches the successor.
    AtRank { to: usize, step: u32, packet: u32 },
    /// Rank `rank` sends its first step.
    Start { rank: usize },
}

/// The ring's geometry: the tensor cut into `P` chunks, each into packets of `k` values.
struct Chunks {
    world: usize,
    elements: usize,
    count: usize,
}

impl Chunks {
    fn len(&self, chunk: usize) -> usize {
        let size = self.elements.div_ceil(self.world);
        self.elements.saturating_sub(chunk * size).min(size)
    }

    /// The chunk rank `rank` sends in step `step`.
    fn sent(&self, rank: usize, step: u32) -> usize {
        (rank + self.world * 2 - step as usize % self.world) % self.world
    }

    fn packets(&self, chunk: usize) -> u32 {
        self.len(chunk).div_ceil(self.count) as u32
    }

    /// The UDP payload of packet `packet` of `chunk`.
    fn payload(&self, chunk: usize, packet: u32) -> usize {
        let values = (self.len(chunk) - packet as usize * self.count).min(self.count);
        wire::data::HEADER_LEN + 4 * values
    }

    fn steps(&self) -> u32 {
        2 * (self.world as u32 - 1)
    }
}

/// Simulate `scenario`'s all-reduce as a ring and report it (loss is ignored).
pub fn simulate(scenario: &Scenario) -> RunReport {
    let wall = WallClock::now();
    let world = usize::from(scenario.workers);
    assert!(world >= 2, "a ring needs two ranks");
    let chunks = Chunks {
        world,
        elements: scenario.elements,
        count: usize::from(scenario.count),
    };
    let lossless = |rank: u16| LinkConfig {
        loss: 0.0,
        queue_bytes: u64::MAX,
        queue_packets: usize::MAX,
        mark_bytes: u64::MAX,
        ..scenario.link(rank, Direction::Up)
    };
    let mut uplinks: Vec<Link> = (0..world as u16)
        .map(|r| Link::new(lossless(r), 0))
        .collect();
    let mut downlinks: Vec<Link> = (0..world as u16)
        .map(|r| Link::new(lossless(r), 0))
        .collect();
    let expected: Vec<u64> = (0..world)
        .map(|to| {
            let from = (to + world - 1) % world;
            (0..chunks.steps())
                .map(|t| u64::from(chunks.packets(chunks.sent(from, t))))
                .sum()
        })
        .collect();
    let mut received = vec![0u64; world];
    let mut finished: Vec<Option<Nanos>> = vec![None; world];
    let mut started = vec![false; world];
    // What a rank received before it started: (step, packet) to pass on once it has.
    let mut held: Vec<Vec<(u32, u32)>> = vec![Vec::new(); world];
    let mut queue = EventQueue::default();
    for rank in 0..world {
        let delay = if rank == 0 {
            scenario.straggler.delay
        } else {
            0
        };
        queue.push(delay, Event::Start { rank });
    }
    let send = |queue: &mut EventQueue<Event>, uplink: &mut Link, now, from, step, packet| {
        let bytes = wire_bytes(chunks.payload(chunks.sent(from, step), packet));
        if let Delivery::At(at) = uplink.transmit(now, bytes) {
            queue.push(at, Event::AtSwitch { from, step, packet });
        }
    };
    while let Some((now, event)) = queue.pop() {
        match event {
            Event::Start { rank } => {
                started[rank] = true;
                for packet in 0..chunks.packets(chunks.sent(rank, 0)) {
                    send(&mut queue, &mut uplinks[rank], now, rank, 0, packet);
                }
                for (step, packet) in std::mem::take(&mut held[rank]) {
                    send(&mut queue, &mut uplinks[rank], now, rank, step, packet);
                }
            }
            Event::AtSwitch { from, step, packet } => {
                let to = (from + 1) % world;
                let bytes = wire_bytes(chunks.payload(chunks.sent(from, step), packet));
                let leaves = now + scenario.switch_latency;
                if let Delivery::At(at) = downlinks[to].transmit(leaves, bytes) {
                    queue.push(at, Event::AtRank { to, step, packet });
                }
            }
            Event::AtRank { to, step, packet } => {
                received[to] += 1;
                if received[to] == expected[to] {
                    finished[to] = Some(now);
                }
                if step + 1 < chunks.steps() {
                    if started[to] {
                        send(&mut queue, &mut uplinks[to], now, to, step + 1, packet);
                    } else {
                        held[to].push((step + 1, packet));
                    }
                }
            }
        }
    }
    let all = finished.iter().all(Option::is_some);
    RunReport {
        algorithm: "ring",
        completion: if all {
            finished.iter().flatten().max().copied()
        } else {
            None
        },
        finish_times: finished,
        elements: scenario.elements,
        uplinks: uplinks.iter().map(|l| *l.stats()).collect(),
        downlinks: downlinks.iter().map(|l| *l.stats()).collect(),
        protocol: None,
        failures: Vec::new(),
        wrong_elements: 0,
        events: queue.handled(),
        wall_secs: wall.elapsed().as_secs_f64(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_element_is_sent_once_per_step_in_some_chunk() {
        let c = Chunks {
            world: 3,
            elements: 1000,
            count: 256,
        };
        assert_eq!((0..3).map(|i| c.len(i)).sum::<usize>(), 1000);
        // Over a step, the ranks send distinct chunks.
        for step in 0..c.steps() {
            let mut sent: Vec<usize> = (0..3).map(|r| c.sent(r, step)).collect();
            sent.sort();
            assert_eq!(sent, [0, 1, 2]);
        }
        // What rank 0 sends in step t + 1 is what it received (rank 2's) in step t.
        assert_eq!(c.sent(0, 1), c.sent(2, 0));
        assert_eq!(c.payload(2, 1), wire::data::HEADER_LEN + 4 * (332 - 256));
    }
}
