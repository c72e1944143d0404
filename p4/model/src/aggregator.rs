//! The model as a `switchml_core::switch::Aggregator` and `ControlPlane`, so the
//! deterministic simulator, the core's `Endpoint` and the UDP switch daemon (anything
//! written against the reference switch) can run on it.
//!
//! The mapping: a bare datagram carries no addresses, so the pipeline classifies it as
//! coming from [`Source::rank_port`](crate::Source::rank_port) of its own rank field (IPv4
//! 0.0.0.0, UDP port = rank) and as arriving on switch port = rank. A job set up with
//! [`Pipeline::add_job_with_rank_ports`] therefore knows exactly ranks `0..world`, as the
//! reference does. Verdicts map one to one; the framed-only `NotSwitchml` cannot occur, and
//! a `Fault` (a register hazard, a model bug that the tests rule out) maps to a
//! `Malformed` drop so that the simulator carries on; [`Pipeline::faults`] counts it.
//!
//! The control plane maps as directly: `install_job` is [`Pipeline::add_job_with_rank_ports`]
//! (`install_tiered_job`: [`Pipeline::add_tiered_job_with_rank_ports`], a child's ranks at
//! the ports of their global ranks)
//! (a full worker table reads as `JobError::TableFull`, the job being taken out again),
//! `uninstall_job` [`Pipeline::remove_job`], `job_snapshot` [`Pipeline::job`],
//! `switch_counters` [`Pipeline::counters`], and `end_run`, `shutdown_run`, `poll_up`
//! (the Abort a child owes its parent, protocol.md §7) and `count_drop` the methods of
//! the same names. Addresses are the `Endpoint`'s business: it
//! learns each lane's from the JoinReplies the pipeline writes, as it does for the
//! reference, so the worker table only ever holds the rank ports.

use switchml_core::switch::{
    Aggregator, ControlPlane, Counters, DropReason, JobConfig, JobError, JobSnapshot, Tier,
    Verdict as CoreVerdict,
};

use crate::control_plane::ControlError;
use crate::pipeline::{Config, Pipeline, Verdict};
use crate::udp_sender::SwitchAddr;
use crate::{MAX_COUNT, OUT_LEN};
use switchml_core::wire::AbortReason;

/// Map a model verdict to the reference switch's.
pub fn to_core(v: Verdict) -> CoreVerdict {
    match v {
        Verdict::Drop(reason) => CoreVerdict::Drop(reason),
        Verdict::Consumed => CoreVerdict::Consumed,
        Verdict::Unicast { job, rank, len, .. } => CoreVerdict::Unicast { job, rank, len },
        Verdict::Multicast { job, len, .. } => CoreVerdict::Multicast { job, len },
        Verdict::Up { job, len, .. } => CoreVerdict::Up { job, len },
        // process_datagram resolves the CPU port's exchange before it returns.
        Verdict::NotSwitchml
        | Verdict::Fault(_)
        | Verdict::ToCpu { .. }
        | Verdict::Forward { .. } => CoreVerdict::Drop(DropReason::Malformed),
    }
}

impl Pipeline {
    /// A pipeline of `slots` slots of [`MAX_COUNT`] values announcing `epoch`, with `jobs`
    /// set up for bare datagrams ([`Pipeline::add_job_with_rank_ports`]).
    pub fn with_rank_ports(
        slots: usize,
        jobs: &[JobConfig],
        epoch: u32,
    ) -> Result<Pipeline, ControlError> {
        let workers = jobs.iter().map(|j| usize::from(j.world)).sum::<usize>();
        let mut p = Pipeline::new(Config {
            slots,
            jobs: jobs.len().max(1),
            workers: workers.max(1),
            epoch,
            max_count: MAX_COUNT,
            switch: SwitchAddr::default(),
        });
        for &job in jobs {
            p.add_job_with_rank_ports(job)?;
        }
        Ok(p)
    }
}

impl Aggregator for Pipeline {
    fn process(&mut self, packet: &[u8], out: &mut [u8]) -> CoreVerdict {
        to_core(self.process_datagram(packet, out))
    }
}

impl ControlPlane for Pipeline {
    const OUT_LEN: usize = OUT_LEN;

    fn epoch(&self) -> u32 {
        Pipeline::epoch(self)
    }

    fn set_congested(&mut self, congested: bool) {
        self.congested = congested;
    }

    fn pool_len(&self) -> usize {
        self.config.slots
    }

    fn install_job(&mut self, config: JobConfig) -> Result<(), JobError> {
        self.install_tiered_job(config, Tier::Flat)
    }

    fn install_tiered_job(&mut self, config: JobConfig, tier: Tier) -> Result<(), JobError> {
        match self.add_tiered_job_with_rank_ports(config, tier) {
            Ok(()) => Ok(()),
            Err(ControlError::Job(e)) => Err(e),
            Err(ControlError::Worker(_)) => {
                let _ = self.remove_job(config.id);
                Err(JobError::TableFull(self.config.jobs))
            }
        }
    }

    fn uninstall_job(&mut self, id: u16) -> Result<(), JobError> {
        self.remove_job(id).map(drop)
    }

    fn job_snapshot(&self, id: u16) -> Option<JobSnapshot> {
        let report = self.job(id)?;
        Some(JobSnapshot {
            config: report.config,
            session: report.session,
            lane_slots: report.lane_slots,
            joined: report.joined.count_ones() as u16,
            counters: report.counters,
        })
    }

    fn job_ids(&self) -> impl Iterator<Item = u16> + '_ {
        Pipeline::job_ids(self)
    }

    fn switch_counters(&self) -> Counters {
        self.counters()
    }

    fn count_drop(&mut self, reason: DropReason) {
        Pipeline::count_drop(self, reason);
    }

    fn end_run(&mut self, id: u16) -> bool {
        Pipeline::end_run(self, id)
    }

    fn shutdown_run(
        &mut self,
        id: u16,
        reason: AbortReason,
        out: &mut [u8],
    ) -> Option<CoreVerdict> {
        Pipeline::shutdown_run(self, id, reason, out).map(to_core)
    }

    fn sweep(&mut self, id: u16, out: &mut [u8]) -> Option<CoreVerdict> {
        Pipeline::sweep(self, id, out).map(to_core)
    }

    fn poll_up(&mut self, out: &mut [u8]) -> Option<CoreVerdict> {
        Pipeline::poll_up(self, out).map(to_core)
    }
}
