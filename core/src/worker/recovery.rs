//! Loss recovery that asks before it resends (protocol.md §6.1).
//!
//! The paper's recovery is a timeout per slot: every rank of a stuck use resends, though one
//! packet was lost, so one loss costs P resends (and a lost Result holds the slot's next use
//! back at every rank). Here a rank first asks the switch with a 20-byte Probe whether it
//! holds this rank's Contribution to the use; only a rank whose Contribution is missing, or
//! whose Result was lost, resends — or, from a switch that offers `PROBE_RESULTS`, a rank
//! whose Result was lost asks again for the Result itself. A use is found late early, when uses sent after its last
//! send (or Probe) have completed (`REORDER_SENDS`), or when its timer expires; a Probe
//! left unanswered that long is followed by a plain resend, so a switch that answers no
//! Probe, or a lost Probe, costs time but never progress.

use super::slot_state::{Work, NOT_SENT, REORDER_SENDS};
use super::Worker;
use crate::quant::Tensor;
use crate::ranks::WorldSet;
use crate::time::Instant;
use crate::wire::{ProbeFlags, ProbePacket, ProbeReplyRepr, ProbeRepr, SlotState};

impl<B: Tensor, const SLOTS: usize, const QUEUE: usize> Worker<B, SLOTS, QUEUE> {
    /// A use first sent as `completed` has its Result: every use still waiting whose watch
    /// mark (its latest send, Probe or "held" answer) lies more than `REORDER_SENDS` sends
    /// before it is late. A late use is probed; one whose Probe is still unanswered is
    /// resent (the Probe or its answer was lost).
    ///
    /// `oldest_watch` is a lower bound of the watch marks of the uses in flight, so that
    /// Results that come back in send order scan the slots only every few Results.
    pub(super) fn find_gaps(&mut self, completed: u64) {
        if completed == NOT_SENT || completed <= self.oldest_watch + REORDER_SENDS {
            return;
        }
        let mut oldest = completed;
        for i in 0..usize::from(self.config.window) {
            let st = &mut self.slots[i];
            if st.order == NOT_SENT || st.queued || matches!(st.work, Work::Idle { .. }) {
                continue;
            }
            if st.watch + REORDER_SENDS >= completed {
                oldest = oldest.min(st.watch);
                continue;
            }
            self.stats.suspected += 1;
            if !st.late {
                // Being recovered, it holds no room in the window (§6.3).
                st.late = true;
                self.in_flight = self.in_flight.saturating_sub(1);
            }
            if st.checking {
                st.checking = false;
                st.resends += 1;
            } else {
                st.checking = true;
                st.probe_due = true;
            }
            if self.send_queue.push_back(i as u16).is_ok() {
                st.queued = true;
            }
        }
        self.oldest_watch = oldest;
    }

    /// Write the recovery Probe of slot `i`'s current use into `buf`.
    pub(super) fn emit_recovery_probe(&mut self, i: usize, buf: &mut [u8]) -> Option<usize> {
        let c = self.config;
        let st = self.slots.get(i)?;
        if matches!(st.work, Work::Idle { .. }) {
            return None;
        }
        let repr = ProbeRepr {
            job: c.job,
            rank: c.rank,
            slot: c.slot_lo + i as u16,
            ver: (st.seq & 1) as u8,
            seq: st.seq,
            session: self.session,
            flags: if st.fetch {
                ProbeFlags::RESULT
            } else {
                ProbeFlags::NONE
            },
        };
        let len = repr.buffer_len();
        repr.emit(&mut ProbePacket::new_unchecked(buf.get_mut(..len)?));
        Some(len)
    }

    /// The switch answered a recovery Probe: wait if it holds this rank's Contribution to
    /// the use and is still collecting; ask for the Result if the use is complete and the
    /// switch offers `PROBE_RESULTS` (its Result to this rank was lost: the answer came
    /// after it on the same path); otherwise (the Contribution never arrived, or a switch
    /// that answers a resend to a complete use with the stored Result) resend.
    pub(super) fn on_recovery_reply(&mut self, now: Instant, r: &ProbeReplyRepr<'_>) {
        let i = usize::from(r.slot.wrapping_sub(self.config.slot_lo));
        if i >= usize::from(self.config.window) {
            self.stats.ignored += 1;
            return;
        }
        let me = self.config.rank;
        let st = &mut self.slots[i];
        if !st.checking || st.probe_due || u32::from(r.ver) != st.seq & 1 {
            // No Probe of this use is out: an answer to an earlier one.
            self.stats.ignored += 1;
            return;
        }
        st.checking = false;
        let holds_mine = r.seq == st.seq
            && r.state == SlotState::Collecting
            && WorldSet::from_bitmap(r.seen).contains(me);
        if holds_mine {
            // The missing rank recovers the use for all; look again a window of sends
            // (about a round trip) later, in case this rank's Result is then lost.
            st.watch = self.next_order.saturating_sub(1) + u64::from(self.config.window);
            self.stats.probe_waits += 1;
            return;
        }
        let complete = r.seq == st.seq && r.state == SlotState::Complete;
        if complete && self.probe_results && !st.fetch {
            st.checking = true;
            st.probe_due = true;
            st.fetch = true;
            self.stats.fetches += 1;
        } else {
            st.resends += 1;
        }
        if !st.queued && self.send_queue.push_back(i as u16).is_ok() {
            st.queued = true;
        }
        // Lost on the way up (this rank's own Contribution) or down (its Result): a
        // congestion signal only if the controller judges it one (§6.3).
        self.note_loss(now, !complete);
    }
}
