//! `run_tracker.p4`: each job's current *run* (protocol.md §4.1), the state that admits its
//! ranks: the session, the lane shape the run agreed, who joined, who left, and each rank's
//! process nonce.
//!
//! Registers, in stage order, one cell per job table entry unless said otherwise:
//!
//! - `session`: {the run's session, the runs the job opened}; session 0: no run. Every
//!   Contribution, Probe, Abort and Leave is admitted only if it carries the session. The
//!   Join that opens a run writes its session, the Join's nonce plus the runs before
//!   ([`session_of`]), and counts the run.
//! - `shape`: {the run's lane shape, the runs the job opened}: the opening Join writes its
//!   shape and counts the run here too. The `session` stage returns one value, the session
//!   held; this copy of the count is how the opening Join learns the runs before it, and
//!   so the session it opened, one stage later.
//! - `lanes`: the run's number of lanes per rank, the rest of its lane shape (a Tofino
//!   register pair has no room left in `shape`): the opening Join writes its own, any other
//!   Join reads the agreed one.
//! - `nonce`: each rank's process nonce, cell `64 × entry + rank` (the job's base + rank).
//! - `joined`, `left`: bitmaps of the ranks that joined and that left the run (members, at
//!   a child switch: bit `i` is global rank `rank_lo + i`).
//! - `parent` and `parent_complete`: at a child switch (protocol.md §7), the parent run's
//!   session and whether the parent said `COMPLETE`; reset by the Join that opens a run and
//!   wherever a run ends, as the reference's run forgets its parent. Two registers, as in
//!   `tna/run_tracker.p4`: a parent's JoinReply decides on both words, more than the two
//!   comparisons of one Tofino 1 stateful ALU, so it takes the session at `parent` and
//!   marks the `COMPLETE` a stage later.
//! - `parent_echo`: at a child, the parent run's session `parent` held when it was last
//!   forgotten (a run that ends, a Join that opens the next; the reference's `Run::echo`),
//!   a stage after `parent` (its answer): the child's own Abort up comes back down from the
//!   parent in that session, a duplicate; a parent's Abort from the child's member in any
//!   other session is forged. TNA: `keep_echo` writes it, `check_echo` compares.
//!
//! A run is opened by a Join finding `session` zero, and ended by writing it zero: a
//! worker's Abort, the control plane ([`Pipeline::shutdown_run`]), a new process of a rank
//! of a complete run (restart), or the Leave of the last joined rank. Nothing else is
//! reset: the opening Join overwrites `shape` and `lanes` and resets `joined` and `left` in the same
//! pass; `nonce` cells matter only for ranks in `joined`; and a Status reads `joined` as
//! empty while no run is open. Slot versions carry the session of their use
//! (`use_checker.rs`), so the pool needs no reset either.
//!
//! A restart and the last Leave decide that the run ends only at `joined` and `left`, after
//! the `session` stage: they take a second pass (a recirculation) whose one access of
//! `session` ends the run ([`RunTracker::end`]).
//!
//! [`Pipeline::shutdown_run`]: crate::Pipeline::shutdown_run

use crate::classifier::{JobEntry, MAX_WORLD};
use crate::headers::{JoinHeader, JoinReplyHeader};
use crate::join_handler::full_mask;
use crate::register::{Hazard, Pass, Register};

/// A run's lane shape, agreed by the Join that opened it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Shape {
    /// Slots per lane.
    pub lane_slots: u16,
    /// Values per chunk.
    pub count: u16,
}

/// What a Join (that passed the join handler's checks) does to the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JoinStep {
    /// The rank is (now) a member of the run: answer with a JoinReply.
    Member {
        /// This Join opened the run.
        opened: bool,
        /// The run's session.
        session: u32,
        /// The joined bitmap after this Join.
        joined: u64,
        /// Every rank had joined before this Join.
        was_complete: bool,
    },
    /// A new process of a rank of the complete run: the run ends (in a second pass).
    EndsRun {
        /// The session of the run that ends.
        session: u32,
    },
    /// The lane's slot count is not the run's (the agreed one given).
    LaneMismatch(u16),
    /// The chunk size is not the run's (the agreed one given).
    ChunkMismatch(u16),
    /// The rank's number of lanes is not the run's (the agreed one given).
    LaneCountMismatch(u16),
}

/// What a Leave does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LeaveStep {
    /// Its session is not the run's.
    BadSession,
    /// The worker table does not know the sender as the rank it claims.
    UnknownRank,
    /// Recorded; `ends` if every joined rank has now left (the run ends in a second pass).
    Left {
        /// The run ends.
        ends: bool,
    },
}

/// What a Status reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunStatus {
    /// A run is open.
    pub open: bool,
    /// Its joined bitmap (0 when no run is open).
    pub joined: u64,
}

/// `session`'s cell.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RunCell {
    /// The run's session; 0: no run.
    pub session: u32,
    /// The runs the job opened (wrapping).
    pub runs: u32,
}

/// `shape`'s cell.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ShapeCell {
    /// The run's lane shape.
    pub shape: Shape,
    /// The runs the job opened (wrapping), as in `session`.
    pub runs: u32,
}

/// What the `shape` stage returns: one value, as a register action does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ShapeRead {
    /// This Join opened the run (its shape is the run's): the runs before it.
    Opened { runs_before: u32 },
    /// The run's agreed shape.
    Agreed(Shape),
}

/// The session of a run opened by a Join with `nonce` after `runs_before` runs of its job:
/// `nonce + runs_before` (mod 2³²), 1 where that is 0 (protocol.md §4.1).
pub fn session_of(nonce: u32, runs_before: u32) -> u32 {
    match nonce.wrapping_add(runs_before) {
        0 => 1,
        s => s,
    }
}

/// A child's view of its parent's run (protocol.md §7), registers `parent` and
/// `parent_complete`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ParentCell {
    /// The parent run's session; 0: none taken yet.
    pub session: u32,
    /// The parent said its run is complete.
    pub complete: bool,
}

/// What a JoinReply from the parent does to a child's run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParentReply {
    /// It names neither the child's run nor the parent run the child took.
    BadSession,
    /// Its rank is neither this child's member index nor `0xFFFF`, or its world is not
    /// the parent's.
    UnknownRank,
    /// Taken (the parent's session kept); nothing to send.
    Taken,
    /// The parent's run is complete, and every rank here joined: tell them.
    Complete {
        /// The child's run's session.
        session: u32,
        /// Its lane shape.
        shape: Shape,
        /// Who joined it.
        joined: u64,
    },
}

/// The run tracker: registers `session`, `shape`, `lanes`, `nonce`, `joined`, `left`,
/// `parent`, `parent_complete`, `parent_echo`.
#[derive(Debug, Clone)]
pub struct RunTracker {
    session: Register<RunCell>,
    shape: Register<ShapeCell>,
    lanes: Register<u16>,
    nonce: Register<u32>,
    joined: Register<u64>,
    left: Register<u64>,
    parent: Register<u32>,
    parent_complete: Register<bool>,
    /// The parent run's session an ended run of the child had taken (0: none), kept: the
    /// child's own Abort comes back from the parent with it (an echo, a duplicate); an
    /// Abort naming the child's member in any other session is forged (the reference's
    /// `Run::echo`; TNA `keep_echo` and `check_echo`).
    parent_echo: Register<u32>,
}

/// Whether a message carrying `session` belongs to the run whose session is `held`.
fn admits(held: u32, session: u32) -> bool {
    held != 0 && held == session
}

/// The `nonce` cell of `rank` of job table entry `index`: the job's base + rank.
fn nonce_cell(index: u16, rank: u16) -> usize {
    usize::from(index) * usize::from(MAX_WORLD) + usize::from(rank)
}

impl RunTracker {
    /// Make the registers for `jobs` job table entries.
    pub fn new(jobs: usize) -> Self {
        RunTracker {
            session: Register::new("session", jobs, RunCell::default()),
            shape: Register::new("shape", jobs, ShapeCell::default()),
            lanes: Register::new("lanes", jobs, 0),
            nonce: Register::new("nonce", jobs * usize::from(MAX_WORLD), 0),
            joined: Register::new("joined", jobs, 0),
            left: Register::new("left", jobs, 0),
            parent: Register::new("parent", jobs, 0),
            parent_complete: Register::new("parent_complete", jobs, false),
            parent_echo: Register::new("parent_echo", jobs, 0),
        }
    }

    /// Check that `session` is job table entry `index`'s run (a Contribution or a Probe).
    pub fn admit(&mut self, pass: &Pass, index: u16, session: u32) -> Result<bool, Hazard> {
        let j = usize::from(index);
        self.session
            .execute(pass, j, |cell| admits(cell.session, session))
    }

    /// `reset_parent`, `keep_echo` and `reset_complete` where a run `ends`: forget the
    /// parent's run, keeping its session in `parent_echo`; return the session it had taken
    /// (0: none, or the run did not end).
    fn reset_parent(&mut self, pass: &Pass, j: usize, ends: bool) -> Result<u32, Hazard> {
        let parent = self.parent.execute(pass, j, |cell| {
            let parent = *cell;
            if ends {
                *cell = 0;
            }
            parent
        })?;
        self.parent_echo.execute(pass, j, |cell| {
            if ends && parent != 0 {
                *cell = parent;
            }
        })?;
        self.parent_complete.execute(pass, j, |cell| {
            if ends {
                *cell = false;
            }
        })?;
        Ok(if ends { parent } else { 0 })
    }

    /// A worker's Abort: check its session; end the run if it is admitted and its rank
    /// known. Return whether it is admitted and, if the run ended, the parent run's
    /// session it had taken (0: none), which a child owes an Abort (protocol.md §7).
    pub fn abort(
        &mut self,
        pass: &Pass,
        index: u16,
        session: u32,
        rank_known: bool,
    ) -> Result<(bool, u32), Hazard> {
        let j = usize::from(index);
        let admitted = self.session.execute(pass, j, |cell| {
            let admitted = admits(cell.session, session);
            if admitted && rank_known {
                cell.session = 0;
            }
            admitted
        })?;
        let parent = self.reset_parent(pass, j, admitted && rank_known)?;
        Ok((admitted, parent))
    }

    /// An Abort of the parent's job at child job table entry `index` (protocol.md §7):
    /// return the child run's session if it names the parent run the child took, or,
    /// while the parent has not said `COMPLETE`, the child's own run (the nonce of its
    /// Join up); 0 if neither, with whether `session` is the echo one
    /// (register `parent_echo`). The run ends in a second pass ([`RunTracker::end`]): whether
    /// it does is known only here, after the `session` stage.
    pub fn parent_abort(
        &mut self,
        pass: &Pass,
        index: u16,
        session: u32,
    ) -> Result<(u32, bool), Hazard> {
        let j = usize::from(index);
        let held = self.session.execute(pass, j, |cell| cell.session)?;
        let own_run = held != 0 && session == held;
        let mut parent = self.parent.execute(pass, j, |cell| *cell)?;
        if own_run && !self.parent_complete.execute(pass, j, |cell| *cell)? {
            // While the parent has not said COMPLETE, it reads as of the run taken.
            parent = session;
        }
        let echo = self
            .parent_echo
            .execute(pass, j, |cell| *cell != 0 && session == *cell)?;
        Ok((
            if parent != 0 && parent == session {
                held
            } else {
                0
            },
            echo,
        ))
    }

    /// A Leave of the rank whose bit is `bit` (`None`: the worker table does not know it).
    pub fn leave(
        &mut self,
        pass: &Pass,
        index: u16,
        session: u32,
        bit: Option<u64>,
    ) -> Result<LeaveStep, Hazard> {
        let j = usize::from(index);
        if !self.admit(pass, index, session)? {
            return Ok(LeaveStep::BadSession);
        }
        let Some(bit) = bit else {
            return Ok(LeaveStep::UnknownRank);
        };
        let joined = self.joined.execute(pass, j, |cell| *cell)?;
        // Only a rank of the run can leave it.
        let mask = joined & bit;
        let left = self.left.execute(pass, j, |cell| {
            *cell |= mask;
            *cell
        })?;
        Ok(LeaveStep::Left {
            ends: left == joined,
        })
    }

    /// A Join of member `rank` (the rank itself but at a child) to `job` that passed the
    /// join handler's checks: open a run if there is none, then check the shape and the
    /// rank's process (protocol.md §4.1). A child's `parent` cell is reset with a run that
    /// opens, and read into `parent`.
    pub fn join(
        &mut self,
        pass: &Pass,
        job: &JobEntry,
        rank: u16,
        h: &JoinHeader,
        parent: &mut ParentCell,
    ) -> Result<JoinStep, Hazard> {
        let j = usize::from(job.index);
        let held = self.session.execute(pass, j, |cell| {
            let held = cell.session;
            if held == 0 {
                cell.session = session_of(h.nonce, cell.runs);
                cell.runs = cell.runs.wrapping_add(1);
            }
            held
        })?;
        let opened = held == 0;
        let given = Shape {
            lane_slots: h.slot_count,
            count: h.count,
        };
        let read = self.shape.execute(pass, j, |cell| {
            if opened {
                let runs_before = cell.runs;
                cell.shape = given;
                cell.runs = runs_before.wrapping_add(1);
                ShapeRead::Opened { runs_before }
            } else {
                ShapeRead::Agreed(cell.shape)
            }
        })?;
        let (agreed, session) = match read {
            ShapeRead::Opened { runs_before } => (given, session_of(h.nonce, runs_before)),
            ShapeRead::Agreed(shape) => (shape, held),
        };
        let agreed_lanes = self.lanes.execute(pass, j, |cell| {
            if opened {
                *cell = h.lanes;
            }
            *cell
        })?;
        // Only a Join of the run's shape changes the run.
        let bit = 1u64 << (rank & 63);
        let shape_ok = agreed == given && agreed_lanes == h.lanes;
        let mask = if shape_ok { bit } else { 0 };
        let old_nonce = self
            .nonce
            .execute(pass, nonce_cell(job.index, rank), |cell| {
                let old = *cell;
                if mask != 0 {
                    *cell = h.nonce;
                }
                old
            })?;
        let old = self.joined.execute(pass, j, |cell| {
            if opened {
                *cell = 0;
            }
            let old = *cell;
            *cell |= mask;
            old
        })?;
        self.left.execute(pass, j, |cell| {
            if opened {
                *cell = 0;
            }
            *cell &= !mask;
        })?;
        let (old_up, session_up) = self.parent.execute(pass, j, |cell| {
            let old = *cell;
            if opened {
                *cell = 0;
            }
            (old, *cell)
        })?;
        self.parent_echo.execute(pass, j, |cell| {
            if opened && old_up != 0 {
                *cell = old_up;
            }
        })?;
        let complete = self.parent_complete.execute(pass, j, |cell| {
            if opened {
                *cell = false;
            }
            *cell
        })?;
        *parent = ParentCell {
            session: session_up,
            complete,
        };
        let was_complete = old == full_mask(job.config.world);
        Ok(if old & bit != 0 && old_nonce != h.nonce && was_complete {
            JoinStep::EndsRun { session }
        } else if agreed.lane_slots != h.slot_count {
            JoinStep::LaneMismatch(agreed.lane_slots)
        } else if agreed.count != h.count {
            JoinStep::ChunkMismatch(agreed.count)
        } else if agreed_lanes != h.lanes {
            JoinStep::LaneCountMismatch(agreed_lanes)
        } else {
            JoinStep::Member {
                opened,
                session,
                joined: old | bit,
                was_complete,
            }
        })
    }

    /// Read the parent run's session of child job table entry `index` (a Contribution
    /// whose use goes up).
    pub fn parent_session(&mut self, pass: &Pass, index: u16) -> Result<u32, Hazard> {
        self.parent.execute(pass, usize::from(index), |cell| *cell)
    }

    /// Check a Result from the parent against child job table entry `index`'s run:
    /// return the child run's session if the Result carries the parent run's (0: not).
    pub fn admit_parent(&mut self, pass: &Pass, index: u16, session: u32) -> Result<u32, Hazard> {
        let j = usize::from(index);
        let held = self.session.execute(pass, j, |cell| cell.session)?;
        let parent = self.parent.execute(pass, j, |cell| *cell)?;
        Ok(if parent != 0 && parent == session {
            held
        } else {
            0
        })
    }

    /// A JoinReply from the parent to child job table entry `index` of `world` ranks
    /// (protocol.md §7): `rank_ok` if it names this child's member index (or `0xFFFF`) and
    /// the parent's world.
    pub fn parent_join_reply(
        &mut self,
        pass: &Pass,
        job: &JobEntry,
        r: &JoinReplyHeader,
        rank_ok: bool,
    ) -> Result<ParentReply, Hazard> {
        let j = usize::from(job.index);
        let held = self.session.execute(pass, j, |cell| cell.session)?;
        let shape = self.shape.execute(pass, j, |cell| cell.shape)?;
        let joined = self.joined.execute(pass, j, |cell| *cell)?;
        let all_joined = joined == full_mask(job.config.world);
        let complete = r.complete();
        let ours = held != 0 && r.nonce == held;
        // `take_parent` keeps the session of a JoinReply naming the child's run, decided
        // before the register; a COMPLETE of the run taken is known from what it returns.
        let take = ours && rank_ok && r.session != 0;
        let taken = self.parent.execute(pass, j, |cell| {
            let taken = *cell;
            if take {
                *cell = r.session;
            }
            taken
        })?;
        let of_our_run = complete && taken == r.session;
        if !(ours || of_our_run) || r.session == 0 {
            return Ok(ParentReply::BadSession);
        }
        if !rank_ok {
            return Ok(ParentReply::UnknownRank);
        }
        // `mark_complete`: the parent's COMPLETE once every rank here joined.
        let mark = complete && all_joined;
        let marked = self.parent_complete.execute(pass, j, |cell| {
            let marked = *cell;
            if mark {
                *cell = true;
            }
            marked
        })?;
        Ok(if mark && !marked {
            ParentReply::Complete {
                session: held,
                shape,
                joined,
            }
        } else {
            ParentReply::Taken
        })
    }

    /// Read job table entry `index`'s run for a Status.
    pub fn status(&mut self, pass: &Pass, index: u16) -> Result<RunStatus, Hazard> {
        let j = usize::from(index);
        let open = self.session.execute(pass, j, |cell| cell.session != 0)?;
        let joined = self.joined.execute(pass, j, |cell| *cell)?;
        Ok(RunStatus {
            open,
            joined: if open { joined } else { 0 },
        })
    }

    /// The second pass of a restart, of the last Leave or of a parent's Abort: end the run
    /// `session` (if no other packet has ended it in between); return the parent run's
    /// session it had taken (0: none, or the run did not end here).
    pub fn end(&mut self, pass: &Pass, index: u16, session: u32) -> Result<u32, Hazard> {
        let j = usize::from(index);
        let ends = self.session.execute(pass, j, |cell| {
            let ends = cell.session == session;
            if ends {
                cell.session = 0;
            }
            ends
        })?;
        self.reset_parent(pass, j, ends)
    }

    /// Return entry `index`'s session (0: no run) (control plane).
    pub fn session(&self, index: u16) -> u32 {
        self.session
            .read(usize::from(index))
            .map_or(0, |cell| cell.session)
    }

    /// Return entry `index`'s run as the reference reports it: session, agreed lane slots
    /// and joined bitmap, all 0 when no run is open (control plane).
    pub fn report(&self, index: u16) -> (u32, u16, u64) {
        let j = usize::from(index);
        match self.session(index) {
            0 => (0, 0, 0),
            session => (
                session,
                self.shape.read(j).unwrap_or_default().shape.lane_slots,
                self.joined.read(j).unwrap_or(0),
            ),
        }
    }

    /// Return entry `index`'s bitmap of members that left the run (control plane).
    pub fn left(&self, index: u16) -> u64 {
        self.left.read(usize::from(index)).unwrap_or(0)
    }

    /// End entry `index`'s run (control plane); the count of runs stays. Return the parent
    /// run's session it had taken (0: none).
    pub fn close(&mut self, index: u16) -> u32 {
        let j = usize::from(index);
        let runs = self.session.read(j).unwrap_or_default().runs;
        let parent = self.parent.read(j).unwrap_or_default();
        self.session.write(j, RunCell { session: 0, runs });
        self.parent.write(j, 0);
        self.parent_complete.write(j, false);
        if parent != 0 {
            self.parent_echo.write(j, parent);
        }
        parent
    }

    /// Forget entry `index`'s runs (control plane, when a job is added).
    pub fn reset(&mut self, index: u16) {
        let j = usize::from(index);
        self.session.write(j, RunCell::default());
        self.shape.write(j, ShapeCell::default());
        self.lanes.write(j, 0);
        self.joined.write(j, 0);
        self.left.write(j, 0);
        self.parent.write(j, 0);
        self.parent_complete.write(j, false);
        self.parent_echo.write(j, 0);
        for rank in 0..MAX_WORLD {
            self.nonce.write(nonce_cell(index, rank), 0);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::register::PassClock;
    use switchml_core::switch::JobConfig;

    fn job(world: u16) -> JobEntry {
        JobEntry {
            index: 1,
            config: JobConfig {
                id: 7,
                world,
                slot_lo: 0,
                slot_count: 8,
                key: 0,
            },
            group: 2,
        }
    }

    fn join(nonce: u32, slot_count: u16, count: u16) -> JoinHeader {
        join_lanes(nonce, slot_count, count, 1)
    }

    fn join_lanes(nonce: u32, slot_count: u16, count: u16, lanes: u16) -> JoinHeader {
        JoinHeader {
            world: 2,
            slot_lo: 0,
            slot_count,
            count,
            lanes,
            nonce,
            job: 7,
            rank: 0,
            cookie: 0,
            tag: [0; 16],
        }
    }

    #[test]
    fn the_first_join_opens_the_run_and_a_new_process_of_a_complete_run_ends_it() {
        let (mut clock, mut r, job) = (PassClock::default(), RunTracker::new(2), job(2));
        let mut at = |r: &mut RunTracker, rank, h| {
            r.join(&clock.begin(0), &job, rank, &h, &mut ParentCell::default())
        };
        let member = |opened, joined, was_complete| JoinStep::Member {
            opened,
            session: 5,
            joined,
            was_complete,
        };
        assert_eq!(at(&mut r, 1, join(5, 8, 64)), Ok(member(true, 0b10, false)));
        assert_eq!(at(&mut r, 0, join(6, 4, 64)), Ok(JoinStep::LaneMismatch(8)));
        assert_eq!(
            at(&mut r, 0, join(6, 8, 32)),
            Ok(JoinStep::ChunkMismatch(64))
        );
        assert_eq!(
            at(&mut r, 0, join(6, 8, 64)),
            Ok(member(false, 0b11, false))
        );
        assert_eq!(at(&mut r, 0, join(6, 8, 64)), Ok(member(false, 0b11, true)));
        assert_eq!(r.report(1), (5, 8, 0b11));
        assert_eq!(
            at(&mut r, 0, join(9, 4, 64)),
            Ok(JoinStep::EndsRun { session: 5 })
        );
        r.end(&clock.begin(1), 1, 5).unwrap();
        assert_eq!(r.report(1), (0, 0, 0));
        // The next Join opens the next run, with empty bitmaps: its session is the nonce
        // plus the one run before.
        let next = r.join(
            &clock.begin(0),
            &job,
            0,
            &join(9, 4, 64),
            &mut ParentCell::default(),
        );
        let opened = JoinStep::Member {
            opened: true,
            session: 10,
            joined: 0b01,
            was_complete: false,
        };
        assert_eq!(next, Ok(opened));
    }

    #[test]
    fn the_first_join_fixes_the_number_of_lanes() {
        // Issue 11: ranks with 2 and 1 lanes both joined and deadlocked.
        let (mut clock, mut r, job) = (PassClock::default(), RunTracker::new(2), job(2));
        let mut at = |r: &mut RunTracker, rank, h| {
            r.join(&clock.begin(0), &job, rank, &h, &mut ParentCell::default())
        };
        let opened = at(&mut r, 0, join_lanes(5, 8, 64, 2));
        assert!(matches!(opened, Ok(JoinStep::Member { opened: true, .. })));
        assert_eq!(
            at(&mut r, 1, join_lanes(6, 8, 64, 1)),
            Ok(JoinStep::LaneCountMismatch(2))
        );
        assert_eq!(r.report(1), (5, 8, 0b01), "rank 1 is not in");
        // Slots per lane and chunk size are checked first.
        assert_eq!(
            at(&mut r, 1, join_lanes(6, 4, 64, 1)),
            Ok(JoinStep::LaneMismatch(8))
        );
        let joined = at(&mut r, 1, join_lanes(6, 8, 64, 2));
        assert!(matches!(joined, Ok(JoinStep::Member { joined: 0b11, .. })));
        // The next run agrees its own.
        r.close(1);
        let next = at(&mut r, 1, join_lanes(6, 8, 64, 1));
        assert!(matches!(next, Ok(JoinStep::Member { opened: true, .. })));
    }

    #[test]
    fn the_same_process_opening_the_next_run_gets_a_new_session() {
        let (mut clock, mut r, job) = (PassClock::default(), RunTracker::new(2), job(1));
        let mut sessions = Vec::new();
        for _ in 0..3 {
            let step = r.join(
                &clock.begin(0),
                &job,
                0,
                &join(u32::MAX, 8, 64),
                &mut ParentCell::default(),
            );
            let Ok(JoinStep::Member { session, .. }) = step else {
                panic!("{step:?}");
            };
            assert_eq!(r.session(1), session, "written and returned alike");
            sessions.push(session);
            r.close(1);
        }
        // u32::MAX + 1 wraps to 0, which means no run: 1 instead.
        assert_eq!(sessions, [u32::MAX, 1, 1]);
        r.reset(1);
        let step = r.join(
            &clock.begin(0),
            &job,
            0,
            &join(7, 8, 64),
            &mut ParentCell::default(),
        );
        assert!(
            matches!(step, Ok(JoinStep::Member { session: 7, .. })),
            "{step:?}"
        );
    }

    #[test]
    fn sessions_admit_aborts_end_and_the_last_leave_ends_the_run() {
        let (mut clock, mut r, job) = (PassClock::default(), RunTracker::new(2), job(2));
        assert_eq!(r.admit(&clock.begin(0), 1, 0), Ok(false), "no run");
        for (rank, nonce) in [(0, 3), (1, 4)] {
            r.join(
                &clock.begin(0),
                &job,
                rank,
                &join(nonce, 8, 64),
                &mut ParentCell::default(),
            )
            .unwrap();
        }
        assert_eq!(r.admit(&clock.begin(0), 1, 3), Ok(true));
        assert_eq!(r.admit(&clock.begin(0), 1, 4), Ok(false));
        let leave = |r: &mut RunTracker, pass: &Pass, s, bit| r.leave(pass, 1, s, bit);
        assert_eq!(
            leave(&mut r, &clock.begin(0), 4, Some(1)),
            Ok(LeaveStep::BadSession)
        );
        assert_eq!(
            leave(&mut r, &clock.begin(0), 3, None),
            Ok(LeaveStep::UnknownRank)
        );
        let left = |ends| Ok(LeaveStep::Left { ends });
        assert_eq!(leave(&mut r, &clock.begin(0), 3, Some(0b01)), left(false));
        assert_eq!(leave(&mut r, &clock.begin(0), 3, Some(0b100)), left(false));
        assert_eq!(leave(&mut r, &clock.begin(0), 3, Some(0b10)), left(true));
        // An Abort of an unknown rank ends nothing; a known rank's does.
        assert_eq!(r.abort(&clock.begin(0), 1, 3, false), Ok((true, 0)));
        assert_eq!(r.session(1), 3);
        assert_eq!(r.abort(&clock.begin(0), 1, 3, true), Ok((true, 0)));
        assert_eq!(
            r.status(&clock.begin(0), 1),
            Ok(RunStatus {
                open: false,
                joined: 0
            })
        );
    }

    #[test]
    fn every_register_runs_once_per_pass() {
        let (mut clock, mut r, job) = (PassClock::default(), RunTracker::new(2), job(2));
        let pass = clock.begin(0);
        r.join(&pass, &job, 0, &join(3, 8, 64), &mut ParentCell::default())
            .unwrap();
        assert_eq!(r.admit(&pass, 1, 3), Err(Hazard::SecondAccess("session")));
    }
}
