//! The model against the reference switch on random packet sequences: whole runs (every
//! rank joins with the job's key; rounds of contributions; every rank leaves), valid
//! contributions in full rounds and singly, duplicates, resends, reordering (every sequence
//! is an arbitrary order), junk, mutated packets, foreign jobs, unregistered ranks, joins
//! with right and wrong keys, shapes and fields, restarts (a rank of a complete run joins
//! with a new nonce, or one of a gathering run, which replaces its process), probes, aborts,
//! leaves, the control plane's `shutdown_run` and job restarts (remove and add again), idle
//! runs ended by the endpoint (`end_run`), counts above the limit, Status requests and
//! switch-only types (StatusReplies among them). Sessions are mostly the job's
//! current one (read from the reference as a worker would learn it from a JoinReply), else
//! 0, an earlier run's or any number. Every packet's verdict and answer bytes, the counters
//! and at the end each job's run and every register of every slot version must be
//! identical.

use proptest::prelude::*;
use switchml_core::switch::JobConfig;
use switchml_core::wire::{
    AbortPacket, AbortReason, AbortRepr, DataKind, DataPacket, DataRepr, Flags, JoinPacket,
    JoinRepr, LeavePacket, LeaveRepr, Message, ProbePacket, ProbeRepr, StatusCounters, StatusFlags,
    StatusPacket, StatusReplyPacket, StatusReplyRepr, StatusRepr,
};
use switchml_p4model_harness::equivalence::{self, Mismatch, Pair, RefSlot, Setup};
use switchml_tests::sim::Rng;

/// Job ids the sequences use: three registered, one foreign.
const JOB_IDS: [u16; 4] = [7, 9, 11, 8];
/// Their keys (0 is a valid key; the foreign job's is never checked).
const KEYS: [u64; 4] = [0x5EC2_E700_0000_0007, 0, u64::MAX, 8];

fn setup(world: u16) -> Setup {
    let job = |i: usize, world, slot_lo, slot_count| JobConfig {
        id: JOB_IDS[i],
        world,
        slot_lo,
        slot_count,
        key: KEYS[i],
    };
    Setup {
        slots: 8,
        epoch: 0xE90C,
        jobs: vec![job(0, world, 2, 4), job(1, 1, 0, 1), job(2, 64, 7, 1)],
        tiers: Vec::new(),
    }
}

fn world_of(job: u16, world7: u16) -> u16 {
    match job {
        7 => world7,
        9 => 1,
        11 => 64,
        _ => 2,
    }
}

fn slots_of(job: u16) -> u16 {
    if job == 7 {
        4
    } else {
        1
    }
}

/// The nonce of process `generation` of `rank`: a rank's Joins with the same generation
/// are resends; another generation is a restart.
fn nonce(rank: u16, generation: u8) -> u32 {
    1 + u32::from(generation) * 0x100 + u32::from(rank)
}

/// Which session a message carries.
#[derive(Debug, Clone, Copy)]
enum Session {
    /// The job's current run's (0 when it has none).
    Current,
    /// None.
    Zero,
    /// A process nonce: the session of a run that process opened, now or earlier.
    Nonce(u16, u8),
    /// Any number.
    Any(u32),
}

fn sessions() -> impl Strategy<Value = Session> {
    prop_oneof![
        12 => Just(Session::Current),
        1 => Just(Session::Zero),
        2 => (0u16..3, 0u8..3).prop_map(|(r, g)| Session::Nonce(r, g)),
        1 => any::<u32>().prop_map(Session::Any),
    ]
}

/// What one step of a sequence sends.
#[derive(Debug, Clone)]
enum Op {
    /// Every rank of a job joins (key, shape and process generation shared), in a shuffled
    /// order: opens a run, or restarts ranks of the current one. `half`: as the second of
    /// two lanes of half the job's slots, else its one lane of them all; `more`: stating
    /// one lane more than that (a lane-count mismatch with a run of the other).
    JoinAll {
        job: usize,
        generation: u8,
        half: bool,
        more: bool,
        count: u16,
        seed: u64,
    },
    /// All ranks of a job contribute to one use, in a shuffled order, maybe one missing.
    Round {
        job: usize,
        slot: u16,
        use_: u32,
        count: u16,
        seed: u64,
        skip: bool,
        session: Session,
    },
    /// One contribution, any fields.
    Contribution {
        job: usize,
        rank: u16,
        slot: u16,
        use_: u32,
        bad_ver: bool,
        count: u16,
        seed: u64,
        session: Session,
    },
    /// Send an earlier packet again (a duplicate, a resend, or one of an ended run).
    Repeat(prop::sample::Index),
    /// An earlier packet with one byte changed.
    Mutate(prop::sample::Index, usize, u8),
    /// One Join, any fields.
    Join {
        job: usize,
        rank: u16,
        generation: u8,
        key_ok: bool,
        world: u16,
        slot_lo: u16,
        slot_count: u16,
        count: u16,
        lanes: u16,
    },
    Probe {
        job: usize,
        rank: u16,
        slot: u16,
        ver: u8,
        session: Session,
    },
    Abort {
        job: usize,
        rank: u16,
        reason: u8,
        session: Session,
    },
    /// One rank is done with the run.
    Leave {
        job: usize,
        rank: u16,
        session: Session,
    },
    /// Every rank of a job leaves its run, in a shuffled order.
    LeaveAll { job: usize, seed: u64 },
    /// The control plane ends a job's run (`shutdown_run`).
    Shutdown(usize),
    /// The endpoint ends a job's run for being idle (`end_run`).
    Expire(usize),
    /// A liveness sweep of a job's run (protocol.md §4.3; `sweep`).
    Sweep(usize),
    /// The control plane removes a job and adds it again.
    RestartJob(usize),
    /// A Status request (any rank: the switch only echoes it).
    Status { job: usize, rank: u16, key_ok: bool },
    /// A StatusReply sent to the switch, which only sends them.
    StatusReply { job: usize, world: u16, joined: u64 },
    /// Random bytes, sometimes with a plausible prefix of this type.
    Junk(Vec<u8>, Option<u8>),
}

fn counts() -> impl Strategy<Value = u16> {
    prop::sample::select(vec![0u16, 1, 2, 3, 63, 64, 65, 128, 200, 256, 257])
}

fn jobs() -> impl Strategy<Value = usize> {
    prop::sample::select(vec![0usize, 0, 0, 1, 2])
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => (jobs(), 0u8..3, prop::bool::weighted(0.2), prop::bool::weighted(0.2), prop::sample::select(vec![1u16, 64, 256]), any::<u64>())
            .prop_map(|(job, generation, half, more, count, seed)| Op::JoinAll { job, generation, half, more, count, seed }),
        6 => (jobs(), 0u16..5, 0u32..6, counts(), any::<u64>(), prop::bool::weighted(0.2), sessions())
            .prop_map(|(job, slot, use_, count, seed, skip, session)| {
                Op::Round { job, slot, use_, count, seed, skip, session }
            }),
        3 => (0..4usize, 0u16..6, 0u16..5, 0u32..6, prop::bool::weighted(0.1), counts(), any::<u64>(), sessions())
            .prop_map(|(job, rank, slot, use_, bad_ver, count, seed, session)| {
                Op::Contribution { job, rank, slot, use_, bad_ver, count, seed, session }
            }),
        3 => any::<prop::sample::Index>().prop_map(Op::Repeat),
        1 => (any::<prop::sample::Index>(), 0usize..40, any::<u8>())
            .prop_map(|(i, at, b)| Op::Mutate(i, at, b)),
        2 => (0..4usize, 0u16..6, 0u8..3, prop::bool::weighted(0.85), 0u16..7, 0u16..3, 0u16..6,
              prop::sample::select(vec![0u16, 1, 64, 256, 257]), prop::sample::select(vec![0u16, 1, 1, 2, 3]))
            .prop_map(|(job, rank, generation, key_ok, world, slot_lo, slot_count, count, lanes)| {
                Op::Join { job, rank, generation, key_ok, world, slot_lo, slot_count, count, lanes }
            }),
        1 => (0..4usize, 0u16..6, 0u16..6, 0u8..2, sessions())
            .prop_map(|(job, rank, slot, ver, session)| Op::Probe { job, rank, slot, ver, session }),
        1 => (0..4usize, 0u16..6, 0u8..14, sessions())
            .prop_map(|(job, rank, reason, session)| Op::Abort { job, rank, reason, session }),
        1 => (0..4usize, 0u16..6, sessions())
            .prop_map(|(job, rank, session)| Op::Leave { job, rank, session }),
        1 => (jobs(), any::<u64>()).prop_map(|(job, seed)| Op::LeaveAll { job, seed }),
        1 => (0..4usize).prop_map(Op::Shutdown),
        2 => (0..4usize).prop_map(Op::Sweep),
        1 => (0..4usize, any::<bool>())
            .prop_map(|(job, idle)| if idle { Op::Expire(job) } else { Op::RestartJob(job) }),
        1 => (0..4usize, prop::sample::select(vec![0u16, 1, 5, 0xFFFF]), prop::bool::weighted(0.8))
            .prop_map(|(job, rank, key_ok)| Op::Status { job, rank, key_ok }),
        1 => (0..4usize, 1u16..=64, any::<u64>())
            .prop_map(|(job, world, joined)| Op::StatusReply { job, world, joined }),
        1 => (
            prop::collection::vec(any::<u8>(), 0..40),
            prop::option::of(prop::sample::select(vec![
                0x01u8, 0x02, 0x10, 0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17, 0x77,
            ])),
        )
            .prop_map(|(b, t)| Op::Junk(b, t)),
    ]
}

/// Values that add up to overflows now and then.
fn values(seed: u64, n: usize) -> Vec<i32> {
    let mut rng = Rng::new(seed);
    (0..n)
        .map(|_| match rng.between(0, 7) {
            0 => i32::MAX - rng.between(0, 3) as i32,
            1 => i32::MIN + rng.between(0, 3) as i32,
            _ => rng.between(0, 2000) as i32 - 1000,
        })
        .collect()
}

/// `0..n` in an order drawn from `seed`.
fn shuffled(n: u16, seed: u64) -> Vec<u16> {
    let mut ranks: Vec<u16> = (0..n).collect();
    let mut rng = Rng::new(seed);
    for i in (1..ranks.len()).rev() {
        ranks.swap(i, rng.between(0, i as u64) as usize);
    }
    ranks
}

/// A Join of the lane `(slot_lo, slot_count)` of a rank with `lanes` lanes.
#[allow(clippy::too_many_arguments)]
fn join(
    job: u16,
    rank: u16,
    world: u16,
    lane: (u16, u16),
    count: u16,
    lanes: u16,
    n: u32,
    key: u64,
) -> Vec<u8> {
    let repr = JoinRepr {
        job,
        rank,
        world,
        slot_lo: lane.0,
        slot_count: lane.1,
        count,
        lanes,
        nonce: n,
        cookie: 0,
        tag: [0; 16],
    }
    .sign(key);
    let mut b = vec![0u8; repr.buffer_len()];
    repr.emit(&mut JoinPacket::new_unchecked(&mut b[..]));
    b
}

fn leave(job: u16, rank: u16, session: u32) -> Vec<u8> {
    let repr = LeaveRepr { job, rank, session };
    let mut b = vec![0u8; repr.buffer_len()];
    repr.emit(&mut LeavePacket::new_unchecked(&mut b[..]));
    b
}

struct Gen {
    world7: u16,
    base: u32,
    sent: Vec<Vec<u8>>,
}

impl Gen {
    #[allow(clippy::too_many_arguments)]
    fn data(
        &self,
        job: u16,
        rank: u16,
        slot: u16,
        use_: u32,
        bad: bool,
        count: u16,
        seed: u64,
        session: u32,
    ) -> Vec<u8> {
        let seq = self.base.wrapping_add(use_);
        let repr = DataRepr {
            kind: DataKind::Contribution,
            job,
            rank,
            slot,
            ver: (seq & 1) as u8 ^ u8::from(bad),
            flags: Flags((seed >> 56) as u8),
            count,
            seq,
            exp: (seed >> 8) as u8,
            session,
        };
        let mut b = vec![0u8; repr.buffer_len()];
        let mut p = DataPacket::new_unchecked(&mut b[..]);
        repr.emit(&mut p);
        for (chunk, v) in p
            .values_mut()
            .chunks_exact_mut(4)
            .zip(values(seed, count.into()))
        {
            chunk.copy_from_slice(&v.to_be_bytes());
        }
        b
    }

    /// The datagrams `op` sends, given the switches as they are now.
    fn expand(&self, op: &Op, pair: &Pair<'_>) -> Vec<Vec<u8>> {
        let current = |id: u16| pair.reference.job(id).map_or(0, |j| j.session());
        let session = |id: u16, s: &Session| match *s {
            Session::Current => current(id),
            Session::Zero => 0,
            Session::Nonce(rank, generation) => nonce(rank, generation),
            Session::Any(s) => s,
        };
        let earlier = |i: &prop::sample::Index| {
            (!self.sent.is_empty()).then(|| self.sent[i.index(self.sent.len())].clone())
        };
        match op {
            Op::JoinAll {
                job,
                generation,
                half,
                more,
                count,
                seed,
            } => {
                let id = JOB_IDS[*job];
                let n = world_of(id, self.world7);
                let slots = slots_of(id);
                let (lane, lanes) = if *half {
                    ((slots / 2, slots / 2), 2)
                } else {
                    ((0, slots), 1)
                };
                let lanes = lanes + u16::from(*more);
                let key = KEYS[*job];
                shuffled(n, *seed)
                    .into_iter()
                    .map(|r| join(id, r, n, lane, *count, lanes, nonce(r, *generation), key))
                    .collect()
            }
            Op::Round {
                job,
                slot,
                use_,
                count,
                seed,
                skip,
                session: s,
            } => {
                let id = JOB_IDS[*job];
                let n = world_of(id, self.world7);
                let slot = if *slot == 4 { 4 } else { slot % slots_of(id) };
                let mut ranks = shuffled(n, *seed);
                if *skip {
                    ranks.pop();
                }
                let s = session(id, s);
                ranks
                    .iter()
                    .map(|&r| {
                        let seed = seed ^ u64::from(r);
                        self.data(id, r, slot, *use_, false, *count, seed, s)
                    })
                    .collect()
            }
            Op::Contribution {
                job,
                rank,
                slot,
                use_,
                bad_ver,
                count,
                seed,
                session: s,
            } => {
                let id = JOB_IDS[*job];
                let s = session(id, s);
                vec![self.data(id, *rank, *slot, *use_, *bad_ver, *count, *seed, s)]
            }
            Op::Repeat(i) => earlier(i).into_iter().collect(),
            Op::Mutate(i, at, byte) => earlier(i)
                .map(|mut p| {
                    let k = at % p.len().max(1);
                    if let Some(b) = p.get_mut(k) {
                        *b = *byte;
                    }
                    p
                })
                .into_iter()
                .collect(),
            Op::Join {
                job,
                rank,
                generation,
                key_ok,
                world,
                slot_lo,
                slot_count,
                count,
                lanes,
            } => {
                let id = JOB_IDS[*job];
                let world = if *world == 0 {
                    world_of(id, self.world7)
                } else {
                    *world
                };
                let key = if *key_ok { KEYS[*job] } else { KEYS[*job] ^ 1 };
                let n = nonce(*rank, *generation);
                vec![join(
                    id,
                    *rank,
                    world,
                    (*slot_lo, *slot_count),
                    *count,
                    *lanes,
                    n,
                    key,
                )]
            }
            Op::Probe {
                job,
                rank,
                slot,
                ver,
                session: s,
            } => {
                let id = JOB_IDS[*job];
                let repr = ProbeRepr {
                    job: id,
                    rank: *rank,
                    slot: *slot,
                    ver: *ver,
                    seq: self.base,
                    session: session(id, s),
                    flags: switchml_core::wire::ProbeFlags::NONE,
                };
                let mut b = vec![0u8; repr.buffer_len()];
                repr.emit(&mut ProbePacket::new_unchecked(&mut b[..]));
                vec![b]
            }
            Op::Abort {
                job,
                rank,
                reason,
                session: s,
            } => {
                let id = JOB_IDS[*job];
                let repr = AbortRepr {
                    job: id,
                    rank: *rank,
                    reason: AbortReason::from(*reason),
                    detail: 1,
                    epoch: 0,
                    session: session(id, s),
                };
                let mut b = vec![0u8; repr.buffer_len()];
                repr.emit(&mut AbortPacket::new_unchecked(&mut b[..]));
                vec![b]
            }
            Op::Leave {
                job,
                rank,
                session: s,
            } => {
                let id = JOB_IDS[*job];
                vec![leave(id, *rank, session(id, s))]
            }
            Op::LeaveAll { job, seed } => {
                let id = JOB_IDS[*job];
                let s = current(id);
                shuffled(world_of(id, self.world7), *seed)
                    .into_iter()
                    .map(|r| leave(id, r, s))
                    .collect()
            }
            Op::Shutdown(_) | Op::Expire(_) | Op::RestartJob(_) | Op::Sweep(_) => Vec::new(),
            Op::Status { job, rank, key_ok } => {
                let mut b = vec![0u8; 36];
                StatusRepr {
                    job: JOB_IDS[*job],
                    rank: *rank,
                    nonce: 1,
                    cookie: 0,
                    tag: [0; 16],
                }
                .sign(if *key_ok { KEYS[*job] } else { KEYS[*job] ^ 1 })
                .emit(&mut StatusPacket::new_unchecked(&mut b[..]));
                vec![b]
            }
            Op::StatusReply { job, world, joined } => {
                let bitmap = joined.to_le_bytes();
                let repr = StatusReplyRepr {
                    job: JOB_IDS[*job],
                    rank: 0xFFFF,
                    world: *world,
                    flags: StatusFlags::default(),
                    shards: 0,
                    slot_count: 4,
                    epoch: 0xE90C,
                    counters: StatusCounters::from_array([*joined; StatusCounters::COUNT]),
                    joined: &bitmap[..usize::from(world.div_ceil(8))],
                };
                let mut b = vec![0u8; repr.buffer_len()];
                repr.emit(&mut StatusReplyPacket::new_unchecked(&mut b[..]));
                vec![b]
            }
            Op::Junk(bytes, msg_type) => {
                let mut b = bytes.clone();
                if let (Some(t), true) = (msg_type, b.len() >= 6) {
                    b[0] = 1;
                    b[1] = *t;
                    b[2..4].copy_from_slice(&7u16.to_be_bytes());
                }
                vec![b]
            }
        }
    }
}

/// One step of a sequence, as the observer of [`check`] sees it.
enum Step<'a> {
    /// A datagram, after both switches processed it.
    Packet(&'a [u8]),
    /// The control plane ended a job's run (`ended`: it had one).
    Shutdown { ended: bool },
    /// The endpoint ended a job's idle run (`ended`: it had one).
    Expire { ended: bool },
    /// A liveness sweep (`ended`: it ended the job's run).
    Sweep { ended: bool },
    /// The control plane removed a job and added it again.
    RestartJob,
    /// The sequence is over and the final states agree.
    End,
}

/// Run `ops` through both switches, comparing after every step and the whole state at the
/// end; `observe` sees every step, then the end.
fn check(
    world7: u16,
    wrap: bool,
    ops: &[Op],
    mut observe: impl FnMut(Step<'_>, &Pair<'_>),
) -> Result<(), Mismatch> {
    let setup = setup(world7);
    let mut pool = vec![RefSlot::IDLE; setup.slots];
    let mut pair = Pair::new(&setup, &mut pool)?;
    let mut g = Gen {
        world7,
        base: if wrap { u32::MAX - 2 } else { 0 },
        sent: Vec::new(),
    };
    for op in ops {
        let control = match *op {
            Op::Shutdown(job) | Op::Expire(job) | Op::RestartJob(job) | Op::Sweep(job) => {
                JOB_IDS[job]
            }
            _ => 0,
        };
        let ended = pair.reference.job(control).is_some_and(|j| j.has_run());
        match op {
            Op::Shutdown(_) => {
                pair.shutdown_run(control)?;
                observe(Step::Shutdown { ended }, &pair);
                continue;
            }
            Op::Sweep(_) => {
                pair.sweep(control)?;
                let ended = ended && !pair.reference.job(control).is_some_and(|j| j.has_run());
                observe(Step::Sweep { ended }, &pair);
                continue;
            }
            Op::Expire(_) => {
                pair.end_run(control)?;
                observe(Step::Expire { ended }, &pair);
                continue;
            }
            Op::RestartJob(_) => {
                pair.restart_job(control)?;
                observe(Step::RestartJob, &pair);
                continue;
            }
            _ => {}
        }
        for p in g.expand(op, &pair) {
            pair.feed(&p)?;
            observe(Step::Packet(&p), &pair);
            g.sent.push(p);
        }
    }
    pair.compare_state()?;
    observe(Step::End, &pair);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    /// The model and the reference agree on every packet and on the final state.
    #[test]
    fn the_model_emits_what_the_reference_emits(
        world7 in 1u16..=5,
        wrap in any::<bool>(),
        ops in prop::collection::vec(op(), 1..48),
    ) {
        prop_assert_eq!(check(world7, wrap, &ops, |_, _| {}), Ok(()));
    }
}

/// The fuzz entry point runs the same check on raw bytes.
#[test]
fn the_fuzz_entry_accepts_any_bytes() {
    let mut rng = Rng::new(5);
    for len in [0usize, 1, 2, 3, 50, 500, 3000] {
        let data: Vec<u8> = (0..len).map(|_| rng.next_u64() as u8).collect();
        assert_eq!(equivalence::fuzz(&data), Ok(()));
    }
    // A sequence that opens a run of job 9 (world 1, key 0) and completes uses in it:
    // length-prefixed packets.
    let g = Gen {
        world7: 3,
        base: 0,
        sent: Vec::new(),
    };
    let mut packets = vec![join(9, 0, 1, (0, 1), 3, 1, 0x99, 0)];
    for seq in 0..4u32 {
        packets.push(g.data(9, 0, 0, seq, false, 3, u64::from(seq), 0x99));
    }
    let mut data = Vec::new();
    for p in packets {
        data.extend_from_slice(&(p.len() as u16).to_be_bytes());
        data.extend_from_slice(&p);
    }
    assert_eq!(equivalence::fuzz(&data), Ok(()));
}

/// What the coverage test follows of each job's runs across one sequence.
#[derive(Default)]
struct Lifecycle {
    /// Per job: the session last seen (0: none) and whether a run ended since one was open.
    sessions: std::collections::BTreeMap<u16, (u32, bool)>,
    /// Per job: whether every rank had joined its run, as last seen.
    complete: std::collections::BTreeMap<u16, bool>,
    /// The nonce each rank joined a run with: (job, session, rank) → nonce.
    nonces: std::collections::BTreeMap<(u16, u32, u16), u32>,
    /// Runs opened after an earlier run of their job ended (all sequences).
    reopened: usize,
    /// Joins of a rank's new process while its run gathered, answered: the process was
    /// replaced (all sequences).
    replaced: usize,
}

impl Lifecycle {
    /// A datagram `p` was answered with `answer`: note a Join's process.
    fn join(&mut self, p: &[u8], answer: &[u8]) {
        let Ok(j) = JoinRepr::parse(&JoinPacket::new_unchecked(p)) else {
            return;
        };
        if p.get(..2) != Some(&[1, 0x10]) {
            return;
        }
        let Ok(Message::JoinReply(r)) = Message::parse(answer) else {
            return;
        };
        let gathering = !self.complete.get(&j.job).copied().unwrap_or(false);
        let before = self.nonces.insert((j.job, r.session, j.rank), j.nonce);
        if before.is_some_and(|n| n != j.nonce) && gathering {
            self.replaced += 1;
        }
    }

    /// After any step: follow each job's run.
    fn after(&mut self, pair: &Pair<'_>) {
        for id in [JOB_IDS[0], JOB_IDS[1], JOB_IDS[2]] {
            let Some(job) = pair.reference.job(id) else {
                continue;
            };
            let now = job.session();
            let (last, ended) = self.sessions.entry(id).or_insert((0, false));
            if *last != 0 && now != *last {
                *ended = true;
            }
            if now != 0 && now != *last && *ended {
                self.reopened += 1;
                *ended = false;
            }
            *last = now;
            self.complete.insert(id, job.has_run() && job.all_joined());
        }
    }

    /// The sequence is over.
    fn end(&mut self) {
        self.sessions.clear();
        self.complete.clear();
        self.nonces.clear();
    }
}

/// The generator reaches every outcome the property is about, so the property is not
/// vacuous: completions, resends answered, every drop reason a datagram can earn, overflows,
/// runs opened and ended in every way (a worker's Abort, a restart, the last Leave, the
/// control plane), every Abort the switch writes, joins, probes, Status requests answered
/// and refused, StatusReplies dropped and multi-pass packets.
#[test]
fn the_generated_sequences_reach_every_outcome() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;
    use std::collections::BTreeSet;
    use switchml_core::switch::{Counters, DropReason, JobCounters, Verdict};

    let mut runner = TestRunner::deterministic();
    let strategy = (1u16..=5, any::<bool>(), prop::collection::vec(op(), 1..48));
    let (mut total, mut job, mut recirculations) = (Counters::default(), JobCounters::default(), 0);
    // Status requests answered, refused (Abort) and malformed; StatusReplies dropped.
    let (mut status_replies, mut status_refusals, mut status_malformed, mut replies_dropped) =
        (0, 0, 0, 0);
    // Abort reasons the switch wrote; runs ended by the last Leave, by the control plane and
    // for being idle; jobs restarted.
    let (mut reasons, mut left, mut shut, mut swept) = (BTreeSet::new(), 0, 0, 0);
    let (mut expired, mut restarted, mut runs) = (0, 0, Lifecycle::default());
    for _ in 0..300 {
        let (world7, wrap, ops) = strategy.new_tree(&mut runner).unwrap().current();
        let result = check(world7, wrap, &ops, |step, pair| {
            let p = match step {
                Step::Packet(p) => p,
                Step::Shutdown { ended } => {
                    shut += usize::from(ended);
                    runs.after(pair);
                    return;
                }
                Step::Sweep { ended } => {
                    swept += usize::from(ended);
                    runs.after(pair);
                    return;
                }
                Step::Expire { ended } => {
                    expired += usize::from(ended);
                    runs.after(pair);
                    return;
                }
                Step::RestartJob => {
                    restarted += 1;
                    runs.after(pair);
                    return;
                }
                Step::End => {
                    runs.end();
                    let c = pair.reference.counters();
                    total.consumed += c.consumed;
                    total.multicast += c.multicast;
                    total.unicast += c.unicast;
                    for (t, d) in total.dropped.iter_mut().zip(c.dropped) {
                        *t += d;
                    }
                    for id in [7, 9] {
                        let j = pair.reference.job(id).unwrap().counters();
                        job.retransmit_replies += j.retransmit_replies;
                        job.overflows += j.overflows;
                        job.joins += j.joins;
                        job.probes += j.probes;
                        job.aborts += j.aborts;
                        job.runs += j.runs;
                        job.unauthorized += j.unauthorized;
                    }
                    recirculations += pair.model.recirculations();
                    return;
                }
            };
            let (verdict, answer) = pair.last().unwrap();
            runs.join(p, answer);
            runs.after(pair);
            if answer.get(1) == Some(&0x14) && p.get(1) != Some(&0x14) {
                reasons.insert(answer[6]);
            }
            match (p.get(..2), verdict, answer.get(1)) {
                (Some([1, 0x15]), Verdict::Unicast { .. }, Some(0x16)) => status_replies += 1,
                // Nothing to a stranger (protocol.md §3.7, §4.2).
                (
                    Some([1, 0x15]),
                    Verdict::Drop(DropReason::UnknownJob | DropReason::BadSession),
                    _,
                ) => status_refusals += 1,
                (Some([1, 0x15]), Verdict::Drop(DropReason::Malformed), _) => status_malformed += 1,
                (Some([1, 0x16]), Verdict::Drop(DropReason::UnexpectedType), _) => {
                    replies_dropped += 1
                }
                (Some([1, 0x17]), Verdict::Consumed, _) => {
                    let job = u16::from_be_bytes([p[2], p[3]]);
                    left += usize::from(!pair.reference.job(job).unwrap().has_run());
                }
                _ => {}
            }
        });
        assert_eq!(result, Ok(()));
    }
    assert!(
        total.consumed > 0 && total.multicast > 0 && total.unicast > 0,
        "{total:?}"
    );
    for reason in DropReason::ALL {
        let adapters_only = [
            DropReason::OutputTooSmall,
            DropReason::Oversized,
            DropReason::BadSource,
        ];
        if !adapters_only.contains(&reason) {
            assert!(total.drops(reason) > 0, "no {reason:?} drop in {total:?}");
        }
    }
    assert!(job.retransmit_replies > 0 && job.overflows > 0, "{job:?}");
    assert!(job.joins > 0 && job.probes > 0 && job.aborts > 0, "{job:?}");
    assert!(job.runs > 0 && job.unauthorized > 0, "{job:?}");
    for reason in [
        AbortReason::UnknownJob,
        AbortReason::UnknownRank,
        AbortReason::WorldMismatch,
        AbortReason::SlotRange,
        AbortReason::CountTooLarge,
        AbortReason::BadKey,
        AbortReason::RankRestarted,
        AbortReason::LaneMismatch,
        AbortReason::ChunkMismatch,
        AbortReason::SessionEnded,
        AbortReason::LaneCountMismatch,
    ] {
        assert!(reasons.contains(&u8::from(reason)), "no Abort {reason:?}");
    }
    assert!(left > 0, "no run ended by its last Leave");
    assert!(shut > 0, "no run ended by the control plane");
    assert!(swept > 0, "no run ended by a liveness sweep");
    assert!(expired > 0, "no idle run ended");
    assert!(restarted > 0, "no job restarted");
    assert!(
        runs.reopened > 0,
        "no run opened after an earlier one of its job ended"
    );
    assert!(
        runs.replaced > 0,
        "no process replaced while its run gathered"
    );
    assert!(status_replies > 0, "no StatusReply answer");
    assert!(status_refusals > 0, "no Status refused");
    assert!(status_malformed > 0, "no malformed Status");
    assert!(replies_dropped > 0, "no StatusReply dropped");
    assert!(recirculations > 0, "no multi-pass packet");
}

/// Feed `packet` to both switches (they must agree) and return the answer, parsed.
fn exchange<'p, const K: usize>(pair: &'p mut Pair<'_, K>, packet: &[u8]) -> Option<Message<'p>> {
    assert_eq!(pair.feed(packet), Ok(()));
    let (_, answer) = pair.last().unwrap();
    (!answer.is_empty()).then(|| Message::parse(answer).expect("the switch writes messages"))
}

/// The Abort reason, detail and session of an answer.
fn abort_of(m: Option<Message<'_>>) -> (AbortReason, u16, u32) {
    match m {
        Some(Message::Abort(a)) => (a.reason, a.detail, a.session),
        other => panic!("not an Abort: {other:?}"),
    }
}

/// A Probe of job 7's slot 0 (use 0) from `rank`, in `session`: also a keep-alive.
fn probe_of_slot_0(rank: u16, session: u32) -> Vec<u8> {
    let repr = ProbeRepr {
        job: 7,
        rank,
        slot: 0,
        ver: 0,
        seq: 0,
        session,
        flags: switchml_core::wire::ProbeFlags::NONE,
    };
    let mut b = vec![0u8; repr.buffer_len()];
    repr.emit(&mut ProbePacket::new_unchecked(&mut b[..]));
    b
}

/// The session and nonce of a JoinReply, and whether it says the run is complete.
fn reply_of(m: Option<Message<'_>>) -> (u32, u32, bool) {
    match m {
        Some(Message::JoinReply(r)) => (r.session, r.nonce, r.rank == 0xFFFF),
        other => panic!("not a JoinReply: {other:?}"),
    }
}

/// A job's life, step by step, through both switches (every answer and state equal):
///
/// ```text
/// run 1 (rank 0's process 1)   rank 0 restarts while gathering: replaced, run goes on;
///                              rank 1 restarts once complete: Abort RankRestarted
/// run 2 (rank 1's process 2)   a round completes; every rank leaves: ended
/// run 3                        the switch stops: Abort Shutdown
/// run 4                        idle: ended without a word; a Probe hears SessionEnded
/// job removed and added again  run 1 afresh
/// ```
#[test]
fn a_jobs_runs_end_in_every_way_and_the_next_one_opens_alike() {
    let setup = setup(3);
    let mut pool = vec![RefSlot::IDLE; setup.slots];
    let mut pair = Pair::new(&setup, &mut pool).unwrap();
    let g = Gen {
        world7: 3,
        base: 0,
        sent: Vec::new(),
    };
    let key = KEYS[0];
    let j = |rank: u16, n: u32| join(7, rank, 3, (0, 4), 64, 1, n, key);
    let session = |pair: &Pair<'_>| pair.reference.job(7).unwrap().session();

    // Run 1: opened by rank 0's process 1; its process 2 replaces it while the run gathers.
    assert_eq!(reply_of(exchange(&mut pair, &j(0, 1))), (1, 1, false));
    assert_eq!(reply_of(exchange(&mut pair, &j(0, 2))), (1, 2, false));
    reply_of(exchange(&mut pair, &j(1, 3)));
    assert_eq!(reply_of(exchange(&mut pair, &j(2, 4))), (1, 4, true));
    // Once complete, rank 1's new process ends the run.
    let restarted = abort_of(exchange(&mut pair, &j(1, 5)));
    assert_eq!(restarted, (AbortReason::RankRestarted, 1, 1));
    assert_eq!(session(&pair), 0);

    // Run 2: rank 1's next Join opens it (session: its nonce plus the one run before).
    assert_eq!(reply_of(exchange(&mut pair, &j(1, 5))), (6, 5, false));
    reply_of(exchange(&mut pair, &j(0, 2)));
    reply_of(exchange(&mut pair, &j(2, 4)));
    for rank in 0..3 {
        let answer = exchange(&mut pair, &g.data(7, rank, 1, 0, false, 64, 9, 6));
        assert_eq!(
            answer.is_some(),
            rank == 2,
            "the last contribution completes"
        );
    }
    for rank in [2, 0, 1] {
        assert!(exchange(&mut pair, &leave(7, rank, 6)).is_none());
    }
    assert_eq!(session(&pair), 0, "the last Leave ends the run");

    // Run 3, ended by the switch stopping.
    for rank in 0..3 {
        exchange(&mut pair, &j(rank, 10 + u32::from(rank)));
    }
    assert_eq!(session(&pair), 12);
    // Both write the same Abort Shutdown (`shutdown_run` compares the bytes).
    assert_eq!(pair.shutdown_run(7), Ok(()));
    assert_eq!(session(&pair), 0);

    // Run 4, ended for being idle: its ranks are not told, and learn it when they probe.
    exchange(&mut pair, &j(0, 20));
    assert_eq!(session(&pair), 23);
    assert_eq!(pair.end_run(7), Ok(()));
    assert_eq!(session(&pair), 0);
    assert_eq!(pair.end_run(7), Ok(()), "no run: both say so");
    let probe = probe_of_slot_0(0, 23);
    assert_eq!(
        abort_of(exchange(&mut pair, &probe)).0,
        AbortReason::SessionEnded
    );

    // The job removed and added again: its runs start over.
    assert_eq!(pair.restart_job(7), Ok(()));
    assert_eq!(reply_of(exchange(&mut pair, &j(2, 30))), (30, 30, false));
    assert_eq!(pair.reference.job(7).unwrap().counters().runs, 1);

    // Run 5, ended by the liveness sweep (§4.3): ranks 0 and 1 keep alive with Probes,
    // rank 2 (which opened it) goes silent and is named at its fourth quiet sweep.
    reply_of(exchange(&mut pair, &j(0, 31)));
    reply_of(exchange(&mut pair, &j(1, 32)));
    let keep_alive = |rank: u16| probe_of_slot_0(rank, 30);
    for sweep in 0..4 {
        assert_eq!(pair.sweep(7), Ok(()));
        assert_eq!(session(&pair), 30, "sweep {sweep} ended the run");
        for rank in [0, 1] {
            exchange(&mut pair, &keep_alive(rank));
        }
    }
    assert_eq!(pair.sweep(7), Ok(()));
    assert_eq!(session(&pair), 0);
    let (_, abort) = pair.last().unwrap();
    assert_eq!(
        abort_of(Some(Message::parse(abort).unwrap())),
        (AbortReason::RankSilent, 2, 30)
    );

    // Run 6: rank 1's Join with another chunk size is refused while rank 0 waits; the next
    // sweep tells the run, naming rank 1.
    reply_of(exchange(&mut pair, &j(0, 40)));
    let other = join(7, 1, 3, (0, 4), 32, 1, 41, key);
    assert_eq!(
        abort_of(exchange(&mut pair, &other)).0,
        AbortReason::ChunkMismatch
    );
    assert_eq!(pair.sweep(7), Ok(()));
    let (_, abort) = pair.last().unwrap();
    assert_eq!(
        abort_of(Some(Message::parse(abort).unwrap())),
        (AbortReason::RankRefused, 1, 41)
    );
    assert_eq!(session(&pair), 0);
    assert_eq!(pair.compare_state(), Ok(()));
}

/// Joins and Contributions whose count exceeds the switch's limit (8 values here, the
/// model's `max_count` and the reference's `K`): the Join is refused naming the limit, the
/// Contribution dropped as `CountTooLarge`, alike.
#[test]
fn counts_above_the_limit_are_refused_alike() {
    let setup = setup(2);
    let mut pool = vec![switchml_core::switch::Slot::<8, 1>::IDLE; setup.slots];
    let mut pair = Pair::<8>::new(&setup, &mut pool).unwrap();
    let g = Gen {
        world7: 2,
        base: 0,
        sent: Vec::new(),
    };
    let j =
        |rank: u16, count: u16| join(7, rank, 2, (0, 4), count, 1, 1 + u32::from(rank), KEYS[0]);
    let refused = abort_of(exchange(&mut pair, &j(0, 9)));
    assert_eq!(refused, (AbortReason::CountTooLarge, 8, 1));
    match exchange(&mut pair, &j(0, 8)) {
        Some(Message::JoinReply(r)) => assert_eq!(r.max_count, 8),
        other => panic!("{other:?}"),
    }
    reply_of(exchange(&mut pair, &j(1, 8)));
    let session = pair.reference.job(7).unwrap().session();
    assert!(exchange(&mut pair, &g.data(7, 0, 0, 0, false, 9, 1, session)).is_none());
    let (verdict, _) = pair.last().unwrap();
    assert_eq!(
        verdict,
        switchml_core::switch::Verdict::Drop(switchml_core::switch::DropReason::CountTooLarge)
    );
    assert!(exchange(&mut pair, &g.data(7, 0, 0, 0, false, 8, 1, session)).is_none());
    assert!(exchange(&mut pair, &g.data(7, 1, 0, 0, false, 8, 2, session)).is_some());
    assert_eq!(pair.reference.job(7).unwrap().counters().rejected, 1);
    assert_eq!(pair.compare_state(), Ok(()));
}
