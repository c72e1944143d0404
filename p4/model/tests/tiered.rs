//! The model against the reference switch with two-level jobs (protocol.md §7), on random
//! packet sequences: one switch holds a child job (its ranks a range `rank_lo‥rank_lo + n`
//! of a whole job of `P` ranks, member 1 of 3 of parent job 40) and a parent job (job 9,
//! whose 3 ranks are child switches). The sequences join the child's ranks (whose last
//! Join goes up), answer as the parent would and would not (JoinReplies and Results of job
//! 40 with right and wrong sessions, ranks, worlds, slots, versions, uses and counts),
//! contribute in rounds and singly (a completed use goes up; resends go up one in `n` until
//! the parent's Result is here, then are answered from it), replay earlier packets
//! (duplicates and stale ones), probe, ask for Status, leave, abort with every reason,
//! send Aborts of job 40 as the parent would and would not (members' and the parent's own,
//! restarts naming a member or none, of the parent run, of the child's run, of none; the
//! child's own Abort up passed back down), and restart or end the child's run from the
//! control plane; at the parent, children contribute with and without `OVERFLOW`. Every
//! verdict, every byte sent (up, down or back), what each switch owes the parent after
//! every packet (`poll_up`), the counters and at the end every register of every slot
//! version must be identical.

use proptest::prelude::*;
use switchml_core::switch::{DropReason, JobConfig, ParentLink, Tier, Verdict};
use switchml_core::wire::{
    AbortPacket, AbortReason, AbortRepr, DataKind, DataPacket, DataRepr, Flags, JoinFlags,
    JoinPacket, JoinReplyPacket, JoinReplyRepr, JoinRepr, LeavePacket, LeaveRepr, ProbePacket,
    ProbeRepr, StatusPacket, StatusRepr, RANK_ALL,
};
use switchml_p4model_harness::equivalence::{Mismatch, Pair, RefSlot, Reference, Setup};

/// The child's job, its key, its slots.
const CHILD: u16 = 7;
const CHILD_KEY: u64 = 0xC41D;
const CHILD_SLOTS: u16 = 4;
/// The child's parent's job and key; this child is member 1 of 3.
const UP_JOB: u16 = 40;
const UP_KEY: u64 = 0x9A7E;
const MEMBER: u16 = 1;
const MEMBERS: u16 = 3;
/// The parent job on the same switch: 3 children, key 0x99.
const PARENT: u16 = 9;
const PARENT_KEY: u64 = 0x99;
/// The parent run's sessions the sequences name.
const PARENT_SESSIONS: [u32; 2] = [0x5000_0001, 0x5000_0002];
const COUNTS: [u16; 4] = [1, 3, 17, 40];

/// A child of `n` ranks from `rank_lo`, of a whole job of `world` ranks.
fn setup(n: u16, world: u16, rank_lo: u16) -> Setup {
    let link = ParentLink {
        world,
        rank_lo,
        job: UP_JOB,
        member: MEMBER,
        members: MEMBERS,
        key: UP_KEY,
    };
    Setup {
        slots: 8,
        epoch: 0x71E2,
        jobs: vec![
            JobConfig {
                id: CHILD,
                world: n,
                slot_lo: 0,
                slot_count: CHILD_SLOTS,
                key: CHILD_KEY,
            },
            JobConfig {
                id: PARENT,
                world: MEMBERS,
                slot_lo: 4,
                slot_count: 2,
                key: PARENT_KEY,
            },
        ],
        tiers: vec![(CHILD, Tier::Child(link)), (PARENT, Tier::Parent)],
    }
}

/// Which session a message carries.
#[derive(Debug, Clone, Copy)]
enum Session {
    /// The job's current run's (the child's, or the parent job's on this switch).
    Current,
    /// One of the parent run's sessions the sequences use.
    Parent(usize),
    /// Any number.
    Any(u32),
}

fn sessions() -> impl Strategy<Value = Session> {
    prop_oneof![
        8 => Just(Session::Current),
        4 => (0usize..2).prop_map(Session::Parent),
        1 => any::<u32>().prop_map(Session::Any),
    ]
}

/// Which rank a message names: a member's (offset from the first), or another.
#[derive(Debug, Clone, Copy)]
enum Rank {
    Member(u16),
    All,
    Any(u16),
}

fn ranks() -> impl Strategy<Value = Rank> {
    prop_oneof![
        8 => (0u16..4).prop_map(Rank::Member),
        1 => Just(Rank::All),
        1 => any::<u16>().prop_map(Rank::Any),
    ]
}

#[derive(Debug, Clone)]
enum Op {
    /// The child's ranks join (all, or all but the last), in order from `first`.
    JoinAll {
        generation: u8,
        count: u16,
        first: u16,
        partial: bool,
    },
    /// One Join to the child: a rank, right or wrong world and key.
    Join {
        rank: Rank,
        generation: u8,
        wrong_world: bool,
        wrong_key: bool,
    },
    /// A JoinReply of the parent's job.
    ParentReply {
        rank: Rank,
        wrong_world: bool,
        complete: bool,
        session: Session,
        nonce: Session,
    },
    /// The child's ranks contribute to one use (from `first`, maybe one missing).
    Round {
        slot: u16,
        use_: u32,
        count: u16,
        seed: u64,
        first: u16,
        skip: bool,
        session: Session,
    },
    /// One contribution to the child.
    Contribution {
        rank: Rank,
        slot: u16,
        use_: u32,
        count: u16,
        seed: u64,
        session: Session,
    },
    /// A Result of the parent's job.
    Result {
        rank: Rank,
        slot: u16,
        use_: u32,
        count: u16,
        bad_ver: bool,
        seed: u64,
        session: Session,
    },
    /// The parent's Result for the last use the child sent up (rank `0xFFFF` or the
    /// child's), `times` times.
    Answer {
        all: bool,
        seed: u64,
        times: u8,
    },
    /// The child's ranks resend their last contribution, each `times` times.
    Resend {
        times: u8,
    },
    /// An earlier datagram again.
    Replay(prop::sample::Index),
    Probe {
        rank: Rank,
        slot: u16,
        use_: u32,
        session: Session,
    },
    Status,
    Leave {
        rank: Rank,
    },
    /// A worker's Abort to the child, of any reason.
    Abort {
        rank: Rank,
        reason: u8,
        detail: u16,
    },
    /// An Abort of the parent's job: a member's passed on, or the parent's own
    /// (`0xFFFF`, a restart naming a member in `detail`), of either run or none.
    ParentAbort {
        rank: Rank,
        reason: u8,
        detail: u16,
        session: Session,
    },
    /// The child's last Abort up, passed back down by the parent.
    Echo,
    /// The parent job's children join.
    ParentJoinAll {
        generation: u8,
        count: u16,
    },
    /// The parent job's children contribute, with random flags.
    ParentRound {
        slot: u16,
        use_: u32,
        count: u16,
        seed: u64,
        skip: bool,
    },
    Shutdown,
    Expire,
    RestartJob,
}

/// An Abort's reason byte: every reason of protocol.md §3.6 (restarts often), or another.
fn reasons() -> impl Strategy<Value = u8> {
    prop_oneof![4 => 1u8..=15, 2 => Just(9u8), 1 => any::<u8>()]
}

fn counts() -> impl Strategy<Value = u16> {
    prop_oneof![8 => prop::sample::select(&COUNTS[..]), 1 => 0u16..300]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0u8..2, prop::sample::select(&COUNTS[..]), 0u16..4, prop::bool::weighted(0.2))
            .prop_map(|(generation, count, first, partial)| Op::JoinAll {
                generation, count, first, partial
            }),
        1 => (ranks(), 0u8..3, prop::bool::weighted(0.2), prop::bool::weighted(0.2))
            .prop_map(|(rank, generation, wrong_world, wrong_key)| Op::Join {
                rank, generation, wrong_world, wrong_key
            }),
        4 => (ranks(), prop::bool::weighted(0.1), prop::bool::weighted(0.7), sessions(), sessions())
            .prop_map(|(rank, wrong_world, complete, session, nonce)| Op::ParentReply {
                rank, wrong_world, complete, session, nonce
            }),
        6 => (0u16..5, 0u32..5, counts(), any::<u64>(), 0u16..4, prop::bool::weighted(0.2), sessions())
            .prop_map(|(slot, use_, count, seed, first, skip, session)| Op::Round {
                slot, use_, count, seed, first, skip, session
            }),
        4 => (ranks(), 0u16..5, 0u32..5, counts(), any::<u64>(), sessions())
            .prop_map(|(rank, slot, use_, count, seed, session)| Op::Contribution {
                rank, slot, use_, count, seed, session
            }),
        5 => (ranks(), 0u16..5, 0u32..5, counts(), prop::bool::weighted(0.05), any::<u64>(), sessions())
            .prop_map(|(rank, slot, use_, count, bad_ver, seed, session)| Op::Result {
                rank, slot, use_, count, bad_ver, seed, session
            }),
        3 => (any::<bool>(), any::<u64>(), 1u8..3)
            .prop_map(|(all, seed, times)| Op::Answer { all, seed, times }),
        2 => (1u8..4).prop_map(|times| Op::Resend { times }),
        3 => any::<prop::sample::Index>().prop_map(Op::Replay),
        1 => (ranks(), 0u16..5, 0u32..5, sessions())
            .prop_map(|(rank, slot, use_, session)| Op::Probe { rank, slot, use_, session }),
        1 => Just(Op::Status),
        1 => ranks().prop_map(|rank| Op::Leave { rank }),
        1 => (ranks(), reasons(), any::<u16>())
            .prop_map(|(rank, reason, detail)| Op::Abort { rank, reason, detail }),
        2 => (ranks(), reasons(), prop_oneof![0u16..5, any::<u16>()], sessions())
            .prop_map(|(rank, reason, detail, session)| Op::ParentAbort {
                rank, reason, detail, session
            }),
        1 => Just(Op::Echo),
        1 => (0u8..2, prop::sample::select(&COUNTS[..]))
            .prop_map(|(generation, count)| Op::ParentJoinAll { generation, count }),
        2 => (0u16..2, 0u32..4, prop::sample::select(&COUNTS[..]), any::<u64>(), prop::bool::weighted(0.2))
            .prop_map(|(slot, use_, count, seed, skip)| Op::ParentRound {
                slot, use_, count, seed, skip
            }),
        1 => Just(Op::Shutdown),
        1 => Just(Op::Expire),
        1 => Just(Op::RestartJob),
    ]
}

fn emit_data(repr: DataRepr, seed: u64) -> Vec<u8> {
    let mut b = vec![0u8; repr.buffer_len()];
    let mut p = DataPacket::new_unchecked(&mut b[..]);
    repr.emit(&mut p);
    let mut x = seed | 1;
    for chunk in p.values_mut().chunks_exact_mut(4) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        // Large values now and then, so that sums overflow.
        let v = if x % 5 == 0 {
            x as i32
        } else {
            (x % 2001) as i32 - 1000
        };
        chunk.copy_from_slice(&v.to_be_bytes());
    }
    b
}

fn join(job: u16, rank: u16, world: u16, count: u16, nonce: u32, key: u64, slots: u16) -> Vec<u8> {
    let repr = JoinRepr {
        job,
        rank,
        world,
        slot_lo: 0,
        slot_count: slots,
        count,
        lanes: 1,
        nonce,
        cookie: 0,
        tag: [0; 16],
    }
    .sign(key);
    let mut b = vec![0u8; repr.buffer_len()];
    repr.emit(&mut JoinPacket::new_unchecked(&mut b[..]));
    b
}

fn abort(job: u16, rank: u16, reason: u8, detail: u16, session: u32) -> Vec<u8> {
    let repr = AbortRepr {
        job,
        rank,
        reason: AbortReason::from(reason),
        detail,
        epoch: 0,
        session,
    };
    let mut b = vec![0u8; repr.buffer_len()];
    repr.emit(&mut AbortPacket::new_unchecked(&mut b[..]));
    b
}

struct Gen {
    n: u16,
    world: u16,
    rank_lo: u16,
    sent: Vec<Vec<u8>>,
    /// The last Contribution the child sent up.
    last_up: Option<Vec<u8>>,
    /// The last Abort the child sent up.
    last_abort_up: Option<Vec<u8>>,
}

impl Gen {
    fn rank(&self, r: Rank) -> u16 {
        match r {
            Rank::Member(i) => self.rank_lo + i % self.n,
            Rank::All => RANK_ALL,
            Rank::Any(r) => r,
        }
    }

    /// The parent's rank for this child: `Member` is ours.
    fn up_rank(r: Rank) -> u16 {
        match r {
            Rank::Member(i) if i < 3 => MEMBER,
            Rank::Member(_) => MEMBER + 1,
            Rank::All => RANK_ALL,
            Rank::Any(r) => r,
        }
    }

    fn expand(&self, op: &Op, pair: &Pair<'_>) -> Vec<Vec<u8>> {
        let current = |id: u16| pair.reference.job(id).map_or(0, |j| j.session());
        let session = |id: u16, s: Session| match s {
            Session::Current => current(id),
            Session::Parent(i) => PARENT_SESSIONS[i],
            Session::Any(s) => s,
        };
        let seq = |use_: u32| use_;
        let members = |first: u16, skip: bool| {
            let n = self.n;
            let take = if skip && n > 1 { n - 1 } else { n };
            (0..take)
                .map(move |i| self.rank_lo + (first + i) % n)
                .collect::<Vec<_>>()
        };
        match *op {
            Op::JoinAll {
                generation,
                count,
                first,
                partial,
            } => members(first, partial)
                .into_iter()
                .map(|r| {
                    let nonce = 1 + u32::from(generation) * 0x1000 + u32::from(r);
                    join(CHILD, r, self.world, count, nonce, CHILD_KEY, CHILD_SLOTS)
                })
                .collect(),
            Op::Join {
                rank,
                generation,
                wrong_world,
                wrong_key,
            } => {
                let r = self.rank(rank);
                let nonce = 1 + u32::from(generation) * 0x1000 + u32::from(r);
                let world = if wrong_world { self.n } else { self.world };
                let key = if wrong_key { 1 } else { CHILD_KEY };
                vec![join(CHILD, r, world, 17, nonce, key, CHILD_SLOTS)]
            }
            Op::ParentReply {
                rank,
                wrong_world,
                complete,
                session: s,
                nonce,
            } => {
                let repr = JoinReplyRepr {
                    job: UP_JOB,
                    rank: Self::up_rank(rank),
                    world: if wrong_world { MEMBERS + 1 } else { MEMBERS },
                    shards: 0,
                    flags: if complete {
                        JoinFlags::COMPLETE
                    } else {
                        JoinFlags::default()
                    },
                    max_count: 256,
                    epoch: 5,
                    slot_count: 4,
                    session: session(UP_JOB, s),
                    nonce: session(CHILD, nonce),
                    lane_slots: 4,
                    count: 17,
                    joined: &[0b101],
                };
                let mut b = vec![0u8; repr.buffer_len()];
                repr.emit(&mut JoinReplyPacket::new_unchecked(&mut b[..]));
                vec![b]
            }
            Op::Round {
                slot,
                use_,
                count,
                seed,
                first,
                skip,
                session: s,
            } => members(first, skip)
                .into_iter()
                .map(|r| {
                    let repr = DataRepr {
                        kind: DataKind::Contribution,
                        job: CHILD,
                        rank: r,
                        slot,
                        ver: (seq(use_) & 1) as u8,
                        flags: Flags::default(),
                        count,
                        seq: seq(use_),
                        exp: (seed >> 3) as u8 ^ r as u8,
                        session: session(CHILD, s),
                    };
                    emit_data(repr, seed ^ u64::from(r))
                })
                .collect(),
            Op::Contribution {
                rank,
                slot,
                use_,
                count,
                seed,
                session: s,
            } => {
                let repr = DataRepr {
                    kind: DataKind::Contribution,
                    job: CHILD,
                    rank: self.rank(rank),
                    slot,
                    ver: (seq(use_) & 1) as u8,
                    flags: Flags((seed >> 56) as u8),
                    count,
                    seq: seq(use_),
                    exp: (seed >> 8) as u8,
                    session: session(CHILD, s),
                };
                vec![emit_data(repr, seed)]
            }
            Op::Result {
                rank,
                slot,
                use_,
                count,
                bad_ver,
                seed,
                session: s,
            } => {
                let repr = DataRepr {
                    kind: DataKind::Result,
                    job: UP_JOB,
                    rank: Self::up_rank(rank),
                    slot,
                    ver: (seq(use_) & 1) as u8 ^ u8::from(bad_ver),
                    flags: Flags((seed >> 56) as u8),
                    count,
                    seq: seq(use_),
                    exp: (seed >> 8) as u8,
                    session: session(UP_JOB, s),
                };
                vec![emit_data(repr, seed)]
            }
            Op::Answer { all, seed, times } => {
                let Some(up) = &self.last_up else {
                    return Vec::new();
                };
                let Ok(u) = DataRepr::parse(&DataPacket::new_unchecked(&up[..])) else {
                    return Vec::new();
                };
                let repr = DataRepr {
                    kind: DataKind::Result,
                    rank: if all { RANK_ALL } else { MEMBER },
                    flags: Flags((seed >> 54) as u8),
                    exp: (seed >> 8) as u8,
                    ..u
                };
                vec![emit_data(repr, seed); usize::from(times)]
            }
            Op::Resend { times } => {
                let last = self
                    .sent
                    .iter()
                    .rev()
                    .find(|p| p.get(1) == Some(&0x01) && p.get(3) == Some(&(CHILD as u8)));
                let Some(last) = last else {
                    return Vec::new();
                };
                let Ok(c) = DataRepr::parse(&DataPacket::new_unchecked(&last[..])) else {
                    return Vec::new();
                };
                (0..self.n)
                    .flat_map(|i| std::iter::repeat_n(i, usize::from(times)))
                    .map(|i| {
                        emit_data(
                            DataRepr {
                                rank: self.rank_lo + i,
                                ..c
                            },
                            u64::from(i),
                        )
                    })
                    .collect()
            }
            Op::Replay(i) if !self.sent.is_empty() => vec![i.get(&self.sent).clone()],
            Op::Replay(_) => Vec::new(),
            Op::Probe {
                rank,
                slot,
                use_,
                session: s,
            } => {
                let repr = ProbeRepr {
                    job: CHILD,
                    rank: self.rank(rank),
                    slot,
                    ver: (use_ & 1) as u8,
                    seq: use_,
                    session: session(CHILD, s),
                    flags: switchml_core::wire::ProbeFlags::NONE,
                };
                let mut b = vec![0u8; repr.buffer_len()];
                repr.emit(&mut ProbePacket::new_unchecked(&mut b[..]));
                vec![b]
            }
            Op::Status => {
                let repr = StatusRepr {
                    job: CHILD,
                    rank: 3,
                    nonce: 1,
                    cookie: 0,
                    tag: [0; 16],
                }
                .sign(CHILD_KEY);
                let mut b = vec![0u8; repr.buffer_len()];
                repr.emit(&mut StatusPacket::new_unchecked(&mut b[..]));
                vec![b]
            }
            Op::Leave { rank } => {
                let repr = LeaveRepr {
                    job: CHILD,
                    rank: self.rank(rank),
                    session: current(CHILD),
                };
                let mut b = vec![0u8; repr.buffer_len()];
                repr.emit(&mut LeavePacket::new_unchecked(&mut b[..]));
                vec![b]
            }
            Op::Abort {
                rank,
                reason,
                detail,
            } => vec![abort(
                CHILD,
                self.rank(rank),
                reason,
                detail,
                current(CHILD),
            )],
            Op::ParentAbort {
                rank,
                reason,
                detail,
                session: s,
            } => {
                // `Current`: the child's own run (an answer to its Join up).
                let session = match s {
                    Session::Current => current(CHILD),
                    s => session(UP_JOB, s),
                };
                vec![abort(UP_JOB, Self::up_rank(rank), reason, detail, session)]
            }
            Op::Echo => self.last_abort_up.iter().cloned().collect(),
            Op::ParentJoinAll { generation, count } => (0..MEMBERS)
                .map(|c| {
                    let nonce = 0x700 + u32::from(generation) * 0x10 + u32::from(c);
                    join(PARENT, c, MEMBERS, count, nonce, PARENT_KEY, 2)
                })
                .collect(),
            Op::ParentRound {
                slot,
                use_,
                count,
                seed,
                skip,
            } => (0..if skip { MEMBERS - 1 } else { MEMBERS })
                .map(|c| {
                    let repr = DataRepr {
                        kind: DataKind::Contribution,
                        job: PARENT,
                        rank: c,
                        slot,
                        ver: (use_ & 1) as u8,
                        flags: Flags((seed >> (8 * c)) as u8),
                        count,
                        seq: use_,
                        exp: (seed >> 40) as u8 ^ c as u8,
                        session: current(PARENT),
                    };
                    emit_data(repr, seed ^ u64::from(c))
                })
                .collect(),
            Op::Shutdown | Op::Expire | Op::RestartJob => Vec::new(),
        }
    }
}

/// What a run of `ops` reached, for the coverage test.
#[derive(Debug, Default)]
struct Reached {
    up_contributions: usize,
    up_resends: usize,
    up_joins: usize,
    results_down: usize,
    complete_down: usize,
    /// Aborts up (`poll_up`), by reason: WorkerFailed, RankRestarted, Shutdown.
    aborts_up: [usize; 3],
    /// The parent's Aborts taken (`ParentFailed` down), refused (`BadSession`,
    /// `UnknownRank`) and the child's own back (`Duplicate`).
    parent_failed: usize,
    parent_refused: usize,
    echoes: usize,
}

impl Reached {
    /// Count what the child owed its parent after a packet or a `shutdown_run`.
    fn up(&mut self, pair: &Pair<'_>, g: &mut Gen) {
        let Some((_, bytes)) = pair.last_up() else {
            return;
        };
        let reason = AbortPacket::new_unchecked(bytes).reason();
        let i = match reason {
            AbortReason::WorkerFailed => 0,
            AbortReason::RankRestarted => 1,
            _ => 2,
        };
        self.aborts_up[i] += 1;
        g.last_abort_up = Some(bytes.to_vec());
    }
}

fn check(
    n: u16,
    world: u16,
    rank_lo: u16,
    ops: &[Op],
    reached: &mut Reached,
) -> Result<(), Mismatch> {
    let setup = setup(n, world, rank_lo);
    let mut pool = vec![RefSlot::IDLE; setup.slots];
    let mut pair = Pair::new(&setup, &mut pool)?;
    let mut g = Gen {
        n,
        world,
        rank_lo,
        sent: Vec::new(),
        last_up: None,
        last_abort_up: None,
    };
    for op in ops {
        match op {
            Op::Shutdown => {
                pair.shutdown_run(CHILD)?;
                reached.up(&pair, &mut g);
            }
            Op::Expire => pair.end_run(CHILD)?,
            Op::RestartJob => pair.restart_job(CHILD)?,
            _ => {}
        }
        for p in g.expand(op, &pair) {
            pair.feed(&p)?;
            reached.up(&pair, &mut g);
            if let Some((v, bytes)) = pair.last() {
                let parents = p.get(1) == Some(&0x14) && p.get(3) == Some(&(UP_JOB as u8));
                match v {
                    Verdict::Drop(DropReason::Duplicate) if parents => reached.echoes += 1,
                    Verdict::Drop(DropReason::BadSession | DropReason::UnknownRank) if parents => {
                        reached.parent_refused += 1
                    }
                    Verdict::Multicast { .. } if parents => reached.parent_failed += 1,
                    _ => {}
                }
                match (v, bytes.get(1)) {
                    (Verdict::Up { .. }, Some(0x10)) => reached.up_joins += 1,
                    (Verdict::Up { .. }, _) => {
                        g.last_up = Some(bytes.to_vec());
                        let f = DataPacket::new_unchecked(bytes).flags();
                        if f.contains(Flags::RETRANSMIT) {
                            reached.up_resends += 1;
                        } else {
                            reached.up_contributions += 1;
                        }
                    }
                    (Verdict::Multicast { job: CHILD, .. }, Some(0x02)) if p[1] == 0x02 => {
                        reached.results_down += 1
                    }
                    (Verdict::Multicast { job: CHILD, .. }, Some(0x11)) => {
                        reached.complete_down += 1
                    }
                    _ => {}
                }
            }
            g.sent.push(p);
        }
    }
    pair.compare_state()
}

/// A whole job's world and a child's first rank and size within it.
fn shapes() -> impl Strategy<Value = (u16, u16, u16)> {
    (1u16..=4, prop_oneof![Just(12u16), 4u16..=1024]).prop_flat_map(|(n, world)| {
        let world = world.max(n);
        (Just(n), Just(world), 0..=world - n)
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 384, ..ProptestConfig::default() })]

    /// The model and the reference agree on every packet and on the final state.
    #[test]
    fn a_child_and_a_parent_emit_what_the_reference_emits(
        (n, world, rank_lo) in shapes(),
        ops in prop::collection::vec(op(), 1..64),
    ) {
        prop_assert_eq!(check(n, world, rank_lo, &ops, &mut Reached::default()), Ok(()));
    }
}

/// The sequences reach what the tier adds: uses and Joins going up, resends going up
/// again, the parent's Results and its `COMPLETE` coming down, Aborts up of each reason,
/// the parent's Aborts taken and refused, and the child's own back.
#[test]
fn the_generated_sequences_reach_every_tier_path() {
    use proptest::strategy::ValueTree;
    let mut runner = proptest::test_runner::TestRunner::deterministic();
    let mut reached = Reached::default();
    let strategy = (shapes(), prop::collection::vec(op(), 1..64));
    for _ in 0..300 {
        let ((n, world, rank_lo), ops) = strategy.new_tree(&mut runner).unwrap().current();
        assert_eq!(check(n, world, rank_lo, &ops, &mut reached), Ok(()));
    }
    assert!(reached.up_joins > 0, "{reached:?}");
    assert!(reached.complete_down > 0, "{reached:?}");
    assert!(reached.up_contributions > 0, "{reached:?}");
    assert!(reached.up_resends > 0, "{reached:?}");
    assert!(reached.results_down > 0, "{reached:?}");
    assert!(reached.aborts_up.iter().all(|&n| n > 0), "{reached:?}");
    assert!(reached.parent_failed > 0, "{reached:?}");
    assert!(reached.parent_refused > 0, "{reached:?}");
    assert!(reached.echoes > 0, "{reached:?}");
}

/// A scenario, step by step: a child of ranks 5–7 of 12 joins, goes up, takes the
/// parent's COMPLETE, sends a use up, has a resend go up once, and passes the Result down.
#[test]
fn a_child_goes_up_and_comes_down_alike() {
    let ops = [
        Op::JoinAll {
            generation: 0,
            count: 17,
            first: 0,
            partial: false,
        },
        Op::Join {
            rank: Rank::Member(0),
            generation: 0,
            wrong_world: false,
            wrong_key: false,
        },
        Op::ParentReply {
            rank: Rank::Member(0),
            wrong_world: false,
            complete: true,
            session: Session::Parent(0),
            nonce: Session::Current,
        },
        Op::Round {
            slot: 1,
            use_: 1,
            count: 17,
            seed: 9,
            first: 0,
            skip: false,
            session: Session::Current,
        },
        Op::Contribution {
            rank: Rank::Member(1),
            slot: 1,
            use_: 1,
            count: 17,
            seed: 9,
            session: Session::Current,
        },
        Op::Result {
            rank: Rank::All,
            slot: 1,
            use_: 1,
            count: 17,
            bad_ver: false,
            seed: 1 << 60,
            session: Session::Parent(0),
        },
    ];
    let mut reached = Reached::default();
    assert_eq!(check(3, 12, 5, &ops, &mut reached), Ok(()));
    assert_eq!(
        (
            reached.up_joins,
            reached.complete_down,
            reached.up_contributions,
            reached.up_resends,
            reached.results_down
        ),
        (1, 1, 1, 1, 1),
        "{reached:?}"
    );
}

/// A child's parent job id may name no other job at its switch, nor another child's parent
/// job (`JobError::ParentIdTaken`): the model refuses what the reference refuses, in the
/// reference's order (before a full table).
#[test]
fn a_parent_job_id_taken_is_refused_alike() {
    let job = |id: u16, slot_lo: u32| JobConfig {
        id,
        world: 2,
        slot_lo,
        slot_count: 1,
        key: 0,
    };
    let child = |parent: u16| {
        Tier::Child(ParentLink {
            world: 8,
            rank_lo: 2,
            job: parent,
            member: 0,
            members: 2,
            key: 0,
        })
    };
    let cases: [Vec<(JobConfig, Tier)>; 5] = [
        vec![(job(40, 0), child(40))],
        vec![(job(40, 0), Tier::Flat), (job(7, 1), child(40))],
        vec![(job(7, 0), child(40)), (job(40, 1), Tier::Parent)],
        vec![(job(7, 0), child(40)), (job(8, 1), child(40))],
        vec![
            (job(1, 0), Tier::Flat),
            (job(2, 1), Tier::Flat),
            (job(3, 2), Tier::Flat),
            (job(7, 3), child(40)),
            (job(40, 4), Tier::Flat),
        ],
    ];
    for jobs in cases {
        let setup = Setup {
            slots: 8,
            epoch: 1,
            jobs: jobs.iter().map(|(j, _)| *j).collect(),
            tiers: jobs.iter().map(|(j, t)| (j.id, *t)).collect(),
        };
        let mut pool = vec![RefSlot::IDLE; setup.slots];
        let pair = Pair::new(&setup, &mut pool).expect("both refuse alike");
        let last = setup.jobs.last().map(|j| j.id).unwrap_or_default();
        assert!(pair.reference.job(last).is_none(), "{jobs:?}");
        assert!(pair.model.job(last).is_none(), "{jobs:?}");
    }
    // Each refusal names the parent job id.
    let mut pool = vec![RefSlot::IDLE; 8];
    let mut reference = Reference::new(&mut pool, 0);
    reference.add_tiered_job(job(7, 0), child(40)).unwrap();
    assert_eq!(
        reference.add_job(job(40, 1)),
        Err(switchml_core::switch::JobError::ParentIdTaken(40))
    );
}
