//! The golden vectors of `tests/vectors/` as co-simulation scripts.
//!
//! - Every scenario of `switch.txt` on a fresh switch set up as its `setup:` line says; the
//!   reference must still render the file's outcomes (checked here), and the RTL must match
//!   the reference.
//! - Every datagram of `wire.txt`, twice over, into a switch where jobs 7 and 1 (the jobs
//!   the vectors name) have runs open with the vectors' session 0x0a0b0c0d, so that their
//!   Contributions and Probes reach the slots.

use switchml_core::switch::{JobConfig, Verdict};
use switchml_core::wire::{JoinRepr, Message};
use switchml_tests::scenarios::{self, Outcome, LARGE_MAX_COUNT, MAX_COUNT, SWITCH};
use switchml_tests::vectors::{self, WIRE};

use crate::session::{Expected, Session};

/// A named script and what the RTL must do with it.
pub struct Case {
    /// The scenario's name.
    pub name: String,
    /// The script.
    pub script: String,
    /// The expectations.
    pub expected: Expected,
}

fn outcome_of(v: Verdict, answer: &[u8]) -> Outcome {
    match v {
        Verdict::Consumed => Outcome::Consumed,
        Verdict::Drop(r) => Outcome::Drop(r.name().to_string()),
        Verdict::Multicast { .. } => Outcome::Multicast(answer.to_vec()),
        Verdict::Unicast { rank, .. } => Outcome::Unicast(rank, answer.to_vec()),
        Verdict::Up { .. } => unreachable!("the golden vectors have no child switch"),
    }
}

fn scenario_case<const K: usize>(s: &scenarios::Scenario, seed: u64) -> Result<Case, String> {
    let mut session = Session::<K>::new(s.epoch, &[s.job], seed);
    for (i, (bytes, want)) in s.steps.iter().enumerate() {
        let v = session.packet(bytes);
        let got = outcome_of(v, session.answer(v));
        if &got != want {
            return Err(format!(
                "[{}] step {i}: the reference no longer renders switch.txt: {got:?} vs {want:?}",
                s.name
            ));
        }
    }
    let (script, expected) = session.finish();
    Ok(Case {
        name: s.name.clone(),
        script,
        expected,
    })
}

/// Every scenario of `tests/vectors/switch.txt`.
pub fn scenario_cases(seed: u64) -> Result<Vec<Case>, String> {
    let mut cases = Vec::new();
    for s in scenarios::load(SWITCH)? {
        cases.push(match usize::from(s.max_count) {
            MAX_COUNT => scenario_case::<MAX_COUNT>(&s, seed)?,
            LARGE_MAX_COUNT => scenario_case::<LARGE_MAX_COUNT>(&s, seed)?,
            other => return Err(format!("[{}] max_count {other}", s.name)),
        });
    }
    Ok(cases)
}

/// The session of the wire vectors' Contributions and Probes.
const WIRE_SESSION: u32 = 0x0a0b_0c0d;

/// Every datagram of `tests/vectors/wire.txt` (but the empty one), twice.
pub fn wire_case(seed: u64) -> Result<Case, String> {
    let jobs = [
        JobConfig {
            id: 7,
            world: 4,
            slot_lo: 0,
            slot_count: 8,
            key: 7,
        },
        JobConfig {
            id: 1,
            world: 4,
            slot_lo: 8,
            slot_count: 24,
            key: 1,
        },
    ];
    let mut session = Session::<LARGE_MAX_COUNT>::new(0xE90C, &jobs, seed);
    for job in &jobs {
        for rank in 0..job.world {
            let join = Message::Join(
                JoinRepr {
                    job: job.id,
                    rank,
                    world: job.world,
                    slot_lo: 0,
                    slot_count: job.slot_count,
                    lanes: 1,
                    count: 64,
                    nonce: WIRE_SESSION,
                    cookie: 0,
                    tag: [0; 16],
                }
                .sign(job.key),
            );
            let mut b = vec![0u8; join.buffer_len()];
            join.emit(&mut b).map_err(|e| format!("{e:?}"))?;
            session.packet(&b);
        }
    }
    let vectors = vectors::load(WIRE)?;
    for _ in 0..2 {
        for v in vectors.iter().filter(|v| !v.bytes.is_empty()) {
            session.packet(&v.bytes);
        }
    }
    let (script, expected) = session.finish();
    Ok(Case {
        name: "wire.txt".into(),
        script,
        expected,
    })
}
