//! `parent_result.p4`: what a child switch takes from its parent (protocol.md §7), the
//! checks no register holds, in the reference's order (`Switch::parent_result`,
//! `Switch::parent_join_reply`). A Result must name this child's member index or `0xFFFF`,
//! a count the switch takes, the version of its use's parity and a slot of the job; it then
//! reads the slot version as a Probe does, and [`ParentResult::decide`] (the next step
//! selector's pass 0 in P4) drops it unless the version holds the use complete with the
//! same count and not yet relayed. A JoinReply must name the member index or `0xFFFF` and
//! the parent's world.

use switchml_core::switch::{DropReason, ParentLink};
use switchml_core::wire::RANK_ALL;

use crate::headers::{DataHeader, JoinReplyHeader};
use crate::job_counters::JobEvent;

/// The stateless checks (the registers belong to the controls that update them).
#[derive(Debug, Clone, Copy, Default)]
pub struct ParentResult;

impl ParentResult {
    /// Check a Result from `rank` for the child of `link`, whose job has `slot_count`
    /// slots, on a switch that takes up to `max_count` values.
    pub fn apply(
        link: &ParentLink,
        rank: u16,
        d: &DataHeader,
        max_count: u16,
        slot_count: u16,
    ) -> Option<DropReason> {
        if !Self::ours(link, rank) {
            Some(DropReason::UnknownRank)
        } else if d.count > max_count {
            Some(DropReason::CountTooLarge)
        } else if u32::from(d.ver) != d.seq & 1 {
            Some(DropReason::BadVersion)
        } else if d.slot >= slot_count {
            Some(DropReason::SlotRange)
        } else {
            None
        }
    }

    /// Decide on a Result that passed [`ParentResult::apply`], given whether the version
    /// `holds` its use complete, holds `count` values and was already `relayed`: `None`
    /// stores it, or the event counted and the drop.
    pub fn decide(
        holds: bool,
        count: u16,
        d: &DataHeader,
        relayed: bool,
    ) -> Option<(JobEvent, DropReason)> {
        if !holds {
            Some((JobEvent::Stale, DropReason::Stale))
        } else if count != d.count {
            Some((JobEvent::Rejected, DropReason::CountMismatch))
        } else if relayed {
            Some((JobEvent::Duplicate, DropReason::Duplicate))
        } else {
            None
        }
    }

    /// Check a JoinReply from `rank` for the child of `link`.
    pub fn join_reply(link: &ParentLink, rank: u16, r: &JoinReplyHeader) -> bool {
        Self::ours(link, rank) && r.world == link.members
    }

    fn ours(link: &ParentLink, rank: u16) -> bool {
        rank == link.member || rank == RANK_ALL
    }
}
