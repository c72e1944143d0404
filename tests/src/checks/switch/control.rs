//! The checker's expectations for control messages: Join (the key, the fields, the run's
//! lifecycle), Probe, Abort, Leave and Status (protocol.md §3.4–3.8, §4.1), against the
//! shadow model's runs.

use std::collections::BTreeSet;

use switchml_core::ranks::bitmap_len;
use switchml_core::switch::{DropReason, Verdict};
use switchml_core::wire::{
    AbortReason, AbortRepr, JoinFlags, JoinReplyRepr, JoinRepr, LeaveRepr, Message, ProbeFlags,
    ProbeRepr, SlotState, StatusCounters, StatusFlags, StatusRepr, RANK_ALL,
};

use super::model::RunModel;
use super::ops::session_of;
use super::{Checker, EPOCH, K};

/// Write `ranks` as a wire bitmap for a world of `world`.
fn bitmap(ranks: impl IntoIterator<Item = u16>, world: u16) -> Vec<u8> {
    let mut b = vec![0u8; bitmap_len(world)];
    for r in ranks {
        b[usize::from(r / 8)] |= 1 << (r % 8);
    }
    b
}

/// Return the ranks a wire bitmap holds.
fn ranks_of(bitmap: &[u8]) -> BTreeSet<u16> {
    (0..8 * bitmap.len() as u16)
        .filter(|&r| bitmap[usize::from(r / 8)] & (1 << (r % 8)) != 0)
        .collect()
}

impl Checker<'_> {
    /// Check that the answer `r` goes to the sender (`rank` of `job`) alone; return it.
    fn answer<'r>(&self, (job, rank): (u16, u16), v: Verdict, r: &'r [u8]) -> Message<'r> {
        let len = r.len();
        assert_eq!(v, Verdict::Unicast { job, rank, len }, "answer to {rank}");
        Message::parse(r).unwrap_or_else(|e| panic!("the answer does not parse ({e:?}): {r:02x?}"))
    }

    /// Check that the answer is an Abort to `rank` for one of the `allowed` reasons, naming
    /// `session`.
    fn refused(
        &self,
        (job, rank, session): (u16, u16, u32),
        allowed: &[(AbortReason, u16)],
        v: Verdict,
        r: &[u8],
    ) {
        let Message::Abort(a) = self.answer((job, rank), v, r) else {
            panic!("refusal is not an Abort: {r:02x?}");
        };
        let fields = (a.job, a.rank, a.epoch, a.session);
        assert_eq!(fields, (job, rank, EPOCH, session), "{a:?}");
        assert!(
            allowed.contains(&(a.reason, a.detail)),
            "{a:?} is not one of {allowed:?}"
        );
    }

    pub(super) fn join(&mut self, j: &JoinRepr, verdict: Verdict, reply: &[u8]) {
        // Every answer to a Join names its nonce: a refusal in its session field.
        let to = (j.job, j.rank, j.nonce);
        let Some(ji) = self.find(j.job) else {
            return self.refused(to, &[(AbortReason::UnknownJob, 0)], verdict, reply);
        };
        let job = &mut self.jobs[ji];
        if !j.verify(job.key) {
            job.counters.unauthorized += 1;
            return self.refused(to, &[(AbortReason::BadKey, 0)], verdict, reply);
        }
        let mut refusals = Vec::new();
        if j.rank >= job.world {
            refusals.push((AbortReason::UnknownRank, job.world));
        }
        if j.world != job.world {
            refusals.push((AbortReason::WorldMismatch, job.world));
        }
        // An empty lane is never aligned; a lane is one of the `lanes` its Join states.
        let aligned = j.slot_lo.checked_rem(j.slot_count) == Some(0);
        let one_of_its_lanes = j.slot_lo.checked_div(j.slot_count) < Some(j.lanes);
        if !aligned
            || !one_of_its_lanes
            || u32::from(j.slot_lo) + u32::from(j.slot_count) > job.slot_count.into()
        {
            refusals.push((AbortReason::SlotRange, job.slot_count));
        }
        if j.count == 0 || usize::from(j.count) > K {
            refusals.push((AbortReason::CountTooLarge, K as u16));
        }
        if !refusals.is_empty() {
            return self.refused(to, &refusals, verdict, reply);
        }
        let world = job.world;
        let run = job.run.get_or_insert_with(|| {
            let runs_before = job.counters.runs;
            job.counters.runs += 1;
            RunModel {
                session: session_of(j.nonce, runs_before),
                lane_slots: j.slot_count,
                count: j.count,
                lanes: j.lanes,
                joined: Default::default(),
                left: Default::default(),
            }
        });
        let was_complete = run.joined.len() == usize::from(world);
        let new_process = run.joined.get(&j.rank).is_some_and(|&n| n != j.nonce);
        if new_process && was_complete {
            // The run cannot go on without the old process: it ends, every rank is told.
            let session = run.session;
            job.run = None;
            job.counters.aborts += 1;
            let len = reply.len();
            assert_eq!(verdict, Verdict::Multicast { job: j.job, len }, "{j:?}");
            let want = AbortRepr {
                job: j.job,
                rank: RANK_ALL,
                reason: AbortReason::RankRestarted,
                detail: j.rank,
                epoch: EPOCH,
                session,
            };
            assert_eq!(Message::parse(reply), Ok(Message::Abort(want)), "{j:?}");
            return;
        }
        if j.slot_count != run.lane_slots {
            let lane = [(AbortReason::LaneMismatch, run.lane_slots)];
            return self.refused(to, &lane, verdict, reply);
        }
        if j.count != run.count {
            let chunk = [(AbortReason::ChunkMismatch, run.count)];
            return self.refused(to, &chunk, verdict, reply);
        }
        if j.lanes != run.lanes {
            let lanes = [(AbortReason::LaneCountMismatch, run.lanes)];
            return self.refused(to, &lanes, verdict, reply);
        }
        // A new rank, the same process again, or a rank's new process before the run is
        // complete (it takes the old one's place).
        run.joined.insert(j.rank, j.nonce);
        run.left.remove(&j.rank);
        let complete = run.joined.len() == usize::from(world);
        let completes = complete && !was_complete;
        let joined = bitmap(run.joined.keys().copied(), world);
        let session = run.session;
        job.counters.joins += 1;
        let want = JoinReplyRepr {
            job: j.job,
            rank: if completes { RANK_ALL } else { j.rank },
            world,
            shards: 0,
            flags: if complete {
                JoinFlags::COMPLETE
            } else {
                JoinFlags::default()
            },
            max_count: K as u16,
            epoch: EPOCH,
            slot_count: job.slot_count,
            session,
            // The completing Join's nonce in the multicast too.
            nonce: j.nonce,
            lane_slots: run.lane_slots,
            count: run.count,
            joined: &joined,
        };
        assert_eq!(Message::parse(reply), Ok(Message::JoinReply(want)), "{j:?}");
        let len = reply.len();
        let want_verdict = if completes {
            Verdict::Multicast { job: j.job, len }
        } else {
            Verdict::Unicast {
                job: j.job,
                rank: j.rank,
                len,
            }
        };
        assert_eq!(verdict, want_verdict, "{j:?}");
    }

    pub(super) fn probe(&mut self, p: &ProbeRepr, verdict: Verdict, reply: &[u8]) {
        if p.flags.contains(ProbeFlags::RESULT) {
            // The switch under check offers no PROBE_RESULTS: the flag byte is reserved.
            assert_eq!(verdict, Verdict::Drop(DropReason::Malformed), "{p:?}");
            return;
        }
        let to = (p.job, p.rank, p.session);
        let Some(ji) = self.find(p.job) else {
            return self.refused(to, &[(AbortReason::UnknownJob, 0)], verdict, reply);
        };
        let job = &mut self.jobs[ji];
        if job.run_of(p.session).is_none() {
            job.counters.unauthorized += 1;
            return self.refused(to, &[(AbortReason::SessionEnded, 0)], verdict, reply);
        }
        let mut refusals = Vec::new();
        if p.rank >= job.world {
            refusals.push((AbortReason::UnknownRank, job.world));
        }
        if p.slot >= job.slot_count {
            refusals.push((AbortReason::SlotRange, job.slot_count));
        }
        if !refusals.is_empty() {
            return self.refused(to, &refusals, verdict, reply);
        }
        let Message::ProbeReply(r) = self.answer((p.job, p.rank), verdict, reply) else {
            panic!("answer to {p:?} is not a ProbeReply: {reply:02x?}");
        };
        let job = &self.jobs[ji];
        let world = job.world;
        // A use of an earlier run reads as idle.
        let held = job.uses[usize::from(p.slot)][usize::from(p.ver)]
            .as_ref()
            .filter(|u| u.session == p.session);
        let (state, remaining, seq) = match held {
            None => (SlotState::Idle, 0, 0),
            Some(u) if u.ranks.len() == usize::from(world) => (SlotState::Complete, 0, u.seq),
            Some(u) => (SlotState::Collecting, world - u.ranks.len() as u16, u.seq),
        };
        let fields = (r.job, r.rank, r.slot, r.ver, r.epoch, r.world);
        assert_eq!(
            fields,
            (p.job, p.rank, p.slot, p.ver, EPOCH, world),
            "{r:?}"
        );
        assert_eq!(
            (r.state, r.remaining, r.seq),
            (state, remaining, seq),
            "{r:?}"
        );
        assert_eq!(r.seen.len(), bitmap_len(world), "{r:?}");
        for rank in ranks_of(r.seen) {
            let counted = held.is_some_and(|u| u.has(rank));
            assert!(
                counted,
                "probe reply shows rank {rank} seen, never counted in this run: {r:?}"
            );
        }
        self.jobs[ji].counters.probes += 1;
    }

    pub(super) fn abort(&mut self, a: &AbortRepr, bytes: &[u8], verdict: Verdict, reply: &[u8]) {
        let Some(ji) = self.find(a.job) else {
            assert_eq!(verdict, Verdict::Drop(DropReason::UnknownJob), "{a:?}");
            return;
        };
        let job = &mut self.jobs[ji];
        if job.run_of(a.session).is_none() {
            assert_eq!(verdict, Verdict::Drop(DropReason::BadSession), "{a:?}");
            job.counters.unauthorized += 1;
            return;
        }
        if a.rank >= job.world {
            assert_eq!(verdict, Verdict::Drop(DropReason::UnknownRank), "{a:?}");
            return;
        }
        job.counters.aborts += 1;
        job.run = None;
        let len = bytes.len();
        assert_eq!(verdict, Verdict::Multicast { job: a.job, len }, "{a:?}");
        assert_eq!(reply, bytes, "an Abort is passed on unchanged");
    }

    pub(super) fn leave(&mut self, l: &LeaveRepr, verdict: Verdict) {
        let Some(ji) = self.find(l.job) else {
            assert_eq!(verdict, Verdict::Drop(DropReason::UnknownJob), "{l:?}");
            return;
        };
        let job = &mut self.jobs[ji];
        let world = job.world;
        let Some(run) = job.run.as_mut().filter(|r| r.session == l.session) else {
            assert_eq!(verdict, Verdict::Drop(DropReason::BadSession), "{l:?}");
            job.counters.unauthorized += 1;
            return;
        };
        if l.rank >= world {
            assert_eq!(verdict, Verdict::Drop(DropReason::UnknownRank), "{l:?}");
            return;
        }
        assert_eq!(verdict, Verdict::Consumed, "{l:?}");
        if run.joined.contains_key(&l.rank) {
            run.left.insert(l.rank);
        }
        if run.left.len() == run.joined.len() {
            job.run = None;
        }
    }

    /// A Status changes no state; the StatusReply reports the model's run and counters.
    pub(super) fn status(&mut self, q: &StatusRepr, verdict: Verdict, reply: &[u8]) {
        // Nothing to a stranger (§3.7, §4.2): unknown job or wrong tag, no answer.
        let Some(ji) = self.find(q.job) else {
            assert_eq!(verdict, Verdict::Drop(DropReason::UnknownJob), "{q:?}");
            return;
        };
        if !q.verify(self.jobs[ji].key) {
            assert_eq!(verdict, Verdict::Drop(DropReason::BadSession), "{q:?}");
            self.jobs[ji].counters.unauthorized += 1;
            return;
        }
        let Message::StatusReply(r) = self.answer((q.job, q.rank), verdict, reply) else {
            panic!("answer to {q:?} is not a StatusReply: {reply:02x?}");
        };
        let job = &self.jobs[ji];
        let mut flags = 0;
        if job.all_joined() {
            flags |= StatusFlags::ALL_JOINED.0;
        }
        if job.run.is_some() {
            flags |= StatusFlags::RUN_OPEN.0;
        }
        let fields = (r.job, r.rank, r.world, r.flags, r.slot_count, r.epoch);
        let want = (
            q.job,
            q.rank,
            job.world,
            StatusFlags(flags),
            job.slot_count,
            EPOCH,
        );
        assert_eq!(fields, want, "{r:?}");
        let joined = job.joined();
        assert_eq!(ranks_of(r.joined), joined, "joined in {r:?}");
        assert_eq!(r.joined.len(), bitmap_len(job.world), "{r:?}");
        let (m, all) = (&job.counters, &self.counters);
        let want = StatusCounters {
            // Switch-wide, this Status included.
            received: all.received,
            dropped: all.total_drops(),
            contributions: m.contributions,
            completions: m.completions,
            retransmit_replies: m.retransmit_replies,
            duplicates: m.duplicates,
            stale: m.stale,
            rejected: m.rejected,
            joins: m.joins,
            probes: m.probes,
            aborts: m.aborts,
            overflows: m.overflows,
            runs: m.runs,
            unauthorized: m.unauthorized,
            drops: all.dropped,
        };
        assert_eq!(r.counters, want, "the counters in {r:?}");
    }
}
