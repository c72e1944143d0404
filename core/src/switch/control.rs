//! Control messages at the switch: Join (rendezvous), Probe (who is missing), Status (for
//! `switchml doctor`), Abort.
//!
//! These are what turn the original's silent hangs into named errors: a worker learns at
//! join time that its job, rank, world size or slot range is wrong, and a stalled worker
//! learns which ranks never contributed.

use super::{DropReason, Switch, Verdict};
use crate::ranks::bitmap_len;
use crate::wire::{
    AbortPacket, AbortReason, AbortRepr, JoinFlags, JoinPacket, JoinReplyPacket, JoinReplyRepr,
    JoinRepr, ProbePacket, ProbeReplyPacket, ProbeReplyRepr, ProbeRepr, SlotState, StatusCounters,
    StatusFlags, StatusPacket, StatusReplyPacket, StatusReplyRepr, StatusRepr, MAX_BITMAP_LEN,
    RANK_ALL,
};

/// The largest message the switch writes, given the largest Result.
pub(crate) const fn max_reply_len(result_len: usize) -> usize {
    // The StatusReply is the largest control message (JoinReply: 20, ProbeReply: 24).
    let control = crate::wire::status_reply::HEADER_LEN + MAX_BITMAP_LEN;
    if result_len > control {
        result_len
    } else {
        control
    }
}

impl<const K: usize, const WORDS: usize, const JOBS: usize> Switch<'_, K, WORDS, JOBS> {
    /// Answer `to` with an Abort saying why its job cannot go on.
    fn refuse(
        &self,
        job: u16,
        to: u16,
        reason: AbortReason,
        detail: u16,
        out: &mut [u8],
    ) -> Verdict {
        let repr = AbortRepr {
            job,
            rank: to,
            reason,
            detail,
            epoch: self.epoch,
        };
        let len = repr.buffer_len();
        repr.emit(&mut AbortPacket::new_unchecked(&mut out[..len]));
        Verdict::Unicast { job, rank: to, len }
    }

    pub(super) fn join(&mut self, bytes: &[u8], out: &mut [u8]) -> Verdict {
        let Ok(j) = JoinRepr::parse(&JoinPacket::new_unchecked(bytes)) else {
            return Verdict::Drop(DropReason::Malformed);
        };
        let Some(ji) = self.jobs.find(j.job) else {
            return self.refuse(j.job, j.rank, AbortReason::UnknownJob, 0, out);
        };
        let Some(job) = self.jobs.get(ji) else {
            return Verdict::Drop(DropReason::UnknownJob);
        };
        let c = job.config;
        let refusal = if j.rank >= c.world {
            Some((AbortReason::UnknownRank, c.world))
        } else if j.world != c.world {
            Some((AbortReason::WorldMismatch, c.world))
        } else if j.slot_count == 0
            || u32::from(j.slot_lo) + u32::from(j.slot_count) > u32::from(c.slot_count)
        {
            Some((AbortReason::SlotRange, c.slot_count))
        } else if j.count > self.max_count() {
            Some((AbortReason::CountTooLarge, self.max_count()))
        } else {
            None
        };
        if let Some((reason, detail)) = refusal {
            return self.refuse(j.job, j.rank, reason, detail, out);
        }
        let Some(job) = self.jobs.get_mut(ji) else {
            return Verdict::Drop(DropReason::UnknownJob);
        };
        job.counters.joins += 1;
        let completes = job.joined.insert(j.rank) && job.all_joined();
        let complete = job.all_joined();
        let rank = if completes { RANK_ALL } else { j.rank };
        let mut bitmap = [0u8; MAX_BITMAP_LEN];
        let blen = bitmap_len(c.world).min(MAX_BITMAP_LEN);
        job.joined.write_bitmap(&mut bitmap[..blen]);
        let repr = JoinReplyRepr {
            job: j.job,
            rank,
            world: c.world,
            flags: if complete {
                JoinFlags::COMPLETE
            } else {
                JoinFlags::default()
            },
            max_count: self.max_count(),
            epoch: self.epoch,
            slot_count: c.slot_count,
            joined: &bitmap[..blen],
        };
        let len = repr.buffer_len();
        repr.emit(&mut JoinReplyPacket::new_unchecked(&mut out[..len]));
        if completes {
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
        let Some(ji) = self.jobs.find(p.job) else {
            return self.refuse(p.job, p.rank, AbortReason::UnknownJob, 0, out);
        };
        let Some(job) = self.jobs.get_mut(ji) else {
            return Verdict::Drop(DropReason::UnknownJob);
        };
        let c = job.config;
        if p.rank >= c.world {
            return self.refuse(p.job, p.rank, AbortReason::UnknownRank, c.world, out);
        }
        let Some(slot) = job.pool_index(p.slot).and_then(|i| self.pool.get(i)) else {
            return self.refuse(p.job, p.rank, AbortReason::SlotRange, c.slot_count, out);
        };
        job.counters.probes += 1;
        let sv = slot.version(p.ver);
        let state = if !sv.used {
            SlotState::Idle
        } else if sv.remaining == 0 {
            SlotState::Complete
        } else {
            SlotState::Collecting
        };
        let mut bitmap = [0u8; MAX_BITMAP_LEN];
        let blen = bitmap_len(c.world).min(MAX_BITMAP_LEN);
        sv.seen.write_bitmap(&mut bitmap[..blen]);
        let repr = ProbeReplyRepr {
            job: p.job,
            rank: p.rank,
            slot: p.slot,
            ver: p.ver,
            state,
            remaining: sv.remaining,
            seq: sv.seq,
            epoch: self.epoch,
            world: c.world,
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

    /// A worker gave up: pass its Abort on to every rank of the job, unchanged.
    pub(super) fn abort(&mut self, bytes: &[u8], out: &mut [u8]) -> Verdict {
        let Ok(a) = AbortRepr::parse(&AbortPacket::new_unchecked(bytes)) else {
            return Verdict::Drop(DropReason::Malformed);
        };
        let Some(job) = self.jobs.find(a.job).and_then(|i| self.jobs.get_mut(i)) else {
            return Verdict::Drop(DropReason::UnknownJob);
        };
        if a.rank >= job.config.world {
            return Verdict::Drop(DropReason::UnknownRank);
        }
        job.counters.aborts += 1;
        let len = a.buffer_len();
        a.emit(&mut AbortPacket::new_unchecked(&mut out[..len]));
        Verdict::Multicast { job: a.job, len }
    }

    /// Answer a Status (from `switchml doctor`): who joined the job, what was counted.
    pub(super) fn status(&mut self, bytes: &[u8], out: &mut [u8]) -> Verdict {
        let Ok(q) = StatusRepr::parse(&StatusPacket::new_unchecked(bytes)) else {
            return Verdict::Drop(DropReason::Malformed);
        };
        let Some(job) = self.jobs.find(q.job).and_then(|i| self.jobs.get(i)) else {
            return self.refuse(q.job, q.rank, AbortReason::UnknownJob, 0, out);
        };
        let c = job.counters;
        let mut bitmap = [0u8; MAX_BITMAP_LEN];
        let blen = bitmap_len(job.config.world).min(MAX_BITMAP_LEN);
        job.joined.write_bitmap(&mut bitmap[..blen]);
        let repr = StatusReplyRepr {
            job: q.job,
            rank: q.rank,
            world: job.config.world,
            flags: if job.all_joined() {
                StatusFlags::ALL_JOINED
            } else {
                StatusFlags::default()
            },
            slot_count: job.config.slot_count,
            epoch: self.epoch,
            counters: StatusCounters {
                // Includes this Status request.
                received: self.counters.received,
                dropped: self.counters.total_drops(),
                contributions: c.contributions,
                completions: c.completions,
                retransmit_replies: c.retransmit_replies,
                duplicates: c.duplicates,
                stale: c.stale,
                rejected: c.rejected,
                joins: c.joins,
                probes: c.probes,
                aborts: c.aborts,
                overflows: c.overflows,
            },
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
