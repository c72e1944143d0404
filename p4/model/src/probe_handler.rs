//! `probe_handler.p4`: who is missing (protocol.md §3.4–3.5, §4 "Probe").
//!
//! A Probe of a known job is first checked against the job's run by the run tracker: a
//! session that is not the run's is answered with Abort `SessionEnded` (a stalled worker
//! of an ended run learns that it is over; a forger learns nothing). A Probe of the run's
//! rank and slot then reads `seq`, `seen` and `remaining` of the slot version through read
//! actions of the controls that own those registers (one access each in the pass, as for a
//! Contribution) and is answered with a ProbeReply; otherwise with an Abort, as for a Join.
//! A version that holds a use of another run reads as idle.

use switchml_core::wire::{AbortReason, SlotState};

use crate::classifier::JobEntry;
use crate::headers::ProbeHeader;

/// What the probe handler decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProbeDecision {
    /// Answer with an Abort: reason and detail.
    Refuse(AbortReason, u16),
    /// Read pool slot `slot`, version `ver`, and answer with a ProbeReply.
    Read {
        /// The pool slot.
        slot: usize,
    },
}

/// What a ProbeReply says about the slot version (the fields `reply_builder.p4` writes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SlotReport {
    /// Idle, collecting or complete.
    pub state: SlotState,
    /// Contributions missing.
    pub remaining: u16,
    /// The use held.
    pub seq: u32,
    /// The ranks seen.
    pub seen: u64,
}

/// The probe handler (stateless: the registers belong to the controls that update them).
#[derive(Debug, Clone, Copy, Default)]
pub struct ProbeHandler;

impl ProbeHandler {
    /// Check a Probe to `job`, whose ranks state `world` (the whole job's at a child
    /// switch), whose session the run tracker `admitted` (or not), from a sender whose rank
    /// is `rank` if the worker table knows it.
    pub fn apply(
        job: &JobEntry,
        world: u16,
        admitted: bool,
        rank: Option<u16>,
        h: &ProbeHeader,
    ) -> ProbeDecision {
        let c = job.config;
        if !admitted {
            ProbeDecision::Refuse(AbortReason::SessionEnded, 0)
        } else if rank.is_none() {
            ProbeDecision::Refuse(AbortReason::UnknownRank, world)
        } else if h.slot >= c.slot_count {
            ProbeDecision::Refuse(AbortReason::SlotRange, c.slot_count)
        } else {
            ProbeDecision::Read {
                slot: c.slot_lo as usize + usize::from(h.slot),
            }
        }
    }

    /// Return what the reply says of a version holding use `seq` of the probe's run (`None`:
    /// no use of it, idle) with `remaining` contributions missing and `seen` ranks seen.
    pub fn report(seq: Option<u32>, remaining: u16, seen: u64) -> SlotReport {
        match seq {
            None => SlotReport {
                state: SlotState::Idle,
                remaining: 0,
                seq: 0,
                seen: 0,
            },
            Some(seq) => SlotReport {
                state: if remaining == 0 {
                    SlotState::Complete
                } else {
                    SlotState::Collecting
                },
                remaining,
                seq,
                seen,
            },
        }
    }
}
