//! `status_handler.p4`: answer `switchml doctor` (protocol.md §3.7–3.8, §4 "Status").
//!
//! Any sender may ask about any known job: the worker table is not consulted and the rank
//! field is only echoed. An unknown job is refused with Abort `UnknownJob`. A known job is
//! answered, unicast, from what the data plane reads in one pass: the job table entry
//! (world, slot count, the full mask that decides `ALL_JOINED`), the switch's epoch and the
//! `joined` register, through the join handler's read action
//! ([`JoinHandler::status`](crate::join_handler::JoinHandler::status)).
//!
//! **The twelve counters have no P4 twin.** A P4 data plane only increments its `counter`
//! externs; reading them is the control plane's business. So the P4 programs leave the
//! StatusReply's 96 counter bytes zero, and the model fills them with
//! [`StatusHandler::counters`] from the counters its control plane reads, so that it
//! answers byte for byte as the reference switch does (`p4/README.md`, known gaps).

use switchml_core::switch::{Counters, JobCounters};
use switchml_core::wire::{AbortReason, StatusCounters, StatusFlags};

use crate::classifier::JobEntry;
use crate::join_handler::full_mask;

/// What the status handler decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StatusDecision {
    /// Answer with an Abort: reason and detail.
    Refuse(AbortReason, u16),
    /// Read the `joined` cell of this job and answer with a StatusReply.
    Read(JobEntry),
}

/// The status handler (stateless: `joined` belongs to the join handler).
#[derive(Debug, Clone, Copy, Default)]
pub struct StatusHandler;

impl StatusHandler {
    /// Decide on a Status about `job`, the job table's answer.
    pub fn apply(job: Option<JobEntry>) -> StatusDecision {
        match job {
            None => StatusDecision::Refuse(AbortReason::UnknownJob, 0),
            Some(job) => StatusDecision::Read(job),
        }
    }

    /// Return the flags of a job of `world` ranks of which `joined` have joined.
    pub fn flags(joined: u64, world: u16) -> StatusFlags {
        if joined == full_mask(world) {
            StatusFlags::ALL_JOINED
        } else {
            StatusFlags::default()
        }
    }

    /// The model only, no P4 twin: the counters a StatusReply carries, from the switch-wide
    /// counters (which already count the Status itself) and the job's.
    pub fn counters(switch: &Counters, job: &JobCounters) -> StatusCounters {
        StatusCounters {
            received: switch.received,
            dropped: switch.total_drops(),
            contributions: job.contributions,
            completions: job.completions,
            retransmit_replies: job.retransmit_replies,
            duplicates: job.duplicates,
            stale: job.stale,
            rejected: job.rejected,
            joins: job.joins,
            probes: job.probes,
            aborts: job.aborts,
            overflows: job.overflows,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use switchml_core::switch::JobConfig;

    #[test]
    fn unknown_jobs_are_refused_known_ones_read() {
        assert_eq!(
            StatusHandler::apply(None),
            StatusDecision::Refuse(AbortReason::UnknownJob, 0)
        );
        let job = JobEntry {
            index: 1,
            config: JobConfig {
                id: 7,
                world: 3,
                slot_lo: 0,
                slot_count: 4,
            },
            group: 2,
        };
        assert_eq!(StatusHandler::apply(Some(job)), StatusDecision::Read(job));
    }

    #[test]
    fn all_joined_needs_every_rank_of_the_world() {
        assert_eq!(StatusHandler::flags(0b011, 3), StatusFlags::default());
        assert_eq!(StatusHandler::flags(0b111, 3), StatusFlags::ALL_JOINED);
        assert_eq!(StatusHandler::flags(u64::MAX, 64), StatusFlags::ALL_JOINED);
    }

    #[test]
    fn counters_are_in_wire_order() {
        let mut switch = Counters {
            received: 1,
            ..Counters::default()
        };
        switch.dropped[0] = 2;
        switch.dropped[11] = 3;
        let job = JobCounters {
            contributions: 3,
            completions: 4,
            retransmit_replies: 5,
            duplicates: 6,
            stale: 7,
            rejected: 8,
            joins: 9,
            probes: 10,
            aborts: 11,
            overflows: 12,
        };
        let c = StatusHandler::counters(&switch, &job).to_array();
        assert_eq!(c, [1, 5, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]);
    }
}
