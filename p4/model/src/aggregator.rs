//! The model as a `switchml_core::switch::Aggregator`, so the deterministic simulator (and
//! anything else written against the reference switch) can run on it.
//!
//! The mapping: a bare datagram carries no addresses, so the pipeline classifies it as
//! coming from [`Source::rank_port`](crate::Source::rank_port) of its own rank field (IPv4
//! 0.0.0.0, UDP port = rank) and as arriving on switch port = rank. A job set up with
//! [`Pipeline::add_job_with_rank_ports`] therefore knows exactly ranks `0..world`, as the
//! reference does. Verdicts map one to one; the framed-only `NotSwitchml` cannot occur, and
//! a `Fault` (a register hazard, a model bug that the tests rule out) maps to a
//! `Malformed` drop so that the simulator carries on; [`Pipeline::faults`] counts it.

use switchml_core::switch::{Aggregator, DropReason, JobConfig, Verdict as CoreVerdict};

use crate::control_plane::ControlError;
use crate::pipeline::{Config, Pipeline, Verdict};
use crate::udp_sender::SwitchAddr;
use crate::MAX_COUNT;

/// Map a model verdict to the reference switch's.
pub fn to_core(v: Verdict) -> CoreVerdict {
    match v {
        Verdict::Drop(reason) => CoreVerdict::Drop(reason),
        Verdict::Consumed => CoreVerdict::Consumed,
        Verdict::Unicast { job, rank, len, .. } => CoreVerdict::Unicast { job, rank, len },
        Verdict::Multicast { job, len, .. } => CoreVerdict::Multicast { job, len },
        Verdict::NotSwitchml | Verdict::Fault(_) => CoreVerdict::Drop(DropReason::Malformed),
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
