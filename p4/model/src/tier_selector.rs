//! `tier_selector.p4`: two-level aggregation (protocol.md §7), the tables. Table
//! `parent_link` gives a job's tier (P4: keyed on the job id; here held beside the job's
//! job table entry, which is one to one with it): flat (the default), a
//! parent (a member's `OVERFLOW` is kept), or a child with its link — the whole job's world
//! and first rank, the parent's job id and key, this child's member index and the parent's
//! world. Table `child_job` maps a parent's job id to the child job it serves, so that a
//! Result or JoinReply of the parent's job reaches that child's registers
//! (`ParentResult`, in `pipeline.rs`).
//!
//! The tier decides where a completed use goes: down to the job's multicast group (flat,
//! parent) or up to the parent as one member's Contribution (child). At a child the ranks
//! of the wire are global, and the worker table's rank bit is the member's
//! (`rank − rank_lo`, action data the control plane computes), so every bitmap the child
//! writes places its members at `rank_lo` in a bitmap of the whole job's world
//! ([`crate::reply_builder`]).

use switchml_core::switch::{ParentLink, Tier};

use crate::WorkerAddr;

/// A child's `parent_link` entry: the link and where the parent switch is (for frames).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LinkEntry {
    /// The link, as the reference switch's `Tier::Child` holds it.
    pub link: ParentLink,
    /// The parent switch's address and the port it hangs off.
    pub parent: WorkerAddr,
}

/// Where a job sits: the `parent_link` table's action.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TierEntry {
    /// An ordinary job (the default action).
    #[default]
    Flat,
    /// A parent of child switches.
    Parent,
    /// A child.
    Child(LinkEntry),
}

impl TierEntry {
    /// Return the link of a child.
    pub fn link(&self) -> Option<&ParentLink> {
        match self {
            TierEntry::Child(e) => Some(&e.link),
            _ => None,
        }
    }

    /// Return the reference switch's tier.
    pub fn tier(&self) -> Tier {
        match self {
            TierEntry::Flat => Tier::Flat,
            TierEntry::Parent => Tier::Parent,
            TierEntry::Child(e) => Tier::Child(e.link),
        }
    }

    /// Return the world size the job's ranks state (the whole job's at a child), given
    /// the job table's `world`.
    pub fn wire_world(&self, world: u16) -> u16 {
        self.link().map_or(world, |l| l.world)
    }

    /// Return the global rank of member 0.
    pub fn rank_lo(&self) -> u16 {
        self.link().map_or(0, |l| l.rank_lo)
    }

    /// Return the switch port the parent hangs off (0 but at a child).
    pub fn parent_port(&self) -> u16 {
        match self {
            TierEntry::Child(e) => e.parent.port,
            _ => 0,
        }
    }

    /// Return whether a member's `OVERFLOW` flag is kept (a parent), besides the
    /// non-finite kinds every switch keeps (§5.4).
    pub fn keeps_overflow(&self) -> bool {
        *self == TierEntry::Parent
    }
}

/// The two tables, indexed by job table entry.
#[derive(Debug, Clone)]
pub struct TierSelector {
    parent_link: Box<[TierEntry]>,
}

impl TierSelector {
    /// Make the tables for `jobs` job table entries.
    pub fn new(jobs: usize) -> Self {
        TierSelector {
            parent_link: vec![TierEntry::Flat; jobs].into_boxed_slice(),
        }
    }

    /// Look up job table entry `index`'s tier (`parent_link`).
    pub fn apply(&self, index: u16) -> TierEntry {
        self.parent_link
            .get(usize::from(index))
            .copied()
            .unwrap_or_default()
    }

    /// Look up the job table entry of the child job whose parent's job is `parent_job`
    /// (`child_job`).
    pub fn child_of(&self, parent_job: u16) -> Option<u16> {
        self.parent_link
            .iter()
            .position(|e| e.link().is_some_and(|l| l.job == parent_job))
            .and_then(|i| u16::try_from(i).ok())
    }

    /// Return where the parent switch of the child serving `parent_job` is (the egress
    /// of an Up); nowhere known: the default address.
    pub fn parent_of(&self, parent_job: u16) -> WorkerAddr {
        self.child_of(parent_job)
            .map(|i| self.apply(i))
            .and_then(|e| match e {
                TierEntry::Child(e) => Some(e.parent),
                _ => None,
            })
            .unwrap_or(WorkerAddr::rank_port(0))
    }

    /// Set entry `index`'s tier (control plane: both tables).
    pub fn set(&mut self, index: u16, entry: TierEntry) {
        if let Some(e) = self.parent_link.get_mut(usize::from(index)) {
            *e = entry;
        }
    }
}
