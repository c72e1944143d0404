//! The control plane: typed methods that do what the P4 controller does through BfRt or
//! `simple_switch_CLI` — add and remove jobs and workers (table entries, multicast group
//! members, register resets), read counters and registers, and end a job's run when the
//! switch stops ([`Pipeline::shutdown_run`]).

use switchml_core::ranks::MAX_WORLD;
use switchml_core::switch::{Counters, JobConfig, JobCounters, JobError, Tier};
use switchml_core::wire::{AbortReason, RANK_ALL};

use crate::classifier::{Source, WorkerAddr, WorkerEntry, WorkerError};
use crate::job_counters::JobEvent;
use crate::liveness::Ending;
use crate::pipeline::{Config, Pipeline, Verdict};
use crate::replication::Replica;
use crate::tier_selector::{LinkEntry, TierEntry};
use crate::use_checker::SeqCell;
use crate::{MAX_BLOCKS, MAX_COUNT, VALUES_PER_PASS};

/// A job as the control plane sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JobReport {
    /// Its configuration.
    pub config: JobConfig,
    /// Where it sits in a tree of switches (protocol.md §7).
    pub tier: Tier,
    /// Its multicast group.
    pub group: u16,
    /// The current run's session (0: no run open).
    pub session: u32,
    /// The slots per lane the current run agreed (0: no run).
    pub lane_slots: u16,
    /// The ranks that joined the current run, one bit each.
    pub joined: u64,
    /// Its counters, as the reference switch keeps them.
    pub counters: JobCounters,
}

/// One slot version, read out of every register that holds part of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SlotVersionState {
    /// Register `seq`: the use and the session of its run.
    pub seq: SeqCell,
    /// Register `seen`, this version's word.
    pub seen: u64,
    /// Register `remaining`.
    pub remaining: u16,
    /// Register `exp`.
    pub exp: u8,
    /// Register `flags`: the Result's sticky flag bits (`OVERFLOW`, the non-finite kinds).
    pub flags: u8,
    /// Register `count`.
    pub count: u16,
    /// Register `relay`: a child switch holds its parent's Result for this use (§7).
    pub relayed: bool,
    /// The value registers, block by block.
    pub values: [i32; MAX_COUNT as usize],
}

impl SlotVersionState {
    /// Return the values of the use held.
    pub fn values(&self) -> &[i32] {
        &self.values[..usize::from(self.count).min(self.values.len())]
    }
}

/// Why a combined set-up step failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ControlError {
    /// The job was refused.
    Job(JobError),
    /// A worker was refused.
    Worker(WorkerError),
}

impl Pipeline {
    /// The reference's checks of a tier (`JobTable::insert`): a child's ranks lie within
    /// the whole job's world (at most 1,024, protocol.md §3.3), and it is a member of its
    /// parent's; and a parent's job id names nothing else here — not the job, no other
    /// job, no other child's parent job — since table `child_job`, keyed on it, tells the
    /// parent's messages (its Aborts among them) from the workers' (§7).
    fn tier_check(&self, config: JobConfig, tier: Tier) -> Result<(), JobError> {
        if let Tier::Child(l) = tier {
            let ranks = u32::from(l.rank_lo) + u32::from(config.world);
            if usize::from(l.world) > MAX_WORLD
                || ranks > u32::from(l.world)
                || l.member >= l.members
            {
                return Err(JobError::Tree);
            }
            if l.job == config.id
                || self.classifier.job(l.job).is_some()
                || self.tier_selector.child_of(l.job).is_some()
            {
                return Err(JobError::ParentIdTaken(l.job));
            }
        }
        if self.tier_selector.child_of(config.id).is_some() {
            return Err(JobError::ParentIdTaken(config.id));
        }
        Ok(())
    }
}

impl Pipeline {
    /// Return the construction-time configuration.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// Add a job and reset its slots, its run, counters and multicast group.
    pub fn add_job(&mut self, config: JobConfig) -> Result<(), JobError> {
        self.add_tiered_job(config, TierEntry::Flat)
    }

    /// Add a job at `tier` of a tree of switches (protocol.md §7: the `parent_link` and
    /// `child_job` entries besides the job's), checked as the reference checks it; reset
    /// its slots, its run, counters and multicast group. A child's `config.world` is its
    /// own ranks' number.
    pub fn add_tiered_job(&mut self, config: JobConfig, tier: TierEntry) -> Result<(), JobError> {
        // The reference's order: the job's own checks, the tier's, a free entry.
        let checked = self.tier_check(config, tier.tier());
        let entry = match (
            self.classifier.insert_job(config, self.config.slots),
            checked,
        ) {
            (Ok(entry), Ok(())) => entry,
            (Ok(_), Err(e)) => {
                self.classifier.remove_job(config.id)?;
                return Err(e);
            }
            (Err(JobError::TableFull(_)), Err(e)) => return Err(e),
            (Err(e), _) => return Err(e),
        };
        self.tier_selector.set(entry.index, tier);
        let lo = config.slot_lo as usize;
        for slot in lo..lo + usize::from(config.slot_count) {
            self.bitmap_checker.reset(slot);
            for version in [2 * slot, 2 * slot + 1] {
                self.use_checker.reset(version);
                self.count_checker.reset(version);
                self.workers_counter.reset(version);
                self.exponents.reset(version);
                self.overflow_flag.reset(version);
                self.processors.reset(version);
                self.relay.reset(version);
            }
        }
        self.run_tracker.reset(entry.index);
        self.job_counters.clear(entry.index);
        self.replication.clear(entry.group);
        // The controller forgets what it kept of the entry's last job (its parent's cookie).
        if let Some(kept) = self.parent_cookies.get_mut(usize::from(entry.index)) {
            *kept = crate::controller::ParentCookie::NONE;
        }
        Ok(())
    }

    /// Remove job `id`, its workers and its multicast group; return its final report.
    pub fn remove_job(&mut self, id: u16) -> Result<JobReport, JobError> {
        let report = self.job(id).ok_or(JobError::UnknownJob(id))?;
        let entry = self.classifier.remove_job(id)?;
        self.tier_selector.set(entry.index, TierEntry::Flat);
        self.replication.clear(report.group);
        Ok(report)
    }

    /// Add a worker lane of `rank` at `addr` to job `job`: a worker table entry (with the
    /// rank's member bit: `rank − rank_lo` at a child switch) and a member of the job's
    /// multicast group.
    pub fn add_worker(
        &mut self,
        job: u16,
        rank: u16,
        addr: WorkerAddr,
    ) -> Result<WorkerEntry, WorkerError> {
        let lo = self
            .classifier
            .job(job)
            .map_or(0, |e| self.tier_selector.apply(e.index).rank_lo());
        let member = rank.checked_sub(lo).ok_or(WorkerError::Rank(rank))?;
        let entry = self.classifier.insert_worker(job, rank, member, addr)?;
        let group = self.classifier.job(job).map_or(0, |j| j.group);
        self.replication.add(
            group,
            Replica {
                port: addr.port,
                rid: entry.rid,
            },
        );
        Ok(entry)
    }

    /// Remove the worker lane of job `job` at `source`.
    pub fn remove_worker(&mut self, job: u16, source: Source) -> Option<WorkerEntry> {
        let entry = self.classifier.remove_worker(job, source)?;
        let group = self.classifier.job(job).map_or(0, |j| j.group);
        self.replication.remove(group, entry.rid);
        Some(entry)
    }

    /// Add a job and register every rank `r` at [`WorkerAddr::rank_port`]`(r)`, so that
    /// bare datagrams of ranks `0..world` are accepted (the `Aggregator` mapping).
    pub fn add_job_with_rank_ports(&mut self, config: JobConfig) -> Result<(), ControlError> {
        self.add_tiered_job_with_rank_ports(config, Tier::Flat)
    }

    /// Add a job at `tier` and register its ranks at their rank ports: a child's are
    /// `rank_lo‥rank_lo + world`, global ranks as its workers state them (protocol.md §7).
    /// The parent of a child is at the default address (bare datagrams have none).
    pub fn add_tiered_job_with_rank_ports(
        &mut self,
        config: JobConfig,
        tier: Tier,
    ) -> Result<(), ControlError> {
        let entry = match tier {
            Tier::Flat => TierEntry::Flat,
            Tier::Parent => TierEntry::Parent,
            Tier::Child(link) => TierEntry::Child(LinkEntry {
                link,
                parent: WorkerAddr::rank_port(0),
            }),
        };
        self.add_tiered_job(config, entry)
            .map_err(ControlError::Job)?;
        let lo = entry.rank_lo();
        for rank in lo..lo + config.world {
            self.add_worker(config.id, rank, WorkerAddr::rank_port(rank))
                .map_err(ControlError::Worker)?;
        }
        Ok(())
    }

    /// Return job `id`'s report.
    pub fn job(&self, id: u16) -> Option<JobReport> {
        let entry = self.classifier.job(id)?;
        let (session, lane_slots, joined) = self.run_tracker.report(entry.index);
        Some(JobReport {
            config: entry.config,
            tier: self.tier_selector.apply(entry.index).tier(),
            group: entry.group,
            session,
            lane_slots,
            joined,
            counters: self.job_counters.snapshot(entry.index),
        })
    }

    /// End job `id`'s run because the switch stops, as the reference's
    /// `Switch::shutdown_run` does: write the Abort `Shutdown` its ranks get into `out` (a
    /// bare datagram, for the controller to send to the job's multicast group) and return
    /// the multicast verdict, or `None` if the job has no run or `out` is too short. The
    /// controller writes the session half of register `session` (its count of runs stays)
    /// and sends the Abort through the CPU port; a child's job then owes its parent an
    /// Abort too ([`Pipeline::poll_up`]), which the controller sends the same way.
    pub fn shutdown_run(
        &mut self,
        id: u16,
        reason: AbortReason,
        out: &mut [u8],
    ) -> Option<Verdict> {
        let entry = self.classifier.job(id)?;
        let session = self.run_tracker.session(entry.index);
        if session == 0 || out.len() < switchml_core::wire::abort::LEN {
            return None;
        }
        let len = self
            .reply_builder
            .abort(out, id, RANK_ALL, reason, 0, session);
        let parent = self.run_tracker.close(entry.index);
        let tier = self.tier_selector.apply(entry.index);
        self.owe_up(&tier, parent, reason);
        Some(Verdict::Multicast {
            job: id,
            group: entry.group,
            len,
        })
    }

    /// The controller's liveness sweep of job `id`'s run (protocol.md §4.3, `liveness.rs`),
    /// made every `dead_after / QUIET_SWEEPS`: if a rank of it was refused while it
    /// gathered, or a member was quiet for `QUIET_SWEEPS` sweeps, end the run and write the
    /// Abort its ranks get (`RankRefused`, `RankSilent`, detail the rank) into `out`, as
    /// the reference's `Switch::sweep`. A parent's job is not swept (its members are child
    /// switches, §7).
    pub fn sweep(&mut self, id: u16, out: &mut [u8]) -> Option<Verdict> {
        let entry = self.classifier.job(id)?;
        let tier = self.tier_selector.apply(entry.index);
        if tier.keeps_overflow() {
            return None;
        }
        let (session, _, joined) = self.run_tracker.report(entry.index);
        let left = self.run_tracker.left(entry.index);
        let (reason, rank) = match self.liveness.sweep(entry.index, session, joined, left)? {
            Ending::Silent(member) => (
                AbortReason::RankSilent,
                tier.rank_lo().saturating_add(member),
            ),
            Ending::Refused(rank) => (AbortReason::RankRefused, rank),
        };
        if out.len() < switchml_core::wire::abort::LEN {
            return None;
        }
        let len = self
            .reply_builder
            .abort(out, id, RANK_ALL, reason, rank, session);
        self.job_counters.count(JobEvent::Abort, entry.index);
        let parent = self.run_tracker.close(entry.index);
        self.owe_up(&tier, parent, reason);
        Some(Verdict::Multicast {
            job: id,
            group: entry.group,
            len,
        })
    }

    /// The controller saw a Join of global `rank` of `job` refused: a rank its run's
    /// members wait for, while the run gathers (§4.3).
    pub(crate) fn note_refusal(&mut self, job: &crate::classifier::JobEntry, rank: u16) {
        let (session, _, joined) = self.run_tracker.report(job.index);
        self.liveness
            .refused(job.index, session, rank, joined, job.config.world);
    }

    /// Iterate over the registered jobs' ids.
    pub fn job_ids(&self) -> impl Iterator<Item = u16> + '_ {
        self.classifier.jobs().map(|e| e.config.id)
    }

    /// Return the switch-wide counters, as the reference switch keeps them.
    pub fn counters(&self) -> Counters {
        self.drop_counters.snapshot()
    }

    /// Return the frames that were not switchml traffic.
    pub fn ignored_frames(&self) -> u64 {
        self.drop_counters.ignored_frames()
    }

    /// Return the recirculations (one per further block of values of a Contribution).
    pub fn recirculations(&self) -> u64 {
        self.drop_counters.recirculations()
    }

    /// Return the register hazards seen (always 0 unless the model has a bug).
    pub fn faults(&self) -> u64 {
        self.drop_counters.faults()
    }

    /// Read version `ver` of job `id`'s job-relative `slot` out of the registers.
    pub fn slot_version(&self, id: u16, slot: u16, ver: u8) -> Option<SlotVersionState> {
        let c = self.classifier.job(id)?.config;
        if slot >= c.slot_count || ver > 1 {
            return None;
        }
        let s = c.slot_lo as usize + usize::from(slot);
        let v = 2 * s + usize::from(ver);
        let mut values = [0i32; MAX_COUNT as usize];
        for (i, value) in values.iter_mut().enumerate() {
            let lane = self.processors.lane(i % VALUES_PER_PASS)?;
            *value = lane.register().read(v * MAX_BLOCKS + i / VALUES_PER_PASS)?;
        }
        Some(SlotVersionState {
            seq: self.use_checker.read(v)?,
            seen: self.bitmap_checker.read(s)?[usize::from(ver)],
            remaining: self.workers_counter.register().read(v)?,
            exp: self.exponents.register().read(v)?,
            flags: self.overflow_flag.register().read(v)?,
            count: self.count_checker.register().read(v)?,
            relayed: self.relay.register().read(v)?.relayed,
            values,
        })
    }
}

impl Pipeline {
    /// Return the epoch announced in replies.
    pub fn epoch(&self) -> u32 {
        self.config.epoch
    }

    /// End job `id`'s run without telling its ranks, as the reference's `Switch::end_run`
    /// does for a run idle too long; return whether the job had one. The controller writes
    /// the session half of register `session` (its count of runs stays), as for
    /// [`Pipeline::shutdown_run`].
    pub fn end_run(&mut self, id: u16) -> bool {
        let Some(entry) = self.classifier.job(id) else {
            return false;
        };
        if self.run_tracker.session(entry.index) == 0 {
            return false;
        }
        self.run_tracker.close(entry.index);
        true
    }

    /// Set the CPU port, where the controller reads and injects (protocol.md §4.2): the TNA
    /// program's `switch_config` entry and parser value set `cpu_port`; the v1model
    /// program's is the constant [`CPU_PORT`](crate::headers::CPU_PORT), the default.
    pub fn set_cpu_port(&mut self, port: u16) {
        self.cpu_port = port;
    }

    /// Return the CPU port.
    pub fn cpu_port(&self) -> u16 {
        self.cpu_port
    }

    /// Mark each copy of a Result that leaves by a port whose egress queue holds more than
    /// `depth` `CONGESTED` (protocol.md §6.3; 0, the default: never): the default action of
    /// table `congestion_threshold`, `set_threshold(depth)` (BMv2: `table_set_default
    /// congestion_threshold set_threshold <depth>`, in packets; Tofino: cells of 80 bytes).
    /// A depth past the 19-bit field never marks.
    pub fn set_congestion_threshold(&mut self, depth: u32) {
        self.congestion_marker.set_threshold(depth);
    }

    /// Return the congestion threshold (0: never mark).
    pub fn congestion_threshold(&self) -> u32 {
        self.congestion_marker.threshold()
    }

    /// Say that what is enqueued to `port` from now on finds `depth` ahead of it: the
    /// traffic manager's `enq_qdepth`, which the model, having no queues, takes from its
    /// driver (a test, a simulator). 0 for every port until set.
    pub fn set_queue_depth(&mut self, port: u16, depth: u32) {
        self.egress_queues.set_depth(port, depth);
    }

    /// Count a datagram that the adapter dropped before the pipeline saw it (too long, or
    /// from a source no answer can go to), as the reference's `Switch::count_drop` does, so
    /// that a StatusReply reports every drop. On a Tofino the controller would add these to
    /// what it reads of the `drops` counter.
    pub fn count_drop(&mut self, reason: switchml_core::switch::DropReason) {
        self.drop_counters.received();
        self.drop_counters
            .tally(crate::drop_counters::Tally::Drop(reason));
    }
}
