//! `classifier.p4`: the job table (job id → world size, slot range, multicast group, key)
//! and the worker table (job id, source address → rank, worker bit, replication id).
//!
//! The original SwitchML keys its `udp_receiver` table on addresses too. A worker's lanes
//! use different UDP source ports, so each lane is an entry; several entries may carry one
//! rank. A bare datagram (the `Aggregator` path) has no addresses: it is classified as
//! coming from [`Source::rank_port`] of its rank field, so a job whose ranks are registered
//! with [`WorkerAddr::rank_port`] accepts exactly ranks `0..world`, like the reference.

use switchml_core::switch::{JobConfig, JobError};

/// The most ranks a job may have: one 64-bit seen word per slot version.
pub const MAX_WORLD: u16 = 64;

/// Where a packet came from: the worker table's key besides the job.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Source {
    /// IPv4 source address.
    pub ip: [u8; 4],
    /// UDP source port.
    pub udp_port: u16,
}

impl Source {
    /// The source a bare datagram of `rank` is classified as: address 0.0.0.0, port `rank`.
    pub const fn rank_port(rank: u16) -> Source {
        Source {
            ip: [0; 4],
            udp_port: rank,
        }
    }
}

/// A worker lane's address: where the switch sends it multicast replicas.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct WorkerAddr {
    /// The switch port it hangs off.
    pub port: u16,
    /// Its MAC address.
    pub mac: [u8; 6],
    /// Its IPv4 address and UDP port.
    pub source: Source,
}

impl WorkerAddr {
    /// The address standing for `rank` on the bare path: port `rank`, [`Source::rank_port`].
    pub const fn rank_port(rank: u16) -> WorkerAddr {
        WorkerAddr {
            port: rank,
            mac: [0; 6],
            source: Source::rank_port(rank),
        }
    }
}

/// A job table entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JobEntry {
    /// The entry's index: the index of the job's counters and run registers.
    pub index: u16,
    /// The job.
    pub config: JobConfig,
    /// Its multicast group (index + 1; group 0 means none).
    pub group: u16,
}

/// A worker table entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WorkerEntry {
    /// The job.
    pub job: u16,
    /// The rank.
    pub rank: u16,
    /// Its member index in the job: the rank itself but at a child switch, where it is
    /// `rank − rank_lo` (protocol.md §7). The P4 action data is its bit, `rank_bit`.
    pub member: u16,
    /// The replication id of its multicast replicas (entry index + 1).
    pub rid: u16,
    /// The lane's address.
    pub addr: WorkerAddr,
}

/// What classification found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Classification {
    /// The job entry, if the job is known.
    pub job: Option<JobEntry>,
    /// The worker entry, if the job knows the source.
    pub worker: Option<WorkerEntry>,
}

impl Classification {
    /// Return the sender's rank if the worker table knows the source and it claims the
    /// rank that source is registered with.
    pub fn rank(&self, claimed: u16) -> Option<u16> {
        self.worker.map(|w| w.rank).filter(|&r| r == claimed)
    }

    /// Return the sender's member index if the worker table knows it as `claimed`.
    pub fn member(&self, claimed: u16) -> Option<u16> {
        self.worker.filter(|w| w.rank == claimed).map(|w| w.member)
    }
}

/// Why the control plane refused a worker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WorkerError {
    /// No job has this id.
    UnknownJob(u16),
    /// The member index is not below the job's world size (the rank given).
    Rank(u16),
    /// The job already has a worker at this source.
    Duplicate,
    /// The worker table is full (capacity given).
    TableFull(usize),
}

/// The two tables.
#[derive(Debug, Clone)]
pub struct Classifier {
    job_table: Box<[Option<JobEntry>]>,
    worker_table: Box<[Option<WorkerEntry>]>,
}

impl Classifier {
    /// Make empty tables of `jobs` and `workers` entries.
    pub fn new(jobs: usize, workers: usize) -> Self {
        Classifier {
            job_table: vec![None; jobs].into_boxed_slice(),
            worker_table: vec![None; workers].into_boxed_slice(),
        }
    }

    /// Look up the job and the source (the data plane).
    pub fn apply(&self, job: u16, source: Source) -> Classification {
        Classification {
            job: self.job(job),
            worker: self
                .worker_table
                .iter()
                .flatten()
                .find(|w| w.job == job && w.addr.source == source)
                .copied(),
        }
    }

    /// Return job `id`'s entry.
    pub fn job(&self, id: u16) -> Option<JobEntry> {
        self.job_table
            .iter()
            .flatten()
            .find(|e| e.config.id == id)
            .copied()
    }

    /// Return job table entry `index`.
    pub fn entry(&self, index: u16) -> Option<JobEntry> {
        self.job_table.get(usize::from(index)).copied().flatten()
    }

    /// Return the job entries.
    pub fn jobs(&self) -> impl Iterator<Item = &JobEntry> {
        self.job_table.iter().flatten()
    }

    /// Return the worker entry with replication id `rid`.
    pub fn worker(&self, rid: u16) -> Option<&WorkerEntry> {
        self.worker_table
            .get(usize::from(rid).checked_sub(1)?)?
            .as_ref()
    }

    /// Add a job whose slots lie in a pool of `pool` slots; checks as the reference does.
    pub fn insert_job(&mut self, config: JobConfig, pool: usize) -> Result<JobEntry, JobError> {
        let capacity = usize::from(MAX_WORLD);
        config.check(pool, capacity, self.jobs().map(|e| &e.config))?;
        let full = JobError::TableFull(self.job_table.len());
        let index = self
            .job_table
            .iter()
            .position(Option::is_none)
            .ok_or(full)?;
        let entry = JobEntry {
            index: index as u16,
            config,
            group: index as u16 + 1,
        };
        self.job_table[index] = Some(entry);
        Ok(entry)
    }

    /// Remove job `id` and its workers; return its entry.
    pub fn remove_job(&mut self, id: u16) -> Result<JobEntry, JobError> {
        let slot = self
            .job_table
            .iter_mut()
            .find(|e| e.is_some_and(|e| e.config.id == id))
            .ok_or(JobError::UnknownJob(id))?;
        let entry = slot.take().ok_or(JobError::UnknownJob(id))?;
        for w in self.worker_table.iter_mut() {
            if w.is_some_and(|w| w.job == id) {
                *w = None;
            }
        }
        Ok(entry)
    }

    /// Add a worker lane of `rank`, member `member` of job `job`.
    pub fn insert_worker(
        &mut self,
        job: u16,
        rank: u16,
        member: u16,
        addr: WorkerAddr,
    ) -> Result<WorkerEntry, WorkerError> {
        let entry = self.job(job).ok_or(WorkerError::UnknownJob(job))?;
        if member >= entry.config.world {
            return Err(WorkerError::Rank(rank));
        }
        if self.apply(job, addr.source).worker.is_some() {
            return Err(WorkerError::Duplicate);
        }
        let full = WorkerError::TableFull(self.worker_table.len());
        let index = self.worker_table.iter().position(Option::is_none);
        let index = index.ok_or(full)?;
        let worker = WorkerEntry {
            job,
            rank,
            member,
            rid: index as u16 + 1,
            addr,
        };
        self.worker_table[index] = Some(worker);
        Ok(worker)
    }

    /// Remove the worker of job `job` at `source`; return it.
    pub fn remove_worker(&mut self, job: u16, source: Source) -> Option<WorkerEntry> {
        let slot = self
            .worker_table
            .iter_mut()
            .find(|w| w.is_some_and(|w| w.job == job && w.addr.source == source))?;
        slot.take()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(id: u16, world: u16, slot_lo: u32, slot_count: u16) -> JobConfig {
        JobConfig {
            id,
            world,
            slot_lo,
            slot_count,
            key: 0,
        }
    }

    #[test]
    fn jobs_are_checked_like_the_reference_switch() {
        let mut c = Classifier::new(2, 4);
        assert_eq!(c.insert_job(job(7, 3, 4, 8), 16).map(|e| e.group), Ok(1));
        assert_eq!(
            c.insert_job(job(7, 2, 0, 2), 16),
            Err(JobError::DuplicateId(7))
        );
        assert_eq!(
            c.insert_job(job(8, 2, 10, 2), 16),
            Err(JobError::Overlap(7))
        );
        assert_eq!(
            c.insert_job(job(8, 65, 0, 2), 16),
            Err(JobError::World {
                world: 65,
                capacity: 64
            })
        );
        assert_eq!(
            c.insert_job(job(8, 2, 14, 3), 16),
            Err(JobError::SlotRange { pool: 16 })
        );
        assert!(c.insert_job(job(8, 2, 0, 4), 16).is_ok());
        assert_eq!(
            c.insert_job(job(9, 2, 12, 4), 16),
            Err(JobError::TableFull(2))
        );
    }

    #[test]
    fn workers_classify_by_job_and_source() {
        let mut c = Classifier::new(2, 2);
        c.insert_job(job(7, 2, 0, 4), 4).unwrap();
        let w = c.insert_worker(7, 1, 1, WorkerAddr::rank_port(1)).unwrap();
        assert_eq!(w.rid, 1);
        assert_eq!(c.worker(1).map(|w| w.rank), Some(1));
        let hit = c.apply(7, Source::rank_port(1));
        assert_eq!(hit.worker.map(|w| w.rank), Some(1));
        assert!(c.apply(7, Source::rank_port(0)).worker.is_none());
        assert!(c.apply(8, Source::rank_port(1)).job.is_none());
        assert_eq!(
            c.insert_worker(7, 2, 2, WorkerAddr::rank_port(2)),
            Err(WorkerError::Rank(2))
        );
        assert_eq!(
            c.insert_worker(7, 0, 0, WorkerAddr::rank_port(1)),
            Err(WorkerError::Duplicate)
        );
        assert_eq!(
            c.insert_worker(9, 0, 0, WorkerAddr::rank_port(0)),
            Err(WorkerError::UnknownJob(9))
        );
        c.remove_job(7).unwrap();
        assert!(c.worker(1).is_none());
    }
}
