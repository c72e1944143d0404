//! The model against the reference switch on random packet sequences: valid contributions
//! in full rounds and singly, duplicates, resends, reordering (every sequence is an
//! arbitrary order), junk, mutated packets, foreign jobs, unregistered ranks, joins, probes,
//! aborts, Status requests and switch-only types (StatusReplies among them). Every packet's verdict and answer bytes, the counters and
//! at the end every register of every slot version must be identical.

use proptest::prelude::*;
use switchml_core::switch::JobConfig;
use switchml_core::wire::{
    AbortPacket, AbortReason, AbortRepr, DataKind, DataPacket, DataRepr, Flags, JoinPacket,
    JoinRepr, ProbePacket, ProbeRepr, StatusCounters, StatusFlags, StatusPacket, StatusReplyPacket,
    StatusReplyRepr, StatusRepr,
};
use switchml_p4model::equivalence::{self, Setup};
use switchml_tests::sim::Rng;

/// Job ids the sequences use: three registered, one foreign.
const JOB_IDS: [u16; 4] = [7, 9, 11, 8];

fn setup(world: u16) -> Setup {
    let job = |id, world, slot_lo, slot_count| JobConfig {
        id,
        world,
        slot_lo,
        slot_count,
    };
    Setup {
        slots: 8,
        epoch: 0xE90C,
        jobs: vec![job(7, world, 2, 4), job(9, 1, 0, 1), job(11, 64, 7, 1)],
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

/// What one step of a sequence sends.
#[derive(Debug, Clone)]
enum Op {
    /// All ranks of a job contribute to one use, in a shuffled order, maybe one missing.
    Round {
        job: usize,
        slot: u16,
        use_: u32,
        count: u16,
        seed: u64,
        skip: bool,
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
    },
    /// Send an earlier packet again (a duplicate or a resend).
    Repeat(prop::sample::Index),
    /// An earlier packet with one byte changed.
    Mutate(prop::sample::Index, usize, u8),
    Join {
        job: usize,
        rank: u16,
        world: u16,
        slot_lo: u16,
        slot_count: u16,
        count: u16,
    },
    Probe {
        job: usize,
        rank: u16,
        slot: u16,
        ver: u8,
    },
    Abort {
        job: usize,
        rank: u16,
        reason: u8,
    },
    /// A Status request (any rank: the switch only echoes it).
    Status {
        job: usize,
        rank: u16,
    },
    /// A StatusReply sent to the switch, which only sends them.
    StatusReply {
        job: usize,
        world: u16,
        joined: u64,
    },
    /// Random bytes, sometimes with a plausible prefix of this type.
    Junk(Vec<u8>, Option<u8>),
}

fn counts() -> impl Strategy<Value = u16> {
    prop::sample::select(vec![0u16, 1, 2, 3, 63, 64, 65, 128, 200, 256, 257])
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (prop::sample::select(vec![0usize, 0, 0, 1, 2]), 0u16..5, 0u32..6, counts(), any::<u64>(), prop::bool::weighted(0.2))
            .prop_map(|(job, slot, use_, count, seed, skip)| Op::Round { job, slot, use_, count, seed, skip }),
        4 => (0..4usize, 0u16..6, 0u16..5, 0u32..6, prop::bool::weighted(0.1), counts(), any::<u64>())
            .prop_map(|(job, rank, slot, use_, bad_ver, count, seed)| {
                Op::Contribution { job, rank, slot, use_, bad_ver, count, seed }
            }),
        3 => any::<prop::sample::Index>().prop_map(Op::Repeat),
        1 => (any::<prop::sample::Index>(), 0usize..40, any::<u8>())
            .prop_map(|(i, at, b)| Op::Mutate(i, at, b)),
        2 => (0..4usize, 0u16..6, 0u16..7, 0u16..3, 0u16..6, prop::sample::select(vec![1u16, 64, 256, 257]))
            .prop_map(|(job, rank, world, slot_lo, slot_count, count)| {
                Op::Join { job, rank, world, slot_lo, slot_count, count }
            }),
        1 => (0..4usize, 0u16..6, 0u16..6, 0u8..2)
            .prop_map(|(job, rank, slot, ver)| Op::Probe { job, rank, slot, ver }),
        1 => (0..4usize, 0u16..6, 0u8..9).prop_map(|(job, rank, reason)| Op::Abort { job, rank, reason }),
        1 => (0..4usize, prop::sample::select(vec![0u16, 1, 5, 0xFFFF]))
            .prop_map(|(job, rank)| Op::Status { job, rank }),
        1 => (0..4usize, 1u16..=64, any::<u64>())
            .prop_map(|(job, world, joined)| Op::StatusReply { job, world, joined }),
        1 => (
            prop::collection::vec(any::<u8>(), 0..40),
            prop::option::of(prop::sample::select(vec![
                0x01u8, 0x02, 0x10, 0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x77,
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
    ) -> Vec<u8> {
        let seq = self.base.wrapping_add(use_);
        let repr = DataRepr {
            kind: DataKind::Contribution,
            job,
            rank,
            slot,
            ver: (seq & 1) as u8 ^ u8::from(bad),
            flags: Flags((seed >> 60) as u8 & 0x03),
            count,
            seq,
            exp: (seed >> 8) as u8,
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

    fn expand(&mut self, op: &Op) -> Vec<Vec<u8>> {
        let last = |sent: &Vec<Vec<u8>>, i: &prop::sample::Index| {
            (!sent.is_empty()).then(|| sent[i.index(sent.len())].clone())
        };
        match op {
            Op::Round {
                job,
                slot,
                use_,
                count,
                seed,
                skip,
            } => {
                let id = JOB_IDS[*job];
                let n = world_of(id, self.world7);
                let slot = if *slot == 4 {
                    4
                } else {
                    slot % if id == 7 { 4 } else { 1 }
                };
                let mut ranks: Vec<u16> = (0..n).collect();
                let mut rng = Rng::new(*seed);
                for i in (1..ranks.len()).rev() {
                    ranks.swap(i, rng.between(0, i as u64) as usize);
                }
                if *skip {
                    ranks.pop();
                }
                ranks
                    .iter()
                    .map(|&r| self.data(id, r, slot, *use_, false, *count, seed ^ u64::from(r)))
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
            } => {
                vec![self.data(JOB_IDS[*job], *rank, *slot, *use_, *bad_ver, *count, *seed)]
            }
            Op::Repeat(i) => last(&self.sent, i).into_iter().collect(),
            Op::Mutate(i, at, byte) => last(&self.sent, i)
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
                world,
                slot_lo,
                slot_count,
                count,
            } => {
                let id = JOB_IDS[*job];
                let world = if *world == 0 {
                    world_of(id, self.world7)
                } else {
                    *world
                };
                let mut b = vec![0u8; 16];
                JoinRepr {
                    job: id,
                    rank: *rank,
                    world,
                    slot_lo: *slot_lo,
                    slot_count: *slot_count,
                    count: *count,
                }
                .emit(&mut JoinPacket::new_unchecked(&mut b[..]));
                vec![b]
            }
            Op::Probe {
                job,
                rank,
                slot,
                ver,
            } => {
                let mut b = vec![0u8; 16];
                ProbeRepr {
                    job: JOB_IDS[*job],
                    rank: *rank,
                    slot: *slot,
                    ver: *ver,
                    seq: self.base,
                }
                .emit(&mut ProbePacket::new_unchecked(&mut b[..]));
                vec![b]
            }
            Op::Abort { job, rank, reason } => {
                let mut b = vec![0u8; 16];
                AbortRepr {
                    job: JOB_IDS[*job],
                    rank: *rank,
                    reason: AbortReason::from(*reason),
                    detail: 1,
                    epoch: 0,
                }
                .emit(&mut AbortPacket::new_unchecked(&mut b[..]));
                vec![b]
            }
            Op::Status { job, rank } => {
                let mut b = vec![0u8; 8];
                StatusRepr {
                    job: JOB_IDS[*job],
                    rank: *rank,
                }
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

/// The datagrams a sequence of ops sends.
fn sequence(world7: u16, wrap: bool, ops: &[Op]) -> Vec<Vec<u8>> {
    let mut g = Gen {
        world7,
        base: if wrap { u32::MAX - 2 } else { 0 },
        sent: Vec::new(),
    };
    for op in ops {
        let packets = g.expand(op);
        g.sent.extend(packets);
    }
    g.sent
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
        let packets = sequence(world7, wrap, &ops);
        let result = equivalence::run(&setup(world7), packets.iter().map(Vec::as_slice));
        prop_assert_eq!(result, Ok(()));
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
    // A sequence that completes a use of job 9 (world 1): length-prefixed contributions.
    let mut data = Vec::new();
    for seq in 0..4u32 {
        let g = Gen {
            world7: 3,
            base: 0,
            sent: Vec::new(),
        };
        let p = g.data(9, 0, 0, seq, false, 3, u64::from(seq));
        data.extend_from_slice(&(p.len() as u16).to_be_bytes());
        data.extend_from_slice(&p);
    }
    assert_eq!(equivalence::fuzz(&data), Ok(()));
}

/// The generator reaches every outcome the property is about, so the property is not
/// vacuous: completions, resends answered, every drop reason a datagram can earn, overflows,
/// joins, probes, aborts, Status requests answered and refused, StatusReplies dropped,
/// multi-pass packets and the bitmap restore.
#[test]
fn the_generated_sequences_reach_every_outcome() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;
    use switchml_core::switch::{Counters, DropReason, JobCounters, Verdict};
    use switchml_p4model::equivalence::{Pair, RefSlot};

    let mut runner = TestRunner::deterministic();
    let strategy = (1u16..=5, any::<bool>(), prop::collection::vec(op(), 1..48));
    let (mut total, mut job, mut recirculations) =
        (Counters::default(), JobCounters::default(), (0, 0));
    // Status requests answered, refused (Abort) and malformed; StatusReplies dropped.
    let (mut status_replies, mut status_refusals, mut status_malformed, mut replies_dropped) =
        (0, 0, 0, 0);
    for _ in 0..200 {
        let (world7, wrap, ops) = strategy.new_tree(&mut runner).unwrap().current();
        let setup = setup(world7);
        let mut pool = vec![RefSlot::IDLE; setup.slots];
        let mut pair = Pair::new(&setup, &mut pool).unwrap();
        for p in sequence(world7, wrap, &ops) {
            pair.feed(&p).unwrap();
            let (verdict, answer) = pair.last().unwrap();
            match (p.get(..2), verdict, answer.get(1)) {
                (Some([1, 0x15]), Verdict::Unicast { .. }, Some(0x16)) => status_replies += 1,
                (Some([1, 0x15]), Verdict::Unicast { .. }, Some(0x14)) => status_refusals += 1,
                (Some([1, 0x15]), Verdict::Drop(DropReason::Malformed), _) => status_malformed += 1,
                (Some([1, 0x16]), Verdict::Drop(DropReason::UnexpectedType), _) => {
                    replies_dropped += 1
                }
                _ => {}
            }
        }
        let c = pair.reference.counters();
        total.consumed += c.consumed;
        total.multicast += c.multicast;
        total.unicast += c.unicast;
        for (t, d) in total.dropped.iter_mut().zip(c.dropped) {
            *t += d;
        }
        let j = pair.reference.job(7).unwrap().counters();
        job.retransmit_replies += j.retransmit_replies;
        job.overflows += j.overflows;
        job.joins += j.joins;
        job.probes += j.probes;
        job.aborts += j.aborts;
        let (values, restores) = pair.model.recirculations();
        recirculations = (recirculations.0 + values, recirculations.1 + restores);
    }
    assert!(
        total.consumed > 0 && total.multicast > 0 && total.unicast > 0,
        "{total:?}"
    );
    for reason in DropReason::ALL {
        if reason != DropReason::OutputTooSmall {
            assert!(total.drops(reason) > 0, "no {reason:?} drop in {total:?}");
        }
    }
    assert!(job.retransmit_replies > 0 && job.overflows > 0, "{job:?}");
    assert!(job.joins > 0 && job.probes > 0 && job.aborts > 0, "{job:?}");
    assert!(status_replies > 0, "no StatusReply answer");
    assert!(status_refusals > 0, "no Status refused");
    assert!(status_malformed > 0, "no malformed Status");
    assert!(replies_dropped > 0, "no StatusReply dropped");
    assert!(recirculations.0 > 0, "no multi-pass packet");
    assert!(recirculations.1 > 0, "no bitmap restore");
}
