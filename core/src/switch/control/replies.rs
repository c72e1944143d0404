//! What the switch writes outside its control messages too: an Abort (a run that the
//! control plane or a liveness sweep ends), the flags of a JoinReply (a child switch writes
//! one when its parent's comes down, `tier.rs`), and the longest reply, which sizes the
//! output buffer. Apart from `control.rs`, so that the switch can use them without naming
//! its control code.

use crate::wire::{AbortPacket, AbortReason, AbortRepr, JoinFlags, MAX_BITMAP_LEN};

/// The largest message the switch writes, given the largest Result.
pub(crate) const fn max_reply_len(result_len: usize) -> usize {
    // The StatusReply is the largest control message (JoinReply: 32, ProbeReply: 28, each
    // with its bitmap).
    let control = crate::wire::status_reply::HEADER_LEN + MAX_BITMAP_LEN;
    if result_len > control {
        result_len
    } else {
        control
    }
}

/// Write an Abort into `out`; return its length (`None` if `out` is too short).
pub(crate) fn emit_abort(
    job: u16,
    rank: u16,
    reason: AbortReason,
    detail: u16,
    epoch: u32,
    session: u32,
    out: &mut [u8],
) -> Option<usize> {
    let repr = AbortRepr {
        job,
        rank,
        reason,
        detail,
        epoch,
        session,
    };
    let len = repr.buffer_len();
    repr.emit(&mut AbortPacket::new_unchecked(out.get_mut(..len)?));
    Some(len)
}

/// The flags of a JoinReply: `COMPLETE` if the run is, and what the switch offers.
pub(crate) fn join_flags(probe_results: bool, complete: bool) -> JoinFlags {
    let offers = if probe_results {
        JoinFlags::PROBE_RESULTS
    } else {
        JoinFlags::default()
    };
    if complete {
        offers.with(JoinFlags::COMPLETE)
    } else {
        offers
    }
}
