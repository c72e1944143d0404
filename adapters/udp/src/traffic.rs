//! The daemon's counters: what it received, what the aggregator decided, what it sent, and
//! what it refused itself (bad and spoofed sources, oversized datagrams, injected losses).
//! They are counted from the aggregator's verdicts, so any [`Aggregator`] gets the same
//! report.
//!
//! [`Aggregator`]: switchml_core::switch::Aggregator

use switchml_core::switch::{DropReason, Verdict};

/// Counters of one job.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct JobTraffic {
    /// The job id.
    pub job: u16,
    /// Datagrams received for this job.
    pub received: u64,
    /// Absorbed into a slot.
    pub consumed: u64,
    /// Multicasts (completed uses, join completion, aborts passed on).
    pub multicasts: u64,
    /// Unicast answers (resent results, join and probe replies, refusals).
    pub unicasts: u64,
    /// Datagrams sent for this job, replicas included.
    pub sent: u64,
    /// Dropped because the source is not the address registered for the lane.
    pub spoofed: u64,
    /// Replicas not sent because the destination lane has not joined.
    pub unroutable: u64,
    /// Dropped by the aggregator, indexed like [`DropReason::ALL`].
    pub dropped: [u64; 12],
}

impl JobTraffic {
    /// Return all drops: the aggregator's and the spoofed ones.
    pub fn total_drops(&self) -> u64 {
        self.dropped.iter().sum::<u64>() + self.spoofed
    }

    /// Count one verdict.
    pub fn count(&mut self, verdict: &Verdict) {
        match verdict {
            Verdict::Drop(r) => self.dropped[reason_index(*r)] += 1,
            Verdict::Consumed => self.consumed += 1,
            Verdict::Multicast { .. } => self.multicasts += 1,
            Verdict::Unicast { .. } => self.unicasts += 1,
        }
    }
}

/// Switch-wide counters.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DaemonCounters {
    /// Datagrams received.
    pub received: u64,
    /// Datagrams sent.
    pub sent: u64,
    /// Datagrams not sent: the kernel refused them, or the socket stayed full.
    pub send_failures: u64,
    /// Dropped on receive because no reply could go to the source: UDP port 0, an
    /// unspecified, multicast or broadcast address, or no IP address at all.
    pub bad_source: u64,
    /// Receives that failed with an error other than "nothing waiting".
    pub recv_errors: u64,
    /// Dropped by the loss injector (either direction).
    pub injected_losses: u64,
    /// Longer than any valid message (cut by the receive buffer), dropped.
    pub oversized: u64,
    /// Drops of datagrams that name no registered job (junk, foreign jobs), by reason.
    pub unattributed: [u64; 12],
    /// Per registered job.
    pub jobs: Vec<JobTraffic>,
}

impl DaemonCounters {
    /// Return every drop: bad sources, unattributed, oversized and each job's.
    pub fn total_drops(&self) -> u64 {
        self.unattributed.iter().sum::<u64>()
            + self.bad_source
            + self.oversized
            + self.jobs.iter().map(JobTraffic::total_drops).sum::<u64>()
    }

    /// Return the counters of job `id`.
    pub fn job(&self, id: u16) -> Option<&JobTraffic> {
        self.jobs.iter().find(|j| j.job == id)
    }
}

/// Return `reason`'s position in [`DropReason::ALL`].
pub fn reason_index(reason: DropReason) -> usize {
    DropReason::ALL
        .iter()
        .position(|r| *r == reason)
        .unwrap_or(0)
}
