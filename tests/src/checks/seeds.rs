//! Seed inputs for the fuzz targets, built from the golden wire vectors
//! (`tests/vectors/wire.txt`), the golden switch scenarios (`tests/vectors/switch.txt`) and
//! short scripted runs of a job. `model_vs_reference` reads `switch_sequence` inputs, so
//! it gets the same seeds.
//!
//! `tests/tests/fuzz_corpus.rs` writes them to `fuzz/corpus/<target>/seed-<name>` on request
//! (`cargo test -p switchml-tests --test fuzz_corpus -- --ignored write_seed_corpus`) and
//! checks them on every run; the fuzzer grows the corpus from there.

use crate::checks::input::Output;
use crate::checks::switch::{self, session_of, SwitchOp, NONCES};
use crate::checks::worker::{self, Setup, TensorSpec, WorkerOp};
use crate::scenarios;
use crate::vectors::{load, WIRE};
use switchml_core::wire::{join, JoinPacket, JoinRepr, MessageType, Prefix};
use zerocopy::FromBytes;

/// Named seed inputs of one target: `(name, bytes)`.
pub type Seeds = Vec<(String, Vec<u8>)>;

/// The fuzz targets that have seeds, with their seeds.
pub fn all() -> Vec<(&'static str, Seeds)> {
    vec![
        ("wire_roundtrip", wire()),
        ("switch_sequence", switch()),
        ("worker_sequence", worker()),
        ("quant", quant()),
        ("model_vs_reference", switch()),
    ]
}

/// Every golden vector's datagram, valid and invalid.
pub fn wire() -> Seeds {
    let vectors = load(WIRE).expect("tests/vectors/wire.txt loads");
    vectors.into_iter().map(|v| (v.name, v.bytes)).collect()
}

fn contribute(job: u8, rank: u16, slot: u16, seq: u32, session: u32, values: &[i32]) -> SwitchOp {
    SwitchOp::Contribute {
        job,
        rank,
        slot,
        seq,
        bad_ver: false,
        exp: 120 + rank as u8,
        retransmit: false,
        session,
        values: values.to_vec(),
    }
}

/// A Join of `rank` of the 3-rank job (whole range, chunks of 4) by process `nonce`, with
/// key choice `key` (0: the job's). Its rank states 4 lanes, which a Join op encodes as no
/// lane bits: the seed files read as they did before Joins carried `lanes`.
fn join(rank: u16, nonce: u32, key: u8) -> SwitchOp {
    SwitchOp::Join {
        job: 0,
        rank,
        world: 3,
        slot_lo: 0,
        slot_count: 3,
        count: 4,
        lanes: 4,
        nonce,
        key,
    }
}

/// Every rank of the 3-rank test job joins with its key, rank `r` as process
/// `NONCES[(r + first) % 3]`: rank 0's Join, `NONCES[first]`'s, opens the run when there is
/// none.
pub fn join_all(first: usize) -> Vec<SwitchOp> {
    (0..3u16)
        .map(|r| join(r, NONCES[(usize::from(r) + first) % 3], 0))
        .collect()
}

fn leave(rank: u16, session: u32) -> SwitchOp {
    SwitchOp::Leave {
        job: 0,
        rank,
        session,
    }
}

/// Scale a scenario Join's lane and chunk size (8 slots, chunks of 8) down to the 3-rank
/// test job (3 slots, chunks of `K` = 4), keeping each one's relation to the run's shape:
/// whole range to whole range, half to one slot, a chunk one too large still too large.
fn fit_join(bytes: &mut [u8]) {
    let mut join = JoinPacket::new_unchecked(bytes);
    let slot_lo = match join.slot_lo() {
        4 => 1,
        other => other,
    };
    let slot_count = match join.slot_count() {
        8 => 3,
        4 => 1,
        other => other,
    };
    let chunk = match join.count() {
        c @ 0..=8 => c.div_ceil(2),
        c => c - 4,
    };
    join.set_slot_lo(slot_lo);
    join.set_slot_count(slot_count);
    join.set_count(chunk);
}

/// The golden switch scenarios, one after the other with a job restart between them, as raw
/// datagrams to the 3-rank job (the scenarios' job id becomes its id, their key its key,
/// their lanes fit its slots), so that their Joins open runs.
fn scenarios() -> Vec<SwitchOp> {
    let all = scenarios::load(scenarios::SWITCH).expect("tests/vectors/switch.txt loads");
    let mut ops = Vec::new();
    for s in all {
        assert_eq!(s.job.world, switch::JOBS[0].world, "{}: same world", s.name);
        ops.push(SwitchOp::RestartJob);
        for (mut bytes, _) in s.steps {
            let Ok((kind, job, _)) = switchml_core::wire::peek(&bytes) else {
                ops.push(SwitchOp::Raw(bytes));
                continue;
            };
            if job == s.job.id {
                let (prefix, _) = Prefix::mut_from_prefix(&mut bytes).expect("peek read it");
                prefix.job.set(switch::JOB_IDS[0]);
                if kind == MessageType::Join && bytes.len() == join::LEN {
                    // A Join signed with the scenario's key is signed again with the job's;
                    // a wrong one stays wrong.
                    if let Ok(j) = JoinRepr::parse(&JoinPacket::new_unchecked(&bytes[..])) {
                        let key = if j.verify(s.job.key) {
                            switch::KEYS[0]
                        } else {
                            switch::KEYS[0] ^ 1
                        };
                        j.sign(key)
                            .emit(&mut JoinPacket::new_unchecked(&mut bytes[..]));
                    }
                    fit_join(&mut bytes);
                }
            }
            if bytes.len() <= 64 {
                ops.push(SwitchOp::Raw(bytes));
            }
        }
    }
    ops
}

/// Switch sequences: the golden vectors and scenarios as raw datagrams, and scripted rounds
/// of a job.
pub fn switch() -> Seeds {
    let raw: Vec<SwitchOp> = wire()
        .into_iter()
        .filter(|(_, b)| b.len() <= 64)
        .map(|(_, b)| SwitchOp::Raw(b))
        .collect();
    // Every rank joins with the key, then two uses of every slot version, with a
    // duplicate, a resend after completion, a stale copy and a probe; the 1-rank job runs
    // too; an Abort ends the run, and its session no longer counts.
    let session = session_of(NONCES[0], 0);
    let mut round = join_all(0);
    for seq in 0..3u32 {
        for slot in 0..3 {
            for rank in 0..3u16 {
                let v = [i32::from(rank), -1, i32::MAX, seq as i32];
                round.push(contribute(0, rank, slot, seq, session, &v));
            }
            round.push(SwitchOp::Replay(1));
            round.push(SwitchOp::Replay(4));
        }
    }
    round.push(SwitchOp::Probe {
        job: 0,
        rank: 1,
        slot: 2,
        ver: 0,
        seq: 2,
        session,
    });
    round.push(SwitchOp::Join {
        job: 1,
        rank: 0,
        world: 1,
        slot_lo: 0,
        slot_count: 2,
        count: 2,
        lanes: 4,
        nonce: NONCES[2],
        key: 0,
    });
    round.push(contribute(1, 0, 1, 0, session_of(NONCES[2], 0), &[5, 6]));
    round.push(SwitchOp::Abort {
        job: 0,
        rank: 2,
        reason: 7,
        detail: 1,
        session,
    });
    round.push(contribute(0, 1, 0, 3, session, &[1, 1, 1, 1]));
    round.push(SwitchOp::RestartJob);
    round.push(contribute(0, 1, 0, 0, session, &[]));
    // A run's whole life: wrong keys, a rank replaced before the run is complete, uses,
    // every rank leaving, a new run on the same slots (a new session: no reset needed),
    // a rank restarted in the complete run, its next Join opening the next run, and the
    // same processes running the job once more (sessions: the opener's nonce plus the
    // runs before).
    let mut life = vec![
        join(0, NONCES[0], 1),
        join(0, NONCES[0], 2),
        join(0, NONCES[0], 3),
    ];
    life.extend(join_all(0));
    life.insert(4, join(1, NONCES[2], 0));
    let first = session_of(NONCES[0], 0);
    for rank in 0..3 {
        life.push(contribute(0, rank, 0, 0, first, &[1, 2, 3, 4]));
    }
    life.extend((0..3).map(|rank| leave(rank, first)));
    life.push(contribute(0, 0, 0, 1, first, &[1, 2, 3, 4]));
    life.extend(join_all(1));
    let second = session_of(NONCES[1], 1);
    for rank in 0..3 {
        life.push(contribute(0, rank, 0, 0, second, &[5, 6, 7, 8]));
    }
    life.push(join(2, NONCES[0], 0));
    life.push(contribute(0, 0, 0, 1, second, &[1, 1, 1, 1]));
    life.push(join(2, NONCES[0], 0));
    life.push(join(0, NONCES[1], 0));
    life.push(join(1, NONCES[2], 0));
    let third = session_of(NONCES[0], 2);
    for rank in 0..3 {
        life.push(contribute(0, rank, 0, 0, third, &[9, 9, 9, 9]));
    }
    life.extend((0..3).map(|rank| leave(rank, third)));
    life.extend([
        join(2, NONCES[0], 0),
        join(0, NONCES[1], 0),
        join(1, NONCES[2], 0),
    ]);
    for rank in 0..3 {
        life.push(contribute(
            0,
            rank,
            0,
            1,
            session_of(NONCES[0], 3),
            &[3, 2, 1, 0],
        ));
    }
    // Use numbers across the 32-bit wrap.
    let mut wrap = join_all(2);
    wrap.extend(
        [0xFFFF_FFFE, 0xFFFF_FFFF, 0, 1, 0x7FFF_FFFF, 0x8000_0000]
            .into_iter()
            .flat_map(|seq| {
                (0..3)
                    .map(move |rank| contribute(0, rank, 1, seq, session_of(NONCES[2], 0), &[1, 2]))
            }),
    );
    vec![
        ("golden_vectors".into(), switch::encode_ops(&raw)),
        ("golden_scenarios".into(), switch::encode_ops(&scenarios())),
        ("round".into(), switch::encode_ops(&round)),
        ("run_lifecycle".into(), switch::encode_ops(&life)),
        ("wrap".into(), switch::encode_ops(&wrap)),
    ]
}

/// Worker sequences: a job that completes, one that stalls and is probed, one refused, one
/// that ignores another run and leaves, one whose run ends under it, one that replaced
/// another process of its rank.
pub fn worker() -> Seeds {
    let setup = Setup {
        world: 2,
        rank: 1,
        window: 2,
        slot_lo: 1,
        count: 2,
        retries: 1,
    };
    let tensors = vec![
        TensorSpec {
            kind: 0,
            average: false,
            words: vec![0x0014_0100, 0x0016_FF00, 7, 0x0020_0001, 0],
        },
        TensorSpec {
            kind: 1,
            average: false,
            words: vec![1, 0xFFFF_FFFF, 0x7FFF_FFFF],
        },
    ];
    let join = WorkerOp::JoinReply {
        world: 0,
        complete: true,
        foreign: false,
        max_count: 256,
        epoch: 0,
        rank: 1,
        session: 0,
        bitmap: vec![3],
    };
    // A Result for an outstanding Contribution; `mutation` 0xFF: none.
    let answer = |pick: u8, mutation: u8, flags: u8| WorkerOp::Answer {
        pick,
        mutation,
        exp: 130,
        flags,
        to_all: true,
        values: [1, -1, 2, -2],
    };
    let mut complete = vec![join.clone()];
    complete.extend((0..12).map(|i| answer(i % 3, 0xFF, u8::from(i == 9))));
    complete.push(WorkerOp::Submit(TensorSpec {
        kind: 2,
        average: true,
        words: vec![0x0010_0400; 3],
    }));
    complete.extend((0..6).map(|i| answer(i, 0xFF, 0)));
    let mut stall = vec![join.clone(), answer(0, 0xFF, 0)];
    stall.extend((0..8).map(|_| WorkerOp::WaitForTimer));
    stall.push(WorkerOp::ProbeReply {
        state: 1,
        remaining: 1,
        seq: 0,
        epoch: 0,
        bitmap: vec![2],
    });
    stall.push(WorkerOp::Wait(2000));
    // A refusal that names nothing (ignored: anyone can provoke one), then one that names
    // the lane's nonce.
    let refusal = |session: u8| WorkerOp::Abort {
        reason: 3,
        rank: 0,
        detail: 4,
        epoch: 0,
        session,
    };
    let refused = vec![
        refusal(1),
        refusal(2),
        WorkerOp::Replay(0),
        WorkerOp::Raw(vec![1, 2, 0, 7, 0xFF, 0xFF]),
    ];
    // A JoinReply of one run, then the complete one of another (the lane takes the
    // latter); Results and Aborts of the first run are ignored; every tensor done, the lane
    // leaves.
    let mut leave = vec![
        WorkerOp::JoinReply {
            world: 0,
            complete: false,
            foreign: false,
            max_count: 256,
            epoch: 0,
            rank: 0,
            session: 5,
            bitmap: vec![2],
        },
        join,
    ];
    for i in 0..12 {
        leave.push(answer(i % 3, if i % 4 == 0 { 8 } else { 0xFF }, 0));
        leave.push(WorkerOp::Abort {
            reason: 9,
            rank: 1,
            detail: 0,
            epoch: 0,
            session: 5,
        });
    }
    leave.extend((0..12).map(|i| answer(i % 3, 0xFF, 0)));
    leave.push(WorkerOp::Leave);
    leave.push(WorkerOp::WaitForTimer);
    // The run ends under the lane: another rank restarted.
    let mut restarted = complete[..6].to_vec();
    restarted.push(WorkerOp::Abort {
        reason: 9,
        rank: 1,
        detail: 0,
        epoch: 0,
        session: 0,
    });
    // A process that replaced another of its rank: the old run's answers (another nonce)
    // and an Abort of no session leave it joining; its own answer puts it in a run, whose
    // COMPLETE (the completing Join is another rank's) starts it.
    let other = |complete: bool, session: u8| WorkerOp::JoinReply {
        world: 0,
        complete,
        foreign: true,
        max_count: 256,
        epoch: 0,
        rank: 1,
        session,
        bitmap: vec![3],
    };
    let mut replaced = vec![other(true, 7), other(false, 0), refusal(1)];
    replaced.push(WorkerOp::JoinReply {
        world: 0,
        complete: false,
        foreign: false,
        max_count: 256,
        epoch: 0,
        rank: 1,
        session: 0,
        bitmap: vec![2],
    });
    replaced.push(other(true, 0));
    replaced.extend((0..12).map(|i| answer(i % 3, 0xFF, 0)));
    vec![
        (
            "complete".into(),
            worker::encode(&setup, &tensors, &complete),
        ),
        ("stall".into(), worker::encode(&setup, &tensors, &stall)),
        (
            "refused".into(),
            worker::encode(&setup, &tensors[..1], &refused),
        ),
        ("leave".into(), worker::encode(&setup, &tensors, &leave)),
        (
            "replaced".into(),
            worker::encode(&setup, &tensors, &replaced),
        ),
        (
            "rank_restarted".into(),
            worker::encode(&setup, &tensors, &restarted),
        ),
    ]
}

/// Quantization cases: small and large worlds, every element type, NaN and ∞.
pub fn quant() -> Seeds {
    let case = |world: u16, kind: u8, average: bool, blocks: &[&[u32]]| {
        let mut out = Output::new();
        if world <= 8 {
            out.u8((world - 1) as u8);
        } else {
            out.u8(0x80).u16(world - 1);
        }
        out.u8(kind).bool(average);
        out.u8(blocks[0].len() as u8).u8((blocks.len() - 1) as u8);
        for block in blocks {
            for &w in *block {
                if kind == 0 {
                    out.u32(w);
                } else {
                    out.u16(w as u16);
                }
            }
        }
        out.u8(130);
        for &w in blocks[0] {
            out.u32(w);
        }
        out.u8(140);
        out.into_bytes()
    };
    let f32s: &[u32] = &[
        1.5f32.to_bits(),
        (-0.25f32).to_bits(),
        0,
        1,
        f32::MAX.to_bits(),
    ];
    let small: &[u32] = &[3.0f32.to_bits(), (-1e-3f32).to_bits(), 0x8000_0000, 7, 9];
    let halves: &[u32] = &[0x3C00, 0xBC00, 0x0001, 0x7BFF, 0];
    let bad: &[u32] = &[0, 0x7FC0_0000, 0xFF80_0000, 1, 2];
    vec![
        ("f32_sum_3".into(), case(3, 0, false, &[f32s, small])),
        (
            "f32_average_1024".into(),
            case(1024, 0, true, &[small, f32s]),
        ),
        ("f16_sum_5".into(), case(5, 1, false, &[halves])),
        ("bf16_average_2".into(), case(2, 2, true, &[halves, halves])),
        ("nan_and_infinity".into(), case(4, 0, false, &[bad])),
    ]
}
