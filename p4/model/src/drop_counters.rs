//! `drop_counters.p4`: switch-wide packet counters — received, consumed, multicast,
//! unicast, up (to a parent switch, protocol.md §7; `aborts_up`: the clones or mirrors
//! that carry a child's Abort up), to the controller (the CPU port, §4.2), and drops by reason in the order of
//! `switchml_core::switch::DropReason::ALL`
//! — so that a job that hangs says why (the original's users' first complaint).
//!
//! [`DropCounters::snapshot`] reads them as the reference's `Counters`, which is how the
//! equivalence check compares the two switches.

use switchml_core::switch::{Counters, DropReason};

use crate::register::Counter;

/// What a packet came to, for counting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tally {
    /// Dropped for a reason.
    Drop(DropReason),
    /// Absorbed into a slot.
    Consumed,
    /// Sent to a multicast group.
    Multicast,
    /// Sent back to one worker.
    Unicast,
    /// Sent up to the parent switch (protocol.md §7).
    Up,
    /// Sent to the controller on the CPU port (protocol.md §4.2).
    ToCpu,
    /// A clone (v1model) or mirror (TNA) of the packet that ended a child's run, sent up
    /// as the Abort the child owes its parent (§7): counter `aborts_up`.
    AbortUp,
}

const CONSUMED: usize = 0;
const MULTICAST: usize = 1;
const UNICAST: usize = 2;
const UP: usize = 3;
const TO_CPU: usize = 4;

/// The counters.
#[derive(Debug, Clone)]
pub struct DropCounters {
    received: Counter,
    outcomes: Counter,
    drops: Counter,
    ignored: Counter,
    faults: Counter,
    recirculations: Counter,
    aborts_up: Counter,
}

impl Default for DropCounters {
    fn default() -> Self {
        DropCounters {
            received: Counter::new("received", 1),
            outcomes: Counter::new("outcomes", 5),
            drops: Counter::new("drops", DropReason::ALL.len()),
            ignored: Counter::new("ignored", 1),
            faults: Counter::new("faults", 1),
            recirculations: Counter::new("recirculations", 1),
            aborts_up: Counter::new("aborts_up", 1),
        }
    }
}

impl DropCounters {
    /// Count a switchml datagram arriving.
    pub fn received(&mut self) {
        self.received.count(0);
    }

    /// Count what became of it.
    pub fn tally(&mut self, tally: Tally) {
        match tally {
            Tally::Drop(reason) => self.drops.count(reason as usize),
            Tally::Consumed => self.outcomes.count(CONSUMED),
            Tally::Multicast => self.outcomes.count(MULTICAST),
            Tally::Unicast => self.outcomes.count(UNICAST),
            Tally::Up => self.outcomes.count(UP),
            Tally::ToCpu => self.outcomes.count(TO_CPU),
            Tally::AbortUp => self.aborts_up.count(0),
        }
    }

    /// Count a frame that is not switchml traffic.
    pub fn ignored(&mut self) {
        self.ignored.count(0);
    }

    /// Count a register hazard (a model bug).
    pub fn fault(&mut self) {
        self.faults.count(0);
    }

    /// Count a recirculation (for the next block of values).
    pub fn recirculated(&mut self) {
        self.recirculations.count(0);
    }

    /// Return the recirculations.
    pub fn recirculations(&self) -> u64 {
        self.recirculations.read(0)
    }

    /// Return the frames that were not switchml traffic.
    pub fn ignored_frames(&self) -> u64 {
        self.ignored.read(0)
    }

    /// Return the register hazards seen.
    pub fn faults(&self) -> u64 {
        self.faults.read(0)
    }

    /// Read the counters as the reference switch's.
    pub fn snapshot(&self) -> Counters {
        let mut c = Counters {
            received: self.received.read(0),
            consumed: self.outcomes.read(CONSUMED),
            multicast: self.outcomes.read(MULTICAST),
            unicast: self.outcomes.read(UNICAST),
            // What goes up, and the Aborts up that leave as second packets.
            upward: self.outcomes.read(UP) + self.aborts_up.read(0),
            ..Counters::default()
        };
        for (i, d) in c.dropped.iter_mut().enumerate() {
            *d = self.drops.read(i);
        }
        c
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snapshot_maps_every_reason_to_its_slot() {
        let mut d = DropCounters::default();
        for (i, reason) in DropReason::ALL.into_iter().enumerate() {
            for _ in 0..=i {
                d.tally(Tally::Drop(reason));
            }
        }
        d.received();
        d.tally(Tally::Unicast);
        let c = d.snapshot();
        for (i, reason) in DropReason::ALL.into_iter().enumerate() {
            assert_eq!(c.drops(reason), i as u64 + 1);
        }
        assert_eq!((c.received, c.unicast, c.multicast), (1, 1, 0));
    }
}
