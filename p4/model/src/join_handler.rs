//! `join_handler.p4`: the rendezvous (protocol.md §3.2–3.3, §4 "Join").
//!
//! A Join is checked against the job table entry in the reference's order (rank, world
//! size, slot range, count) and refused with an Abort naming the first mismatch; otherwise
//! the rank's bit goes into register `joined` (one 64-bit cell per job table entry). The
//! Join that fills the bitmap is answered by a multicast JoinReply with `COMPLETE`.
//!
//! A Status reads the register through [`JoinHandler::status`], the control's read (one
//! access in the pass, as for a Join; on TNA the Join's `RegisterAction` with an empty mask).

use switchml_core::wire::AbortReason;

use crate::classifier::JobEntry;
use crate::headers::JoinHeader;
use crate::register::{Hazard, Pass, Register};

/// What the join handler decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JoinDecision {
    /// Answer with an Abort: reason and detail.
    Refuse(AbortReason, u16),
    /// Answer with a JoinReply.
    Accept {
        /// The joined bitmap after this Join.
        joined: u64,
        /// Every rank has joined.
        complete: bool,
        /// This Join made the job complete: multicast the reply.
        completes: bool,
    },
}

/// The join handler: register `joined`, one cell per job table entry.
#[derive(Debug, Clone)]
pub struct JoinHandler {
    joined: Register<u64>,
}

/// The bitmap of ranks `0..world`.
pub fn full_mask(world: u16) -> u64 {
    match world {
        0 => 0,
        1..=63 => (1u64 << world) - 1,
        _ => u64::MAX,
    }
}

impl JoinHandler {
    /// Make the register for `jobs` job table entries.
    pub fn new(jobs: usize) -> Self {
        JoinHandler {
            joined: Register::new("joined", jobs, 0),
        }
    }

    /// Decide on a Join to `job` from a sender whose rank is `rank` if the worker table
    /// knows it, on a switch that accepts up to `max_count` values.
    pub fn apply(
        &mut self,
        pass: &Pass,
        job: &JobEntry,
        rank: Option<u16>,
        h: &JoinHeader,
        max_count: u16,
    ) -> Result<JoinDecision, Hazard> {
        let c = job.config;
        let Some(rank) = rank else {
            return Ok(JoinDecision::Refuse(AbortReason::UnknownRank, c.world));
        };
        let refusal = if h.world != c.world {
            Some((AbortReason::WorldMismatch, c.world))
        } else if h.slot_count == 0
            || u32::from(h.slot_lo) + u32::from(h.slot_count) > u32::from(c.slot_count)
        {
            Some((AbortReason::SlotRange, c.slot_count))
        } else if h.count > max_count {
            Some((AbortReason::CountTooLarge, max_count))
        } else {
            None
        };
        if let Some((reason, detail)) = refusal {
            return Ok(JoinDecision::Refuse(reason, detail));
        }
        let bit = 1u64 << (rank & 63);
        let full = full_mask(c.world);
        let old = self.joined.execute(pass, usize::from(job.index), |cell| {
            let old = *cell;
            *cell |= bit;
            old
        })?;
        let joined = old | bit;
        Ok(JoinDecision::Accept {
            joined,
            complete: joined == full,
            completes: old & bit == 0 && joined == full,
        })
    }

    /// Read job table entry `index`'s joined bitmap for a Status.
    pub fn status(&mut self, pass: &Pass, index: u16) -> Result<u64, Hazard> {
        self.joined.execute(pass, usize::from(index), |cell| *cell)
    }

    /// Return the register.
    pub fn register(&self) -> &Register<u64> {
        &self.joined
    }

    /// Forget who joined job table entry `index` (control plane).
    pub fn reset(&mut self, index: usize) {
        self.joined.write(index, 0);
    }
}
