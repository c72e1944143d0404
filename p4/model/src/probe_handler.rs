//! `probe_handler.p4`: who is missing (protocol.md §3.4–3.5, §4 "Probe").
//!
//! A Probe of a known job, rank and slot reads `seq`, `seen` and `remaining` of the slot
//! version through read actions of the controls that own those registers (one access each
//! in the pass, as for a Contribution) and is answered with a ProbeReply; otherwise with an
//! Abort, as for a Join.

use switchml_core::wire::{AbortReason, SlotState};

use crate::classifier::JobEntry;
use crate::headers::ProbeHeader;
use crate::use_checker::SeqCell;

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

/// The probe handler (stateless: the registers belong to the controls that update them).
#[derive(Debug, Clone, Copy, Default)]
pub struct ProbeHandler;

impl ProbeHandler {
    /// Check a Probe to `job` from a sender whose rank is `rank` if the worker table knows
    /// it.
    pub fn apply(job: &JobEntry, rank: Option<u16>, h: &ProbeHeader) -> ProbeDecision {
        let c = job.config;
        if rank.is_none() {
            ProbeDecision::Refuse(AbortReason::UnknownRank, c.world)
        } else if h.slot >= c.slot_count {
            ProbeDecision::Refuse(AbortReason::SlotRange, c.slot_count)
        } else {
            ProbeDecision::Read {
                slot: c.slot_lo as usize + usize::from(h.slot),
            }
        }
    }

    /// Return the state a ProbeReply reports for a version holding `seq` with `remaining`
    /// contributions missing.
    pub fn state(seq: SeqCell, remaining: u16) -> SlotState {
        if !seq.used {
            SlotState::Idle
        } else if remaining == 0 {
            SlotState::Complete
        } else {
            SlotState::Collecting
        }
    }
}
