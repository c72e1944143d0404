//! The reference switch: the aggregator every other switch implementation must match.
//!
//! It implements protocol.md §4, which is SwitchML's Algorithm 3 (pool of slots × 2 shadow
//! versions, seen bitmaps, countdown, max exponent; first contribution overwrites, later ones
//! add; completed uses multicast, retransmissions to a completed use get the stored result
//! unicast) hardened with a per-version use number so that network duplicates can never be
//! counted twice. The P4 programs and their Rust model (`p4/`) mirror it control by control.
//!
//! The data plane is [`Switch::process`]: bytes in, a [`Verdict`] and the bytes to send out.
//! Control messages (Join, Probe, Status, Abort) are answered in-band; see `control.rs`.
//! The control plane is typed methods: [`Switch::add_job`], [`Switch::remove_job`],
//! [`Switch::job`], [`Switch::counters`], [`Switch::slot`]. The switch never allocates: the
//! caller lends it the slot storage. [`Aggregator`] and [`ControlPlane`] are what an
//! adapter needs of any switch (this one or the P4 model); [`Endpoint`] serves one.
//!
//! A job can also be one level of a tree ([`Switch::add_tiered_job`], protocol.md §7): a
//! child's completed uses go up to a parent switch ([`Verdict::Up`]) and the parent's
//! Results come back down through it, so that one job spans more ranks than one switch
//! holds. A run that ends at one level ends at the other: the parent's Abort comes down,
//! and a child's goes up as a second message ([`Switch::poll_up`]).
//!
//! ```
//! use switchml_core::switch::{JobConfig, Slot, Switch, Verdict};
//! let mut pool = [Slot::<64, 1>::IDLE; 8];
//! let mut switch: Switch<'_, 64, 1, 4> = Switch::new(&mut pool, 1);
//! switch.add_job(JobConfig { id: 7, world: 2, slot_lo: 0, slot_count: 8, key: 0x5EC2E7 }).unwrap();
//! let mut out = [0u8; Switch::<64, 1, 4>::OUT_LEN];
//! assert!(matches!(switch.process(&[0xff; 3], &mut out), Verdict::Drop(_)));
//! ```

mod aggregator;
mod control;
mod endpoint;
mod job;
mod placement;
mod pool;
mod run;
mod tier;
mod verdict;

pub use aggregator::{Aggregator, ControlPlane, JobSnapshot};
pub use endpoint::{Endpoint, Route, Transmit, DEFAULT_DEAD_AFTER};
pub use job::{Job, JobConfig, JobCounters, JobError};
pub use placement::{first_free_range, place_share, PoolShare};
pub use pool::{Slot, SlotVersion};
pub use run::QUIET_SWEEPS;
pub use tier::{ParentLink, Tier};
pub use verdict::{DropReason, Verdict};

use crate::wire::{
    self, AbortReason, AbortRepr, DataKind, DataPacket, DataRepr, Flags, MessageType, RANK_ALL,
};
use job::JobTable;

/// Switch-wide counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Counters {
    /// Packets handed to `process`.
    pub received: u64,
    /// Packets absorbed into a slot.
    pub consumed: u64,
    /// Packets to multicast.
    pub multicast: u64,
    /// Packets to unicast.
    pub unicast: u64,
    /// Packets to the parent switch (protocol.md §7).
    pub upward: u64,
    /// Drops, indexed like [`DropReason::ALL`].
    pub dropped: [u64; wire::DROP_CLASSES],
}

impl Counters {
    /// Return the drops counted for `reason`.
    pub fn drops(&self, reason: DropReason) -> u64 {
        self.dropped[reason.index()]
    }

    /// Return all drops.
    pub fn total_drops(&self) -> u64 {
        self.dropped.iter().sum()
    }
}

/// Counters of several switches (the shards of one, §1.1) add up.
impl core::ops::AddAssign<&Counters> for Counters {
    fn add_assign(&mut self, o: &Counters) {
        self.received += o.received;
        self.consumed += o.consumed;
        self.multicast += o.multicast;
        self.unicast += o.unicast;
        self.upward += o.upward;
        for (d, o) in self.dropped.iter_mut().zip(o.dropped) {
            *d += o;
        }
    }
}

/// The reference switch. `K`: values per slot (the largest count accepted); `WORDS`: 64-rank
/// words per seen bitmap (`64·WORDS` ranks per job); `JOBS`: job table size.
pub struct Switch<'a, const K: usize, const WORDS: usize, const JOBS: usize> {
    pool: &'a mut [Slot<K, WORDS>],
    jobs: JobTable<WORDS, JOBS>,
    epoch: u32,
    counters: Counters,
    probe_results: bool,
    /// Mark every Contribution it counts `CONGESTED` (its queues are deep, protocol.md §6.3).
    congested: bool,
    /// The Abort a child's job owes its parent, until [`Switch::poll_up`] (protocol.md §7).
    up: Option<AbortRepr>,
}

impl<'a, const K: usize, const WORDS: usize, const JOBS: usize> Switch<'a, K, WORDS, JOBS> {
    /// The output buffer length `process` needs: the largest message it can write.
    pub const OUT_LEN: usize = control::max_reply_len(wire::data::HEADER_LEN + 4 * K);

    /// Make a switch over `pool`, announcing `epoch` (choose a new one at every start).
    pub fn new(pool: &'a mut [Slot<K, WORDS>], epoch: u32) -> Self {
        Switch {
            pool,
            jobs: JobTable::EMPTY,
            epoch,
            counters: Counters::default(),
            probe_results: false,
            congested: false,
            up: None,
        }
    }

    /// Mark every Contribution counted from now on `CONGESTED`, or stop (protocol.md §6.3):
    /// the caller says so while its queues toward the workers are deep (the software
    /// switch's socket backlog, a NIC's ring), as an ECN-capable router marks packets. The
    /// mark is ORed into the use's Result like the Contributions' own, so every rank of the
    /// use sees it, and a resend's unicast answer repeats it.
    pub fn set_congested(&mut self, congested: bool) {
        self.congested = congested;
    }

    /// Return whether the switch marks what it counts `CONGESTED`.
    pub fn congested(&self) -> bool {
        self.congested
    }

    /// Offer `PROBE_RESULTS` (protocol.md §6.1): a Probe with `RESULT` set, of a complete
    /// use, is answered with the stored Result, so that a rank that lost a Result gets it
    /// back for a 20-byte Probe instead of resending its whole Contribution. Off by
    /// default, as in the P4 programs and the FPGA aggregator, which cannot grow a Probe
    /// into a Result (and drop a Probe with the flag as malformed); the software switch
    /// turns it on.
    pub fn set_probe_results(&mut self, on: bool) {
        self.probe_results = on;
    }

    /// Return the largest count a slot accepts.
    pub const fn max_count(&self) -> u16 {
        if K > u16::MAX as usize {
            u16::MAX
        } else {
            K as u16
        }
    }

    /// Return the epoch.
    pub fn epoch(&self) -> u32 {
        self.epoch
    }

    /// Return the number of slots in the pool.
    pub fn pool_len(&self) -> usize {
        self.pool.len()
    }

    /// Register a job; its slots are reset.
    pub fn add_job(&mut self, config: JobConfig) -> Result<(), JobError> {
        self.add_tiered_job(config, Tier::Flat)
    }

    /// Register a job at `tier` of a tree of switches (protocol.md §7); its slots are
    /// reset. A child's `config.world` is its own ranks' number.
    pub fn add_tiered_job(&mut self, config: JobConfig, tier: Tier) -> Result<(), JobError> {
        self.jobs.insert(config, tier, self.pool.len())?;
        let lo = config.slot_lo as usize;
        for slot in &mut self.pool[lo..lo + usize::from(config.slot_count)] {
            *slot = Slot::IDLE;
        }
        Ok(())
    }

    /// Remove a job and return its final state.
    pub fn remove_job(&mut self, id: u16) -> Result<Job<WORDS>, JobError> {
        self.jobs.remove(id)
    }

    /// Return job `id`.
    pub fn job(&self, id: u16) -> Option<&Job<WORDS>> {
        self.jobs.get(self.jobs.find(id)?)
    }

    /// Iterate over the registered jobs.
    pub fn jobs(&self) -> impl Iterator<Item = &Job<WORDS>> {
        self.jobs.iter()
    }

    /// Return the switch-wide counters.
    pub fn counters(&self) -> &Counters {
        &self.counters
    }

    /// Return the job-relative `slot` of job `id`.
    pub fn slot(&self, id: u16, slot: u16) -> Option<&Slot<K, WORDS>> {
        let job = self.job(id)?;
        self.pool.get(job.pool_index(slot)?)
    }

    /// Count a datagram that the adapter dropped before `process` (too long, or from a
    /// source no answer can go to), so that Status reports every drop.
    pub fn count_drop(&mut self, reason: DropReason) {
        self.counters.received += 1;
        self.counters.dropped[reason.index()] += 1;
    }

    /// End job `id`'s run without telling its ranks (the run was idle too long); return
    /// whether it had one.
    pub fn end_run(&mut self, id: u16) -> bool {
        match self.jobs.find(id).and_then(|i| self.jobs.get_mut(i)) {
            Some(job) if job.run.is_open() => {
                job.run.end();
                true
            }
            _ => false,
        }
    }

    /// End job `id`'s run from the control plane: write the Abort its ranks get, for
    /// `reason` (`Shutdown`: the switch stops; `JobRemoved`: the job is being removed) with
    /// detail 0, into `out` and return the multicast verdict, or `None` if the job has no
    /// run. A child's job then owes its parent an Abort too ([`Switch::poll_up`]).
    pub fn shutdown_run(
        &mut self,
        id: u16,
        reason: AbortReason,
        out: &mut [u8],
    ) -> Option<Verdict> {
        let epoch = self.epoch;
        let job = self.jobs.find(id).and_then(|i| self.jobs.get_mut(i))?;
        if !job.run.is_open() {
            return None;
        }
        let session = job.run.session;
        let len = control::emit_abort(id, RANK_ALL, reason, 0, epoch, session, out)?;
        self.up = job.abort_up(reason).or(self.up);
        job.run.end();
        Some(Verdict::Multicast { job: id, len })
    }

    /// One liveness sweep of job `id`'s run (protocol.md §4.3), which the caller makes
    /// every `dead_after / QUIET_SWEEPS`: if a Join of a rank was refused while the run
    /// gathered, or a joined rank that has not left was heard in none of the last
    /// [`QUIET_SWEEPS`] sweeps, end the run: write the Abort its ranks get (`RankRefused`
    /// or `RankSilent`, `detail` the rank) into `out` and return the multicast verdict.
    /// `None` if the run goes on, the job has none, or its ranks are child switches (a
    /// parent's job learns of a child's end from the child's Abort, §7). A child's job
    /// then owes its parent an Abort ([`Switch::poll_up`]).
    ///
    /// [`QUIET_SWEEPS`]: run::QUIET_SWEEPS
    pub fn sweep(&mut self, id: u16, out: &mut [u8]) -> Option<Verdict> {
        let epoch = self.epoch;
        let job = self.jobs.find(id).and_then(|i| self.jobs.get_mut(i))?;
        if job.tier == Tier::Parent {
            return None;
        }
        let (reason, rank) = match job.run.sweep()? {
            run::Ending::Silent(member) => {
                let lo = job.parent().map_or(0, |l| l.rank_lo);
                (AbortReason::RankSilent, lo.saturating_add(member))
            }
            run::Ending::Refused(rank) => (AbortReason::RankRefused, rank),
        };
        let session = job.run.session;
        let len = control::emit_abort(id, RANK_ALL, reason, rank, epoch, session, out)?;
        job.counters.aborts += 1;
        self.up = job.abort_up(reason).or(self.up);
        job.run.end();
        Some(Verdict::Multicast { job: id, len })
    }

    /// Process one datagram (the data plane). Never panics; every drop is counted.
    pub fn process(&mut self, packet: &[u8], out: &mut [u8]) -> Verdict {
        self.counters.received += 1;
        let verdict = self.dispatch(packet, out);
        match verdict {
            Verdict::Drop(reason) => self.counters.dropped[reason.index()] += 1,
            Verdict::Consumed => self.counters.consumed += 1,
            Verdict::Multicast { .. } => self.counters.multicast += 1,
            Verdict::Unicast { .. } => self.counters.unicast += 1,
            Verdict::Up { .. } => self.counters.upward += 1,
        }
        verdict
    }

    fn dispatch(&mut self, packet: &[u8], out: &mut [u8]) -> Verdict {
        if out.len() < Self::OUT_LEN {
            return Verdict::Drop(DropReason::OutputTooSmall);
        }
        let Ok((kind, id, _)) = wire::peek(packet) else {
            return Verdict::Drop(DropReason::Malformed);
        };
        // Only a child switch's job takes answers (and Aborts) from its parent (§7).
        let child = self.jobs.find_child(id).is_some();
        match kind {
            MessageType::Contribution => self.contribution(packet, out),
            MessageType::Join => self.join(packet, out),
            MessageType::Probe => self.probe(packet, out),
            MessageType::Abort if child => self.parent_abort(packet, out),
            MessageType::Abort => self.abort(packet, out),
            MessageType::Status => self.status(packet, out),
            MessageType::Leave => self.leave(packet, out),
            MessageType::Result if child => self.parent_result(packet, out),
            MessageType::JoinReply if child => self.parent_join_reply(packet, out),
            MessageType::Result
            | MessageType::JoinReply
            | MessageType::ProbeReply
            | MessageType::StatusReply
            | MessageType::Cookie => Verdict::Drop(DropReason::UnexpectedType),
            MessageType::Unknown(_) => Verdict::Drop(DropReason::UnknownType),
        }
    }

    /// protocol.md §4 steps 1–6.
    fn contribution(&mut self, bytes: &[u8], out: &mut [u8]) -> Verdict {
        let packet = DataPacket::new_unchecked(bytes);
        let Ok(p) = DataRepr::parse(&packet) else {
            return Verdict::Drop(DropReason::Malformed);
        };
        let Some(ji) = self.jobs.find(p.job) else {
            return Verdict::Drop(DropReason::UnknownJob);
        };
        let Some(job) = self.jobs.get_mut(ji) else {
            return Verdict::Drop(DropReason::UnknownJob);
        };
        if !job.run.admits(p.session) {
            job.counters.unauthorized += 1;
            return Verdict::Drop(DropReason::BadSession);
        }
        let world = job.config.world;
        let member = job.member(p.rank);
        if let Some(m) = member {
            // Any message of the run proves its sender alive, a dropped one too (§4.3).
            job.run.hear(m);
        }
        let reject = reject::<K>(member.is_some(), &p);
        let index = job.pool_index(p.slot);
        let (Some(index), Some(member), None) = (index, member, reject) else {
            job.counters.rejected += 1;
            return Verdict::Drop(reject.unwrap_or(DropReason::SlotRange));
        };
        let Some(slot) = self.pool.get_mut(index) else {
            return Verdict::Drop(DropReason::SlotRange);
        };
        let v = usize::from(p.ver);
        let sv = &mut slot.versions[v];

        // 1. Use check (a use of an earlier run counts as idle).
        if !sv.in_session(p.session) || (p.seq.wrapping_sub(sv.seq) as i32) > 0 {
            sv.begin(p.session, p.seq, world, p.count);
        } else if p.seq != sv.seq {
            job.counters.stale += 1;
            return Verdict::Drop(DropReason::Stale);
        }
        // 2. Completed use: the sender lost the result. A resend carries the use's count;
        // another count is no resend, and is not answered with the stored values.
        if sv.remaining == 0 {
            if p.count != sv.count {
                job.counters.rejected += 1;
                return Verdict::Drop(DropReason::CountMismatch);
            }
            return answer_lost_result(job, sv, &p, out);
        }
        // 3. Duplicate to an incomplete use.
        if sv.seen.contains(member) {
            job.counters.duplicates += 1;
            return Verdict::Drop(DropReason::Duplicate);
        }
        // 4. Count check.
        if p.count != sv.count {
            job.counters.rejected += 1;
            return Verdict::Drop(DropReason::CountMismatch);
        }
        // 5. Aggregate.
        let n = usize::from(p.count);
        let first = sv.remaining == world;
        sv.seen.insert(member);
        if first {
            pool::load(&mut sv.values[..n], packet.values());
        } else if pool::accumulate(&mut sv.values[..n], packet.values()) {
            sv.flags = sv.flags.with(Flags::OVERFLOW);
        }
        // Every contribution's non-finite kinds and congestion mark reach the Result (§5.4,
        // §6.3); a parent keeps a child's overflow too (§7), where a worker's means nothing.
        let kept = if job.tier == Tier::Parent {
            Flags::STICKY
        } else {
            Flags::CARRIED
        };
        let marked = if self.congested {
            Flags::CONGESTED
        } else {
            Flags::default()
        };
        sv.flags = sv.flags.with(p.flags.and(kept)).with(marked);
        sv.exp = sv.exp.max(p.exp);
        sv.remaining -= 1;
        job.counters.contributions += 1;
        let complete = sv.remaining == 0;
        // 6. Multicast a completed use.
        if !complete {
            return Verdict::Consumed;
        }
        let sv = &slot.versions[v];
        job.counters.completions += 1;
        if sv.overflowed() {
            job.counters.overflows += 1;
        }
        // 6'. A child sends the completed use up, not down (§7).
        if let Some(link) = job.parent() {
            return tier::up(link, job.run.parent, sv, &p, Flags::default(), out);
        }
        let len = emit_result(sv, &p, RANK_ALL, Flags::default(), out);
        Verdict::Multicast { job: p.job, len }
    }
}

/// The checks of a data message after its job and session (protocol.md §4), in order:
/// its rank (`known`), count and version; the first that fails names the drop.
fn reject<const K: usize>(known: bool, p: &DataRepr) -> Option<DropReason> {
    if !known {
        Some(DropReason::UnknownRank)
    } else if usize::from(p.count) > K {
        Some(DropReason::CountTooLarge)
    } else if u32::from(p.ver) != p.seq & 1 {
        Some(DropReason::BadVersion)
    } else {
        None
    }
}

/// Answer a rank that lost the Result of the complete use `sv` holds (its resend `p`, or a
/// Probe that asks for the Result, §6.1): with the stored Result, unicast. At a child whose
/// parent's Result has not come back, send the sum up again instead, for one ask in `n`
/// (every rank of the child waits on this use and asks: passing each on would multiply the
/// load on the link up by `n`); the parent's Result, multicast down, answers them all.
fn answer_lost_result<const K: usize, const WORDS: usize>(
    job: &mut Job<WORDS>,
    sv: &mut SlotVersion<K, WORDS>,
    p: &DataRepr,
    out: &mut [u8],
) -> Verdict {
    if let (Some(link), false) = (job.parent(), sv.relayed) {
        let ask = sv.resends % job.config.world == 0;
        sv.resends = sv.resends.wrapping_add(1);
        if !ask {
            return Verdict::Consumed;
        }
        return tier::up(link, job.run.parent, sv, p, Flags::RETRANSMIT, out);
    }
    job.counters.retransmit_replies += 1;
    let len = emit_result(sv, p, p.rank, Flags::RETRANSMIT, out);
    Verdict::Unicast {
        job: p.job,
        rank: p.rank,
        len,
    }
}

/// Write the Result for the use `sv` holds, answering contribution `p`.
fn emit_result<const K: usize, const WORDS: usize>(
    sv: &SlotVersion<K, WORDS>,
    p: &DataRepr,
    rank: u16,
    flags: Flags,
    out: &mut [u8],
) -> usize {
    let repr = DataRepr {
        kind: DataKind::Result,
        job: p.job,
        rank,
        slot: p.slot,
        ver: p.ver,
        flags: flags.with(sv.flags),
        count: sv.count,
        seq: p.seq,
        exp: sv.exp,
        session: p.session,
    };
    let len = repr.buffer_len();
    let mut packet = DataPacket::new_unchecked(&mut out[..len]);
    repr.emit(&mut packet);
    pool::store(sv.values(), packet.values_mut());
    len
}

#[cfg(test)]
mod tests;
