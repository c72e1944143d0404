//! The job table: job id → slot range, world size, joined ranks, counters.
//!
//! Several jobs share one pool, each on its own contiguous range of slots, so one switch
//! serves several training jobs at once (the original SwitchML serves one).

use super::run::Run;
use super::tier::{ParentLink, Tier};
use crate::ranks::{RankSet, MAX_WORLD};
use crate::wire::{StatusCounters, DROP_CLASSES};

/// What the control plane says about a job.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct JobConfig {
    /// The job id carried in every packet.
    pub id: u16,
    /// Number of ranks, `1..=` the switch's rank capacity.
    pub world: u16,
    /// First pool slot of the job's range.
    pub slot_lo: u32,
    /// Number of slots in the job's range.
    pub slot_count: u16,
    /// The job's credential: a Join must carry it (protocol.md §4.1). Given to the job's
    /// ranks out of band (`SWITCHML_JOB_KEY`); 0 is a valid key, but a guessable one.
    pub key: u64,
}

impl JobConfig {
    /// Check this job against a pool of `pool` slots, a rank capacity of `capacity`, and the
    /// jobs already registered: a world in `1..=capacity`, a non-empty slot range inside the
    /// pool, a new id, no overlap with another job's slots. Every switch implementation (the
    /// reference here, the P4 model's control plane) applies exactly these rules.
    pub fn check<'a>(
        &self,
        pool: usize,
        capacity: usize,
        existing: impl Iterator<Item = &'a JobConfig>,
    ) -> Result<(), JobError> {
        if self.world == 0 || usize::from(self.world) > capacity {
            return Err(JobError::World {
                world: self.world,
                capacity,
            });
        }
        let lo = self.slot_lo as usize;
        let hi = lo + usize::from(self.slot_count);
        if self.slot_count == 0 || hi > pool {
            return Err(JobError::SlotRange { pool });
        }
        for other in existing {
            if other.id == self.id {
                return Err(JobError::DuplicateId(self.id));
            }
            let olo = other.slot_lo as usize;
            if lo < olo + usize::from(other.slot_count) && olo < hi {
                return Err(JobError::Overlap(other.id));
            }
        }
        Ok(())
    }
}

/// Per-job counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct JobCounters {
    /// Contributions added into a slot (not duplicates, stale, rejected or answered
    /// resends).
    pub contributions: u64,
    /// Uses completed (results multicast).
    pub completions: u64,
    /// Stored results unicast again to a worker that resent, or that asked with a Probe
    /// (`RESULT`, protocol.md §6.1).
    pub retransmit_replies: u64,
    /// Duplicate contributions to an incomplete use, dropped.
    pub duplicates: u64,
    /// Contributions for a use older than the one held, dropped.
    pub stale: u64,
    /// Other contributions of this job's run dropped (bad rank, slot, count, slot version).
    pub rejected: u64,
    /// Joins answered with a JoinReply (or sent up, at a child); refusals are not counted.
    pub joins: u64,
    /// Probes answered; a refused one is not (another session's counts as `unauthorized`).
    pub probes: u64,
    /// Runs ended by an Abort multicast to the ranks: a worker's passed on, a
    /// `RankRestarted`, a parent's at a child. Not `Shutdown` or `JobRemoved`.
    pub aborts: u64,
    /// Uses that ended with an int32 overflow: one per use, however many values overflowed.
    pub overflows: u64,
    /// Runs (sessions) opened.
    pub runs: u64,
    /// Messages refused for a wrong key or session.
    pub unauthorized: u64,
}

impl JobCounters {
    /// How many counters a job has.
    pub const COUNT: usize = 12;

    /// The counters' names, in the order of [`JobCounters::to_array`]: the one list that
    /// reports, the StatusReply (protocol.md §3.8) and metrics all follow.
    pub const NAMES: [&'static str; Self::COUNT] = [
        "contributions",
        "completions",
        "retransmit_replies",
        "duplicates",
        "stale",
        "rejected",
        "joins",
        "probes",
        "aborts",
        "overflows",
        "runs",
        "unauthorized",
    ];

    /// Return the counters in the order of [`JobCounters::NAMES`].
    pub const fn to_array(&self) -> [u64; Self::COUNT] {
        // Destructured, so that a counter added to the struct and not here fails to build.
        let JobCounters {
            contributions,
            completions,
            retransmit_replies,
            duplicates,
            stale,
            rejected,
            joins,
            probes,
            aborts,
            overflows,
            runs,
            unauthorized,
        } = *self;
        [
            contributions,
            completions,
            retransmit_replies,
            duplicates,
            stale,
            rejected,
            joins,
            probes,
            aborts,
            overflows,
            runs,
            unauthorized,
        ]
    }

    /// Build from counters in the order of [`JobCounters::NAMES`].
    pub const fn from_array(a: [u64; Self::COUNT]) -> Self {
        let [contributions, completions, retransmit_replies, duplicates, stale, rejected, joins, probes, aborts, overflows, runs, unauthorized] =
            a;
        JobCounters {
            contributions,
            completions,
            retransmit_replies,
            duplicates,
            stale,
            rejected,
            joins,
            probes,
            aborts,
            overflows,
            runs,
            unauthorized,
        }
    }

    /// Return `(name, value)` for every counter, in the order of [`JobCounters::NAMES`].
    pub fn named(&self) -> impl Iterator<Item = (&'static str, u64)> {
        Self::NAMES.into_iter().zip(self.to_array())
    }
}

/// The StatusReply carries a job's counters (protocol.md §3.8) between the switch-wide
/// `received`/`dropped` and the drops by class, in the order of [`JobCounters::NAMES`].
impl JobCounters {
    /// Return the StatusReply counters for this job on a switch that has `received`
    /// datagrams and dropped `drops` by class.
    pub fn status(&self, received: u64, drops: [u64; DROP_CLASSES]) -> StatusCounters {
        let mut a = [0u64; StatusCounters::COUNT];
        a[0] = received;
        a[1] = drops.iter().sum();
        a[2..2 + Self::COUNT].copy_from_slice(&self.to_array());
        a[2 + Self::COUNT..].copy_from_slice(&drops);
        StatusCounters::from_array(a)
    }
}

impl From<&StatusCounters> for JobCounters {
    fn from(c: &StatusCounters) -> JobCounters {
        let mut a = [0u64; Self::COUNT];
        a.copy_from_slice(&c.to_array()[2..2 + Self::COUNT]);
        JobCounters::from_array(a)
    }
}

/// A job's counters on several switches (the shards of one, §1.1) add up.
impl core::ops::AddAssign<&JobCounters> for JobCounters {
    fn add_assign(&mut self, o: &JobCounters) {
        let mut sum = self.to_array();
        for (s, o) in sum.iter_mut().zip(o.to_array()) {
            *s += o;
        }
        *self = JobCounters::from_array(sum);
    }
}

/// A registered job.
#[derive(Debug, Clone)]
pub struct Job<const WORDS: usize> {
    pub(crate) config: JobConfig,
    pub(crate) run: Run<WORDS>,
    pub(crate) counters: JobCounters,
    pub(crate) tier: Tier,
}

impl<const WORDS: usize> Job<WORDS> {
    /// Return the configuration.
    pub fn config(&self) -> &JobConfig {
        &self.config
    }

    /// Return where the job sits in a tree of switches (protocol.md §7).
    pub fn tier(&self) -> &Tier {
        &self.tier
    }

    /// Return the ranks that have joined the current run (members: at a child, rank
    /// `rank_lo + i` is member `i`).
    pub fn joined(&self) -> &RankSet<WORDS> {
        &self.run.joined
    }

    /// Return whether every rank has joined the current run.
    pub fn all_joined(&self) -> bool {
        self.run.joined.len() == usize::from(self.config.world)
    }

    /// Return whether the job has a run open.
    pub fn has_run(&self) -> bool {
        self.run.is_open()
    }

    /// Return the current run's session token (0: none). It is the run's credential:
    /// adapters use it to tag what they learn, never to print or send it elsewhere.
    pub fn session(&self) -> u32 {
        self.run.session
    }

    /// Return the slots per lane the current run agreed (0: no run).
    pub fn lane_slots(&self) -> u16 {
        self.run.lane_slots
    }

    /// Return the counters.
    pub fn counters(&self) -> &JobCounters {
        &self.counters
    }

    /// Return the pool index of job-relative `slot`, if it is in range.
    pub(crate) fn pool_index(&self, slot: u16) -> Option<usize> {
        (slot < self.config.slot_count).then(|| self.config.slot_lo as usize + slot as usize)
    }
}

/// Why the control plane refused a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum JobError {
    /// A job with this id exists.
    DuplicateId(u16),
    /// No job has this id.
    UnknownJob(u16),
    /// The world size is 0 or above the switch's rank capacity (given).
    World {
        /// The world size asked for.
        world: u16,
        /// The switch's capacity.
        capacity: usize,
    },
    /// The slot range is empty or runs past the pool (pool size given).
    SlotRange {
        /// The pool's size.
        pool: usize,
    },
    /// The slot range overlaps that of the given job.
    Overlap(u16),
    /// The job table is full (capacity given).
    TableFull(usize),
    /// A child's ranks are not within the whole job's world (at most `MAX_WORLD`), or its
    /// member index not below the parent's world (protocol.md §7).
    Tree,
    /// This switch takes flat jobs only: it cannot be a parent or a child (the default of
    /// `ControlPlane::install_tiered_job`).
    Untiered,
    /// The id is both a job's and a child job's parent job's here: messages of the
    /// parent's job (its Aborts) would be taken for the job's (protocol.md §7).
    ParentIdTaken(u16),
}

impl core::fmt::Display for JobError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            JobError::DuplicateId(id) => write!(f, "job {id} already exists"),
            JobError::UnknownJob(id) => write!(f, "no job {id}"),
            JobError::World { world, capacity } => {
                write!(f, "world size {world} not in 1..={capacity}")
            }
            JobError::SlotRange { pool } => {
                write!(f, "slot range empty or beyond the pool of {pool} slots")
            }
            JobError::Overlap(other) => write!(f, "slot range overlaps job {other}"),
            JobError::TableFull(n) => write!(f, "job table full ({n} jobs)"),
            JobError::Tree => f.write_str(
                "child ranks beyond the job's world, or member index beyond the parent's",
            ),
            JobError::Untiered => f.write_str("this switch has no parent or child jobs"),
            JobError::ParentIdTaken(id) => write!(
                f,
                "job {id} is both a job here and a child's parent job: one id per switch"
            ),
        }
    }
}

#[cfg(feature = "std")]
impl std::error::Error for JobError {}

/// A fixed table of up to `JOBS` jobs.
#[derive(Debug, Clone)]
pub(crate) struct JobTable<const WORDS: usize, const JOBS: usize> {
    entries: [Option<Job<WORDS>>; JOBS],
}

impl<const WORDS: usize, const JOBS: usize> JobTable<WORDS, JOBS> {
    pub(crate) const EMPTY: Self = JobTable {
        entries: [const { None }; JOBS],
    };

    /// Return the table index of job `id`.
    pub(crate) fn find(&self, id: u16) -> Option<usize> {
        self.entries
            .iter()
            .position(|e| e.as_ref().is_some_and(|j| j.config.id == id))
    }

    /// Return the table index of the child job whose parent's job is `parent_job`.
    pub(crate) fn find_child(&self, parent_job: u16) -> Option<usize> {
        self.entries.iter().position(|e| {
            e.as_ref()
                .and_then(Job::parent)
                .is_some_and(|l| l.job == parent_job)
        })
    }

    /// Return the child job whose parent's job is `parent_job`, with its link.
    pub(crate) fn child_mut(&mut self, parent_job: u16) -> Option<(&mut Job<WORDS>, ParentLink)> {
        let job = self.find_child(parent_job).and_then(|i| self.get_mut(i))?;
        let link = *job.parent()?;
        Some((job, link))
    }

    pub(crate) fn get(&self, index: usize) -> Option<&Job<WORDS>> {
        self.entries.get(index)?.as_ref()
    }

    pub(crate) fn get_mut(&mut self, index: usize) -> Option<&mut Job<WORDS>> {
        self.entries.get_mut(index)?.as_mut()
    }

    pub(crate) fn iter(&self) -> impl Iterator<Item = &Job<WORDS>> {
        self.entries.iter().flatten()
    }

    /// Validate and insert a job of `tier` whose range lies in a pool of `pool` slots. A
    /// child's members must be ranks of the whole job, and it must be a member of its
    /// parent's.
    pub(crate) fn insert(
        &mut self,
        config: JobConfig,
        tier: Tier,
        pool: usize,
    ) -> Result<(), JobError> {
        let capacity = RankSet::<WORDS>::CAPACITY.min(MAX_WORLD);
        config.check(pool, capacity, self.iter().map(|j| &j.config))?;
        if let Tier::Child(link) = tier {
            let hi = u32::from(link.rank_lo) + u32::from(config.world);
            let world = usize::from(link.world);
            if world > MAX_WORLD || hi > u32::from(link.world) || link.member >= link.members {
                return Err(JobError::Tree);
            }
            // A parent's message names the parent's job: it must find this child alone.
            if link.job == config.id
                || self.find(link.job).is_some()
                || self.find_child(link.job).is_some()
            {
                return Err(JobError::ParentIdTaken(link.job));
            }
        }
        if self.find_child(config.id).is_some() {
            return Err(JobError::ParentIdTaken(config.id));
        }
        let free = self
            .entries
            .iter_mut()
            .find(|e| e.is_none())
            .ok_or(JobError::TableFull(JOBS))?;
        *free = Some(Job {
            config,
            run: Run::NONE,
            counters: JobCounters::default(),
            tier,
        });
        Ok(())
    }

    pub(crate) fn remove(&mut self, id: u16) -> Result<Job<WORDS>, JobError> {
        let i = self.find(id).ok_or(JobError::UnknownJob(id))?;
        self.entries[i].take().ok_or(JobError::UnknownJob(id))
    }
}

#[cfg(test)]
mod counter_tests {
    use super::*;

    #[test]
    fn a_status_reply_carries_each_job_counter_under_its_name() {
        let mut values = [0u64; JobCounters::COUNT];
        for (i, v) in values.iter_mut().enumerate() {
            *v = 100 + i as u64;
        }
        let job = JobCounters::from_array(values);
        assert_eq!(job.contributions, 100);
        assert_eq!(job.unauthorized, 111);
        let mut drops = [0u64; DROP_CLASSES];
        drops[3] = 7;
        let status = job.status(42, drops);
        assert_eq!(
            (status.received, status.dropped, status.retransmit_replies),
            (42, 7, 102)
        );
        assert_eq!((status.runs, status.drops), (110, drops));
        assert_eq!(JobCounters::from(&status), job);
        assert_eq!(job.named().nth(2), Some(("retransmit_replies", 102)));
        assert_eq!(job.named().last(), Some(("unauthorized", 111)));
    }
}
