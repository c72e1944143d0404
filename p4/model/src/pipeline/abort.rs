//! Aborts across two levels (protocol.md §7), as the reference's `tier/abort.rs` does them.
//!
//! Down: an Abort of the parent's job at the child it serves (table `child_job`), taken if
//! it names the parent run the child took or, while the parent has not said `COMPLETE`,
//! the child's own run; a second pass ends the child's run, and its ranks get one Abort
//! `ParentFailed` naming the member the parent's Abort names.
//!
//! Up: a child's run that ends with an Abort to its ranks (a worker's, a restart, the
//! control plane's `Shutdown`) while it holds a parent run's session owes the parent an
//! Abort. In P4 this is a second packet of the same pass: the ingress marks the packet
//! for a clone (v1model `clone_preserving_field_list` / TNA ingress mirror) to the
//! parent's port, and the egress rewrites the clone into the Abort up. The model keeps
//! the clone's fields in [`UpAbort`] until [`Pipeline::poll_up`] writes it, as the
//! reference keeps its owed Abort until `Switch::poll_up`.

use switchml_core::switch::DropReason;
use switchml_core::wire::{AbortPacket, AbortReason, AbortRepr, RANK_ALL};

use super::{multicast, Pipeline, Verdict};
use crate::classifier::JobEntry;
use crate::drop_counters::Tally;
use crate::headers::{AbortHeader, Prefix, TRANSPORT_LEN};
use crate::job_counters::JobEvent;
use crate::register::Hazard;
use crate::tier_selector::TierEntry;

/// `detail` of an Abort that names no rank or member.
const NONE: u16 = 0xFFFF;

/// The clone's fields: the Abort a child owes its parent (protocol.md §7).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UpAbort {
    /// The parent's job.
    pub job: u16,
    /// This child's member index in it.
    pub member: u16,
    /// The parent run's session the child took.
    pub session: u32,
    /// Why the child's run ended.
    pub reason: AbortReason,
    /// The egress port (the parent's, from table `parent_link`).
    pub port: u16,
}

impl UpAbort {
    /// The Abort up of a child at `tier` whose run ended for `reason` holding the parent
    /// run's session `parent` (`None`: not a child, or no session taken).
    pub fn owed(tier: &TierEntry, parent: u32, reason: AbortReason) -> Option<Self> {
        let link = tier.link().filter(|_| parent != 0)?;
        Some(UpAbort {
            job: link.job,
            member: link.member,
            session: parent,
            reason,
            port: tier.parent_port(),
        })
    }

    /// Return the Abort: from the member, epoch 0, detail the member for a restart, 0 for
    /// `Shutdown` and `JobRemoved`, else none (as the reference's `Job::abort_up`).
    pub fn repr(&self) -> AbortRepr {
        let detail = match self.reason {
            AbortReason::RankRestarted => self.member,
            AbortReason::Shutdown | AbortReason::JobRemoved => 0,
            _ => NONE,
        };
        AbortRepr {
            job: self.job,
            rank: self.member,
            reason: self.reason,
            detail,
            epoch: 0,
            session: self.session,
        }
    }
}

impl Pipeline {
    /// Keep the Abort up a child at `tier` owes if its run, holding the parent run's
    /// session `parent`, ended for `reason`; only the latest is kept.
    pub(crate) fn owe_up(&mut self, tier: &TierEntry, parent: u32, reason: AbortReason) {
        self.up = UpAbort::owed(tier, parent, reason).or(self.up);
    }

    /// Write the Abort a child's job owes its parent (a run ended since the last call) as
    /// a bare datagram into `out` and return its `Up` verdict; `None` if none is owed (an
    /// `out` too short keeps it owed). Call it after every packet and
    /// [`Pipeline::shutdown_run`], as the reference's `Switch::poll_up`.
    #[must_use]
    pub fn poll_up(&mut self, out: &mut [u8]) -> Option<Verdict> {
        let a = self.up?;
        let repr = a.repr();
        let len = repr.buffer_len();
        repr.emit(&mut AbortPacket::new_unchecked(out.get_mut(..len)?));
        self.up = None;
        self.drop_counters.tally(Tally::AbortUp);
        Some(Verdict::Up {
            job: a.job,
            port: a.port,
            len,
        })
    }

    /// [`Pipeline::poll_up`] for the framed path: the clone leaves as a frame to the
    /// parent's address.
    #[must_use]
    pub fn poll_up_frame(&mut self, out: &mut [u8]) -> Option<Verdict> {
        let job = self.up?.job;
        if out.len() < TRANSPORT_LEN {
            return None;
        }
        let (head, body) = out.split_at_mut(TRANSPORT_LEN);
        let Verdict::Up { port, len, .. } = self.poll_up(body)? else {
            return None;
        };
        let to = self.tier_selector.parent_of(job);
        self.udp_sender.replicate(&to, len, head);
        Some(Verdict::Up {
            job,
            port,
            len: TRANSPORT_LEN + len,
        })
    }

    /// An Abort of the parent's job at the child `job` it serves (protocol.md §7): checked
    /// as the reference checks it — the session, then the rank (a member, or `0xFFFF`) —
    /// then a second pass ends the child's run and its ranks get Abort `ParentFailed`.
    pub(super) fn parent_abort(
        &mut self,
        prefix: &Prefix,
        a: &AbortHeader,
        job: JobEntry,
        out: &mut [u8],
    ) -> Result<Verdict, Hazard> {
        let link = self.link_of(&job);
        let pass = self.clock.begin(0);
        let (session, echo) = self.run_tracker.parent_abort(&pass, job.index, a.session)?;
        let Some(link) = link else {
            return Ok(Verdict::Drop(DropReason::UnexpectedType));
        };
        if session == 0 {
            // The child's own Abort, passed back to every member by the parent after its
            // run ended here, in the parent run's session it had taken: expected, not a
            // forgery. From its member in any other session it is one.
            if prefix.rank == link.member && echo {
                self.job_counters.count(JobEvent::Duplicate, job.index);
                return Ok(Verdict::Drop(DropReason::Duplicate));
            }
            return Ok(self.unauthorized(&job, DropReason::BadSession));
        }
        let restart = u8::from(AbortReason::RankRestarted);
        let named = match prefix.rank {
            RANK_ALL if a.reason == restart && a.detail < link.members => a.detail,
            RANK_ALL => NONE,
            rank if rank < link.members => rank,
            _ => {
                self.job_counters.count(JobEvent::Rejected, job.index);
                return Ok(Verdict::Drop(DropReason::UnknownRank));
            }
        };
        self.job_counters.count(JobEvent::Abort, job.index);
        let pass = self.clock.begin(1);
        self.drop_counters.recirculated();
        self.run_tracker.end(&pass, job.index, session)?;
        let len = self.reply_builder.abort(
            out,
            job.config.id,
            RANK_ALL,
            AbortReason::ParentFailed,
            named,
            session,
        );
        Ok(multicast(&job, len))
    }
}
