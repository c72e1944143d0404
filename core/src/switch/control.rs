//! Control messages at the switch: Join (rendezvous and the run's lifecycle), Probe (who is
//! missing), Status (for `switchml doctor`), Abort, Leave.
//!
//! These are what turn the original's silent hangs into named errors: a worker learns at
//! join time that its key, job, rank, world size or slot range is wrong, and a stalled worker
//! learns which ranks never contributed. They also admit the job's ranks: a Join must carry
//! a tag made with the job's key (§4.2), and every later message the session of the run it
//! joined (§4.1).

mod replies;

pub(super) use replies::join_flags;
pub(crate) use replies::{emit_abort, max_reply_len};

use super::pool::SlotVersion;
use super::run::{JoinStep, LaneShape};
use super::{answer_lost_result, DropReason, Switch, Verdict};
use crate::ranks::bitmap_len;
use crate::wire::{
    AbortPacket, AbortReason, AbortRepr, DataKind, DataRepr, Flags, JoinPacket, JoinReplyPacket,
    JoinReplyRepr, JoinRepr, LeavePacket, LeaveRepr, ProbeFlags, ProbePacket, ProbeReplyPacket,
    ProbeReplyRepr, ProbeRepr, SlotState, StatusFlags, StatusPacket, StatusReplyPacket,
    StatusReplyRepr, StatusRepr, MAX_BITMAP_LEN, RANK_ALL,
};

impl<const K: usize, const WORDS: usize, const JOBS: usize> Switch<'_, K, WORDS, JOBS> {
    /// Answer `to` with an Abort saying why it cannot take part (`session`: the run the
    /// refused message named, or 0).
    fn refuse(
        &self,
        job: u16,
        to: u16,
        reason: AbortReason,
        detail: u16,
        session: u32,
        out: &mut [u8],
    ) -> Verdict {
        match emit_abort(job, to, reason, detail, self.epoch, session, out) {
            Some(len) => Verdict::Unicast { job, rank: to, len },
            None => Verdict::Drop(DropReason::OutputTooSmall),
        }
    }

    /// A Join: check its tag under the job's key, then every field against the job (constant work, whatever
    /// the fields say), then let the run decide (§4.1).
    pub(super) fn join(&mut self, bytes: &[u8], out: &mut [u8]) -> Verdict {
        let Ok(j) = JoinRepr::parse(&JoinPacket::new_unchecked(bytes)) else {
            return Verdict::Drop(DropReason::Malformed);
        };
        let max_count = self.max_count();
        let Some(job) = self.jobs.find(j.job).and_then(|i| self.jobs.get_mut(i)) else {
            return self.refuse(j.job, j.rank, AbortReason::UnknownJob, 0, j.nonce, out);
        };
        let c = job.config;
        let world = job.wire_world();
        let member = job.member(j.rank);
        // The tag proves the key (§4.2); the endpoint in front checks the cookie.
        if !j.verify(c.key) {
            job.counters.unauthorized += 1;
            return self.refuse(j.job, j.rank, AbortReason::BadKey, 0, j.nonce, out);
        }
        let refusal = if member.is_none() {
            Some((AbortReason::UnknownRank, world))
        } else if j.world != world {
            Some((AbortReason::WorldMismatch, world))
        } else if j.slot_count == 0
            || u32::from(j.slot_lo) + u32::from(j.slot_count) > u32::from(c.slot_count)
            || j.slot_lo % j.slot_count != 0
            || j.slot_lo / j.slot_count >= j.lanes
        {
            Some((AbortReason::SlotRange, c.slot_count))
        } else if j.count == 0 || j.count > max_count {
            Some((AbortReason::CountTooLarge, max_count))
        } else {
            None
        };
        // Every answer to a Join names its nonce (a refusal in the session field): only the
        // process that sent the Join takes it (§4.1).
        let (None, Some(member)) = (refusal, member) else {
            let (reason, detail) = refusal.unwrap_or((AbortReason::UnknownRank, world));
            if member.is_some() {
                // A rank of the job that cannot join: its peers waiting in the run hear it
                // at the next liveness sweep (§4.3).
                job.run.refuse(j.rank, c.world);
            }
            return self.refuse(j.job, j.rank, reason, detail, j.nonce, out);
        };
        let opens = !job.run.is_open();
        let was_complete = job.all_joined();
        let runs_before = job.counters.runs;
        let shape = LaneShape {
            lane_slots: j.slot_count,
            count: j.count,
            lanes: j.lanes,
        };
        let step = job.run.join(member, j.nonce, shape, c.world, runs_before);
        if opens {
            job.counters.runs += 1;
        }
        match step {
            JoinStep::Member => {}
            JoinStep::EndsRun => {
                // A new process of a rank of the complete run: the run cannot go on. Its
                // ranks learn why; the new process's next Join opens the next run.
                job.counters.aborts += 1;
                let session = job.run.session;
                let reason = AbortReason::RankRestarted;
                self.up = job.abort_up(reason).or(self.up);
                job.run.end();
                let epoch = self.epoch;
                return match emit_abort(j.job, RANK_ALL, reason, j.rank, epoch, session, out) {
                    Some(len) => Verdict::Multicast { job: j.job, len },
                    None => Verdict::Drop(DropReason::OutputTooSmall),
                };
            }
            JoinStep::LaneMismatch(d) => {
                job.run.refuse(j.rank, c.world);
                let reason = AbortReason::LaneMismatch;
                return self.refuse(j.job, j.rank, reason, d, j.nonce, out);
            }
            JoinStep::ChunkMismatch(d) => {
                job.run.refuse(j.rank, c.world);
                let reason = AbortReason::ChunkMismatch;
                return self.refuse(j.job, j.rank, reason, d, j.nonce, out);
            }
            JoinStep::LaneCountMismatch(d) => {
                job.run.refuse(j.rank, c.world);
                let reason = AbortReason::LaneCountMismatch;
                return self.refuse(j.job, j.rank, reason, d, j.nonce, out);
            }
        }
        job.counters.joins += 1;
        // A child's run is complete when the parent's is (§7): a Join of a run that was
        // complete here goes up until the parent says so; the parent's `COMPLETE` is
        // multicast to the ranks from there (`parent_join_reply`), not from here.
        let parent = job.parent().copied();
        let complete = job.all_joined();
        if let Some(link) = parent.filter(|_| was_complete && !job.run.parent_complete) {
            return match link.emit_join(&j, job.run.session, out) {
                Some(len) => Verdict::Up { job: link.job, len },
                None => Verdict::Drop(DropReason::OutputTooSmall),
            };
        }
        let complete = complete && (parent.is_none() || job.run.parent_complete);
        let rank = if complete && !was_complete && parent.is_none() {
            RANK_ALL
        } else {
            j.rank
        };
        let mut bitmap = [0u8; MAX_BITMAP_LEN];
        let blen = bitmap_len(world).min(MAX_BITMAP_LEN);
        job.write_members(&job.run.joined, &mut bitmap[..blen]);
        let repr = JoinReplyRepr {
            job: j.job,
            rank,
            world,
            shards: 0,
            flags: join_flags(self.probe_results, complete),
            max_count,
            epoch: self.epoch,
            slot_count: c.slot_count,
            session: job.run.session,
            nonce: j.nonce,
            lane_slots: job.run.lane_slots,
            count: job.run.count,
            joined: &bitmap[..blen],
        };
        let len = repr.buffer_len();
        repr.emit(&mut JoinReplyPacket::new_unchecked(&mut out[..len]));
        if rank == RANK_ALL {
            Verdict::Multicast { job: j.job, len }
        } else {
            Verdict::Unicast {
                job: j.job,
                rank: j.rank,
                len,
            }
        }
    }

    pub(super) fn probe(&mut self, bytes: &[u8], out: &mut [u8]) -> Verdict {
        let Ok(p) = ProbeRepr::parse(&ProbePacket::new_unchecked(bytes)) else {
            return Verdict::Drop(DropReason::Malformed);
        };
        let asks = p.flags.contains(ProbeFlags::RESULT);
        if asks && !self.probe_results {
            // The byte is reserved to a switch that does not offer PROBE_RESULTS.
            return Verdict::Drop(DropReason::Malformed);
        }
        let Some(job) = self.jobs.find(p.job).and_then(|i| self.jobs.get_mut(i)) else {
            return self.refuse(p.job, p.rank, AbortReason::UnknownJob, 0, p.session, out);
        };
        let c = job.config;
        let world = job.wire_world();
        if !job.run.admits(p.session) {
            // Tells a stalled worker of an ended run that it is over; tells a forger nothing.
            job.counters.unauthorized += 1;
            return self.refuse(p.job, p.rank, AbortReason::SessionEnded, 0, p.session, out);
        }
        let Some(member) = job.member(p.rank) else {
            let reason = AbortReason::UnknownRank;
            return self.refuse(p.job, p.rank, reason, world, p.session, out);
        };
        let Some(slot) = job.pool_index(p.slot).and_then(|i| self.pool.get_mut(i)) else {
            let reason = AbortReason::SlotRange;
            return self.refuse(p.job, p.rank, reason, c.slot_count, p.session, out);
        };
        job.counters.probes += 1;
        // A Probe of the run is also the keep-alive of a lane with nothing to send (§4.3).
        job.run.hear(member);
        let sv = &mut slot.versions[usize::from(p.ver & 1)];
        if asks && sv.in_session(p.session) && sv.remaining == 0 && sv.seq == p.seq {
            let asked = asked_by(&p, sv);
            return answer_lost_result(job, sv, &asked, out);
        }
        let state = if !sv.in_session(p.session) {
            SlotState::Idle
        } else if sv.remaining == 0 {
            SlotState::Complete
        } else {
            SlotState::Collecting
        };
        let idle = state == SlotState::Idle;
        let mut bitmap = [0u8; MAX_BITMAP_LEN];
        let blen = bitmap_len(world).min(MAX_BITMAP_LEN);
        if !idle {
            job.write_members(&sv.seen, &mut bitmap[..blen]);
        }
        let repr = ProbeReplyRepr {
            job: p.job,
            rank: p.rank,
            slot: p.slot,
            ver: p.ver,
            state,
            remaining: if idle { 0 } else { sv.remaining },
            seq: if idle { 0 } else { sv.seq },
            epoch: self.epoch,
            world,
            session: p.session,
            seen: &bitmap[..blen],
        };
        let len = repr.buffer_len();
        repr.emit(&mut ProbeReplyPacket::new_unchecked(&mut out[..len]));
        Verdict::Unicast {
            job: p.job,
            rank: p.rank,
            len,
        }
    }

    /// A worker gave up: pass its Abort on to every rank of the job, unchanged; the run ends
    /// (and a child owes its parent an Abort, [`Switch::poll_up`]).
    pub(super) fn abort(&mut self, bytes: &[u8], out: &mut [u8]) -> Verdict {
        let Ok(a) = AbortRepr::parse(&AbortPacket::new_unchecked(bytes)) else {
            return Verdict::Drop(DropReason::Malformed);
        };
        let Some(job) = self.jobs.find(a.job).and_then(|i| self.jobs.get_mut(i)) else {
            return Verdict::Drop(DropReason::UnknownJob);
        };
        if !job.run.admits(a.session) {
            job.counters.unauthorized += 1;
            return Verdict::Drop(DropReason::BadSession);
        }
        if job.member(a.rank).is_none() {
            return Verdict::Drop(DropReason::UnknownRank);
        }
        job.counters.aborts += 1;
        // A child's run that ends ends the whole job's: it tells its parent too (§7).
        self.up = job.abort_up(AbortReason::WorkerFailed).or(self.up);
        job.run.end();
        let len = a.buffer_len();
        a.emit(&mut AbortPacket::new_unchecked(&mut out[..len]));
        Verdict::Multicast { job: a.job, len }
    }

    /// A rank is done with the run; the run ends when every rank that joined it has left.
    pub(super) fn leave(&mut self, bytes: &[u8], _out: &mut [u8]) -> Verdict {
        let Ok(l) = LeaveRepr::parse(&LeavePacket::new_unchecked(bytes)) else {
            return Verdict::Drop(DropReason::Malformed);
        };
        let Some(job) = self.jobs.find(l.job).and_then(|i| self.jobs.get_mut(i)) else {
            return Verdict::Drop(DropReason::UnknownJob);
        };
        if !job.run.admits(l.session) {
            job.counters.unauthorized += 1;
            return Verdict::Drop(DropReason::BadSession);
        }
        let Some(member) = job.member(l.rank) else {
            return Verdict::Drop(DropReason::UnknownRank);
        };
        if job.run.leave(member) {
            job.run.end();
        }
        Verdict::Consumed
    }

    /// Answer a Status (from `switchml doctor`): who joined the job, what was counted.
    pub(super) fn status(&mut self, bytes: &[u8], out: &mut [u8]) -> Verdict {
        let Ok(q) = StatusRepr::parse(&StatusPacket::new_unchecked(bytes)) else {
            return Verdict::Drop(DropReason::Malformed);
        };
        // Nothing to a stranger (§3.7, §4.2): an unknown job and a wrong tag are dropped
        // unanswered, so a Status neither lists job ids nor reflects bytes without the key.
        let Some(job) = self.jobs.find(q.job).and_then(|i| self.jobs.get_mut(i)) else {
            return Verdict::Drop(DropReason::UnknownJob);
        };
        if !q.verify(job.config.key) {
            job.counters.unauthorized += 1;
            return Verdict::Drop(DropReason::BadSession);
        }
        let job = &*job;
        let c = job.counters;
        let mut bitmap = [0u8; MAX_BITMAP_LEN];
        let blen = bitmap_len(job.wire_world()).min(MAX_BITMAP_LEN);
        job.write_members(&job.run.joined, &mut bitmap[..blen]);
        let mut flags = StatusFlags::default();
        if job.all_joined() {
            flags.0 |= StatusFlags::ALL_JOINED.0;
        }
        if job.run.is_open() {
            flags.0 |= StatusFlags::RUN_OPEN.0;
        }
        let repr = StatusReplyRepr {
            job: q.job,
            rank: q.rank,
            world: job.wire_world(),
            flags,
            shards: 0,
            slot_count: job.config.slot_count,
            epoch: self.epoch,
            // `received` includes this Status request.
            counters: c.status(self.counters.received, self.counters.dropped),
            joined: &bitmap[..blen],
        };
        let len = repr.buffer_len();
        repr.emit(&mut StatusReplyPacket::new_unchecked(&mut out[..len]));
        Verdict::Unicast {
            job: q.job,
            rank: q.rank,
            len,
        }
    }
}

/// The Contribution whose resend a Probe that asks for the Result stands for (§6.1).
fn asked_by<const K: usize, const WORDS: usize>(
    p: &ProbeRepr,
    sv: &SlotVersion<K, WORDS>,
) -> DataRepr {
    DataRepr {
        kind: DataKind::Contribution,
        job: p.job,
        rank: p.rank,
        slot: p.slot,
        ver: p.ver,
        flags: Flags::default(),
        count: sv.count,
        seq: p.seq,
        exp: sv.exp,
        session: p.session,
    }
}
