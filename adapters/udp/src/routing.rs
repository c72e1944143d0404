//! The daemon's address table: (job, rank, slot) → the UDP address of the lane that drives
//! that slot, learned from Joins (protocol.md §1, §6).
//!
//! It plays the part of SwitchML's `udp_receiver` table, which the Tofino controller fills
//! with each worker's addresses: a Contribution whose source is not the address registered
//! for its (job, rank, slot) is spoofed and dropped, and Results go to the lane of each rank
//! that owns the slot. Addresses are learned while the job rendezvous; once every rank has
//! joined, the table is locked: a Join for an already registered lane from another address
//! is refused, so a stray or forged Join cannot redirect a running job's traffic.

use std::net::SocketAddr;

/// One learned lane.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LaneRoute {
    /// The rank.
    pub rank: u16,
    /// First job-relative slot the lane drives.
    pub slot_lo: u16,
    /// Slots it drives.
    pub slot_count: u16,
    /// Where it sends from.
    pub addr: SocketAddr,
}

/// The routes of one job.
#[derive(Debug, Clone)]
pub struct JobRoute {
    /// The job id.
    pub id: u16,
    /// Its world size.
    pub world: u16,
    /// Its slot count.
    pub slot_count: u16,
    /// Slot-major owner table: entry `slot * world + rank`.
    owners: Vec<Option<SocketAddr>>,
    lanes: Vec<LaneRoute>,
    locked: bool,
}

/// What a Join may do to the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admission {
    /// Process it (and learn from its reply).
    Admit,
    /// The lane is registered at another address and the job is running: spoofed.
    Spoofed,
}

impl JobRoute {
    /// An empty table for a job of `world` ranks over `slot_count` slots.
    pub fn new(id: u16, world: u16, slot_count: u16) -> JobRoute {
        JobRoute {
            id,
            world,
            slot_count,
            owners: vec![None; usize::from(world) * usize::from(slot_count)],
            lanes: Vec::new(),
            locked: false,
        }
    }

    fn index(&self, rank: u16, slot: u16) -> Option<usize> {
        (rank < self.world && slot < self.slot_count)
            .then(|| usize::from(slot) * usize::from(self.world) + usize::from(rank))
    }

    /// Return whether `(rank, slot)` is inside the job (else the aggregator judges it).
    pub fn covers(&self, rank: u16, slot: u16) -> bool {
        self.index(rank, slot).is_some()
    }

    /// Return the address registered for `(rank, slot)`.
    pub fn owner(&self, rank: u16, slot: u16) -> Option<&SocketAddr> {
        self.owners.get(self.index(rank, slot)?)?.as_ref()
    }

    /// Decide whether a Join of `rank` for `slot_lo..slot_lo+slot_count` from `from` may
    /// be processed: once locked, not if any of those slots is registered elsewhere.
    pub fn admit_join(
        &self,
        rank: u16,
        slot_lo: u16,
        slot_count: u16,
        from: &SocketAddr,
    ) -> Admission {
        let end = slot_lo.saturating_add(slot_count);
        let taken = (slot_lo..end).any(|s| self.owner(rank, s).is_some_and(|a| a != from));
        if self.locked && taken {
            Admission::Spoofed
        } else {
            Admission::Admit
        }
    }

    /// Register the lane of `rank` driving `slot_lo..slot_lo+slot_count` at `addr` (after the
    /// switch accepted its Join).
    pub fn learn(&mut self, rank: u16, slot_lo: u16, slot_count: u16, addr: SocketAddr) {
        let end = slot_lo.saturating_add(slot_count).min(self.slot_count);
        for slot in slot_lo..end {
            if let Some(i) = self.index(rank, slot) {
                self.owners[i] = Some(addr);
            }
        }
        let lane = LaneRoute {
            rank,
            slot_lo,
            slot_count,
            addr,
        };
        match self
            .lanes
            .iter_mut()
            .find(|l| l.rank == rank && l.slot_lo == slot_lo)
        {
            Some(l) => *l = lane,
            None => self.lanes.push(lane),
        }
    }

    /// Lock the table: every rank has joined.
    pub fn lock(&mut self) {
        self.locked = true;
    }

    /// Return whether the table is locked.
    pub fn is_locked(&self) -> bool {
        self.locked
    }

    /// Return whether `addr` is a registered lane of `rank`.
    pub fn is_lane_of(&self, rank: u16, addr: &SocketAddr) -> bool {
        self.lanes.iter().any(|l| l.rank == rank && l.addr == *addr)
    }

    /// Return where a Result for `slot` goes: each rank's lane that owns the slot.
    pub fn result_destinations(&self, slot: u16) -> impl Iterator<Item = &SocketAddr> {
        let w = usize::from(self.world);
        let lo = usize::from(slot) * w;
        self.owners
            .get(lo..lo + w)
            .unwrap_or_default()
            .iter()
            .flatten()
    }

    /// Return every learned lane (control multicasts go to all of them).
    pub fn lanes(&self) -> &[LaneRoute] {
        &self.lanes
    }

    /// Return the ranks that have at least one lane registered.
    pub fn ranks_seen(&self) -> Vec<u16> {
        let mut ranks: Vec<u16> = self.lanes.iter().map(|l| l.rank).collect();
        ranks.sort_unstable();
        ranks.dedup();
        ranks
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addr(port: u16) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], port))
    }

    #[test]
    fn results_go_to_each_ranks_lane_owning_the_slot() {
        let mut r = JobRoute::new(7, 2, 8);
        r.learn(0, 0, 4, addr(1));
        r.learn(0, 4, 4, addr(2));
        r.learn(1, 0, 4, addr(3));
        assert_eq!(
            r.result_destinations(1).collect::<Vec<_>>(),
            [&addr(1), &addr(3)]
        );
        assert_eq!(r.result_destinations(5).collect::<Vec<_>>(), [&addr(2)]);
        assert_eq!(r.result_destinations(8).count(), 0);
        assert_eq!(r.owner(0, 6), Some(&addr(2)));
        assert_eq!(r.owner(1, 6), None);
        assert!(!r.covers(2, 0) && !r.covers(0, 8));
        assert!(r.is_lane_of(0, &addr(2)) && !r.is_lane_of(1, &addr(2)));
        assert_eq!(r.lanes().len(), 3);
        assert_eq!(r.ranks_seen(), [0, 1]);
    }

    #[test]
    fn a_locked_table_refuses_to_move_a_lane() {
        let mut r = JobRoute::new(7, 2, 8);
        r.learn(0, 0, 8, addr(1));
        assert_eq!(r.admit_join(0, 0, 8, &addr(9)), Admission::Admit);
        r.learn(0, 0, 8, addr(9));
        assert_eq!(r.owner(0, 3), Some(&addr(9)));
        assert_eq!(r.lanes().len(), 1);
        r.lock();
        assert_eq!(r.admit_join(0, 0, 8, &addr(1)), Admission::Spoofed);
        assert_eq!(r.admit_join(0, 5, 1, &addr(1)), Admission::Spoofed);
        assert_eq!(r.admit_join(0, 0, 8, &addr(9)), Admission::Admit);
        assert_eq!(r.admit_join(1, 0, 8, &addr(1)), Admission::Admit);
    }
}
