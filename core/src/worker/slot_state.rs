//! The state of one slot of a lane: which use it is on and how that use is being recovered
//! (protocol.md §5.3, §6). Apart from `slots.rs`, which runs the loop over it, so that the
//! lane (`mod.rs`) can hold the slots without naming the code that drives them.

use crate::time::{Duration, Instant};

/// What a slot is doing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Work {
    /// Nothing to send; `next` is the first tensor id it has not looked at.
    Idle { next: u64 },
    /// Sending the exponent of `chunk` of `tensor`, with no values.
    Prime { tensor: u64, chunk: u32 },
    /// Sending `chunk` of `tensor`, quantized with the job-wide exponent `exp`.
    Data { tensor: u64, chunk: u32, exp: u8 },
}

/// One slot of the lane.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SlotState {
    /// The use number of the outstanding (or next) use.
    pub(crate) seq: u32,
    pub(crate) work: Work,
    /// Timeouts of the current use (probes and resends alike): the stall budget.
    pub(crate) tries: u16,
    /// Resends of the current use's Contribution.
    pub(crate) resends: u16,
    /// The current retransmission timeout.
    pub(crate) rto: Duration,
    /// Whether `rto` was doubled because the switch did not answer: carried to the next use.
    pub(crate) backed_off: bool,
    /// When the current use was first sent (for round-trip samples).
    pub(crate) sent_at: Instant,
    /// The lane's send order of the current use's first send; `NOT_SENT` before it.
    pub(crate) order: u64,
    /// A recovery Probe for the current use is queued or unanswered.
    pub(crate) checking: bool,
    /// The queued action is that Probe, not the Contribution.
    pub(crate) probe_due: bool,
    /// The queued Probe asks for the use's Result (its Result was lost, §6.1).
    pub(crate) fetch: bool,
    /// The send order of the last use this lane sent before this use's latest send, Probe
    /// or "held" answer: the use is late once a use sent well after that completes.
    pub(crate) watch: u64,
    /// Whether the slot is in the send queue.
    pub(crate) queued: bool,
    /// Whether its fresh use waits for the congestion window (§6.3), out of the queue.
    pub(crate) held: bool,
    /// Whether the current use was found late (§6.1): its round trip then measures a
    /// loss's recovery, not the queues, and says nothing of congestion (§6.3).
    pub(crate) late: bool,
}

impl Work {
    /// The use's place in the order every rank shares (§6.3): tensor, chunk, a priming use
    /// before its chunk's data; `None` for an idle slot.
    pub(crate) fn age(&self) -> Option<(u64, u32, u8)> {
        match *self {
            Work::Idle { .. } => None,
            Work::Prime { tensor, chunk } => Some((tensor, chunk, 0)),
            Work::Data { tensor, chunk, .. } => Some((tensor, chunk, 1)),
        }
    }
}

/// `SlotState::order` of a use not sent yet.
pub(crate) const NOT_SENT: u64 = u64::MAX;

/// A use is late when a use first sent more than this many sends after its watch mark has
/// completed (TCP's three duplicate acknowledgements, counted in slot uses).
pub(crate) const REORDER_SENDS: u64 = 3;

impl SlotState {
    pub(crate) const fn new(rto: Duration) -> Self {
        SlotState {
            seq: 0,
            work: Work::Idle { next: 0 },
            tries: 0,
            resends: 0,
            rto,
            backed_off: false,
            sent_at: Instant::ZERO,
            order: NOT_SENT,
            checking: false,
            probe_due: false,
            fetch: false,
            watch: 0,
            queued: false,
            held: false,
            late: false,
        }
    }
}
