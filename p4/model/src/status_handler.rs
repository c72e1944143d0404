//! `status_handler.p4`: answer `switchml doctor` (protocol.md §3.7–3.8, §4 "Status").
//!
//! Any sender may ask about any known job: the worker table is not consulted and the rank
//! field is only echoed. An unknown job is refused with Abort `UnknownJob`. A known job is
//! answered, unicast, from what the data plane reads in one pass: the job table entry
//! (world, slot count, the full mask that decides `ALL_JOINED`), the switch's epoch and the
//! run tracker's `session` and `joined` registers, through its read action
//! ([`RunTracker::status`](crate::run_tracker::RunTracker::status)): `RUN_OPEN` and the
//! bitmap of the current run (empty when none is open).
//!
//! **The 29 counters have no P4 twin.** A P4 data plane only increments its `counter`
//! externs; reading them is the control plane's business. So the P4 programs leave the
//! StatusReply's 232 counter bytes zero, and the model fills them with
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
    /// Read this job's run and answer with a StatusReply.
    Read(JobEntry),
}

/// The status handler (stateless: the run's registers belong to the run tracker).
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

    /// Return the flags of a job of `world` ranks of which `joined` have joined the run,
    /// if one is `open`.
    pub fn flags(joined: u64, world: u16, open: bool) -> StatusFlags {
        let mut flags = StatusFlags::default();
        if joined == full_mask(world) {
            flags.0 |= StatusFlags::ALL_JOINED.0;
        }
        if open {
            flags.0 |= StatusFlags::RUN_OPEN.0;
        }
        flags
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
            runs: job.runs,
            unauthorized: job.unauthorized,
            drops: switch.dropped,
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
                key: 0,
            },
            group: 2,
        };
        assert_eq!(StatusHandler::apply(Some(job)), StatusDecision::Read(job));
    }

    #[test]
    fn all_joined_needs_every_rank_of_the_world() {
        let open = StatusFlags(StatusFlags::RUN_OPEN.0);
        assert_eq!(StatusHandler::flags(0, 3, false), StatusFlags::default());
        assert_eq!(StatusHandler::flags(0b011, 3, true), open);
        assert_eq!(StatusHandler::flags(0b111, 3, true), StatusFlags(0x03));
        assert_eq!(StatusHandler::flags(u64::MAX, 64, true), StatusFlags(0x03));
    }

    #[test]
    fn counters_are_in_wire_order() {
        let mut switch = Counters {
            received: 1,
            ..Counters::default()
        };
        switch.dropped[0] = 2;
        switch.dropped[11] = 3;
        switch.dropped[14] = 4;
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
            runs: 13,
            unauthorized: 14,
        };
        let c = StatusHandler::counters(&switch, &job).to_array();
        let mut want = [0u64; StatusCounters::COUNT];
        want[..14].copy_from_slice(&[1, 9, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14]);
        want[14] = 2;
        want[14 + 11] = 3;
        want[14 + 14] = 4;
        assert_eq!(c, want);
    }
}
