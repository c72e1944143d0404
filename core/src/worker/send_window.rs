//! The lane's side of the congestion window (protocol.md §6.3): which fresh use may be
//! sent now, and which waits for a Result.
//!
//! The rule that keeps a job from deadlocking: every rank gives its uses the same order
//! (tensor, chunk, a priming use before its chunk's data), and a lane always may send its
//! **oldest** incomplete use, whatever its window. The job's oldest incomplete use is then
//! sent by every rank, so it completes, and so on; a window held by younger uses at one
//! rank can never wait on another rank that holds its window for a different use.
//! Resends and Probes of uses already sent never wait for the window.

use super::congestion::Decrease;
use super::Worker;
use crate::quant::Tensor;
use crate::time::Instant;

impl<B: Tensor, const SLOTS: usize, const QUEUE: usize> Worker<B, SLOTS, QUEUE> {
    /// Return whether slot `i`'s fresh use may be sent now: the window has room, or it is
    /// the lane's oldest incomplete use.
    pub(super) fn window_admits(&self, i: usize) -> bool {
        if !self.cwnd.is_on() || self.in_flight < self.cwnd.window() {
            return true;
        }
        let Some(age) = self.slots[i].work.age() else {
            return true;
        };
        self.slots[..usize::from(self.config.window)]
            .iter()
            .enumerate()
            .filter(|&(j, _)| j != i)
            .filter_map(|(_, st)| st.work.age())
            .all(|other| age < other)
    }

    /// Give held uses back to the send queue, oldest first, while the window has room, and
    /// the oldest incomplete use of the lane in any case.
    pub(super) fn release_held(&mut self) {
        let mut room = self.cwnd.window().saturating_sub(self.in_flight);
        while self.held > 0 {
            let mut oldest_held = None;
            let mut oldest_other = None;
            for (j, st) in self.slots[..usize::from(self.config.window)]
                .iter()
                .enumerate()
            {
                let Some(age) = st.work.age() else { continue };
                if st.held {
                    if oldest_held.is_none_or(|(_, a)| age < a) {
                        oldest_held = Some((j, age));
                    }
                } else if oldest_other.is_none_or(|a| age < a) {
                    oldest_other = Some(age);
                }
            }
            let Some((j, age)) = oldest_held else {
                self.held = 0;
                return;
            };
            if room == 0 && oldest_other.is_some_and(|a| a < age) {
                return;
            }
            room = room.saturating_sub(1);
            self.held -= 1;
            let st = &mut self.slots[j];
            st.held = false;
            if !st.queued && self.send_queue.push_back(j as u16).is_ok() {
                st.queued = true;
            }
        }
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
            None => {}
        }
        self.stats.cwnd = u64::from(self.cwnd.window());
    }
}
