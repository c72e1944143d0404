//! The lane's side of the congestion window (protocol.md §6.3): which fresh use may be
//! sent now, and which waits for a Result.
//!
//! The rule that keeps a job from deadlocking: every rank gives its uses the same order
//! (tensor, chunk, a priming use before its chunk's data), and a lane always may send its
//! **oldest** incomplete use, whatever its window. The job's oldest incomplete use is then
//! sent by every rank, so it completes, and so on; a window held by younger uses at one
//! rank can never wait on another rank that holds its window for a different use.
//! Resends and Probes of uses already sent never wait for the window. With the window on,
//! every fresh use waits among the held ones and they go out oldest first, so every rank
//! sends in the same order whatever its timing.

use super::age_heap::Age;
use super::congestion::Decrease;
use super::slot_state::{SlotState, Work};
use super::Worker;
use crate::quant::Tensor;
use crate::time::Instant;

impl<B: Tensor, const SLOTS: usize, const QUEUE: usize> Worker<B, SLOTS, QUEUE> {
    /// Give slot `i` its next use (or make it idle), keeping the window's order of the
    /// slots' uses.
    pub(super) fn set_work(&mut self, i: usize, work: Work) {
        let slots = &self.slots;
        self.active_by_age.remove(i, |j| age_of(slots, j));
        self.slots[i].work = work;
        if self.cwnd.is_on() && work.age().is_some() {
            let slots = &self.slots;
            self.active_by_age.insert(i, |j| age_of(slots, j));
        }
    }

    /// Return whether slot `i`'s fresh use may be sent now: the window has room, or it is
    /// the lane's oldest incomplete use.
    pub(super) fn window_admits(&self, i: usize) -> bool {
        if !self.cwnd.is_on() || self.in_flight < self.cwnd.window() {
            return true;
        }
        let Some(age) = self.slots[i].work.age() else {
            return true;
        };
        // Ages are unique (one slot per chunk), so the oldest of the slots with a use is
        // older than every other one.
        let oldest = self.active_by_age.oldest() == Some(i);
        debug_assert_eq!(
            oldest,
            self.slots[..usize::from(self.config.window)]
                .iter()
                .enumerate()
                .filter(|&(j, _)| j != i)
                .filter_map(|(_, st)| st.work.age())
                .all(|other| age < other),
            "the heap of uses by age agrees with a scan of the slots"
        );
        oldest
    }

    /// Hold slot `i`'s fresh use until it is the oldest held and the window has room.
    pub(super) fn hold(&mut self, i: usize) {
        if !self.slots[i].held {
            self.slots[i].held = true;
            if self.slots[i].work.age().is_some() {
                let slots = &self.slots;
                self.held_by_age.insert(i, |j| age_of(slots, j));
            }
            if self.in_flight >= self.cwnd.window() {
                self.stats.cwnd_waits += 1;
            }
        }
    }

    /// Take slot `i`'s use out of the held ones: it is being sent.
    pub(super) fn unhold(&mut self, i: usize) {
        if self.slots[i].held {
            self.slots[i].held = false;
            let slots = &self.slots;
            self.held_by_age.remove(i, |j| age_of(slots, j));
        }
    }

    /// Return the held slot with the oldest use: every rank sends its fresh uses in the
    /// same order, so that their Results come back in it and a use is found late only when
    /// something was lost (§6.1).
    pub(super) fn oldest_held(&self) -> Option<usize> {
        let oldest = self.held_by_age.oldest();
        debug_assert_eq!(
            oldest,
            self.slots[..usize::from(self.config.window)]
                .iter()
                .enumerate()
                .filter(|(_, st)| st.held)
                .filter_map(|(j, st)| Some((st.work.age()?, j)))
                .min()
                .map(|(_, j)| j),
            "the heap of held uses by age agrees with a scan of the slots"
        );
        oldest
    }

    /// Another lane of this rank, which shares its path to the switch, halved its window
    /// for congestion (its [`backoffs_to_share`](Self::backoffs_to_share) grew): halve
    /// this one too, at most once a round trip, so that the rank's lanes back off as one
    /// flow does (protocol.md §6.3). The adapter passes the news between its lanes.
    pub fn handle_lane_backoff(&mut self, now: Instant) {
        let decrease = self.cwnd.on_lane_backoff(now, self.rtt.srtt());
        self.count_decrease(decrease);
    }

    /// Return this lane's backoffs that the rank's other lanes follow (§6.3, "A rank's
    /// lanes are one flow"): its halvings on a mark or on a loss judged congestion, never
    /// one it took from another lane (so two lanes cannot echo one) nor one on delay alone
    /// (which every lane sees for itself).
    pub fn backoffs_to_share(&self) -> u64 {
        self.stats.cwnd_mark_decreases + self.stats.cwnd_loss_decreases
    }

    /// A use was found lost; `upstream`: its Contribution never reached the switch.
    pub(super) fn note_loss(&mut self, now: Instant, upstream: bool) {
        let decrease = self.cwnd.on_loss(now, self.rtt.srtt(), upstream);
        self.count_decrease(decrease);
    }

    /// Count a decrease of the window, and show the window in the counters.
    pub(super) fn count_decrease(&mut self, decrease: Option<Decrease>) {
        match decrease {
            Some(Decrease::Mark) => self.stats.cwnd_mark_decreases += 1,
            Some(Decrease::Delay) => self.stats.cwnd_delay_decreases += 1,
            Some(Decrease::Loss) => self.stats.cwnd_loss_decreases += 1,
            Some(Decrease::Lane) => self.stats.cwnd_lane_decreases += 1,
            None => {}
        }
        self.stats.cwnd = u64::from(self.cwnd.window());
    }
}

/// Slot `j`'s use's age (an idle slot, never in a heap, sorts last).
fn age_of(slots: &[SlotState], j: usize) -> Age {
    slots
        .get(j)
        .and_then(|st| st.work.age())
        .unwrap_or((u64::MAX, u32::MAX, u8::MAX))
}
