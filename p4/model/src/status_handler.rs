//! What the controller answers a Status with (protocol.md §3.7–3.8, §4 "Status"): the
//! StatusReply's flags and counters. No P4 twin since issue 25: the P4 programs send every
//! Status to the CPU port, and the controller (`controller.rs`) answers it, having checked
//! its tag, from the job table entry (world, slot count, the full mask that decides
//! `ALL_JOINED`), the run tracker's `session` and `joined` registers (`RUN_OPEN` and the
//! bitmap of the current run, empty when none is open) and every counter — which a control
//! plane reads and a data plane cannot, so a P4 switch's StatusReply now carries them too.

use switchml_core::switch::{Counters, JobCounters};
use switchml_core::wire::{StatusCounters, StatusFlags};

use crate::join_handler::full_mask;

/// The Status answer's parts (stateless).
#[derive(Debug, Clone, Copy, Default)]
pub struct StatusHandler;

impl StatusHandler {
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
