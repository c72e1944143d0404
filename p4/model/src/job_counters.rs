//! `job_counters.p4`: per-job event counters, one counter array per event indexed by the
//! job table entry, so a packet that counts several events (a contribution that completes
//! a use with an overflow) touches each array once.
//!
//! Where they count: [`JobCounters::count`] is the ingress control `JobCounters` of both
//! programs; [`JobCounters::result`] is `job_overflows`, which the TNA program counts in its
//! egress (`JobEgressCounters`: the overflow flag is taken in the ingress's last stage, so
//! no ingress stage is left for a counter after it) from the multicast Result's flag byte,
//! on the group's first replica; the v1model program counts it in its ingress
//! `JobCounters`, after the flag. Either way once per completed use, from the same flag.

use switchml_core::switch::JobCounters as Snapshot;
use switchml_core::wire::{DataPacket, Flags};

use crate::register::Counter;

/// A per-job event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JobEvent {
    /// A contribution added into a slot.
    Contribution,
    /// A use completed.
    Completion,
    /// A stored result unicast again.
    RetransmitReply,
    /// A duplicate to an incomplete use.
    Duplicate,
    /// A contribution for an older use.
    Stale,
    /// Another contribution dropped (rank, slot, count, version).
    Rejected,
    /// A Join answered.
    Join,
    /// A Probe answered.
    Probe,
    /// An Abort passed on.
    Abort,
    /// A use that ended with an overflow.
    Overflow,
    /// A run opened.
    Run,
    /// A message refused for a wrong key or session.
    Unauthorized,
}

const EVENTS: usize = 12;

/// The counters.
#[derive(Debug, Clone)]
pub struct JobCounters {
    events: [Counter; EVENTS],
}

/// The per-job counters of `job_counters.p4`, by name, in StatusReply order: what a P4
/// switch's control plane (BMv2's `counter_read`) calls them.
pub const NAMES: [&str; EVENTS] = [
    "job_contributions",
    "job_completions",
    "job_retransmit_replies",
    "job_duplicates",
    "job_stale",
    "job_rejected",
    "job_joins",
    "job_probes",
    "job_aborts",
    "job_overflows",
    "job_runs",
    "job_unauthorized",
];

impl JobCounters {
    /// Make counters for `jobs` job table entries.
    pub fn new(jobs: usize) -> Self {
        JobCounters {
            events: NAMES.map(|n| Counter::new(n, jobs)),
        }
    }

    /// Count `event` for job table entry `job`.
    pub fn count(&mut self, event: JobEvent, job: u16) {
        self.events[event as usize].count(usize::from(job));
    }

    /// `job_overflows` (TNA: `JobEgressCounters`): the multicast `result` a completing
    /// Contribution became, for job table entry `job`, counts if its flag byte says
    /// OVERFLOW. Called once per packet, before replication (TNA counts the first
    /// replica).
    pub fn result(&mut self, job: u16, result: &[u8]) {
        if DataPacket::new_unchecked(result)
            .flags()
            .contains(Flags::OVERFLOW)
        {
            self.count(JobEvent::Overflow, job);
        }
    }

    /// Read entry `job` as the reference switch's per-job counters.
    pub fn snapshot(&self, job: u16) -> Snapshot {
        let r = |e: JobEvent| self.events[e as usize].read(usize::from(job));
        Snapshot {
            contributions: r(JobEvent::Contribution),
            completions: r(JobEvent::Completion),
            retransmit_replies: r(JobEvent::RetransmitReply),
            duplicates: r(JobEvent::Duplicate),
            stale: r(JobEvent::Stale),
            rejected: r(JobEvent::Rejected),
            joins: r(JobEvent::Join),
            probes: r(JobEvent::Probe),
            aborts: r(JobEvent::Abort),
            overflows: r(JobEvent::Overflow),
            runs: r(JobEvent::Run),
            unauthorized: r(JobEvent::Unauthorized),
        }
    }

    /// Zero entry `job` (control plane).
    pub fn clear(&mut self, job: u16) {
        for c in self.events.iter_mut() {
            c.clear(usize::from(job));
        }
    }
}

#[cfg(test)]
mod name_tests {
    use super::NAMES;

    #[test]
    fn the_p4_names_are_the_cores_with_job_in_front() {
        let core = switchml_core::switch::JobCounters::NAMES;
        assert_eq!(NAMES.map(|n| n.strip_prefix("job_")), core.map(Some));
    }
}
