//! The shadow model of the switch: what protocol.md §4 says each job and slot version
//! holds, kept by the checker independently of the switch's own bitmaps and counters.
//!
//! The model remembers, for each use a slot version holds, *which ranks were counted and
//! with which values*, not just a bitmap and a countdown; that is what lets the checker
//! tell a double count or an early completion apart from a correct answer.

use std::collections::BTreeSet;

use switchml_core::switch::JobCounters;
use switchml_core::wire::{DataKind, DataRepr, Flags, Message, RANK_ALL};

/// One use of one slot version: every contribution counted, in arrival order.
#[derive(Debug, Clone)]
pub struct UseModel {
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
    /// A use that has just begun.
    pub fn begin(seq: u32, count: u16) -> Self {
        UseModel {
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
        };
        let payload: Vec<u8> = self.sum.iter().flat_map(|v| v.to_be_bytes()).collect();
        let msg = Message::Data(repr, &payload);
        let mut out = vec![0; msg.buffer_len()];
        msg.emit(&mut out).expect("a valid Result");
        out
    }
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
    /// Ranks whose Join was accepted.
    pub joined: BTreeSet<u16>,
    /// The counters the switch must report.
    pub counters: JobCounters,
    /// Per job-relative slot, per version: the use held, if any.
    pub uses: Vec<[Option<UseModel>; 2]>,
}

impl JobModel {
    /// A freshly added job: every slot idle.
    pub fn new(id: u16, world: u16, slot_count: u16) -> Self {
        JobModel {
            id,
            world,
            slot_count,
            joined: BTreeSet::new(),
            counters: JobCounters::default(),
            uses: vec![[None, None]; usize::from(slot_count)],
        }
    }
}
