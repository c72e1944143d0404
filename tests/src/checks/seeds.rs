//! Seed inputs for the fuzz targets, built from the golden wire vectors
//! (`tests/vectors/wire.txt`), the golden switch scenarios (`tests/vectors/switch.txt`) and
//! short scripted runs of a job. `model_vs_reference` reads `switch_sequence` inputs, so
//! it gets the same seeds.
//!
//! `tests/tests/fuzz_corpus.rs` writes them to `fuzz/corpus/<target>/seed-<name>` on request
//! (`cargo test -p switchml-tests --test fuzz_corpus -- --ignored write_seed_corpus`) and
//! checks them on every run; the fuzzer grows the corpus from there.

use crate::checks::input::Output;
use crate::checks::switch::{self, SwitchOp};
use crate::checks::worker::{self, Setup, TensorSpec, WorkerOp};
use crate::scenarios;
use crate::vectors::{load, WIRE};
use switchml_core::wire::prefix;

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

fn contribute(job: u8, rank: u16, slot: u16, seq: u32, values: &[i32]) -> SwitchOp {
    SwitchOp::Contribute {
        job,
        rank,
        slot,
        seq,
        bad_ver: false,
        exp: 120 + rank as u8,
        retransmit: false,
        values: values.to_vec(),
    }
}

/// The golden switch scenarios, one after the other with a job restart between them, as raw
/// datagrams to the 3-rank job (the scenarios' job id becomes its id).
fn scenarios() -> Vec<SwitchOp> {
    let all = scenarios::load(scenarios::SWITCH).expect("tests/vectors/switch.txt loads");
    let mut ops = Vec::new();
    for s in all {
        assert_eq!(s.job.world, switch::JOBS[0].world, "{}: same world", s.name);
        ops.push(SwitchOp::RestartJob);
        for (mut bytes, _) in s.steps {
            if switchml_core::wire::peek(&bytes).is_ok_and(|(_, job, _)| job == s.job.id) {
                bytes[prefix::JOB].copy_from_slice(&switch::JOB_IDS[0].to_be_bytes());
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
    // Every rank joins, then two uses of every slot version, with a duplicate, a resend
    // after completion, a stale copy and a probe.
    let mut round = Vec::new();
    for rank in 0..3 {
        round.push(SwitchOp::Join {
            job: 0,
            rank,
            world: 3,
            slot_lo: 0,
            slot_count: 3,
            count: 4,
        });
    }
    for seq in 0..3u32 {
        for slot in 0..3 {
            for rank in 0..3u16 {
                let v = [i32::from(rank), -1, i32::MAX, seq as i32];
                round.push(contribute(0, rank, slot, seq, &v));
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
    });
    round.push(contribute(1, 0, 1, 0, &[5, 6]));
    round.push(SwitchOp::Abort {
        job: 0,
        rank: 2,
        reason: 7,
        detail: 1,
    });
    round.push(SwitchOp::RestartJob);
    round.push(contribute(0, 1, 0, 0, &[]));
    // Use numbers across the 32-bit wrap.
    let wrap: Vec<SwitchOp> = [0xFFFF_FFFE, 0xFFFF_FFFF, 0, 1, 0x7FFF_FFFF, 0x8000_0000]
        .into_iter()
        .flat_map(|seq| (0..3).map(move |rank| contribute(0, rank, 1, seq, &[1, 2])))
        .collect();
    vec![
        ("golden_vectors".into(), switch::encode_ops(&raw)),
        ("golden_scenarios".into(), switch::encode_ops(&scenarios())),
        ("round".into(), switch::encode_ops(&round)),
        ("wrap".into(), switch::encode_ops(&wrap)),
    ]
}

/// Worker sequences: a job that completes, one that stalls and is probed, one refused.
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
        max_count: 256,
        epoch: 0,
        rank: 1,
        bitmap: vec![3],
    };
    let answer = |pick: u8, flags: u8| WorkerOp::Answer {
        pick,
        mutation: 0xFF,
        exp: 130,
        flags,
        to_all: true,
        values: [1, -1, 2, -2],
    };
    let mut complete = vec![join.clone()];
    complete.extend((0..12).map(|i| answer(i % 3, u8::from(i == 9))));
    complete.push(WorkerOp::Submit(TensorSpec {
        kind: 2,
        average: true,
        words: vec![0x0010_0400; 3],
    }));
    complete.extend((0..6).map(|i| answer(i, 0)));
    let mut stall = vec![join, answer(0, 0)];
    stall.extend((0..8).map(|_| WorkerOp::WaitForTimer));
    stall.push(WorkerOp::ProbeReply {
        state: 1,
        remaining: 1,
        seq: 0,
        epoch: 0,
        bitmap: vec![2],
    });
    stall.push(WorkerOp::Wait(2000));
    let refused = vec![
        WorkerOp::Abort {
            reason: 3,
            rank: 0,
            detail: 4,
            epoch: 0,
        },
        WorkerOp::Replay(0),
        WorkerOp::Raw(vec![1, 2, 0, 7, 0xFF, 0xFF]),
    ];
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
