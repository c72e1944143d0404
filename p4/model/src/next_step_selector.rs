//! `next_step_selector.p4`: what becomes of a Contribution, and how many passes it takes.
//!
//! From the use check, the bitmap and the countdown it picks the reference's outcome in
//! the reference's order (protocol.md §4 steps 2–6): a completed use answers a sender of
//! its count with the stored result, then duplicates and count mismatches drop, and anything else is
//! aggregated. It then plans the passes over the blocks of
//! [`VALUES_PER_PASS`](crate::VALUES_PER_PASS) values, as the original SwitchML's consume
//! and harvest passes do: only the block at the front of the packet is in the header
//! vector, so pass `b < blocks` loads, adds or reads block `b` ("consume") and, unless it
//! is the last block, drops it from the packet, which brings block `b + 1` to the front
//! for the next pass. A packet that answers (a Retransmit, or the Aggregate that completes
//! the use) then reads the earlier blocks back, last first, each put in front of the
//! blocks already in the packet ("harvest"): `2 · blocks − 1` passes in all.

use crate::processor::Update;
use crate::use_checker::Use;
use crate::workers_counter::Countdown;
use crate::VALUES_PER_PASS;

/// The fate of a Contribution that was not stale.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// The use is complete: unicast the stored result with `RETRANSMIT`.
    Retransmit,
    /// The rank already contributed to this incomplete use.
    Duplicate,
    /// The count differs from the use's.
    CountMismatch,
    /// Added into the use.
    Aggregate {
        /// It began the use: load rather than add.
        first: bool,
        /// It completed the use: multicast the result.
        last: bool,
    },
}

impl Outcome {
    /// Return what the value, exponent and overflow registers do, if anything.
    pub fn update(self) -> Option<Update> {
        match self {
            Outcome::Retransmit => Some(Update::Read),
            Outcome::Aggregate { first: true, .. } => Some(Update::Load),
            Outcome::Aggregate { first: false, .. } => Some(Update::Add),
            Outcome::Duplicate | Outcome::CountMismatch => None,
        }
    }

    /// Return whether the packet is answered with the use's values (and so harvests).
    pub fn answers(self) -> bool {
        matches!(
            self,
            Outcome::Retransmit | Outcome::Aggregate { last: true, .. }
        )
    }
}

/// The next step selector (stateless).
#[derive(Debug, Clone, Copy, Default)]
pub struct NextStepSelector;

impl NextStepSelector {
    /// Decide the outcome of a current or beginning use; `seen`: the rank's bit was set;
    /// `count_ok`: the packet's count is the use's.
    pub fn outcome(use_: Use, seen: bool, count_ok: bool, countdown: Countdown) -> Outcome {
        if countdown.complete && count_ok {
            Outcome::Retransmit
        } else if countdown.complete {
            Outcome::CountMismatch
        } else if seen {
            Outcome::Duplicate
        } else if !countdown.counted {
            Outcome::CountMismatch
        } else {
            Outcome::Aggregate {
                first: use_ == Use::Begin,
                last: countdown.remaining == 0,
            }
        }
    }

    /// Return the number of value blocks of a packet of `count` values.
    pub fn blocks(count: u16) -> usize {
        usize::from(count).div_ceil(VALUES_PER_PASS)
    }

    /// Return the passes a packet of a use of `count` values takes: one per block to
    /// consume, at least one, and when it `answers`, one per earlier block to harvest.
    pub fn passes(count: u16, answers: bool) -> usize {
        let blocks = Self::blocks(count);
        if answers && blocks > 1 {
            2 * blocks - 1
        } else {
            blocks.max(1)
        }
    }

    /// Return the block of values pass `pass` handles, if any, and whether it harvests
    /// (reads back) rather than consumes it: block `pass` while consuming, then the blocks
    /// before the last, last first.
    pub fn block(count: u16, pass: usize) -> Option<(usize, bool)> {
        let blocks = Self::blocks(count);
        if pass < blocks {
            Some((pass, false))
        } else if pass + 2 <= 2 * blocks {
            Some((2 * blocks - 2 - pass, true))
        } else {
            None
        }
    }

    /// Return the pass that takes the use's exponent and overflow flag: the one that
    /// consumes the last block (pass 0 when there is none).
    pub fn last_value_pass(count: u16) -> usize {
        Self::blocks(count).saturating_sub(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passes_cover_the_blocks() {
        use crate::{MAX_COUNT, MAX_PASSES, VALUES_PER_PASS};
        let v = VALUES_PER_PASS as u16;
        for answers in [false, true] {
            assert_eq!(NextStepSelector::passes(0, answers), 1);
            assert_eq!(NextStepSelector::passes(3, answers), 1);
            assert_eq!(NextStepSelector::passes(v, answers), 1);
        }
        assert_eq!(NextStepSelector::passes(v + 1, false), 2);
        assert_eq!(NextStepSelector::passes(v + 1, true), 3);
        assert_eq!(NextStepSelector::passes(MAX_COUNT, true), MAX_PASSES);
        assert_eq!(NextStepSelector::block(0, 0), None);
        // Three blocks, answered: consume 0, 1, 2, then harvest 1, 0.
        let plan: Vec<_> = (0..NextStepSelector::passes(3 * v, true))
            .map(|p| NextStepSelector::block(3 * v, p))
            .collect();
        let expected = [(0, false), (1, false), (2, false), (1, true), (0, true)];
        assert_eq!(plan, expected.map(Some));
        assert_eq!(NextStepSelector::last_value_pass(3 * v), 2);
    }
}
