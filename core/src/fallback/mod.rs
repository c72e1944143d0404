//! The fallback's decisions (docs/fallback.md): which failures of the switch path send a job
//! to the host ring, and how the ranks agree, at that switch-to-ring transition, on what each
//! tensor near the failure becomes. The ring itself (sockets, handshake, reductions) is the
//! adapters' (`switchml-ring`); the frames it exchanges are [`crate::wire::ring_frame`].
//!
//! - [`falls_back`]: the trigger. A switch that is missing, full, gone or stuck sends the
//!   job to the ring; a setting that is wrong at this rank (its key, world size or lane
//!   shape), an overflow or a refused tensor is the user's error and does not.
//! - [`Record`] / [`RecordView`]: what each rank tells every other at the transition, and
//!   its encoding (the payload of a Status frame).
//! - [`Plan`]: what every rank computes from the same records, so that every rank ends with
//!   the same result for the same tensor.

mod plan;
mod record;

pub use plan::{Plan, Step, Unagreed};
pub use record::{Record, RecordView, Tensors};

use crate::wire::AbortReason;
use crate::worker::WorkerError;

/// How the switch path failed, as the adapter saw it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure<'a> {
    /// The switch could not be reached at all.
    SwitchUnreachable,
    /// A lane's connection to the switch is gone.
    LaneGone,
    /// A join or a tensor did not complete in time.
    TimedOut,
    /// The worker state machine ended the stream.
    Worker(&'a WorkerError),
    /// Anything else: a setting, an overflow, a refused tensor, the caller's own I/O.
    Other,
}

/// Return whether a failure of the switch path should send the job to the ring: the
/// switch is missing, full, gone or stuck; not a setting that is wrong at this rank (its
/// key, world size or lane shape), an overflow or a refused tensor.
pub fn falls_back(failure: Failure<'_>) -> bool {
    match failure {
        Failure::SwitchUnreachable | Failure::LaneGone | Failure::TimedOut => true,
        Failure::Worker(WorkerError::Refused { reason, .. }) => refusal_falls_back(*reason),
        Failure::Worker(WorkerError::Cancelled | WorkerError::BufferTooSmall { .. }) => false,
        Failure::Worker(_) => true,
        Failure::Other => false,
    }
}

/// Return whether a refusal by the switch sends the job to the ring: the switch does not
/// know the job, has no room for it, or is going or gone; every other reason names
/// something wrong at the ranks.
pub fn refusal_falls_back(reason: AbortReason) -> bool {
    matches!(
        reason,
        AbortReason::UnknownJob
            | AbortReason::SlotRange
            | AbortReason::CountTooLarge
            | AbortReason::Shutdown
            | AbortReason::SessionEnded
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::Duration;

    #[test]
    fn a_missing_full_gone_or_stuck_switch_falls_back() {
        for f in [
            Failure::SwitchUnreachable,
            Failure::LaneGone,
            Failure::TimedOut,
        ] {
            assert!(falls_back(f), "{f:?}");
        }
        let unreachable = WorkerError::SwitchUnreachable {
            waited: Duration::from_millis(5),
        };
        let restarted = WorkerError::SwitchRestarted { old: 1, new: 2 };
        for e in [unreachable, restarted] {
            assert!(falls_back(Failure::Worker(&e)), "{e:?}");
        }
        for reason in [
            AbortReason::UnknownJob,
            AbortReason::SlotRange,
            AbortReason::CountTooLarge,
            AbortReason::Shutdown,
            AbortReason::SessionEnded,
        ] {
            let e = WorkerError::Refused { reason, detail: 0 };
            assert!(falls_back(Failure::Worker(&e)), "{reason:?}");
        }
    }

    #[test]
    fn the_users_errors_do_not_fall_back() {
        assert!(!falls_back(Failure::Other));
        let cancelled = WorkerError::Cancelled;
        let small = WorkerError::BufferTooSmall { need: 8 };
        for e in [cancelled, small] {
            assert!(!falls_back(Failure::Worker(&e)), "{e:?}");
        }
        for reason in [
            AbortReason::BadKey,
            AbortReason::WorldMismatch,
            AbortReason::UnknownRank,
            AbortReason::LaneMismatch,
            AbortReason::LaneCountMismatch,
            AbortReason::ChunkMismatch,
            AbortReason::WrongShard,
        ] {
            let e = WorkerError::Refused { reason, detail: 0 };
            assert!(!falls_back(Failure::Worker(&e)), "{reason:?}");
        }
    }
}
