//! Aborts across two levels (protocol.md §7): a run that ends at one child ends the whole
//! job's, so that the ranks under every other child fail at once instead of timing out.
//!
//! ```text
//!  rank r gives up ─Abort─▶ child c' ─(its ranks: the Abort)
//!                              └─Abort, member c'─▶ parent ─(every member)─▶ child c
//!                                                            └─ParentFailed(c')─▶ its ranks
//! ```
//!
//! Up: a child whose run ends by an Abort to its ranks (a worker's, a restarted rank's, the
//! switch stopping) tells the parent's run as its member, with a second message that the
//! adapter collects with [`Switch::poll_up`](super::super::Switch::poll_up). Down: an
//! Abort from the parent, authenticated as its Results and JoinReplies are, ends the child's
//! run and becomes one Abort `ParentFailed` to its ranks, naming the child it names.

use super::super::control::emit_abort;
use super::super::job::Job;
use super::super::{DropReason, Switch, Verdict};
use crate::wire::{AbortPacket, AbortReason, AbortRepr, RANK_ALL};

/// `detail` of an Abort that names no rank or member.
const NONE: u16 = 0xFFFF;

impl<const WORDS: usize> Job<WORDS> {
    /// The Abort a child's job sends its parent when its run ends for `reason` (`None` if
    /// the job is no child's or has not joined a parent run): from its member index, in the
    /// parent's run, naming the member itself as `detail` for a restart and nothing else.
    pub(crate) fn abort_up(&self, reason: AbortReason) -> Option<AbortRepr> {
        let link = self.parent()?;
        let detail = match reason {
            AbortReason::RankRestarted => link.member,
            AbortReason::Shutdown | AbortReason::JobRemoved => 0,
            _ => NONE,
        };
        (self.run.parent != 0).then_some(AbortRepr {
            job: link.job,
            rank: link.member,
            reason,
            detail,
            epoch: 0,
            session: self.run.parent,
        })
    }
}

impl<const K: usize, const WORDS: usize, const JOBS: usize> Switch<'_, K, WORDS, JOBS> {
    /// Write the Abort a child's job owes its parent (its run ended here since the last
    /// call) into `out` and return [`Verdict::Up`]; `None` if it owes none. Call it after
    /// every [`Switch::process`] and [`Switch::shutdown_run`]: only the latest is kept. An
    /// `out` too short for it keeps it owed.
    #[must_use]
    pub fn poll_up(&mut self, out: &mut [u8]) -> Option<Verdict> {
        let a = self.up?;
        let len = a.buffer_len();
        a.emit(&mut AbortPacket::new_unchecked(out.get_mut(..len)?));
        self.up = None;
        self.counters.upward += 1;
        Some(Verdict::Up { job: a.job, len })
    }

    /// An Abort from the parent, at the child whose parent job it names (§7): taken if it
    /// names the parent's run this child joined, or, while the child is joining it, the
    /// child's own session (the nonce of its Join up). The child's run ends, and its ranks
    /// get Abort `ParentFailed` naming the member the parent's Abort names (its sender or,
    /// for a restart, its detail), or `0xFFFF`.
    pub(in super::super) fn parent_abort(&mut self, bytes: &[u8], out: &mut [u8]) -> Verdict {
        let Ok(a) = AbortRepr::parse(&AbortPacket::new_unchecked(bytes)) else {
            return Verdict::Drop(DropReason::Malformed);
        };
        let epoch = self.epoch;
        let Some((job, link)) = self.jobs.child_mut(a.job) else {
            return Verdict::Drop(DropReason::UnexpectedType);
        };
        let run = &job.run;
        let of_our_run = run.parent != 0 && a.session == run.parent;
        let to_our_join = run.is_open() && !run.parent_complete && a.session == run.session;
        if !(of_our_run || to_our_join) {
            // This child's own Abort, which the parent passed on to every member, back
            // after its run ended here: expected, not a forgery. It carries the parent
            // run's session this child sent it with; one naming this child's member with
            // any other session used to count here too, hiding forgeries as duplicates.
            if a.rank == link.member && a.session != 0 && a.session == run.echo {
                job.counters.duplicates += 1;
                return Verdict::Drop(DropReason::Duplicate);
            }
            job.counters.unauthorized += 1;
            return Verdict::Drop(DropReason::BadSession);
        }
        let named = match (a.rank, a.reason) {
            (RANK_ALL, AbortReason::RankRestarted) if a.detail < link.members => a.detail,
            (RANK_ALL, _) => NONE,
            (rank, _) if rank < link.members => rank,
            _ => {
                job.counters.rejected += 1;
                return Verdict::Drop(DropReason::UnknownRank);
            }
        };
        job.counters.aborts += 1;
        let (id, session) = (job.config.id, job.run.session);
        job.run.end();
        let reason = AbortReason::ParentFailed;
        match emit_abort(id, RANK_ALL, reason, named, epoch, session, out) {
            Some(len) => Verdict::Multicast { job: id, len },
            None => Verdict::Drop(DropReason::OutputTooSmall),
        }
    }
}

#[cfg(test)]
pub(crate) mod tests;
