//! The worker's control messages: Join until every rank is in, Probe when a slot stalls,
//! Abort in both directions.

use super::{Phase, StallReport, Timer, Worker, WorkerError};
use crate::quant::Tensor;
use crate::ranks::WorldSet;
use crate::time::Instant;
use crate::wire::{
    AbortPacket, AbortReason, AbortRepr, CookieRepr, JoinFlags, JoinPacket, JoinReplyRepr,
    JoinRepr, LeavePacket, LeaveRepr, ProbeFlags, ProbePacket, ProbeReplyRepr, ProbeRepr,
    SlotState,
};

impl<B: Tensor, const SLOTS: usize, const QUEUE: usize> Worker<B, SLOTS, QUEUE> {
    pub(super) fn emit_join(&mut self, now: Instant, buf: &mut [u8]) -> Option<usize> {
        let c = self.config;
        let repr = JoinRepr {
            job: c.job,
            rank: c.rank,
            world: c.world,
            slot_lo: c.slot_lo,
            slot_count: c.window,
            count: c.count,
            lanes: c.lanes,
            nonce: c.nonce,
            cookie: self.cookie,
            tag: [0; crate::auth::TAG_LEN],
        }
        .sign(c.key);
        let len = repr.buffer_len();
        let Some(out) = buf.get_mut(..len) else {
            self.fail(WorkerError::BufferTooSmall { need: len });
            return None;
        };
        repr.emit(&mut JoinPacket::new_unchecked(out));
        if !self.join_due_to_cookie {
            self.cookie_resends = 0;
        }
        self.join_due = false;
        self.join_due_to_cookie = false;
        // A joining lane is heard by its Joins: at least one a keep-alive interval (§4.3).
        let interval = c.join_interval.min(c.keep_alive);
        self.timers.set(Timer::JoinResend, now + interval);
        Some(len)
    }

    /// The switch's Cookie for this lane (§3.10, §4.2): the next Join carries it. Only an
    /// answer to this process's Join counts; the first new cookie since the last timed Join
    /// sends the Join again at once (and a second one, for a run that opened in between),
    /// any later one waits for the timer.
    pub(super) fn on_cookie(&mut self, c: &CookieRepr) {
        if self.phase != Phase::Joining || c.nonce != self.config.nonce {
            self.stats.ignored += 1;
            return;
        }
        if c.cookie == self.cookie {
            return;
        }
        self.cookie = c.cookie;
        // Two: a run that opened between the Cookie and the Join with it makes the switch
        // issue another (the cookie names the run, §4.2).
        if self.cookie_resends < 2 {
            self.cookie_resends += 1;
            self.join_due = true;
            self.join_due_to_cookie = true;
        }
    }

    pub(super) fn on_join_reply(&mut self, now: Instant, r: &JoinReplyRepr<'_>) {
        // Only an answer to this process's own Join, or the completion of the run it is in:
        // a new process must not take the run it replaces (protocol.md §4.1).
        let mine = r.nonce == self.config.nonce;
        let completes_my_run =
            r.flags.contains(JoinFlags::COMPLETE) && self.session != 0 && r.session == self.session;
        if self.phase != Phase::Joining {
            return;
        }
        if !(mine || completes_my_run) {
            self.stats.ignored += 1;
            return;
        }
        if !self.check_epoch(r.epoch) {
            return;
        }
        if r.world != self.config.world {
            self.fail(WorkerError::Refused {
                reason: AbortReason::WorldMismatch,
                detail: r.world,
            });
            return;
        }
        if r.max_count < self.config.count {
            self.fail(WorkerError::Refused {
                reason: AbortReason::CountTooLarge,
                detail: r.max_count,
            });
            return;
        }
        // The run's agreed lane shape (§4.1): the switch refuses a Join of another shape, so
        // an answer naming this Join's nonce with another shape is a broken switch.
        let shape = if r.lane_slots != self.config.window {
            Some((AbortReason::LaneMismatch, r.lane_slots))
        } else if r.count != self.config.count {
            Some((AbortReason::ChunkMismatch, r.count))
        } else {
            None
        };
        if let Some((reason, detail)) = shape {
            self.fail(WorkerError::Refused { reason, detail });
            return;
        }
        // The run this lane is in; a run replaced while joining gives the newer one.
        self.session = r.session;
        self.shards = u16::from(r.shards).max(1);
        self.probe_results = r.flags.contains(JoinFlags::PROBE_RESULTS);
        self.joined = Some(WorldSet::from_bitmap(r.joined));
        if r.flags.contains(JoinFlags::COMPLETE) {
            crate::trace::info!(
                "job {} rank {}: every rank joined (epoch {})",
                r.job,
                self.config.rank,
                r.epoch
            );
            self.phase = Phase::Running;
            self.joined_event = true;
            self.timers.stop(Timer::JoinResend);
            self.timers.stop(Timer::JoinDeadline);
            self.timers
                .set(Timer::KeepAlive, now + self.config.keep_alive);
        }
    }

    /// The Join reached a shard that does not serve this lane (§1.1): move to the lane's
    /// shard and join there at once. The same answer again (a Join that was already on its
    /// way) changes nothing, nor does one that names fewer than two shards; a switch that
    /// keeps refusing ends in the join timeout.
    fn redirect(&mut self, shards: u16) {
        // A switch of one shard serves every lane: such an answer is nonsense, ignored.
        if shards <= 1 || shards == self.shards {
            self.stats.ignored += 1;
            return;
        }
        self.shards = shards;
        let shard = crate::shard::shard_of_lane(self.lane(), shards);
        crate::trace::info!(
            "job {} rank {}: the switch has {} shards; lane {} moves to shard {}",
            self.config.job,
            self.config.rank,
            shards,
            self.lane(),
            shard
        );
        self.redirect_event = Some(shard);
        self.join_due = true;
    }

    /// Record the switch's epoch; fail if it changed. Return whether to go on.
    fn check_epoch(&mut self, epoch: u32) -> bool {
        match self.epoch {
            None => {
                self.epoch = Some(epoch);
                true
            }
            Some(old) if old == epoch => true,
            Some(old) => {
                self.fail(WorkerError::SwitchRestarted { old, new: epoch });
                false
            }
        }
    }

    pub(super) fn emit_probe(&mut self, now: Instant, buf: &mut [u8]) -> Option<usize> {
        let c = self.config;
        let p = self.probe.as_mut()?;
        let repr = ProbeRepr {
            job: c.job,
            rank: c.rank,
            slot: c.slot_lo + p.slot,
            ver: (p.seq & 1) as u8,
            seq: p.seq,
            session: self.session,
            flags: ProbeFlags::NONE,
        };
        let len = repr.buffer_len();
        let out = buf.get_mut(..len)?;
        repr.emit(&mut ProbePacket::new_unchecked(out));
        p.due = false;
        p.sent += 1;
        self.timers.set(Timer::Probe, now + c.max_rto);
        Some(len)
    }

    /// Write a keep-alive (protocol.md §4.3): a Probe of the lane's first slot's current
    /// use, which needs no state of its own. Its answer is read like any Probe's: as the
    /// answer to a recovery Probe of that use if one is out, else not at all.
    pub(super) fn emit_keep_alive(&mut self, buf: &mut [u8]) -> Option<usize> {
        let c = self.config;
        let seq = self.slots.first()?.seq;
        let repr = ProbeRepr {
            job: c.job,
            rank: c.rank,
            slot: c.slot_lo,
            ver: (seq & 1) as u8,
            seq,
            session: self.session,
            flags: ProbeFlags::NONE,
        };
        let len = repr.buffer_len();
        repr.emit(&mut ProbePacket::new_unchecked(buf.get_mut(..len)?));
        self.keep_alive_due = false;
        self.stats.keep_alives += 1;
        Some(len)
    }

    pub(super) fn on_probe_reply(&mut self, now: Instant, r: &ProbeReplyRepr<'_>) {
        if !self.check_epoch(r.epoch) {
            return;
        }
        let stall = self
            .probe
            .filter(|p| r.slot == self.config.slot_lo + p.slot && u32::from(r.ver) == p.seq & 1);
        let Some(p) = stall else {
            self.on_recovery_reply(now, r);
            return;
        };
        let missing = if r.seq == p.seq && r.state != SlotState::Idle {
            WorldSet::from_bitmap(r.seen).complement_within(self.config.world)
        } else {
            WorldSet::all(self.config.world)
        };
        let report = StallReport::Probed {
            state: r.state,
            switch_seq: r.seq,
            remaining: r.remaining,
            missing,
        };
        // The switch holds this rank's Contribution and waits for others': they are alive
        // as far as the switch knows, which ends the run itself if one goes silent (§4.3).
        // A busy peer is waited for, up to the user's timeout of the use.
        let holds_mine = r.seq == p.seq
            && r.state == SlotState::Collecting
            && !missing.contains(self.config.rank);
        let i = usize::from(p.slot);
        let waited = self.slots.get(i).map(|st| now - st.sent_at);
        if holds_mine && waited.is_some_and(|w| w < self.config.timeout) {
            self.probe = None;
            self.timers.stop(Timer::Probe);
            self.stats.peer_waits += 1;
            if let Some(st) = self.slots.get_mut(i) {
                st.tries = 0;
                let rto = st.rto;
                self.slot_timers.arm(i, now + rto);
            }
            return;
        }
        if let Some(err) = self.stall_report(report) {
            self.fail(err);
        }
    }

    pub(super) fn on_abort(&mut self, a: &AbortRepr) {
        let me = self.config.rank;
        if self.phase != Phase::Joining && refuses_a_join_only(a.reason) {
            // It answers a Join, never a run: once joined, a copy is stale (§3.6), even
            // though it names the nonce, which is the session of a run this process opened
            // first (`nonce + 0`, §4.1).
            self.stats.ignored += 1;
            return;
        }
        if a.reason == AbortReason::WrongShard {
            self.redirect(a.detail);
            return;
        }
        if a.reason == AbortReason::WorkerFailed {
            if a.rank != me {
                self.fail(WorkerError::PeerAborted {
                    rank: a.rank,
                    waiting_for: (a.detail != 0xFFFF).then_some(a.detail),
                });
            }
            return;
        }
        if a.reason == AbortReason::ParentFailed {
            self.fail(WorkerError::ParentFailed {
                child: (a.detail != 0xFFFF).then_some(a.detail),
            });
            return;
        }
        if a.rank != me && a.rank != crate::wire::RANK_ALL {
            self.stats.ignored += 1;
            return;
        }
        let forgot = matches!(
            a.reason,
            AbortReason::UnknownJob | AbortReason::SessionEnded
        );
        if self.epoch.is_some_and(|e| e != a.epoch) && forgot {
            // The switch no longer knows the job, or the run, it once answered for, and its
            // epoch changed: it restarted (and lost the run, even if the job is registered
            // again).
            self.fail(WorkerError::SwitchRestarted {
                old: self.epoch.unwrap_or(0),
                new: a.epoch,
            });
            return;
        }
        self.fail(WorkerError::Refused {
            reason: a.reason,
            detail: a.detail,
        });
    }

    pub(super) fn emit_abort(&mut self, waiting_for: u16, buf: &mut [u8]) -> Option<usize> {
        let c = self.config;
        let repr = AbortRepr {
            job: c.job,
            rank: c.rank,
            reason: AbortReason::WorkerFailed,
            detail: waiting_for,
            epoch: 0,
            session: self.session,
        };
        let len = repr.buffer_len();
        let out = buf.get_mut(..len)?;
        repr.emit(&mut AbortPacket::new_unchecked(out));
        Some(len)
    }

    pub(super) fn emit_leave(&mut self, buf: &mut [u8]) -> Option<usize> {
        let c = self.config;
        let repr = LeaveRepr {
            job: c.job,
            rank: c.rank,
            session: self.session,
        };
        let len = repr.buffer_len();
        repr.emit(&mut LeavePacket::new_unchecked(buf.get_mut(..len)?));
        Some(len)
    }
}

/// Whether only a Join draws an Abort for `reason` (§3.6, §4): a Probe's refusals
/// (`UnknownJob`, `SessionEnded`, `UnknownRank`, `SlotRange`) and a run's end are not.
fn refuses_a_join_only(reason: AbortReason) -> bool {
    matches!(
        reason,
        AbortReason::WrongShard
            | AbortReason::WorldMismatch
            | AbortReason::CountTooLarge
            | AbortReason::BadKey
            | AbortReason::LaneMismatch
            | AbortReason::ChunkMismatch
            | AbortReason::LaneCountMismatch
    )
}
