//! The packet replication engine (the traffic manager's multicast, not P4 code): a
//! multicast group is a list of replicas, each an egress port and a replication id
//! (`egress_rid`) by which `udp_sender.rs` finds the worker's address. The control plane
//! configures it (`simple_switch_CLI mc_*` on BMv2, `$pre.node`/`$pre.mgid` on Tofino).

/// One copy of a multicast packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Replica {
    /// The egress port.
    pub port: u16,
    /// The replication id the egress pipeline sees.
    pub rid: u16,
}

/// Multicast groups `1..=groups`, each with room for `members` replicas.
#[derive(Debug, Clone)]
pub struct Replication {
    groups: Box<[Vec<Replica>]>,
}

impl Replication {
    /// Make `groups` empty groups with room for `members` replicas each.
    pub fn new(groups: usize, members: usize) -> Self {
        Replication {
            groups: (0..groups).map(|_| Vec::with_capacity(members)).collect(),
        }
    }

    /// Return the replicas of `group` (none for an unknown group).
    pub fn replicas(&self, group: u16) -> &[Replica] {
        usize::from(group)
            .checked_sub(1)
            .and_then(|i| self.groups.get(i))
            .map_or(&[], Vec::as_slice)
    }

    /// Add a replica to `group`; false if there is no such group.
    pub fn add(&mut self, group: u16, replica: Replica) -> bool {
        let g = usize::from(group).checked_sub(1);
        match g.and_then(|i| self.groups.get_mut(i)) {
            Some(members) => {
                members.push(replica);
                true
            }
            None => false,
        }
    }

    /// Remove the replica with id `rid` from `group`.
    pub fn remove(&mut self, group: u16, rid: u16) {
        let g = usize::from(group).checked_sub(1);
        if let Some(members) = g.and_then(|i| self.groups.get_mut(i)) {
            members.retain(|r| r.rid != rid);
        }
    }

    /// Empty `group`.
    pub fn clear(&mut self, group: u16) {
        let g = usize::from(group).checked_sub(1);
        if let Some(members) = g.and_then(|i| self.groups.get_mut(i)) {
            members.clear();
        }
    }
}
