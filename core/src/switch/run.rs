//! A job's *run*: one session of its ranks, from the Join that opens it to the Leave, Abort or
//! restart that ends it (protocol.md §4.1).
//!
//! A job registered at the switch can run many times: a training job that restarts from a
//! checkpoint joins again. Each run has a **session** token, derived from the nonce of the
//! Join that opened it and the number of runs before it; every later message of the run
//! carries it, so packets of an earlier run (or
//! off-path forgeries, which cannot guess it) never mix in. Each rank joins with its
//! process's nonce: the same nonce again is a resend or another lane of the same process; a
//! new nonce is a new process of that rank.

use crate::ranks::RankSet;

/// The state of a job's current run. `session == 0`: no run.
#[derive(Debug, Clone)]
pub(crate) struct Run<const WORDS: usize> {
    /// The run's session token; 0 when the job has no run.
    pub(crate) session: u32,
    /// Slots per lane, agreed by the run's first Join.
    pub(crate) lane_slots: u16,
    /// Values per chunk, agreed by the run's first Join.
    pub(crate) count: u16,
    /// Lanes per rank, agreed by the run's first Join.
    pub(crate) lanes: u16,
    /// Ranks that joined this run.
    pub(crate) joined: RankSet<WORDS>,
    /// Ranks that left this run.
    pub(crate) left: RankSet<WORDS>,
    /// Ranks heard from (any message of the run) since the last liveness sweep (§4.3).
    pub(crate) heard: RankSet<WORDS>,
    /// Each joined rank's count of sweeps in a row it was not heard in, like `nonces`.
    quiet: [[u8; 64]; WORDS],
    /// A rank of the job whose Join was refused while the run gathered: the next sweep
    /// ends the run, naming it, so its ranks do not wait out their join timeout (§4.3).
    pub(crate) refused: Option<u16>,
    /// Each joined rank's process nonce, `nonces[r / 64][r % 64]`.
    nonces: [[u32; 64]; WORDS],
    /// A child switch's job (protocol.md §7): the session of the parent's run this run
    /// joined (0: not yet), and whether the parent said every member joined it.
    pub(crate) parent: u32,
    pub(crate) parent_complete: bool,
    /// A child's job: the session of the last parent run an ended run of it had joined
    /// (0: none), kept across runs. The Abort a child sends up when its run ends comes
    /// back from the parent with that session: that echo is a duplicate, while an Abort
    /// naming the child's member in any other session is forged (protocol.md §7).
    pub(crate) echo: u32,
}

/// What a Join does to the run (after its key and fields passed the checks).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum JoinStep {
    /// The Join is part of the run (new rank, resend, or another lane): answer it.
    Member,
    /// The rank is a new process but the run is complete: end it, tell its ranks.
    EndsRun,
    /// The lane's slot count is not the run's (the agreed value given).
    LaneMismatch(u16),
    /// The chunk size is not the run's (the agreed value given).
    ChunkMismatch(u16),
    /// The rank's number of lanes is not the run's (the agreed value given).
    LaneCountMismatch(u16),
}

/// Why a liveness sweep ends a run (protocol.md §4.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ending {
    /// This member was not heard in [`QUIET_SWEEPS`] sweeps in a row.
    Silent(u16),
    /// The Join of this rank (as the Join named it) was refused while the run gathered.
    Refused(u16),
}

/// Sweeps in a row a joined rank that has not left may go unheard before it is dead: the
/// switch sweeps every `dead_after / QUIET_SWEEPS`, so a rank is named between
/// `dead_after` and `1.25 · dead_after` after its last message (protocol.md §4.3).
pub const QUIET_SWEEPS: u8 = 4;

/// A lane's shape as its Join states it; the first Join of a run makes it the run's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct LaneShape {
    /// Slots per lane.
    pub(crate) lane_slots: u16,
    /// Values per chunk.
    pub(crate) count: u16,
    /// Lanes per rank.
    pub(crate) lanes: u16,
}

impl<const WORDS: usize> Run<WORDS> {
    pub(crate) const NONE: Self = Run {
        session: 0,
        lane_slots: 0,
        count: 0,
        lanes: 0,
        joined: RankSet::EMPTY,
        left: RankSet::EMPTY,
        heard: RankSet::EMPTY,
        quiet: [[0; 64]; WORDS],
        refused: None,
        nonces: [[0; 64]; WORDS],
        parent: 0,
        parent_complete: false,
        echo: 0,
    };

    /// Return the echo session a run ending now leaves (its parent run's, if it had one).
    fn echo_after(&self) -> u32 {
        match self.parent {
            0 => self.echo,
            parent => parent,
        }
    }

    /// Return whether a run is open.
    pub(crate) fn is_open(&self) -> bool {
        self.session != 0
    }

    /// Return whether `session` is this run's (never true without a run).
    pub(crate) fn admits(&self, session: u32) -> bool {
        self.session != 0 && self.session == session
    }

    fn nonce(&self, rank: u16) -> u32 {
        let r = usize::from(rank);
        self.nonces
            .get(r / 64)
            .and_then(|w| w.get(r % 64))
            .copied()
            .unwrap_or(0)
    }

    fn set_nonce(&mut self, rank: u16, nonce: u32) {
        let r = usize::from(rank);
        if let Some(n) = self.nonces.get_mut(r / 64).and_then(|w| w.get_mut(r % 64)) {
            *n = nonce;
        }
    }

    /// Decide and apply a Join of `rank` (`nonce`, a lane of `shape`) for a job of `world`
    /// ranks. Opens a run when there is none, the job's `runs_before`-th.
    pub(crate) fn join(
        &mut self,
        rank: u16,
        nonce: u32,
        shape: LaneShape,
        world: u16,
        runs_before: u64,
    ) -> JoinStep {
        if !self.is_open() {
            *self = Run {
                session: session_of(nonce, runs_before),
                lane_slots: shape.lane_slots,
                count: shape.count,
                lanes: shape.lanes,
                echo: self.echo_after(),
                ..Run::NONE
            };
        }
        let complete = self.joined.len() == usize::from(world);
        if self.joined.contains(rank) && self.nonce(rank) != nonce && complete {
            return JoinStep::EndsRun;
        }
        if shape.lane_slots != self.lane_slots {
            return JoinStep::LaneMismatch(self.lane_slots);
        }
        if shape.count != self.count {
            return JoinStep::ChunkMismatch(self.count);
        }
        if shape.lanes != self.lanes {
            return JoinStep::LaneCountMismatch(self.lanes);
        }
        // A new rank, or a rank's new process before the run is complete (it replaces the
        // old one: nothing of the run can have been sent yet), or the same process again.
        self.joined.insert(rank);
        self.left.remove(rank);
        self.set_nonce(rank, nonce);
        self.heard.insert(rank);
        JoinStep::Member
    }

    /// Record that member `rank` sent a message of this run: it is alive.
    pub(crate) fn hear(&mut self, rank: u16) {
        if self.is_open() {
            self.heard.insert(rank);
        }
    }

    /// Record that a Join of `rank` was refused; it ends the run at the next sweep if the
    /// run is still gathering (its ranks wait for every rank to join).
    pub(crate) fn refuse(&mut self, rank: u16, world: u16) {
        if self.is_open() && self.joined.len() < usize::from(world) {
            self.refused = self.refused.or(Some(rank));
        }
    }

    /// One liveness sweep (protocol.md §4.3): count each joined rank that has not left and
    /// was not heard since the last sweep; return why the run must end, if it must: a
    /// refused Join, or the first rank now quiet for [`QUIET_SWEEPS`] sweeps in a row.
    /// The heard set starts afresh.
    pub(crate) fn sweep(&mut self) -> Option<Ending> {
        if !self.is_open() {
            return None;
        }
        if let Some(rank) = self.refused {
            return Some(Ending::Refused(rank));
        }
        let mut silent = None;
        for rank in self.joined.iter() {
            let r = usize::from(rank);
            let Some(quiet) = self.quiet.get_mut(r / 64).and_then(|w| w.get_mut(r % 64)) else {
                continue;
            };
            if self.heard.contains(rank) || self.left.contains(rank) {
                *quiet = 0;
                continue;
            }
            *quiet = quiet.saturating_add(1);
            if *quiet >= QUIET_SWEEPS && silent.is_none() {
                silent = Some(rank);
            }
        }
        self.heard = RankSet::EMPTY;
        silent.map(Ending::Silent)
    }

    /// Record that `rank` left; return whether every joined rank has now left.
    pub(crate) fn leave(&mut self, rank: u16) -> bool {
        if self.joined.contains(rank) {
            self.left.insert(rank);
        }
        self.left.len() == self.joined.len()
    }

    /// End the run.
    pub(crate) fn end(&mut self) {
        *self = Run {
            echo: self.echo_after(),
            ..Run::NONE
        };
    }
}

/// The session of a job's run opened by a Join with `nonce` after `runs_before` runs:
/// `nonce + runs_before` (mod 2³²; 0, which means no run, becomes 1). Unpredictable to
/// whoever does not know the nonce, and never the session of the job's previous runs even
/// when the same process opens them again (protocol.md §4.1).
pub(crate) const fn session_of(nonce: u32, runs_before: u64) -> u32 {
    match nonce.wrapping_add(runs_before as u32) {
        0 => 1,
        s => s,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape(lane_slots: u16, count: u16, lanes: u16) -> LaneShape {
        LaneShape {
            lane_slots,
            count,
            lanes,
        }
    }

    #[test]
    fn the_first_join_opens_the_run_with_its_nonce_and_shape() {
        let mut run = Run::<1>::NONE;
        assert!(!run.is_open() && !run.admits(0));
        assert_eq!(run.join(1, 77, shape(32, 256, 1), 2, 0), JoinStep::Member);
        assert!(run.admits(77) && !run.admits(78));
        assert_eq!(
            run.join(0, 5, shape(16, 256, 1), 2, 0),
            JoinStep::LaneMismatch(32)
        );
        assert_eq!(
            run.join(0, 5, shape(32, 64, 1), 2, 0),
            JoinStep::ChunkMismatch(256)
        );
        assert!(!run.joined.contains(0));
        assert_eq!(run.join(0, 5, shape(32, 256, 1), 2, 0), JoinStep::Member);
        assert_eq!(run.joined.len(), 2);
    }

    #[test]
    fn the_first_join_fixes_the_number_of_lanes() {
        // Issue 11: rank 0 with 2 lanes and rank 1 with 1 lane both joined (same slots per
        // lane and chunk size), split tensors differently and deadlocked.
        let mut run = Run::<1>::NONE;
        assert_eq!(run.join(0, 7, shape(16, 64, 2), 2, 0), JoinStep::Member);
        assert_eq!(run.lanes, 2);
        assert_eq!(
            run.join(1, 8, shape(16, 64, 1), 2, 0),
            JoinStep::LaneCountMismatch(2)
        );
        assert!(!run.joined.contains(1), "a refused Join changes nothing");
        // The slots per lane and the chunk size are checked first, as before.
        assert_eq!(
            run.join(1, 8, shape(8, 64, 1), 2, 0),
            JoinStep::LaneMismatch(16)
        );
        assert_eq!(run.join(1, 8, shape(16, 64, 2), 2, 0), JoinStep::Member);
        assert_eq!(run.joined.len(), 2);
    }

    #[test]
    fn a_new_process_replaces_its_rank_until_the_run_is_complete_then_ends_it() {
        let mut run = Run::<1>::NONE;
        assert_eq!(run.join(0, 1, shape(8, 8, 1), 3, 0), JoinStep::Member);
        assert_eq!(run.join(1, 2, shape(8, 8, 1), 3, 0), JoinStep::Member);
        assert_eq!(
            run.join(1, 3, shape(8, 8, 1), 3, 0),
            JoinStep::Member,
            "replaced"
        );
        assert_eq!(
            run.join(1, 3, shape(8, 8, 1), 3, 0),
            JoinStep::Member,
            "a resend"
        );
        assert_eq!(run.join(2, 4, shape(8, 8, 1), 3, 0), JoinStep::Member);
        assert_eq!(
            run.join(2, 4, shape(8, 8, 1), 3, 0),
            JoinStep::Member,
            "a resend"
        );
        assert_eq!(
            run.join(1, 2, shape(8, 8, 1), 3, 0),
            JoinStep::EndsRun,
            "old process"
        );
        assert_eq!(run.session, 1, "the caller ends the run");
    }

    #[test]
    fn sessions_never_repeat_a_jobs_previous_run_and_are_never_zero() {
        assert_eq!(session_of(77, 0), 77);
        assert_ne!(
            session_of(77, 1),
            session_of(77, 0),
            "the same process again"
        );
        assert_eq!(session_of(u32::MAX, 1), 1);
        let mut run = Run::<1>::NONE;
        run.join(0, 9, shape(8, 8, 1), 1, 3);
        assert_eq!(run.session, 12);
    }

    #[test]
    fn the_run_is_over_when_every_joined_rank_left() {
        let mut run = Run::<1>::NONE;
        run.join(0, 1, shape(8, 8, 1), 2, 0);
        run.join(1, 2, shape(8, 8, 1), 2, 0);
        assert!(!run.leave(1));
        assert!(!run.leave(5), "not a member");
        assert!(run.leave(0));
        run.end();
        assert!(!run.is_open());
    }
}
