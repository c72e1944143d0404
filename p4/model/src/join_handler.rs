//! `join_handler.p4`: the checks of a Join (protocol.md §3.2–3.3, §4 "Join", §4.1).
//!
//! A Join is checked against the job table entry in the reference's order — job, rank,
//! world size, slot range (the lane must lie in the job's slots, start at a multiple
//! of its length, and be one of the `lanes` the Join states), count — and refused with an
//! Abort naming the first mismatch.
//! A Join that passes goes on to the run tracker (`run_tracker.rs`), which opens or joins
//! the job's run. No key is compared: a Join reaches the handler only from the CPU port,
//! after the controller checked its tag and refused a wrong one (`controller.rs`,
//! protocol.md §4.2).
//!
//! The handler is stateless. On BMv2 the alignment is `slot_lo % slot_count` and the lane
//! `slot_lo / slot_count`; Tofino has no divider, so the TNA program looks the pair up in a
//! table the control plane fills (`lane_alignment`), whose entry gives the lane.

use switchml_core::wire::AbortReason;

use crate::classifier::JobEntry;
use crate::headers::JoinHeader;

/// What the join handler decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JoinDecision {
    /// Answer with an Abort: reason and detail.
    Refuse(AbortReason, u16),
    /// The Join of `rank` goes on to the run tracker.
    Run {
        /// The sender's rank.
        rank: u16,
    },
}

/// The join handler (stateless: the run's registers belong to the run tracker).
#[derive(Debug, Clone, Copy, Default)]
pub struct JoinHandler;

/// The bitmap of ranks `0..world`.
pub fn full_mask(world: u16) -> u64 {
    match world {
        0 => 0,
        1..=63 => (1u64 << world) - 1,
        _ => u64::MAX,
    }
}

impl JoinHandler {
    /// Check a Join to `job`, whose ranks state `world` (the whole job's at a child switch,
    /// protocol.md §7), from a sender whose member index is `rank` if the worker table
    /// knows it, on a switch that accepts up to `max_count` values.
    pub fn apply(
        job: &JobEntry,
        world: u16,
        rank: Option<u16>,
        h: &JoinHeader,
        max_count: u16,
    ) -> JoinDecision {
        let c = job.config;
        let Some(rank) = rank else {
            return JoinDecision::Refuse(AbortReason::UnknownRank, world);
        };
        let refusal = if h.world != world {
            Some((AbortReason::WorldMismatch, world))
        } else if h.slot_count == 0
            || u32::from(h.slot_lo) + u32::from(h.slot_count) > u32::from(c.slot_count)
            || h.slot_lo % h.slot_count != 0
            || h.slot_lo / h.slot_count >= h.lanes
        {
            Some((AbortReason::SlotRange, c.slot_count))
        } else if h.count == 0 || h.count > max_count {
            Some((AbortReason::CountTooLarge, max_count))
        } else {
            None
        };
        match refusal {
            Some((reason, detail)) => JoinDecision::Refuse(reason, detail),
            None => JoinDecision::Run { rank },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use switchml_core::switch::JobConfig;

    #[test]
    fn joins_are_checked_in_the_reference_order() {
        let job = JobEntry {
            index: 0,
            config: JobConfig {
                id: 7,
                world: 2,
                slot_lo: 0,
                slot_count: 12,
                key: 0xAB,
            },
            group: 1,
        };
        let signed = switchml_core::wire::JoinRepr {
            job: 7,
            rank: 1,
            world: 2,
            slot_lo: 4,
            slot_count: 4,
            count: 64,
            lanes: 2,
            nonce: 1,
            cookie: 5,
            tag: [0; 16],
        }
        .sign(0xAB);
        let h = JoinHeader {
            world: 2,
            slot_lo: 4,
            slot_count: 4,
            count: 64,
            lanes: 2,
            nonce: 1,
            job: 7,
            rank: 1,
            cookie: 5,
            tag: signed.tag,
        };
        let resign = |h: JoinHeader| {
            let r = switchml_core::wire::JoinRepr {
                job: h.job,
                rank: h.rank,
                world: h.world,
                slot_lo: h.slot_lo,
                slot_count: h.slot_count,
                count: h.count,
                lanes: h.lanes,
                nonce: h.nonce,
                cookie: h.cookie,
                tag: [0; 16],
            }
            .sign(0xAB);
            JoinHeader { tag: r.tag, ..h }
        };
        let check = |rank, h| JoinHandler::apply(&job, job.config.world, rank, &h, 256);
        assert_eq!(check(Some(1), h), JoinDecision::Run { rank: 1 });
        let refuse = JoinDecision::Refuse;
        // No key compared (the controller checked the tag): a Join with a tag that no key
        // made is refused here only for what else is wrong with it.
        let unsigned = JoinHeader { tag: [0; 16], ..h };
        assert_eq!(check(Some(1), unsigned), JoinDecision::Run { rank: 1 });
        assert_eq!(check(None, h), refuse(AbortReason::UnknownRank, 2));
        let world = resign(JoinHeader { world: 3, ..h });
        assert_eq!(check(Some(1), world), refuse(AbortReason::WorldMismatch, 2));
        // Empty, past the job's slots, not a lane, not one of the Join's 2 lanes.
        for (slot_lo, slot_count) in [(0, 0), (8, 8), (2, 4), (3, 2), (8, 4)] {
            let range = resign(JoinHeader {
                slot_lo,
                slot_count,
                ..h
            });
            assert_eq!(check(Some(1), range), refuse(AbortReason::SlotRange, 12));
        }
        let one_lane = resign(JoinHeader { lanes: 1, ..h });
        assert_eq!(
            check(Some(1), one_lane),
            refuse(AbortReason::SlotRange, 12),
            "lane 1 of 1"
        );
        for count in [0, 257] {
            let count = resign(JoinHeader { count, ..h });
            assert_eq!(
                check(Some(1), count),
                refuse(AbortReason::CountTooLarge, 256)
            );
        }
    }
}
