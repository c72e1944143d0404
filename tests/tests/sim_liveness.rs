//! Liveness apart from progress (protocol.md §4.3, §6), on the simulator's clock: a rank
//! that is alive but busy is waited for up to the user's timeout; a rank that dies is named
//! by the switch within its dead interval; forged keep-alives keep no dead rank alive; a
//! refused Join reaches the ranks that wait for it.

use switchml_core::quant::Op;
use switchml_core::time::{Duration, Instant};
use switchml_core::wire::{AbortReason, ProbeFlags, ProbePacket, ProbeRepr};
use switchml_core::worker::{Event, TensorId, WorkerError};
use switchml_tests::harness::{self, f32_values, reference_f32, JOB};
use switchml_tests::sim::{lane_configs, Buf, Network, Rng, Sim};

const STEPS: usize = 5_000_000;

fn failure(sim: &Sim<harness::SimSwitch>, node: usize) -> Option<WorkerError> {
    sim.nodes[node].events.iter().find_map(|e| match e {
        Event::Failed(err) => Some(*err),
        _ => None,
    })
}

fn silent(rank: u16) -> Option<WorkerError> {
    Some(WorkerError::Refused {
        reason: AbortReason::RankSilent,
        detail: rank,
    })
}

/// Three ranks of one lane each, joined; the user's timeout is five minutes.
fn joined_sim(seed: u64) -> Sim<harness::SimSwitch> {
    let mut sim = harness::sim(3, 1, 4, 64, Network::PERFECT, seed);
    for n in &mut sim.nodes {
        let config = switchml_core::worker::Config {
            timeout: Duration::from_secs(300),
            ..*n.worker.config()
        };
        n.worker = switchml_core::worker::Worker::new(config).unwrap();
    }
    sim.drive(STEPS, |s| s.nodes.iter().all(|n| n.worker.is_running()))
        .unwrap();
    sim
}

#[test]
fn a_rank_busy_for_a_minute_is_waited_for_and_every_sum_is_exact() {
    // Issue 27: rank 0 running validation while the others wait ended the job after the
    // retry budget (80 timeouts of at most 16 ms here: about 1.3 s). It is alive (its lane
    // keeps being driven and keeps alive), so the others wait, up to their 5 minutes.
    let mut sim = joined_sim(21);
    let mut rng = Rng::new(8);
    let inputs: Vec<Vec<f32>> = (0..3).map(|_| f32_values(&mut rng, 1500)).collect();
    let mut id = TensorId(0);
    for r in [1, 2] {
        id = sim.submit(r, Buf::F32(inputs[r].clone()), Op::Sum);
    }
    let back = sim.now + Duration::from_secs(60);
    sim.drive(STEPS, |s| s.now >= back || failure(s, 1).is_some())
        .unwrap();
    assert_eq!(failure(&sim, 1), None, "rank 1 gave up on a busy rank");
    assert_eq!(failure(&sim, 2), None, "rank 2 gave up on a busy rank");
    assert!(sim.switch.job(JOB).unwrap().has_run());
    // Rank 0 comes back and submits its part: every rank gets the exact sum.
    sim.submit(0, Buf::F32(inputs[0].clone()), Op::Sum);
    sim.drive(STEPS, |s| s.finished(id)).unwrap();
    let want = reference_f32(&inputs, 64, Op::Sum);
    for r in 0..3 {
        assert_eq!(failure(&sim, r), None);
        let (buf, result) = sim.take_result(r, id).expect("done");
        assert_eq!(result, Ok(()));
        let Buf::F32(got) = buf else { panic!() };
        assert!(
            got.iter()
                .zip(&want)
                .all(|(a, b)| a.to_bits() == b.to_bits()),
            "rank {r}"
        );
    }
    let waits: u64 = sim.nodes.iter().map(|n| n.worker.stats().peer_waits).sum();
    assert!(
        waits > 0,
        "nobody ran out of retries: the test shows nothing"
    );
}

#[test]
fn a_rank_that_dies_is_named_to_the_others_within_two_seconds() {
    let mut sim = joined_sim(22);
    let mut rng = Rng::new(9);
    // Rank 2's process dies: it neither sends nor receives from now on.
    sim.nodes[2].alive = false;
    let died = sim.now;
    let mut id = TensorId(0);
    for r in [0, 1] {
        id = sim.submit(r, Buf::F32(f32_values(&mut rng, 500)), Op::Sum);
    }
    sim.drive(STEPS, |s| s.finished(id)).unwrap();
    for r in [0, 1] {
        assert_eq!(failure(&sim, r), silent(2), "rank {r}");
    }
    assert!(
        sim.now - died <= Duration::from_secs(2),
        "named after {}",
        sim.now - died
    );
    assert!(!sim.switch.job(JOB).unwrap().has_run());
}

#[test]
fn forged_keep_alives_without_the_session_keep_no_dead_rank_alive() {
    let mut sim = joined_sim(23);
    sim.nodes[2].alive = false;
    let died = sim.now;
    let session = sim.switch.job(JOB).unwrap().session();
    let forged = |s: u32| {
        let repr = ProbeRepr {
            job: JOB,
            rank: 2,
            slot: 0,
            ver: 0,
            seq: 0,
            session: s,
            flags: ProbeFlags::NONE,
        };
        let mut b = vec![0u8; repr.buffer_len()];
        repr.emit(&mut ProbePacket::new_unchecked(&mut b[..]));
        b
    };
    // Every 50 ms a forger sends rank 2's keep-alive with a guessed session, from rank 2's
    // own address and from elsewhere.
    let mut next = died;
    let mut guess = session.wrapping_add(1);
    while failure(&sim, 0).is_none() && sim.now - died < Duration::from_secs(10) {
        if sim.now >= next {
            sim.inject(2, &forged(guess));
            sim.inject_from_outside(&forged(guess ^ 0x5555_5555));
            guess = guess.wrapping_add(7919);
            next = sim.now + Duration::from_millis(50);
        }
        assert!(sim.step());
    }
    assert!(sim.stats.injected_delivered > 20);
    for r in [0, 1] {
        assert_eq!(failure(&sim, r), silent(2), "rank {r}");
    }
    assert!(sim.now - died <= Duration::from_secs(2));
}

#[test]
fn a_refused_join_is_relayed_to_the_ranks_already_waiting() {
    // Issue 27: rank 2 joined with another chunk size; ranks 0 and 1 waited out their join
    // timeout (2 s here) and said "ranks 2 never joined".
    let switch = harness::switch_with_job(3, 4, 1);
    let mut configs = lane_configs(harness::sim_config(3, 4, 64), 1);
    configs[2].count = 32;
    let mut sim = Sim::new(switch, configs, Network::PERFECT, 24)
        .with_dead_after(Some(switchml_core::switch::DEFAULT_DEAD_AFTER));
    sim.drive(STEPS, |s| (0..3).all(|r| failure(s, r).is_some()))
        .unwrap();
    assert_eq!(
        failure(&sim, 2),
        Some(WorkerError::Refused {
            reason: AbortReason::ChunkMismatch,
            detail: 64
        })
    );
    for r in [0, 1] {
        assert_eq!(
            failure(&sim, r),
            Some(WorkerError::Refused {
                reason: AbortReason::RankRefused,
                detail: 2
            }),
            "rank {r}"
        );
    }
    assert!(
        sim.now < Instant::from_millis(1000),
        "told at {:?}",
        sim.now
    );
    let msg = failure(&sim, 0).unwrap().to_string();
    assert!(msg.contains("rank 2"), "{msg}");
}
