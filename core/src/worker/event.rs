//! What the worker reports: events, errors, counters.

use crate::quant::{ElementType, NonFinite};
use crate::ranks::WorldSet;
use crate::time::Duration;
use crate::wire::{AbortReason, SlotState};

/// Identifies a submitted tensor; ids increase in submission order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct TensorId(pub u64);

/// What happened.
#[derive(Debug)]
pub enum Event<B> {
    /// Every rank has joined; data flows from now on.
    Joined {
        /// The switch's epoch.
        epoch: u32,
    },
    /// A tensor is finished (or abandoned); its buffer is handed back.
    Done {
        /// Which tensor.
        id: TensorId,
        /// The buffer, holding the result when `result` is `Ok`.
        buf: B,
        /// Whether the result is good.
        result: Result<(), TensorError>,
    },
    /// The stream cannot go on. Every queued tensor follows as `Done` with an error.
    Failed(WorkerError),
    /// The switch is sharded and this lane belongs to shard `shard` of `shards`: send every
    /// later datagram to that shard, at the switch's port plus `shard` (protocol.md §1.1,
    /// [`crate::shard::shard_port`]). The Join goes out again at once.
    Redirected {
        /// The lane's shard.
        shard: u16,
        /// The switch's number of shards.
        shards: u16,
    },
}

/// Why one tensor's result is not good.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum TensorError {
    /// The sum left the element type's range (protocol.md §5.2). For int32 the switch
    /// flagged a chunk (`OVERFLOW`): the other chunks are exact. For floats, only with
    /// [`NonFinitePolicy::Refuse`](super::NonFinitePolicy::Refuse) (else the ±∞ is the
    /// result, as IEEE addition gives it): the sum of element `index` is beyond the type's
    /// range: that element holds ±∞, the others hold their sums.
    Overflow {
        /// The first overflowed element (int32: the first element of the first flagged
        /// chunk).
        index: usize,
        /// The tensor's element type.
        element: ElementType,
    },
    /// The stream failed before the tensor was finished; see [`Event::Failed`].
    Aborted,
}

/// What the switch said about a stalled slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum StallReport {
    /// The switch answered the probe.
    Probed {
        /// State of the slot version at the switch.
        state: SlotState,
        /// The use the switch holds there.
        switch_seq: u32,
        /// Contributions it still misses for that use.
        remaining: u16,
        /// Ranks that have not contributed to *our* use (every rank if the switch holds
        /// another use).
        missing: WorldSet,
    },
    /// The switch did not answer the probe either.
    NoAnswer,
}

/// Why the stream failed. Every variant names what is missing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum WorkerError {
    /// The join did not complete in time; these ranks had not joined.
    JoinTimeout {
        /// Ranks missing at the last JoinReply.
        missing: WorldSet,
        /// How long the worker waited.
        waited: Duration,
    },
    /// The switch never answered a Join.
    SwitchUnreachable {
        /// How long the worker waited.
        waited: Duration,
    },
    /// Nothing listens at the switch's address: the network refused the Joins (ICMP port
    /// unreachable), see [`super::Worker::handle_unreachable`].
    PortUnreachable {
        /// How long the worker had been joining.
        waited: Duration,
    },
    /// The switch refused the job (Abort in answer to a Join or Probe).
    Refused {
        /// Why.
        reason: AbortReason,
        /// The reason's detail (see protocol.md §3.6).
        detail: u16,
    },
    /// Another rank gave up and told the job.
    PeerAborted {
        /// The rank that gave up.
        rank: u16,
        /// The rank it was waiting for, if it named one.
        waiting_for: Option<u16>,
    },
    /// The job's parent switch ended the run (two levels, protocol.md §7): a rank under
    /// another child switch gave up, a child restarted or was refused, or the parent stops.
    ParentFailed {
        /// The child switch (a member of the parent's job) it names, if it names one.
        child: Option<u16>,
    },
    /// One slot made no progress through the whole retry budget.
    Stalled {
        /// The job-relative slot.
        slot: u16,
        /// The use number waited for.
        seq: u32,
        /// What the switch said.
        report: StallReport,
    },
    /// The switch's epoch changed: it restarted and lost the job's state.
    SwitchRestarted {
        /// The epoch at join time.
        old: u32,
        /// The epoch now.
        new: u32,
    },
    /// The application gave up ([`super::Worker::abort`]).
    Cancelled,
    /// The caller's transmit buffer is too small for one datagram.
    BufferTooSmall {
        /// Bytes needed.
        need: usize,
    },
}

impl core::fmt::Display for WorkerError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            WorkerError::JoinTimeout { missing, waited } => {
                write!(
                    f,
                    "join timed out after {waited}: ranks {missing} never joined"
                )
            }
            WorkerError::SwitchUnreachable { waited } => {
                write!(f, "the switch did not answer for {waited}")
            }
            WorkerError::PortUnreachable { waited } => write!(
                f,
                "nothing listens at the switch's address: its Joins were refused (ICMP port unreachable) for {waited}"
            ),
            // Aborts about one rank name it (protocol.md §3.6).
            WorkerError::Refused {
                reason: AbortReason::RankRestarted,
                detail,
            } => write!(
                f,
                "rank {detail} restarted (it joined again as a new process): this run is over"
            ),
            WorkerError::Refused {
                reason: AbortReason::RankSilent,
                detail,
            } => write!(
                f,
                "rank {detail} is gone: the switch heard nothing from it for its dead interval \
                 (its process died or lost the network)"
            ),
            WorkerError::Refused {
                reason: AbortReason::RankRefused,
                detail,
            } => write!(
                f,
                "the switch refused rank {detail}'s Join (its settings differ from this run's; \
                 its own error says which)"
            ),
            WorkerError::Refused { reason, detail } => {
                write!(f, "the switch refused the job: {reason} (detail {detail})")
            }
            WorkerError::PeerAborted { rank, waiting_for } => {
                write!(f, "rank {rank} gave up")?;
                match waiting_for {
                    Some(r) => write!(f, " waiting for rank {r}"),
                    None => Ok(()),
                }
            }
            WorkerError::ParentFailed { child } => {
                f.write_str("the job's parent switch ended the run")?;
                match child {
                    Some(c) => write!(f, ": child switch {c} of the tree failed or was refused"),
                    None => Ok(()),
                }
            }
            WorkerError::Stalled { slot, seq, report } => {
                write!(f, "slot {slot} stalled at use {seq}: ")?;
                match report {
                    StallReport::Probed {
                        state,
                        switch_seq,
                        missing,
                        ..
                    } if *switch_seq == *seq && *state == SlotState::Complete => f.write_str(
                        "the switch has every rank's contribution, but the result never arrived \
                         here (the return path loses packets, or, through a child switch, its \
                         parent's result never came back)",
                    ),
                    StallReport::Probed { missing, .. } => {
                        write!(f, "no contribution from ranks {missing}")
                    }
                    StallReport::NoAnswer => f.write_str("the switch does not answer probes"),
                }
            }
            WorkerError::SwitchRestarted { old, new } => {
                write!(
                    f,
                    "the switch restarted (epoch {old} -> {new}); the job's state is lost"
                )
            }
            WorkerError::Cancelled => f.write_str("cancelled by the application"),
            WorkerError::BufferTooSmall { need } => {
                write!(f, "transmit buffer too small: need {need} bytes")
            }
        }
    }
}

#[cfg(feature = "std")]
impl std::error::Error for WorkerError {}

impl core::fmt::Display for TensorError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            TensorError::Overflow {
                index,
                element: ElementType::I32,
            } => write!(
                f,
                "int32 sum overflowed (first in the chunk starting at element {index})"
            ),
            TensorError::Overflow { index, element } => write!(
                f,
                "{element} sum overflowed at element {index} (beyond the {element} range; it holds infinity)"
            ),
            TensorError::Aborted => f.write_str("the stream failed before the tensor finished"),
        }
    }
}

#[cfg(feature = "std")]
impl std::error::Error for TensorError {}

/// Why `submit` refused a tensor (the buffer comes back with it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum SubmitErrorKind {
    /// An element is NaN or infinite; nothing was sent.
    NonFinite(NonFinite),
    /// Averaging an int32 tensor is not defined; sum it and divide.
    AverageOfIntegers,
    /// The tensor queue is full; wait for a `Done`.
    QueueFull,
    /// More chunks than a u32 counts.
    TooLarge,
    /// The stream has failed; [`super::Worker::failure`] says why.
    Failed,
}

/// A refused submission.
#[derive(Debug)]
pub struct SubmitError<B> {
    /// Why.
    pub kind: SubmitErrorKind,
    /// The tensor, untouched.
    pub buf: B,
}

impl core::fmt::Display for SubmitErrorKind {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            SubmitErrorKind::NonFinite(e) => write!(f, "{e}; nothing was sent"),
            SubmitErrorKind::AverageOfIntegers => f.write_str("cannot average an int32 tensor"),
            SubmitErrorKind::QueueFull => f.write_str("tensor queue full"),
            SubmitErrorKind::TooLarge => f.write_str("tensor too large"),
            SubmitErrorKind::Failed => f.write_str("the stream has failed"),
        }
    }
}

/// Counters of one worker state machine.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Stats {
    /// Contributions sent, first sends and resends.
    pub sent: u64,
    /// Resends among them.
    pub retransmissions: u64,
    /// Probes sent about a late use (protocol.md §6.1): to ask whether its Contribution
    /// reached the switch before resending it, or to fetch its lost Result.
    pub probes: u64,
    /// Of those, the ones the switch answered "held, still collecting": resends saved.
    pub probe_waits: u64,
    /// Of those, the ones answered "complete" whose Result was then fetched with a Probe
    /// that asks for it (a switch that offers `PROBE_RESULTS`): resends saved.
    pub fetches: u64,
    /// Times a use was found late because uses sent after it had completed (before its
    /// timer).
    pub suspected: u64,
    /// Results accepted.
    pub results: u64,
    /// Results ignored as stale or duplicate (wrong seq or no use outstanding).
    pub stale_results: u64,
    /// Datagrams ignored as malformed or for another job or rank.
    pub ignored: u64,
    /// Tensors finished.
    pub tensors: u64,
    /// Datagrams of any kind `poll_transmit` returned (Contributions, Probes, Joins, …).
    pub datagrams_sent: u64,
    /// Datagrams of any kind handed to `handle_packet`, ignored ones included.
    pub datagrams_received: u64,
    /// Keep-alive Probes sent: the lane had sent nothing for its keep-alive interval
    /// (protocol.md §4.3, §6).
    pub keep_alives: u64,
    /// Times a use out of retries was found held by the switch, waiting for a peer that
    /// the switch still hears, and the lane went on waiting (up to its `timeout`, §6).
    pub peer_waits: u64,
    /// The congestion window, in slots, when the counters were read (§6.3); summed, the
    /// windows of the lanes added.
    pub cwnd: u64,
    /// Times the congestion window shrank on a `CONGESTED` Result.
    pub cwnd_mark_decreases: u64,
    /// Times it shrank on queueing delay above the target.
    pub cwnd_delay_decreases: u64,
    /// Times it shrank on losses judged to be congestion.
    pub cwnd_loss_decreases: u64,
    /// Times it shrank because another lane of the rank did (on a mark or a loss).
    pub cwnd_lane_decreases: u64,
    /// Times a fresh use waited because the window was full.
    pub cwnd_waits: u64,
}

impl Stats {
    /// Add `other`'s counters to these (a rank's lanes, or a job's ranks).
    pub fn add(&mut self, other: &Stats) {
        self.sent += other.sent;
        self.retransmissions += other.retransmissions;
        self.probes += other.probes;
        self.probe_waits += other.probe_waits;
        self.fetches += other.fetches;
        self.suspected += other.suspected;
        self.results += other.results;
        self.stale_results += other.stale_results;
        self.ignored += other.ignored;
        self.tensors += other.tensors;
        self.datagrams_sent += other.datagrams_sent;
        self.datagrams_received += other.datagrams_received;
        self.keep_alives += other.keep_alives;
        self.peer_waits += other.peer_waits;
        self.cwnd += other.cwnd;
        self.cwnd_mark_decreases += other.cwnd_mark_decreases;
        self.cwnd_delay_decreases += other.cwnd_delay_decreases;
        self.cwnd_loss_decreases += other.cwnd_loss_decreases;
        self.cwnd_lane_decreases += other.cwnd_lane_decreases;
        self.cwnd_waits += other.cwnd_waits;
    }
}
