//! What an adapter needs of a switch, whichever implements it: the reference [`Switch`] or
//! the P4 model (`switchml-p4model`'s `Pipeline`).
//!
//! [`Aggregator`] is the data plane alone (bytes in, a [`Verdict`] and the answer out): the
//! deterministic simulator needs no more. [`ControlPlane`] adds what the [`Endpoint`]
//! (lane learning, idle expiry, shutdown) and the daemons around it need: jobs added and
//! removed, a job's run and counters read, a run ended without a word (idle) or with Abort
//! `Shutdown` (stopping), drops the adapter made counted. Every method works on the
//! caller's buffers and allocates nothing.
//!
//! [`Endpoint`]: super::Endpoint

use super::{Counters, DropReason, JobConfig, JobCounters, JobError, Switch, Tier, Verdict};
use crate::wire::AbortReason;

/// Anything that aggregates like the reference switch: the switch itself, the P4 model.
pub trait Aggregator {
    /// Process one datagram; write any answer into `out` and say what to do with it.
    fn process(&mut self, packet: &[u8], out: &mut [u8]) -> Verdict;
}

/// A job as the control plane reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct JobSnapshot {
    /// Its configuration.
    pub config: JobConfig,
    /// The current run's session (0: no run).
    pub session: u32,
    /// Slots per lane, agreed by the run's first Join (0: no run).
    pub lane_slots: u16,
    /// Ranks that joined the current run.
    pub joined: u16,
    /// Its counters.
    pub counters: JobCounters,
}

impl JobSnapshot {
    /// Return whether the job has a run open.
    pub fn has_run(&self) -> bool {
        self.session != 0
    }
}

/// An [`Aggregator`] with the control plane an [`Endpoint`](super::Endpoint) drives.
pub trait ControlPlane: Aggregator {
    /// The output buffer length [`Aggregator::process`] and
    /// [`ControlPlane::shutdown_run`] need.
    const OUT_LEN: usize;

    /// Return the epoch announced in replies.
    fn epoch(&self) -> u32;

    /// Return the number of slots in the pool.
    fn pool_len(&self) -> usize;

    /// Register a job whose ranks send bare datagrams; its slots, run and counters start
    /// afresh.
    fn install_job(&mut self, config: JobConfig) -> Result<(), JobError>;

    /// Register a job at `tier` of a tree of switches (protocol.md §7). Both switches here
    /// take every tier; this default, for a switch that has none, takes flat jobs only and
    /// refuses the others ([`JobError::Untiered`]).
    fn install_tiered_job(&mut self, config: JobConfig, tier: Tier) -> Result<(), JobError> {
        match tier {
            Tier::Flat => self.install_job(config),
            _ => Err(JobError::Untiered),
        }
    }

    /// Unregister job `id`.
    fn uninstall_job(&mut self, id: u16) -> Result<(), JobError>;

    /// Return job `id` as the control plane reads it.
    fn job_snapshot(&self, id: u16) -> Option<JobSnapshot>;

    /// Return the registered jobs' ids.
    fn job_ids(&self) -> impl Iterator<Item = u16> + '_;

    /// Return the switch-wide counters.
    fn switch_counters(&self) -> Counters;

    /// Count a datagram the adapter dropped before [`Aggregator::process`].
    fn count_drop(&mut self, reason: DropReason);

    /// End job `id`'s run without telling its ranks (it was idle); return whether it had one.
    fn end_run(&mut self, id: u16) -> bool;

    /// End job `id`'s run because the switch stops: write the Abort `Shutdown` its ranks get
    /// into `out` and return the multicast verdict, or `None` if the job has no run.
    fn shutdown_run(&mut self, id: u16, reason: AbortReason, out: &mut [u8]) -> Option<Verdict>;

    /// One liveness sweep of job `id`'s run (protocol.md §4.3; [`Switch::sweep`]): if the
    /// run must end (a refused rank, a silent one), write the Abort its ranks get into
    /// `out` and return the multicast verdict.
    fn sweep(&mut self, id: u16, out: &mut [u8]) -> Option<Verdict>;

    /// Write the Abort a child's job owes its parent since the last call (its run ended,
    /// protocol.md §7) into `out` and return [`Verdict::Up`]; `None` if none is owed. A
    /// switch that has no tiers owes none.
    fn poll_up(&mut self, _out: &mut [u8]) -> Option<Verdict> {
        None
    }

    /// Mark what the switch counts from now on `CONGESTED`, or stop ([`Switch::set_congested`],
    /// protocol.md §6.3). Both switches here mark; this default, for one that cannot, does
    /// nothing.
    fn set_congested(&mut self, _congested: bool) {}
}

impl<const K: usize, const WORDS: usize, const JOBS: usize> Aggregator
    for Switch<'_, K, WORDS, JOBS>
{
    fn process(&mut self, packet: &[u8], out: &mut [u8]) -> Verdict {
        Switch::process(self, packet, out)
    }
}

impl<const K: usize, const WORDS: usize, const JOBS: usize> ControlPlane
    for Switch<'_, K, WORDS, JOBS>
{
    const OUT_LEN: usize = super::control::max_reply_len(crate::wire::data::HEADER_LEN + 4 * K);

    fn epoch(&self) -> u32 {
        Switch::epoch(self)
    }

    fn set_congested(&mut self, congested: bool) {
        Switch::set_congested(self, congested)
    }

    fn pool_len(&self) -> usize {
        Switch::pool_len(self)
    }

    fn install_job(&mut self, config: JobConfig) -> Result<(), JobError> {
        self.add_job(config)
    }

    fn install_tiered_job(&mut self, config: JobConfig, tier: Tier) -> Result<(), JobError> {
        self.add_tiered_job(config, tier)
    }

    fn uninstall_job(&mut self, id: u16) -> Result<(), JobError> {
        self.remove_job(id).map(drop)
    }

    fn job_snapshot(&self, id: u16) -> Option<JobSnapshot> {
        let job = self.job(id)?;
        Some(JobSnapshot {
            config: *job.config(),
            session: job.session(),
            lane_slots: job.lane_slots(),
            joined: u16::try_from(job.joined().len()).unwrap_or(u16::MAX),
            counters: *job.counters(),
        })
    }

    fn job_ids(&self) -> impl Iterator<Item = u16> + '_ {
        self.jobs().map(|j| j.config().id)
    }

    fn switch_counters(&self) -> Counters {
        *self.counters()
    }

    fn count_drop(&mut self, reason: DropReason) {
        Switch::count_drop(self, reason);
    }

    fn end_run(&mut self, id: u16) -> bool {
        Switch::end_run(self, id)
    }

    fn shutdown_run(&mut self, id: u16, reason: AbortReason, out: &mut [u8]) -> Option<Verdict> {
        Switch::shutdown_run(self, id, reason, out)
    }

    fn sweep(&mut self, id: u16, out: &mut [u8]) -> Option<Verdict> {
        Switch::sweep(self, id, out)
    }

    fn poll_up(&mut self, out: &mut [u8]) -> Option<Verdict> {
        Switch::poll_up(self, out)
    }
}
