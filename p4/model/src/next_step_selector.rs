//! `next_step_selector.p4`: what becomes of a Contribution, and how many passes it takes.
//!
//! From the use check, the bitmap and the countdown it picks the reference's outcome in
//! the reference's order (protocol.md §4 steps 2–6): a completed use answers the sender
//! with the stored result, then duplicates and count mismatches drop, and anything else is
//! aggregated. It then plans the passes: one per block of
//! [`VALUES_PER_PASS`](crate::VALUES_PER_PASS) values to load, add or read.

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
}

/// The next step selector (stateless).
#[derive(Debug, Clone, Copy, Default)]
pub struct NextStepSelector;

impl NextStepSelector {
    /// Decide the outcome of a current or beginning use; `seen`: the rank's bit was set.
    pub fn outcome(use_: Use, seen: bool, countdown: Countdown) -> Outcome {
        if countdown.complete {
            Outcome::Retransmit
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

    /// Return the passes a use of `count` values needs: one per block, at least one.
    pub fn passes(count: u16) -> usize {
        Self::blocks(count).max(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passes_cover_the_blocks() {
        assert_eq!(NextStepSelector::passes(0), 1);
        assert_eq!(NextStepSelector::passes(3), 1);
        assert_eq!(NextStepSelector::passes(64), 1);
        assert_eq!(NextStepSelector::passes(65), 2);
        assert_eq!(NextStepSelector::passes(200), 4);
        assert_eq!(NextStepSelector::passes(256), 4);
    }
}
