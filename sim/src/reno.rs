//! A bulk TCP-like flow that shares a link with a job: TCP Reno's window in full-sized
//! segments (slow start, then one segment a round trip; halved at most once a round trip on
//! a loss or an ECN mark, RFC 5681 and RFC 3168), on an ideal return path.
//!
//! Enough to ask what a shared uplink gives each side, not a TCP: there are no
//! retransmissions (a lost segment counts as not delivered, and the loss is noticed one
//! smoothed round trip after it, when three duplicate acknowledgements would have come), no
//! receive window and no delayed acknowledgements.

use crate::clock::Nanos;
use crate::link::{wire_bytes, Delivery, Link};

/// TCP's payload per segment on a 1,500-byte MTU (1,460 bytes of IPv4 and TCP payload,
/// framed like a datagram of that size).
pub const SEGMENT_PAYLOAD: usize = 1460;

/// What the flow is told.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RenoEvent {
    /// A segment sent at `sent` is acknowledged; `echo`: its ECN mark came back.
    Ack { sent: Nanos, echo: bool },
    /// A segment was lost; the sender finds out now.
    Loss,
}

/// The flow's sender.
#[derive(Debug, Clone)]
pub struct Reno {
    /// The congestion window, in thousandths of a segment.
    cwnd_milli: u64,
    ssthresh_milli: u64,
    in_flight: u64,
    srtt: Option<Nanos>,
    /// No second decrease before this time (one a round trip).
    recover_until: Nanos,
    /// The return path's delay, from the far end to the sender.
    return_delay: Nanos,
    /// Payload bytes delivered.
    pub delivered: u64,
    /// Segments lost.
    pub lost: u64,
    /// Halvings of the window.
    pub decreases: u64,
}

impl Reno {
    /// A flow whose acknowledgements take `return_delay` to come back; initial window 10.
    pub fn new(return_delay: Nanos) -> Reno {
        Reno {
            cwnd_milli: 10_000,
            ssthresh_milli: u64::MAX,
            in_flight: 0,
            srtt: None,
            recover_until: 0,
            return_delay,
            delivered: 0,
            lost: 0,
            decreases: 0,
        }
    }

    /// Send what the window allows at `now` on `link`; `schedule(at, event)` for each
    /// segment's fate. Return the wire bytes sent and the time each segment arrives.
    pub fn send(
        &mut self,
        now: Nanos,
        link: &mut Link,
        mut schedule: impl FnMut(Nanos, RenoEvent),
        mut delivered: impl FnMut(Nanos, u64),
    ) {
        let bytes = wire_bytes(SEGMENT_PAYLOAD);
        while self.in_flight * 1000 < self.cwnd_milli {
            self.in_flight += 1;
            match link.transmit(now, bytes) {
                Delivery::At(at) => {
                    let echo = link.last_marked();
                    delivered(at, bytes);
                    schedule(at + self.return_delay, RenoEvent::Ack { sent: now, echo });
                }
                Delivery::Lost | Delivery::TailDropped => {
                    let rtt = self.srtt.unwrap_or(2 * self.return_delay);
                    schedule(now + rtt, RenoEvent::Loss);
                }
            }
        }
    }

    /// Handle `event` at `now`.
    pub fn handle(&mut self, now: Nanos, event: RenoEvent) {
        self.in_flight = self.in_flight.saturating_sub(1);
        match event {
            RenoEvent::Ack { sent, echo } => {
                let rtt = now - sent;
                self.srtt = Some(self.srtt.map_or(rtt, |s| (7 * s + rtt) / 8));
                self.delivered += SEGMENT_PAYLOAD as u64;
                if echo {
                    self.decrease(now);
                } else if self.cwnd_milli < self.ssthresh_milli {
                    self.cwnd_milli += 1000;
                } else {
                    self.cwnd_milli += 1_000_000 / self.cwnd_milli.max(1000);
                }
            }
            RenoEvent::Loss => {
                self.lost += 1;
                self.decrease(now);
            }
        }
    }

    fn decrease(&mut self, now: Nanos) {
        if now < self.recover_until {
            return;
        }
        self.cwnd_milli = (self.cwnd_milli / 2).max(2000);
        self.ssthresh_milli = self.cwnd_milli;
        self.recover_until = now + self.srtt.unwrap_or(2 * self.return_delay);
        self.decreases += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::link::LinkConfig;

    #[test]
    fn fills_a_link_alone_and_backs_off_on_a_full_queue() {
        let config = LinkConfig {
            bits_per_sec: 100_000_000,
            propagation: 50_000,
            loss: 0.0,
            queue_bytes: 64 * 1024,
            queue_packets: usize::MAX,
            mark_bytes: u64::MAX,
        };
        let mut link = Link::new(config, 1);
        let mut flow = Reno::new(50_000);
        let mut events: Vec<(Nanos, RenoEvent)> = Vec::new();
        let mut now = 0;
        for _ in 0..200_000 {
            flow.send(now, &mut link, |at, e| events.push((at, e)), |_, _| {});
            events.sort_by_key(|e| std::cmp::Reverse(e.0));
            let Some((at, e)) = events.pop() else { break };
            now = at;
            if now > 2_000_000_000 {
                break;
            }
            flow.handle(now, e);
        }
        // Two seconds at 100 Mb/s: 25 MB on the wire, 1,460 of each 1,526 bytes payload.
        let goodput = flow.delivered as f64 / 2.0 * 8.0 / 1e8;
        assert!(goodput > 0.85, "{goodput}");
        assert!(flow.lost > 0 && flow.decreases > 0);
    }
}
