//! The shadow model of the switch: what protocol.md §4 says each job and slot version
//! holds, kept by the checker independently of the switch's own bitmaps and counters.
//!
//! The model remembers, for each use a slot version holds, *which ranks were counted and
//! with which values*, not just a bitmap and a countdown; that is what lets the checker
//! tell a double count or an early completion apart from a correct answer. It also keeps
//! each job's run (§4.1): its session, its agreed lane and chunk size, and which process
//! (nonce) of each rank joined it and which ranks left.

use std::collections::{BTreeMap, BTreeSet};

use switchml_core::switch::{JobConfig, JobCounters};
use switchml_core::wire::{DataKind, DataRepr, Flags, Message, RANK_ALL};

/// One use of one slot version: every contribution counted, in arrival order.
#[derive(Debug, Clone)]
pub struct UseModel {
    /// The session of the run the use belongs to.
    pub session: u32,
    /// The use number.
    pub seq: u32,
    /// Values per contribution, fixed by the use's first contribution.
    pub count: u16,
    /// The ranks counted, in arrival order, each exactly once.
    pub ranks: Vec<u16>,
    /// The wrapping sum of the counted values.
    pub sum: Vec<i32>,
    /// Whether some addition in arrival order overflowed int32.
    pub overflow: bool,
    /// The largest exponent byte counted (0 before any).
    pub exp: u8,
}

impl UseModel {
    /// A use of the run `session` that has just begun.
    pub fn begin(session: u32, seq: u32, count: u16) -> Self {
        UseModel {
            session,
            seq,
            count,
            ranks: Vec::new(),
            sum: vec![0; usize::from(count)],
            overflow: false,
            exp: 0,
        }
    }

    /// Count one contribution (the caller has checked it is a new rank).
    pub fn add(&mut self, rank: u16, values: &[i32], exp: u8) {
        if self.ranks.is_empty() {
            self.sum.copy_from_slice(values);
        } else {
            for (s, &v) in self.sum.iter_mut().zip(values) {
                self.overflow |= s.checked_add(v).is_none();
                *s = s.wrapping_add(v);
            }
        }
        self.ranks.push(rank);
        self.exp = self.exp.max(exp);
    }

    /// Return whether `rank` was counted.
    pub fn has(&self, rank: u16) -> bool {
        self.ranks.contains(&rank)
    }

    /// The Result this use answers with: multicast, or unicast to `rank` with RETRANSMIT.
    pub fn result(&self, job: u16, slot: u16, rank: u16) -> Vec<u8> {
        let mut flags = Flags::default();
        if self.overflow {
            flags = flags.with(Flags::OVERFLOW);
        }
        if rank != RANK_ALL {
            flags = flags.with(Flags::RETRANSMIT);
        }
        let repr = DataRepr {
            kind: DataKind::Result,
            job,
            rank,
            slot,
            ver: (self.seq & 1) as u8,
            flags,
            count: self.count,
            seq: self.seq,
            exp: self.exp,
            session: self.session,
        };
        let payload: Vec<u8> = self.sum.iter().flat_map(|v| v.to_be_bytes()).collect();
        let msg = Message::Data(repr, &payload);
        let mut out = vec![0; msg.buffer_len()];
        msg.emit(&mut out).expect("a valid Result");
        out
    }
}

/// A job's current run.
#[derive(Debug, Clone)]
pub struct RunModel {
    /// The session: the nonce of the Join that opened the run plus the job's runs before.
    pub session: u32,
    /// Slots per lane, from the opening Join.
    pub lane_slots: u16,
    /// Values per chunk, from the opening Join.
    pub count: u16,
    /// Lanes per rank, from the opening Join.
    pub lanes: u16,
    /// The ranks that joined, each with the nonce of its process.
    pub joined: BTreeMap<u16, u32>,
    /// The ranks that left.
    pub left: BTreeSet<u16>,
}

/// One registered job.
#[derive(Debug, Clone)]
pub struct JobModel {
    /// Job id.
    pub id: u16,
    /// World size.
    pub world: u16,
    /// Number of slots.
    pub slot_count: u16,
    /// The key a Join must carry.
    pub key: u64,
    /// The run, if one is open.
    pub run: Option<RunModel>,
    /// The counters the switch must report.
    pub counters: JobCounters,
    /// Per job-relative slot, per version: the use held, if any.
    pub uses: Vec<[Option<UseModel>; 2]>,
}

impl JobModel {
    /// A freshly added job: no run, every slot idle.
    pub fn new(config: &JobConfig) -> Self {
        let (id, world, slot_count) = (config.id, config.world, config.slot_count);
        JobModel {
            id,
            world,
            slot_count,
            key: config.key,
            run: None,
            counters: JobCounters::default(),
            uses: vec![[None, None]; usize::from(slot_count)],
        }
    }

    /// Return the run if `session` names it (never without a run).
    pub fn run_of(&self, session: u32) -> Option<&RunModel> {
        self.run.as_ref().filter(|r| r.session == session)
    }

    /// Return the ranks in the run (none without one).
    pub fn joined(&self) -> BTreeSet<u16> {
        self.run
            .iter()
            .flat_map(|r| r.joined.keys())
            .copied()
            .collect()
    }

    /// Return whether every rank joined the run.
    pub fn all_joined(&self) -> bool {
        self.run
            .as_ref()
            .is_some_and(|r| r.joined.len() == usize::from(self.world))
    }
}
