//! The paths of what a child switch takes from its parent (protocol.md §7):
//! `parent_result.p4`'s checks and the stored Result multicast down, and the parent's
//! JoinReply whose `COMPLETE` comes down. The rest of the tier is in the worker paths
//! (`pipeline.rs`): what goes up.

use switchml_core::switch::{DropReason, ParentLink};
use switchml_core::wire::{Flags, RANK_ALL};

use super::{multicast, Pipeline, Verdict};
use crate::classifier::JobEntry;
use crate::headers::{DataHeader, JoinReplyHeader, Prefix};
use crate::job_counters::JobEvent;
use crate::parent_result::ParentResult;
use crate::processor::Update;
use crate::register::Hazard;
use crate::reply_builder::{Members, ResultFields};
use crate::run_tracker::ParentReply;

impl Pipeline {
    /// Return the parent link of child `job` (table `parent_link`).
    pub(super) fn link_of(&self, job: &JobEntry) -> Option<ParentLink> {
        self.tier_selector.apply(job.index).link().copied()
    }

    /// `ParentResult` (protocol.md §7): a Result of the parent's job at the child `job`
    /// it serves. Checked as the reference checks it — the parent run's session, the
    /// rank (this child's member index or `0xFFFF`), count, version, slot, then that the
    /// version holds the use complete with the same count, not yet relayed — then its
    /// values, exponent and flag are stored in place of the partial sum, and it is
    /// multicast to the child's ranks as a Result of the child's job and run.
    pub(super) fn parent_result(
        &mut self,
        prefix: &Prefix,
        d: &DataHeader,
        payload: &[u8],
        job: JobEntry,
        out: &mut [u8],
    ) -> Result<Verdict, Hazard> {
        let Some(link) = self.link_of(&job) else {
            return Ok(Verdict::Drop(DropReason::UnexpectedType));
        };
        let pass = self.clock.begin(0);
        let session = self.run_tracker.admit_parent(&pass, job.index, d.session)?;
        if session == 0 {
            return Ok(self.unauthorized(&job, DropReason::BadSession));
        }
        let c = job.config;
        let reject =
            ParentResult::apply(&link, prefix.rank, d, self.config.max_count, c.slot_count);
        if let Some(reason) = reject {
            self.job_counters.count(JobEvent::Rejected, job.index);
            return Ok(Verdict::Drop(reason));
        }
        let slot = c.slot_lo as usize + usize::from(d.slot);
        let version = 2 * slot + usize::from(d.ver);
        let held = self.use_checker.probe(&pass, version, session)?;
        let count = self.count_checker.apply(&pass, version, false, d.count)?;
        let remaining = self.workers_counter.probe(&pass, version)?;
        let holds = held == Some(d.seq) && remaining == 0;
        let relayed = self
            .relay
            .store(&pass, version, holds && count == d.count)?;
        if let Some((event, reason)) = ParentResult::decide(holds, count, d, relayed) {
            self.job_counters.count(event, job.index);
            return Ok(Verdict::Drop(reason));
        }
        let kept = Flags(d.flags).and(Flags::STICKY);
        let stored = self.values(
            pass,
            version,
            count,
            true,
            Update::Load,
            d.exp,
            kept,
            payload,
            out,
        )?;
        let fields = ResultFields {
            rank: RANK_ALL,
            flags: stored.flags,
            count,
            exp: stored.exp,
        };
        let down = DataHeader { session, ..*d };
        let len = self.reply_builder.result(out, c.id, &down, fields);
        Ok(multicast(&job, len))
    }

    /// A JoinReply of the parent's job at the child `job` it serves (protocol.md §7): the
    /// child keeps the parent run's session; the parent's first `COMPLETE`, once every
    /// rank here joined, is multicast to them as a JoinReply `COMPLETE` of the child's run.
    pub(super) fn parent_join_reply(
        &mut self,
        prefix: &Prefix,
        r: &JoinReplyHeader,
        job: JobEntry,
        out: &mut [u8],
    ) -> Result<Verdict, Hazard> {
        let tier = self.tier_selector.apply(job.index);
        let Some(link) = tier.link().copied() else {
            return Ok(Verdict::Drop(DropReason::UnexpectedType));
        };
        let rank_ok =
            (prefix.rank == link.member || prefix.rank == RANK_ALL) && r.world == link.members;
        let pass = self.clock.begin(0);
        Ok(
            match self
                .run_tracker
                .parent_join_reply(&pass, &job, r, rank_ok)?
            {
                ParentReply::BadSession => self.unauthorized(&job, DropReason::BadSession),
                ParentReply::UnknownRank => {
                    self.job_counters.count(JobEvent::Rejected, job.index);
                    Verdict::Drop(DropReason::UnknownRank)
                }
                ParentReply::Taken => Verdict::Consumed,
                ParentReply::Complete {
                    session,
                    shape,
                    joined,
                } => {
                    let c = job.config;
                    let len = self.reply_builder.join_reply(
                        out,
                        c.id,
                        RANK_ALL,
                        link.world,
                        true,
                        self.config.max_count,
                        c.slot_count,
                        session,
                        session,
                        shape,
                        Members::new(joined, link.rank_lo),
                    );
                    multicast(&job, len)
                }
            },
        )
    }
}
