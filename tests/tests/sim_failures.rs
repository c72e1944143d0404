//! What the simulator shows about failures: nothing hangs, every error names what is
//! missing (which rank, which slot, which key or run), and junk never corrupts a result.

use switchml_core::quant::{ElementType, NonFinite, Op};
use switchml_core::switch::{DropReason, JobConfig, Switch};
use switchml_core::wire::AbortReason;
use switchml_core::worker::{
    Config, Event, NonFinitePolicy, SubmitErrorKind, TensorError, TensorId, WorkerError,
};
use switchml_tests::harness::{self, f32_values, i32_values, lossy, reference_f32, JOB, KEY};
use switchml_tests::sim::{lane_configs, Buf, Network, Rng, Sim};

const STEPS: usize = 2_000_000;

/// The error of a lane the switch refused for `reason` (with `detail`).
fn refused(reason: AbortReason, detail: u16) -> Option<WorkerError> {
    Some(WorkerError::Refused { reason, detail })
}

fn failure(sim: &Sim<harness::SimSwitch>, node: usize) -> Option<WorkerError> {
    sim.nodes[node].events.iter().find_map(|e| match e {
        Event::Failed(err) => Some(*err),
        _ => None,
    })
}

#[test]
fn a_killed_worker_makes_the_others_fail_naming_its_rank() {
    let mut sim = harness::sim(4, 1, 4, 64, Network::PERFECT, 1);
    let mut rng = Rng::new(5);
    // Join first, then kill rank 2 before it contributes.
    sim.drive(STEPS, |s| s.nodes.iter().all(|n| n.worker.is_running()))
        .unwrap();
    sim.nodes[2].alive = false;
    let mut id = TensorId(0);
    for r in [0, 1, 3] {
        id = sim.submit(r, Buf::F32(f32_values(&mut rng, 1000)), Op::Sum);
    }
    let start = sim.now;
    sim.drive(STEPS, |s| s.finished(id)).unwrap();
    // The switch stopped hearing rank 2 and ended the run naming it (protocol.md §4.3).
    for r in [0, 1, 3] {
        assert_eq!(
            failure(&sim, r),
            refused(AbortReason::RankSilent, 2),
            "rank {r}"
        );
        let (_, result) = sim.take_result(r, id).expect("buffer handed back");
        assert_eq!(result, Err(TensorError::Aborted));
    }
    // Within the switch's dead interval and a sweep (1.5 s + 375 ms).
    assert!(
        sim.now - start < switchml_core::time::Duration::from_secs(2),
        "took {}",
        sim.now - start
    );
    let msg = failure(&sim, 0).unwrap().to_string();
    assert!(msg.contains("rank 2"), "{msg}");
}

#[test]
fn a_restarted_switch_gives_a_clear_error() {
    let mut sim = harness::sim(2, 1, 4, 64, Network::PERFECT, 2);
    sim.drive(STEPS, |s| s.nodes.iter().all(|n| n.worker.is_running()))
        .unwrap();
    // The switch restarts: new epoch, job registered again, state gone.
    sim.switch = harness::switch_with_job(2, 4, 2);
    let mut rng = Rng::new(9);
    let a = sim.submit(0, Buf::F32(f32_values(&mut rng, 500)), Op::Sum);
    sim.drive(STEPS, |s| failure(s, 0).is_some()).unwrap();
    assert_eq!(
        failure(&sim, 0),
        Some(WorkerError::SwitchRestarted { old: 1, new: 2 })
    );
    let (_, result) = sim.take_result(0, a).unwrap();
    assert_eq!(result, Err(TensorError::Aborted));
}

#[test]
fn a_switch_without_the_job_refuses_the_join() {
    let mut pool = vec![switchml_core::switch::Slot::IDLE; 4];
    let pool: &'static mut [_] = Box::leak(pool.split_off(0).into_boxed_slice());
    let mut switch: harness::SimSwitch = Switch::new(pool, 3);
    switch
        .add_job(JobConfig {
            id: JOB + 1,
            world: 2,
            slot_lo: 0,
            slot_count: 4,
            key: KEY,
        })
        .unwrap();
    let configs = lane_configs(harness::sim_config(2, 4, 64), 1);
    let mut sim = Sim::new(switch, configs, Network::PERFECT, 3);
    sim.drive(STEPS, |s| {
        failure(s, 0).is_some() && failure(s, 1).is_some()
    })
    .unwrap();
    assert_eq!(failure(&sim, 0), refused(AbortReason::UnknownJob, 0));
}

#[test]
fn a_rank_that_never_joins_is_named_at_the_join_timeout() {
    let mut sim = harness::sim(3, 1, 4, 64, Network::PERFECT, 4);
    sim.nodes[1].alive = false;
    sim.drive(STEPS, |s| {
        failure(s, 0).is_some() && failure(s, 2).is_some()
    })
    .unwrap();
    let Some(WorkerError::JoinTimeout { missing, waited }) = failure(&sim, 0) else {
        panic!()
    };
    assert_eq!(missing.iter().collect::<Vec<_>>(), [1]);
    assert_eq!(waited, switchml_core::time::Duration::from_secs(2));
}

#[test]
fn non_finite_inputs_are_refused_before_anything_is_sent_where_configured() {
    let refuse = Config {
        non_finite: NonFinitePolicy::Refuse,
        ..harness::sim_config(2, 4, 64)
    };
    let switch = harness::switch_with_job(2, 4, 1);
    let mut sim = Sim::new(switch, lane_configs(refuse, 1), Network::PERFECT, 5);
    let mut x = vec![1.0f32; 100];
    x[37] = f32::NAN;
    let err = sim.nodes[0]
        .worker
        .submit(sim.now, Buf::F32(x.clone()), Op::Sum)
        .unwrap_err();
    assert_eq!(
        err.kind,
        SubmitErrorKind::NonFinite(NonFinite { index: 37 })
    );
    let Buf::F32(back) = err.buf else { panic!() };
    assert!(back.iter().zip(&x).all(|(a, b)| a.to_bits() == b.to_bits()));
    let y = vec![1i32; 4];
    let err = sim.nodes[0]
        .worker
        .submit(sim.now, Buf::I32(y), Op::Average)
        .unwrap_err();
    assert_eq!(err.kind, SubmitErrorKind::AverageOfIntegers);
    sim.drive(STEPS, |s| s.nodes.iter().all(|n| n.worker.is_running()))
        .unwrap();
    assert_eq!(sim.nodes[0].worker.stats().sent, 0);
}

#[test]
fn int32_overflow_is_reported_not_wrapped() {
    let mut sim = harness::sim(2, 1, 2, 4, Network::PERFECT, 6);
    let a = sim.submit(0, Buf::I32(vec![1, i32::MAX, 3, 4, 5, 6]), Op::Sum);
    sim.submit(1, Buf::I32(vec![1, 1, 1, 1, 1, 1]), Op::Sum);
    sim.drive(STEPS, |s| s.finished(a)).unwrap();
    for r in 0..2 {
        let (buf, result) = sim.take_result(r, a).unwrap();
        assert_eq!(
            result,
            Err(TensorError::Overflow {
                index: 0,
                element: ElementType::I32
            })
        );
        // The chunk that did not overflow is exact.
        let Buf::I32(v) = buf else { panic!() };
        assert_eq!(v[4..], [6, 7]);
    }
}

#[test]
fn half_precision_tensors_round_trip() {
    let mut sim = harness::sim(3, 1, 3, 64, lossy(0.05, 0.02), 7);
    let mut rng = Rng::new(11);
    let inputs: Vec<Vec<f32>> = (0..3).map(|_| f32_values(&mut rng, 300)).collect();
    let as_f16: Vec<Vec<half::f16>> = inputs
        .iter()
        .map(|x| {
            x.iter()
                .map(|&v| half::f16::from_f32(v.clamp(-6e4, 6e4)))
                .collect()
        })
        .collect();
    let as_bf16: Vec<Vec<half::bf16>> = inputs
        .iter()
        .map(|x| x.iter().map(|&v| half::bf16::from_f32(v)).collect())
        .collect();
    let (mut a, mut b) = (TensorId(0), TensorId(0));
    for r in 0..3 {
        a = sim.submit(r, Buf::F16(as_f16[r].clone()), Op::Sum);
        b = sim.submit(r, Buf::Bf16(as_bf16[r].clone()), Op::Sum);
    }
    sim.drive(STEPS, |s| s.finished(a) && s.finished(b))
        .unwrap();
    let widen16 = |v: &Vec<Vec<half::f16>>| -> Vec<Vec<f32>> {
        v.iter()
            .map(|x| x.iter().map(|h| h.to_f32()).collect())
            .collect()
    };
    let want16: Vec<half::f16> = reference_f32(&widen16(&as_f16), 64, Op::Sum)
        .into_iter()
        .map(half::f16::from_f32)
        .collect();
    let wide_bf: Vec<Vec<f32>> = as_bf16
        .iter()
        .map(|x| x.iter().map(|h| h.to_f32()).collect())
        .collect();
    let want_bf: Vec<half::bf16> = reference_f32(&wide_bf, 64, Op::Sum)
        .into_iter()
        .map(half::bf16::from_f32)
        .collect();
    for r in 0..3 {
        assert_eq!(
            sim.take_result(r, a).unwrap(),
            (Buf::F16(want16.clone()), Ok(()))
        );
        assert_eq!(
            sim.take_result(r, b).unwrap(),
            (Buf::Bf16(want_bf.clone()), Ok(()))
        );
    }
}

#[test]
fn junk_and_spoofed_packets_are_counted_and_leave_results_exact() {
    let world = 3;
    let mut sim = harness::sim(world, 1, 6, 64, lossy(0.02, 0.01), 8);
    let mut rng = Rng::new(13);
    let inputs: Vec<Vec<i32>> = (0..world)
        .map(|_| i32_values(&mut rng, 3000, world))
        .collect();
    let mut id = TensorId(0);
    for (r, x) in inputs.iter().enumerate() {
        id = sim.submit(r, Buf::I32(x.clone()), Op::Sum);
    }
    let mut injected = 0u64;
    while !sim.finished(id) && injected < 20_000 {
        for _ in 0..20 {
            let kind = rng.between(0, 3);
            let mut junk = vec![0u8; rng.between(0, 300) as usize];
            junk.iter_mut().for_each(|b| *b = rng.next_u64() as u8);
            match kind {
                // Random bytes with a valid version, so they reach deeper checks.
                0 => {
                    if let Some(b) = junk.first_mut() {
                        *b = 1;
                    }
                }
                // A foreign job's contribution.
                1 => junk = contribution_bytes(JOB + 100, 0, 0, 0, 0),
                // A rank beyond the world, in the run's session (from a sender that saw it).
                2 => {
                    let session = sim.switch.job(JOB).map_or(0, |j| j.session());
                    junk = contribution_bytes(JOB, world + 5, 0, 0, session);
                }
                // A Result, which only the switch sends.
                _ => {
                    junk = contribution_bytes(JOB, 0, 1, 0, 0);
                    junk[1] = 0x02;
                }
            }
            sim.inject(0, &junk);
            injected += 1;
        }
        sim.step();
    }
    sim.drive(STEPS, |s| s.finished(id)).unwrap();
    let expect: Vec<i32> = (0..3000)
        .map(|i| inputs.iter().map(|x| x[i]).sum())
        .collect();
    for r in 0..usize::from(world) {
        let (buf, result) = sim.take_result(r, id).unwrap();
        let Buf::I32(got) = buf else { panic!() };
        let bad: Vec<usize> = (0..got.len()).filter(|&i| got[i] != expect[i]).collect();
        assert!(
            bad.is_empty(),
            "rank {r}: {} wrong, first at {:?}, result {result:?}",
            bad.len(),
            bad.first()
        );
        assert_eq!(result, Ok(()));
    }
    let c = sim.switch.counters();
    assert!(c.total_drops() >= injected / 2, "{c:?}");
    assert!(c.drops(DropReason::UnknownJob) > 0 && c.drops(DropReason::UnknownRank) > 0);
    assert!(c.drops(DropReason::Malformed) > 0 && c.drops(DropReason::UnexpectedType) > 0);
}

fn contribution_bytes(job: u16, rank: u16, slot: u16, seq: u32, session: u32) -> Vec<u8> {
    use switchml_core::wire::{DataKind, DataPacket, DataRepr, Flags};
    let repr = DataRepr {
        kind: DataKind::Contribution,
        job,
        rank,
        slot,
        ver: (seq & 1) as u8,
        flags: Flags::default(),
        count: 64,
        seq,
        exp: 200,
        session,
    };
    let mut b = vec![0x55u8; repr.buffer_len()];
    repr.emit(&mut DataPacket::new_unchecked(&mut b[..]));
    b
}

#[test]
fn identical_seeds_replay_identically() {
    let run = |seed| {
        let mut sim = harness::sim(3, 1, 5, 64, lossy(0.1, 0.05), seed);
        let mut rng = Rng::new(seed);
        let mut id = TensorId(0);
        for r in 0..3 {
            id = sim.submit(r, Buf::F32(f32_values(&mut rng, 2000)), Op::Sum);
        }
        sim.drive(STEPS, |s| s.finished(id)).unwrap();
        (
            sim.now,
            sim.stats.sent,
            sim.nodes[0].worker.stats().retransmissions,
        )
    };
    assert_eq!(run(42), run(42));
    assert_ne!(run(42), run(43));
}

#[test]
fn a_wrong_key_is_refused_with_an_error_naming_the_key() {
    let switch = harness::switch_with_job(2, 4, 1);
    let configs = lane_configs(
        switchml_core::worker::Config {
            key: KEY ^ 1,
            ..harness::sim_config(2, 4, 64)
        },
        1,
    );
    let mut sim = Sim::new(switch, configs, Network::PERFECT, 12);
    sim.drive(STEPS, |s| {
        failure(s, 0).is_some() && failure(s, 1).is_some()
    })
    .unwrap();
    for node in 0..2 {
        let err = failure(&sim, node);
        assert_eq!(err, refused(AbortReason::BadKey, 0), "node {node}");
        let text = err.unwrap().to_string();
        assert!(text.contains("SWITCHML_JOB_KEY"), "{text}");
    }
    let job = sim.switch.job(JOB).unwrap();
    assert!(!job.has_run(), "a wrong key opened a run");
    assert!(job.counters().unauthorized >= 2);
    assert_eq!(job.counters().joins, 0);
}

#[test]
fn ranks_that_disagree_on_the_lane_or_chunk_are_refused_naming_the_agreed_value() {
    // Rank 0's Join opens the run (the sim sends in node order on a fixed-delay network):
    // its lane of 4 slots and chunks of 64 are the run's.
    for (window, count, want) in [
        (2, 64, refused(AbortReason::LaneMismatch, 4)),
        (4, 32, refused(AbortReason::ChunkMismatch, 64)),
    ] {
        let switch = harness::switch_with_job(2, 4, 1);
        let mut configs = lane_configs(harness::sim_config(2, 4, 64), 1);
        configs[1].window = window;
        configs[1].count = count;
        let mut sim = Sim::new(switch, configs, Network::PERFECT, 13);
        sim.drive(STEPS, |s| failure(s, 1).is_some()).unwrap();
        assert_eq!(failure(&sim, 1), want);
        assert_eq!(failure(&sim, 0), None, "rank 0 still waits for rank 1");
        let job = sim.switch.job(JOB).unwrap();
        assert_eq!((job.lane_slots(), job.joined().len()), (4, 1));
    }
}

#[test]
fn ranks_that_disagree_on_the_number_of_lanes_are_refused_naming_the_agreed_one() {
    // Issue 11: rank 0 with 2 lanes of 4 slots and rank 1 with 1 lane of 4 slots both
    // joined, split their tensors differently and deadlocked. Rank 0's Joins open the run
    // (the sim sends in node order): its 2 lanes are the run's, and rank 1 is refused.
    let switch = harness::switch_with_job(2, 8, 1);
    let mut configs = lane_configs(harness::sim_config(2, 4, 64), 2);
    configs.truncate(3);
    configs[2].lanes = 1;
    let mut sim = Sim::new(switch, configs, Network::PERFECT, 13);
    sim.drive(STEPS, |s| failure(s, 2).is_some()).unwrap();
    assert_eq!(failure(&sim, 2), refused(AbortReason::LaneCountMismatch, 2));
    for node in 0..2 {
        assert_eq!(failure(&sim, node), None, "rank 0 still waits for rank 1");
    }
    let job = sim.switch.job(JOB).unwrap();
    assert_eq!(job.joined().len(), 1);
}

#[test]
fn a_rank_that_missed_the_restart_abort_learns_that_its_session_ended() {
    let mut sim = harness::sim(3, 1, 4, 64, Network::PERFECT, 14);
    sim.drive(STEPS, |s| s.nodes.iter().all(|n| n.worker.is_running()))
        .unwrap();
    let mut rng = Rng::new(15);
    for r in 0..3 {
        sim.submit(r, Buf::F32(f32_values(&mut rng, 4000)), Op::Sum);
    }
    for _ in 0..6 {
        sim.step();
    }
    // Rank 2 is unreachable while rank 1 restarts: the multicast Abort misses it.
    sim.nodes[2].alive = false;
    let old = sim.switch.job(JOB).unwrap().session();
    sim.restart_rank(1);
    sim.drive(STEPS, |s| failure(s, 0).is_some()).unwrap();
    assert_eq!(failure(&sim, 0), refused(AbortReason::RankRestarted, 1));
    assert!(failure(&sim, 0).unwrap().to_string().contains("restarted"));
    // Rank 2 comes back: its resends are dropped, its Probes (protocol.md §6.1 asks before
    // resending) are told the session ended.
    sim.nodes[2].alive = true;
    sim.drive(STEPS, |s| failure(s, 2).is_some()).unwrap();
    assert_eq!(failure(&sim, 2), refused(AbortReason::SessionEnded, 0));
    // Rank 2 asked at its first timeout; the new process of rank 1 joins again in a while.
    sim.drive(STEPS, |s| s.switch.job(JOB).unwrap().counters().runs == 2)
        .unwrap();
    let job = sim.switch.job(JOB).unwrap();
    // The second run: its session is the opener's nonce plus the one run before.
    assert_eq!(job.counters().runs, 2);
    let new = sim.nonce(1).wrapping_add(1);
    assert_eq!(
        job.session(),
        new,
        "the restarted rank's next Join opened a new run"
    );
    assert_ne!(new, old);
    assert!(
        job.counters().unauthorized > 0,
        "Probes of the ended session"
    );
    assert_eq!(failure(&sim, 1), None, "the new process is still joining");
}

/// A new process of a rank must not take a JoinReply of the run it replaces: here the
/// COMPLETE multicast of the old run, in flight when rank 0 restarts, reaches the new
/// process (its lane's address is the old one's). It used to run in the old session, its
/// own Join ended that run as a restart, and the Abort failed it too. A JoinReply now names
/// the nonce of the Join it answers (protocol.md §3.3), and the new process ignores the old
/// run's: its Join ends the old run (rank 1 fails, told rank 0 restarted), and it waits
/// for the next.
#[test]
fn a_new_process_is_not_misled_by_a_join_reply_of_the_old_run() {
    let mut sim = harness::sim(2, 1, 4, 64, Network::PERFECT, 16);
    // The run is complete at the switch; its COMPLETE multicast is on the way.
    sim.drive(STEPS, |s| s.switch.job(JOB).is_some_and(|j| j.all_joined()))
        .unwrap();
    assert!(!sim.nodes[0].worker.is_running());
    sim.restart_rank(0);
    sim.drive(STEPS, |s| failure(s, 1).is_some()).unwrap();
    assert_eq!(failure(&sim, 1), refused(AbortReason::RankRestarted, 0));
    assert_eq!(failure(&sim, 0), None, "the new process of rank 0 failed");
}

/// The same processes running the job again (a second communicator of the same process,
/// with the same nonce) used to open a run with the session of the one before: the slots
/// still held that session's uses, the new run's use 0 was older than what they held, and
/// every Contribution was dropped as stale. A run's session is now its opener's nonce plus
/// the job's runs before (protocol.md §4.1), so the second run has a session of its own.
#[test]
fn the_same_processes_can_run_the_job_twice() {
    let mut sim = harness::sim(2, 1, 2, 4, Network::PERFECT, 17);
    let mut rng = Rng::new(18);
    for run in 0..2 {
        if run == 1 {
            // New workers of the same processes: same configs, same nonces.
            for node in &mut sim.nodes {
                node.worker = switchml_core::worker::Worker::new(*node.worker.config()).unwrap();
                node.events.clear();
            }
        }
        sim.drive(STEPS, |s| s.nodes.iter().all(|n| n.worker.is_running()))
            .unwrap();
        let mut id = TensorId(0);
        for node in 0..2 {
            id = sim.submit(node, Buf::I32(i32_values(&mut rng, 40, 2)), Op::Sum);
        }
        sim.drive(STEPS, |s| s.finished(id)).unwrap();
        for node in 0..2 {
            assert_eq!(failure(&sim, node), None, "run {run}, node {node}");
            sim.nodes[node].worker.leave();
        }
        let _ = sim.drive(STEPS, |_| false);
        assert!(
            !sim.switch.job(JOB).unwrap().has_run(),
            "the Leaves end the run"
        );
    }
    assert_eq!(sim.switch.job(JOB).unwrap().counters().runs, 2);
}

/// A forger that sends a Join with a wrong key under a joining worker's address (the switch
/// answers to the source) used to make that worker fail with BadKey, knowing nothing but
/// the job id: the refusal carried session 0, which a joining worker took as its own. A
/// refusal of a Join now names that Join's nonce, and a worker takes an Abort only of its
/// own nonce or session, never 0 (protocol.md §3.6), so the forged Join's refusal — and
/// a forged Probe's, of session 0 — leave it joining.
#[test]
fn a_spoofed_join_does_not_fail_a_joining_worker() {
    let mut sim = harness::sim(2, 1, 2, 4, Network::PERFECT, 19);
    // Rank 1 starts late: rank 0 is joining, waiting for it.
    sim.nodes[1].alive = false;
    for _ in 0..5 {
        sim.step();
    }
    let forged = switchml_core::wire::JoinRepr {
        job: JOB,
        rank: 0,
        world: 2,
        slot_lo: 0,
        slot_count: 2,
        count: 4,
        lanes: 1,
        nonce: 99,
        cookie: 0,
        tag: [0; 16],
    }
    .sign(!KEY);
    let probe = switchml_core::wire::ProbeRepr {
        job: JOB,
        rank: 0,
        slot: 0,
        ver: 0,
        seq: 0,
        session: 0,
        flags: switchml_core::wire::ProbeFlags::NONE,
    };
    use switchml_core::wire::Message;
    for msg in [Message::Join(forged), Message::Probe(probe)] {
        let mut bytes = vec![0u8; msg.buffer_len()];
        msg.emit(&mut bytes).unwrap();
        sim.inject(0, &bytes);
    }
    for _ in 0..5 {
        sim.step();
    }
    assert_eq!(failure(&sim, 0), None, "refusals of the forgeries");
    let refused = sim.switch.job(JOB).unwrap().counters().unauthorized;
    assert_eq!(refused, 2, "the switch refused both");
    sim.nodes[1].alive = true;
    let mut rng = Rng::new(20);
    let mut id = TensorId(0);
    for node in 0..2 {
        id = sim.submit(node, Buf::I32(i32_values(&mut rng, 40, 2)), Op::Sum);
    }
    sim.drive(STEPS, |s| s.finished(id)).unwrap();
    assert_eq!(failure(&sim, 0), None);
}
