//! Shards: one switch spread over several independent aggregators (protocol.md §1.1).
//!
//! Aggregation is independent per slot, so a software switch can run as `N` shards — a
//! thread per core, each with its own socket, its own switch and its own runs — with no
//! state shared on the packet path. What makes that work without any forwarding between
//! shards is a rule every implementation follows: lane `l` of every rank (§6) belongs to
//! shard `l mod N`, which listens on the switch's port plus its index. A worker that does
//! not know `N` joins at the first port; a shard that does not serve the Join's lane
//! answers Abort `WrongShard` naming `N`, and the worker moves the lane to its shard.
//! A switch that is not sharded (a P4 switch, firmware, the FPGA) is one shard and sends 0
//! in the `shards` fields, which means the same.

/// The most shards a switch can announce: the `shards` fields are one byte.
pub const MAX_SHARDS: u16 = 255;

/// Which shard of how many a switch endpoint is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Shard {
    index: u16,
    count: u16,
}

impl Shard {
    /// The only shard of an unsharded switch.
    pub const SINGLE: Shard = Shard { index: 0, count: 1 };

    /// Shard `index` of `count`; `None` unless `index < count <= MAX_SHARDS`.
    pub const fn new(index: u16, count: u16) -> Option<Shard> {
        if index < count && count <= MAX_SHARDS {
            Some(Shard { index, count })
        } else {
            None
        }
    }

    /// Return its index.
    pub const fn index(self) -> u16 {
        self.index
    }

    /// Return the number of shards of the switch.
    pub const fn count(self) -> u16 {
        self.count
    }

    /// Return whether this shard serves lane `lane`.
    pub const fn serves_lane(self, lane: u16) -> bool {
        shard_of_lane(lane, self.count) == self.index
    }

    /// Return the value of the `shards` field of its answers: 0 for a single shard.
    pub const fn wire_count(self) -> u8 {
        if self.count > 1 {
            self.count as u8
        } else {
            0
        }
    }
}

/// Return the shard of lane `lane` on a switch of `shards` shards (0 counts as 1).
pub const fn shard_of_lane(lane: u16, shards: u16) -> u16 {
    if shards > 1 {
        lane % shards
    } else {
        0
    }
}

/// Return the UDP port of shard `shard` on a switch whose first shard listens on `base`
/// (`None` past port 65535).
pub const fn shard_port(base: u16, shard: u16) -> Option<u16> {
    base.checked_add(shard)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lanes_are_dealt_round_robin() {
        let shards: [u16; 8] = core::array::from_fn(|l| shard_of_lane(l as u16, 3));
        assert_eq!(shards, [0, 1, 2, 0, 1, 2, 0, 1]);
        assert_eq!(shard_of_lane(5, 0), 0, "0 shards reads as 1");
        assert_eq!(shard_of_lane(5, 1), 0);
        let s = Shard::new(1, 3).unwrap();
        assert!(s.serves_lane(4) && !s.serves_lane(3));
        assert!(Shard::SINGLE.serves_lane(200));
    }

    #[test]
    fn bounds_and_wire_form() {
        assert_eq!(Shard::new(3, 3), None);
        assert_eq!(Shard::new(0, 256), None);
        assert_eq!(Shard::new(0, 255).map(Shard::wire_count), Some(255));
        assert_eq!(Shard::SINGLE.wire_count(), 0);
        assert_eq!(shard_port(48864, 2), Some(48866));
        assert_eq!(shard_port(65535, 1), None);
    }
}
