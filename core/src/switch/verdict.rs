//! What the switch decides about a packet: the [`Verdict`], and the [`DropReason`] of a
//! drop. Apart from the switch (`mod.rs`) because the code that writes messages up to a
//! parent (`tier/link.rs`) returns them too, and the switch calls that code.

use crate::wire;

/// What to do with the bytes the switch wrote into the output buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Verdict {
    /// Send nothing; the packet was dropped for this reason (and counted).
    Drop(DropReason),
    /// Send nothing; the packet was absorbed into a slot.
    Consumed,
    /// Send `out[..len]` to every rank of `job`.
    Multicast {
        /// The job whose ranks receive it.
        job: u16,
        /// Bytes written.
        len: usize,
    },
    /// Send `out[..len]` to `rank` of `job` (the sender of the packet).
    Unicast {
        /// The job.
        job: u16,
        /// The destination rank.
        rank: u16,
        /// Bytes written.
        len: usize,
    },
    /// Send `out[..len]` to the parent switch of a child's job (protocol.md §7).
    Up {
        /// The parent's job id (the message is for that job).
        job: u16,
        /// Bytes written.
        len: usize,
    },
}

/// Why a packet was dropped. Each has a counter.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum DropReason {
    /// The bytes are not a valid message.
    Malformed,
    /// A message type this version does not know.
    UnknownType,
    /// A message only the switch sends (Result, JoinReply, ProbeReply, StatusReply).
    UnexpectedType,
    /// No job has this id (Contributions; Joins and Probes get an Abort instead).
    UnknownJob,
    /// The rank is not below the job's world size.
    UnknownRank,
    /// The slot is outside the job's range.
    SlotRange,
    /// More values than a slot holds.
    CountTooLarge,
    /// A Contribution's slot version `ver` is not `seq mod 2`. Not the protocol version
    /// (byte 0): a datagram of another protocol version is [`DropReason::Malformed`].
    BadVersion,
    /// A contribution for a use older than the one the slot holds.
    Stale,
    /// A second contribution of one rank to an incomplete use.
    Duplicate,
    /// A contribution whose count differs from the use's first.
    CountMismatch,
    /// The caller's output buffer is shorter than [`Switch::OUT_LEN`].
    ///
    /// [`Switch::OUT_LEN`]: super::Switch::OUT_LEN
    OutputTooSmall,
    /// A message whose session is not the job's current run.
    BadSession,
    /// A datagram longer than any message (counted by the adapter that received it).
    Oversized,
    /// A datagram from a source no reply can go to: port 0, an unspecified, multicast or
    /// broadcast address (counted by the adapter that received it).
    BadSource,
}

impl DropReason {
    /// Every reason, in counter order.
    pub const ALL: [DropReason; wire::DROP_CLASSES] = [
        DropReason::Malformed,
        DropReason::UnknownType,
        DropReason::UnexpectedType,
        DropReason::UnknownJob,
        DropReason::UnknownRank,
        DropReason::SlotRange,
        DropReason::CountTooLarge,
        DropReason::BadVersion,
        DropReason::Stale,
        DropReason::Duplicate,
        DropReason::CountMismatch,
        DropReason::OutputTooSmall,
        DropReason::BadSession,
        DropReason::Oversized,
        DropReason::BadSource,
    ];

    /// Return the reason's name, for reports.
    pub const fn name(self) -> &'static str {
        match self {
            DropReason::Malformed => "malformed",
            DropReason::UnknownType => "unknown_type",
            DropReason::UnexpectedType => "unexpected_type",
            DropReason::UnknownJob => "unknown_job",
            DropReason::UnknownRank => "unknown_rank",
            DropReason::SlotRange => "slot_range",
            DropReason::CountTooLarge => "count_too_large",
            DropReason::BadVersion => "bad_version",
            DropReason::Stale => "stale",
            DropReason::Duplicate => "duplicate",
            DropReason::CountMismatch => "count_mismatch",
            DropReason::OutputTooSmall => "output_too_small",
            DropReason::BadSession => "bad_session",
            DropReason::Oversized => "oversized",
            DropReason::BadSource => "bad_source",
        }
    }

    pub(super) const fn index(self) -> usize {
        self as usize
    }
}

impl core::fmt::Display for DropReason {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(self.name())
    }
}
