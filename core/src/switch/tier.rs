//! Two-level aggregation (protocol.md §7): a job at a *child* switch aggregates its own
//! ranks and contributes their partial sum to a *parent* switch as one member; the parent's
//! Result comes back down through it.
//!
//! ```text
//!  ranks 0‥n−1 ──▶ child 0 ──member 0──▶ ┌────────┐
//!  ranks n‥2n−1 ─▶ child 1 ──member 1──▶ │ parent │  an ordinary switch whose job's
//!        ⋮            ⋮                   │        │  world is the number of children
//!                  child C−1 ─member C−1▶ └────────┘
//! ```
//!
//! The parent is the reference switch with one rule more (a member's `OVERFLOW` is kept
//! like its non-finite kinds, [`Tier::Parent`]). The child is the reference switch whose completed uses go up instead
//! of down, and whose parent's Results are stored and multicast to its ranks. A switch has
//! no timer (a P4 switch has none), so every recovery is driven by the workers' own
//! retransmissions: a resend reaching a use the child completed but whose Result has not
//! come back re-sends the partial sum up, and the parent answers it with its stored Result.

mod link;

pub(super) use link::up;
pub use link::{ParentLink, Tier};

use super::job::Job;
use super::{emit_result, DropReason, Switch, Verdict};
use crate::ranks::{bitmap_len, RankSet};
use crate::wire::{
    DataPacket, DataRepr, Flags, JoinFlags, JoinReplyPacket, JoinReplyRepr, MAX_BITMAP_LEN,
    RANK_ALL,
};

impl<const WORDS: usize> Job<WORDS> {
    /// Return the link to the parent of a child's job.
    pub(crate) fn parent(&self) -> Option<&ParentLink> {
        match &self.tier {
            Tier::Child(link) => Some(link),
            _ => None,
        }
    }

    /// Return the member index of global `rank` (itself but at a child), if it is one.
    pub(crate) fn member(&self, rank: u16) -> Option<u16> {
        let local = match &self.tier {
            Tier::Child(link) => rank.checked_sub(link.rank_lo)?,
            _ => rank,
        };
        (local < self.config.world).then_some(local)
    }

    /// Return the world size the job's ranks state: the whole job's at a child.
    pub(crate) fn wire_world(&self) -> u16 {
        self.parent().map_or(self.config.world, |l| l.world)
    }

    /// Write a set of members as a wire bitmap of global ranks into `out`.
    pub(crate) fn write_members(&self, set: &RankSet<WORDS>, out: &mut [u8]) {
        let lo = self.parent().map_or(0, |l| usize::from(l.rank_lo));
        out.fill(0);
        for m in set.iter() {
            let r = lo + usize::from(m);
            if let Some(byte) = out.get_mut(r / 8) {
                *byte |= 1 << (r % 8);
            }
        }
    }
}

impl<const K: usize, const WORDS: usize, const JOBS: usize> Switch<'_, K, WORDS, JOBS> {
    /// A Result from the parent, at the child whose parent job it names (§7): kept in the
    /// slot version in place of the partial sum and multicast to the child's ranks, the
    /// first time; again, it is a duplicate (every rank was sent the first). To any other
    /// switch a Result is a message only switches send.
    pub(super) fn parent_result(&mut self, bytes: &[u8], out: &mut [u8]) -> Verdict {
        let packet = DataPacket::new_unchecked(bytes);
        let Ok(p) = DataRepr::parse(&packet) else {
            return Verdict::Drop(DropReason::Malformed);
        };
        let Some((job, link)) = self.jobs.child_mut(p.job) else {
            return Verdict::Drop(DropReason::UnexpectedType);
        };
        if job.run.parent == 0 || p.session != job.run.parent {
            job.counters.unauthorized += 1;
            return Verdict::Drop(DropReason::BadSession);
        }
        let ours = p.rank == link.member || p.rank == RANK_ALL;
        let reject = super::reject::<K>(ours, &p);
        let slot = job.pool_index(p.slot).and_then(|i| self.pool.get_mut(i));
        let (Some(slot), None) = (slot, reject) else {
            job.counters.rejected += 1;
            return Verdict::Drop(reject.unwrap_or(DropReason::SlotRange));
        };
        let session = job.run.session;
        let sv = &mut slot.versions[usize::from(p.ver)];
        // Only the use this child sent up, complete here, is answered.
        if !sv.in_session(session) || sv.seq != p.seq || sv.remaining != 0 {
            job.counters.stale += 1;
            return Verdict::Drop(DropReason::Stale);
        }
        if p.count != sv.count {
            job.counters.rejected += 1;
            return Verdict::Drop(DropReason::CountMismatch);
        }
        if sv.relayed {
            job.counters.duplicates += 1;
            return Verdict::Drop(DropReason::Duplicate);
        }
        let n = usize::from(p.count);
        super::pool::load(&mut sv.values[..n], packet.values());
        sv.exp = p.exp;
        sv.flags = p.flags.and(Flags::STICKY);
        sv.relayed = true;
        let down = DataRepr {
            job: job.config.id,
            session,
            ..p
        };
        let len = emit_result(sv, &down, RANK_ALL, Flags::default(), out);
        Verdict::Multicast {
            job: job.config.id,
            len,
        }
    }

    /// A JoinReply from the parent, at the child whose parent job it names (§7): the child
    /// takes the parent run's session from an answer naming its nonce (its own run's
    /// session), or from a `COMPLETE` of the session it took, and when the parent's run
    /// is complete tells its ranks with a multicast `COMPLETE` of its own run.
    pub(super) fn parent_join_reply(&mut self, bytes: &[u8], out: &mut [u8]) -> Verdict {
        let Ok(r) = JoinReplyRepr::parse(&JoinReplyPacket::new_unchecked(bytes)) else {
            return Verdict::Drop(DropReason::Malformed);
        };
        let max_count = self.max_count();
        let epoch = self.epoch;
        let flags = super::control::join_flags(self.probe_results, true);
        let Some((job, link)) = self.jobs.child_mut(r.job) else {
            return Verdict::Drop(DropReason::UnexpectedType);
        };
        let complete = r.flags.contains(JoinFlags::COMPLETE);
        let ours = job.run.is_open() && r.nonce == job.run.session;
        let of_our_run = complete && job.run.parent != 0 && r.session == job.run.parent;
        if !(ours || of_our_run) || r.session == 0 {
            job.counters.unauthorized += 1;
            return Verdict::Drop(DropReason::BadSession);
        }
        if (r.rank != link.member && r.rank != RANK_ALL) || r.world != link.members {
            job.counters.rejected += 1;
            return Verdict::Drop(DropReason::UnknownRank);
        }
        job.run.parent = r.session;
        if !complete || job.run.parent_complete || !job.all_joined() {
            return Verdict::Consumed;
        }
        job.run.parent_complete = true;
        let mut bitmap = [0u8; MAX_BITMAP_LEN];
        let blen = bitmap_len(job.wire_world()).min(MAX_BITMAP_LEN);
        job.write_members(&job.run.joined, &mut bitmap[..blen]);
        let repr = JoinReplyRepr {
            job: job.config.id,
            rank: RANK_ALL,
            world: job.wire_world(),
            shards: 0,
            flags,
            max_count,
            epoch,
            slot_count: job.config.slot_count,
            session: job.run.session,
            nonce: job.run.session,
            lane_slots: job.run.lane_slots,
            count: job.run.count,
            joined: &bitmap[..blen],
        };
        let len = repr.buffer_len();
        let Some(buf) = out.get_mut(..len) else {
            return Verdict::Drop(DropReason::OutputTooSmall);
        };
        repr.emit(&mut JoinReplyPacket::new_unchecked(buf));
        Verdict::Multicast {
            job: job.config.id,
            len,
        }
    }
}

pub(crate) mod abort;

#[cfg(test)]
pub(crate) mod tests;
