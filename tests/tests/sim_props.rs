//! Property tests on the deterministic simulator: N workers, the reference switch and a
//! seeded network with loss up to 10%, duplication and reordering. Together these run well
//! over 1,000 seeded cases in the normal test run.

use proptest::prelude::*;
use proptest::test_runner::{FileFailurePersistence, TestCaseError};
use switchml_core::quant::Op;
use switchml_core::switch::DropReason;
use switchml_core::wire::{
    AbortReason, AbortRepr, DataKind, DataRepr, Flags, JoinRepr, LeaveRepr, Message, ProbeRepr,
};
use switchml_core::worker::{Event, TensorId, WorkerError};
use switchml_tests::harness::{
    self, f32_values, i32_values, lossy, reference_f32, SimSwitch, JOB, KEY,
};
use switchml_tests::sim::{Buf, Rng, Sim};

const STEPS: usize = 2_000_000;

/// Submit random int32 tensors on every lane, drive until every lane is done, and check
/// that each lane got the exact sum over the ranks of the same lane's inputs.
fn all_reduce_exact(
    sim: &mut Sim<SimSwitch>,
    rng: &mut Rng,
    len: usize,
) -> Result<(), TestCaseError> {
    let world = sim.nodes.iter().map(|n| n.rank).max().map_or(0, |r| r + 1);
    let inputs: Vec<Vec<i32>> = (0..sim.nodes.len())
        .map(|_| i32_values(rng, len, world))
        .collect();
    let mut id = TensorId(0);
    for (node, x) in inputs.iter().enumerate() {
        id = sim.submit(node, Buf::I32(x.clone()), Op::Sum);
    }
    sim.drive(STEPS, |s| s.finished(id)).unwrap();
    for node in 0..sim.nodes.len() {
        let lane = sim.nodes[node].worker.config().slot_lo;
        let peers: Vec<&Vec<i32>> = (0..sim.nodes.len())
            .filter(|&n| sim.nodes[n].worker.config().slot_lo == lane)
            .map(|n| &inputs[n])
            .collect();
        let expect: Vec<i32> = (0..len).map(|i| peers.iter().map(|x| x[i]).sum()).collect();
        let (buf, result) = sim.take_result(node, id).expect("lane finished");
        prop_assert_eq!(result, Ok(()), "node {}", node);
        prop_assert_eq!(buf, Buf::I32(expect), "node {}", node);
    }
    Ok(())
}

/// Return the error node `node` failed with, if it did.
fn failure(sim: &Sim<SimSwitch>, node: usize) -> Option<WorkerError> {
    sim.nodes[node].events.iter().find_map(|e| match e {
        Event::Failed(err) => Some(*err),
        _ => None,
    })
}

fn emit(msg: &Message) -> Vec<u8> {
    let mut b = vec![0u8; msg.buffer_len()];
    msg.emit(&mut b).expect("a valid message");
    b
}

/// A message from an off-path forger: it knows the job id and the world, not the key and
/// not the session, so it guesses them (any value but the nonces of the job's processes,
/// which the sessions are; 0 included). The layout is always valid.
fn forged(rng: &mut Rng, world: u16, nonces: &[u32]) -> Vec<u8> {
    let session = loop {
        let s = if rng.between(0, 3) == 0 {
            0
        } else {
            rng.next_u64() as u32
        };
        if !nonces.contains(&s) {
            break s;
        }
    };
    let rank = rng.between(0, u64::from(world)) as u16;
    let slot = rng.between(0, 16) as u16;
    let seq = rng.between(0, 3) as u32;
    match rng.between(0, 4) {
        0 => {
            let values: Vec<u8> = (0..rng.between(0, 8) * 4)
                .map(|_| rng.next_u64() as u8)
                .collect();
            let repr = DataRepr {
                kind: DataKind::Contribution,
                job: JOB,
                rank,
                slot,
                ver: (seq & 1) as u8,
                flags: Flags::default(),
                count: (values.len() / 4) as u16,
                seq,
                exp: rng.next_u64() as u8,
                session,
            };
            emit(&Message::Data(repr, &values))
        }
        1 => emit(&Message::Abort(AbortRepr {
            job: JOB,
            rank,
            reason: AbortReason::WorkerFailed,
            detail: 0xFFFF,
            epoch: 0,
            session,
        })),
        2 => emit(&Message::Leave(LeaveRepr {
            job: JOB,
            rank,
            session,
        })),
        3 => emit(&Message::Probe(ProbeRepr {
            job: JOB,
            rank,
            slot,
            ver: (seq & 1) as u8,
            seq,
            session,
            flags: switchml_core::wire::ProbeFlags::NONE,
        })),
        _ => {
            // Key 0 is the guessable one.
            let key = loop {
                let k = if rng.between(0, 3) == 0 {
                    0
                } else {
                    rng.next_u64()
                };
                if k != KEY {
                    break k;
                }
            };
            emit(&Message::Join(
                JoinRepr {
                    job: JOB,
                    rank,
                    world,
                    slot_lo: 0,
                    slot_count: 1,
                    count: 1,
                    lanes: 1,
                    nonce: (rng.next_u64() as u32).max(1),
                    cookie: 0,
                    tag: [0; 16],
                }
                .sign(key),
            ))
        }
    }
}

fn counts() -> impl Strategy<Value = u16> {
    prop::sample::select(vec![1u16, 5, 64, 256])
}

/// `cases` cases, failures kept in `tests/proptest-regressions/sim_props.txt`.
fn config(cases: u32) -> ProptestConfig {
    ProptestConfig {
        cases,
        failure_persistence: Some(Box::new(FileFailurePersistence::Direct(
            "tests/proptest-regressions/sim_props.txt",
        ))),
        ..ProptestConfig::default()
    }
}

proptest! {
    #![proptest_config(config(350))]

    /// int32 results are the exact sum at every rank, for consecutive tensors.
    #[test]
    fn int32_results_are_exact_sums(
        seed in any::<u64>(), world in 1u16..=6, window in 1u16..=12, count in counts(),
        len in 0usize..1200, drop in 0.0..0.10f64, dup in 0.0..0.05f64, tensors in 1usize..=3,
    ) {
        let mut rng = Rng::new(seed);
        let mut sim = harness::sim(world, 1, window, count, lossy(drop, dup), seed);
        for _ in 0..tensors {
            let inputs: Vec<Vec<i32>> = (0..world).map(|_| i32_values(&mut rng, len, world)).collect();
            let expect: Vec<i32> = (0..len)
                .map(|i| inputs.iter().map(|x| i64::from(x[i])).sum::<i64>() as i32)
                .collect();
            let mut id = TensorId(0);
            for (r, x) in inputs.iter().enumerate() {
                id = sim.submit(r, Buf::I32(x.clone()), Op::Sum);
            }
            sim.drive(STEPS, |s| s.finished(id)).unwrap();
            for r in 0..usize::from(world) {
                let (buf, result) = sim.take_result(r, id).expect("rank finished");
                prop_assert_eq!(result, Ok(()));
                prop_assert_eq!(&buf, &Buf::I32(expect.clone()), "rank {}", r);
            }
        }
        prop_assert_eq!(sim.switch.counters().drops(switchml_core::switch::DropReason::Malformed), 0);
    }

    /// f32 results equal the host-side quantized reference bit for bit, and are within the
    /// documented bound of the f64 sum.
    #[test]
    fn f32_results_match_the_reference_bit_for_bit(
        seed in any::<u64>(), world in 1u16..=8, window in 1u16..=12, count in counts(),
        len in 0usize..1200, drop in 0.0..0.10f64, dup in 0.0..0.05f64, average in any::<bool>(),
    ) {
        let op = if average { Op::Average } else { Op::Sum };
        let mut rng = Rng::new(seed ^ 0xF32);
        let mut sim = harness::sim(world, 1, window, count, lossy(drop, dup), seed);
        let inputs: Vec<Vec<f32>> = (0..world).map(|_| f32_values(&mut rng, len)).collect();
        let expect = reference_f32(&inputs, usize::from(count), op);
        let mut id = TensorId(0);
        for (r, x) in inputs.iter().enumerate() {
            id = sim.submit(r, Buf::F32(x.clone()), op);
        }
        sim.drive(STEPS, |s| s.finished(id)).unwrap();
        for r in 0..usize::from(world) {
            let (buf, result) = sim.take_result(r, id).expect("rank finished");
            prop_assert_eq!(result, Ok(()));
            let Buf::F32(got) = buf else { panic!("type changed") };
            for i in 0..len {
                prop_assert_eq!(got[i].to_bits(), expect[i].to_bits(), "rank {} element {}", r, i);
                let exact: f64 = inputs.iter().map(|x| f64::from(x[i])).sum::<f64>()
                    / if average { f64::from(world) } else { 1.0 };
                let bound = harness::error_bound(&inputs, usize::from(count), i, exact, op);
                prop_assert!((f64::from(got[i]) - exact).abs() <= bound,
                    "element {}: got {} exact {} bound {}", i, got[i], exact, bound);
            }
        }
    }

    /// Several tensors queued at once, of different types and sizes, each come back right:
    /// the slot/version sequence continues across tensors and no result is mistaken for
    /// another tensor's.
    #[test]
    fn queued_tensors_of_mixed_types_keep_their_identity(
        seed in any::<u64>(), world in 2u16..=5, window in 1u16..=8, count in counts(),
        lens in prop::collection::vec(0usize..700, 2..=5), drop in 0.0..0.10f64, dup in 0.0..0.05f64,
    ) {
        let mut rng = Rng::new(seed.rotate_left(7));
        let mut sim = harness::sim(world, 1, window, count, lossy(drop, dup), seed);
        let mut expected = Vec::new();
        for (t, &len) in lens.iter().enumerate() {
            let mut id = TensorId(0);
            if t % 2 == 0 {
                let inputs: Vec<Vec<f32>> = (0..world).map(|_| f32_values(&mut rng, len)).collect();
                let expect = Buf::F32(reference_f32(&inputs, usize::from(count), Op::Sum));
                for (r, x) in inputs.into_iter().enumerate() {
                    id = sim.submit(r, Buf::F32(x), Op::Sum);
                }
                expected.push((id, expect));
            } else {
                let inputs: Vec<Vec<i32>> = (0..world).map(|_| i32_values(&mut rng, len, world)).collect();
                let expect = Buf::I32((0..len).map(|i| inputs.iter().map(|x| x[i]).sum()).collect());
                for (r, x) in inputs.into_iter().enumerate() {
                    id = sim.submit(r, Buf::I32(x), Op::Sum);
                }
                expected.push((id, expect));
            }
        }
        let last = expected.last().map(|e| e.0).unwrap();
        sim.drive(STEPS, |s| expected.iter().all(|(id, _)| s.finished(*id)) && s.finished(last)).unwrap();
        for r in 0..usize::from(world) {
            for (id, expect) in &expected {
                let (buf, result) = sim.take_result(r, *id).expect("rank finished");
                prop_assert_eq!(result, Ok(()));
                prop_assert_eq!(&buf, expect, "rank {} tensor {:?}", r, id);
            }
        }
    }

    /// Two lanes per rank, each driving its own slot range and its half of the tensor.
    #[test]
    fn lanes_split_slots_and_tensors(
        seed in any::<u64>(), world in 2u16..=4, window in 1u16..=6, count in counts(),
        len in 0usize..900, drop in 0.0..0.08f64,
    ) {
        let lanes = 2u16;
        let mut rng = Rng::new(seed ^ 0x1a4e);
        let mut sim = harness::sim(world, lanes, window, count, lossy(drop, 0.01), seed);
        let half = len / 2;
        let inputs: Vec<Vec<f32>> = (0..world).map(|_| f32_values(&mut rng, len)).collect();
        let mut id = TensorId(0);
        let mut expect = Vec::new();
        for lane in 0..usize::from(lanes) {
            let (lo, hi) = if lane == 0 { (0, half) } else { (half, len) };
            let parts: Vec<Vec<f32>> = inputs.iter().map(|x| x[lo..hi].to_vec()).collect();
            expect.push(reference_f32(&parts, usize::from(count), Op::Sum));
            for (r, part) in parts.iter().enumerate() {
                id = sim.submit(r * usize::from(lanes) + lane, Buf::F32(part.clone()), Op::Sum);
            }
        }
        sim.drive(STEPS, |s| s.finished(id)).unwrap();
        for node in 0..sim.nodes.len() {
            let lane = node % usize::from(lanes);
            let (buf, result) = sim.take_result(node, id).expect("lane finished");
            prop_assert_eq!(result, Ok(()));
            prop_assert_eq!(buf, Buf::F32(expect[lane].clone()));
        }
    }
}

proptest! {
    #![proptest_config(config(64))]

    /// A job runs again: once every lane of every rank finished and left, new processes
    /// (new nonces) of every rank all-reduce on the same job id, slots and switch, with
    /// exact int32 sums, on a lossy network. The switch counts two runs whether or not
    /// every Leave arrived (a lost one leaves the old run open; the first new process's
    /// Join then ends it as a restart).
    #[test]
    fn a_job_runs_again_with_new_processes(
        seed in any::<u64>(), world in 1u16..=4, lanes in 1u16..=2, window in 1u16..=6,
        count in counts(), len in 0usize..600, drop in 0.0..0.08f64, dup in 0.0..0.03f64,
    ) {
        let mut rng = Rng::new(seed ^ 0x2e2u64);
        let mut sim = harness::sim(world, lanes, window, count, lossy(drop, dup), seed);
        let first: Vec<u32> = (0..sim.nodes.len()).map(|n| sim.nonce(n)).collect();
        sim.drive(STEPS, |s| s.nodes.iter().all(|n| n.worker.is_running())).unwrap();
        all_reduce_exact(&mut sim, &mut rng, len)?;
        for node in &mut sim.nodes {
            node.worker.leave();
            prop_assert!(!node.worker.is_running(), "rank {} did not leave", node.rank);
        }
        // Everything in flight lands: the Leaves, and late copies of the last Results.
        prop_assert_eq!(sim.drive(STEPS, |_| false), Err(switchml_tests::sim::SimError::Quiescent));
        for rank in 0..world {
            sim.restart_rank(rank);
        }
        for (n, old) in first.iter().enumerate() {
            prop_assert_ne!(sim.nonce(n), *old);
        }
        sim.drive(STEPS, |s| s.nodes.iter().all(|n| n.worker.is_running())).unwrap();
        all_reduce_exact(&mut sim, &mut rng, len)?;
        let job = sim.switch.job(JOB).unwrap();
        prop_assert_eq!(job.counters().runs, 2);
        prop_assert!(first.iter().all(|&n| n != job.session()), "the new run has an old session");
    }

    /// An off-path forger that sends Contributions, Aborts, Leaves, Probes and Joins of the
    /// job with guessed sessions and keys (valid layouts), from the first Join to the last
    /// Result, never changes a result and never fails a worker; the switch refuses every
    /// forged message as unauthorized, and nothing else. With `spoof`, once every rank runs,
    /// the forger also uses the lanes' own addresses, so the switch's refusals go to them.
    #[test]
    fn a_forger_without_key_or_session_changes_nothing(
        seed in any::<u64>(), world in 1u16..=4, window in 1u16..=6, count in counts(),
        len in 1usize..800, drop in 0.0..0.05f64, rate in 1u64..=6, spoof in any::<bool>(),
    ) {
        let mut rng = Rng::new(seed ^ 0xf0f9e);
        let mut sim = harness::sim(world, 1, window, count, lossy(drop, 0.01), seed);
        let nonces: Vec<u32> = (0..sim.nodes.len()).map(|n| sim.nonce(n)).collect();
        let inputs: Vec<Vec<i32>> = (0..world).map(|_| i32_values(&mut rng, len, world)).collect();
        let expect: Vec<i32> = (0..len).map(|i| inputs.iter().map(|x| x[i]).sum()).collect();
        let mut id = TensorId(0);
        for (r, x) in inputs.iter().enumerate() {
            id = sim.submit(r, Buf::I32(x.clone()), Op::Sum);
        }
        let mut forged_sent = 0u64;
        // At least one forgery a step: a job of one rank can finish in a few steps.
        while !sim.finished(id) && forged_sent < 50_000 {
            for _ in 0..rng.between(1, rate) {
                let bytes = forged(&mut rng, world, &nonces);
                let running = sim.nodes.iter().all(|n| n.worker.is_running());
                if spoof && running && rng.between(0, 1) == 0 {
                    let node = rng.between(0, u64::from(world) - 1) as usize;
                    sim.inject(node, &bytes);
                } else {
                    sim.inject_from_outside(&bytes);
                }
                forged_sent += 1;
            }
            if !sim.step() {
                break;
            }
        }
        sim.drive(STEPS, |s| s.finished(id)).unwrap();
        for r in 0..usize::from(world) {
            prop_assert_eq!(failure(&sim, r), None, "rank {}", r);
            let (buf, result) = sim.take_result(r, id).expect("rank finished");
            prop_assert_eq!(result, Ok(()));
            prop_assert_eq!(&buf, &Buf::I32(expect.clone()), "rank {}", r);
        }
        // Let the last forgeries land, then count: the ranks leave (a lane in a run keeps
        // alive, protocol.md §4.3, so the sim goes quiet only once they have left).
        for n in &mut sim.nodes {
            n.worker.leave();
        }
        let _ = sim.drive(STEPS, |_| false);
        let job = sim.switch.job(JOB).unwrap();
        prop_assert!(forged_sent > 0);
        // Every forgery delivered is refused as unauthorized. Besides them, a lane's own
        // keep-alive Probe (§4.3) still in flight when its Leave ended the run is refused
        // too (a refused Probe counts as unauthorized, §3.8): at most one a lane.
        let unauthorized = job.counters().unauthorized;
        prop_assert!(unauthorized >= sim.stats.injected_delivered);
        prop_assert!(
            unauthorized - sim.stats.injected_delivered <= u64::from(world),
            "{} refused, {} forgeries delivered", unauthorized, sim.stats.injected_delivered
        );
        prop_assert_eq!(job.counters().runs, 1);
        prop_assert_eq!(job.counters().aborts, 0);
    }

    /// A rank restarted while the job runs (a new process, a new nonce, joining again) ends
    /// the run: every lane of every other rank fails with an error naming RankRestarted and
    /// the rank — not a timeout, not a stall — or, if the network reordered the answer to
    /// its own Probe (protocol.md §6.1) ahead of the switch's multicast Abort, with
    /// `SessionEnded`. The network reorders but loses nothing: the switch says so once (a
    /// lane that misses it learns `SessionEnded` from its probe, and a JoinReply of the old
    /// run can mislead the new process: both in `sim_failures.rs`).
    #[test]
    fn a_restarted_rank_makes_every_other_rank_fail_naming_it(
        seed in any::<u64>(), world in 2u16..=5, lanes in 1u16..=2, window in 1u16..=6,
        count in counts(), len in 1usize..2000, steps in 0usize..300, pick in any::<u16>(),
    ) {
        let mut rng = Rng::new(seed ^ 0x2e57a27);
        let mut sim = harness::sim(world, lanes, window, count, lossy(0.0, 0.0), seed);
        sim.drive(STEPS, |s| s.nodes.iter().all(|n| n.worker.is_running())).unwrap();
        for node in 0..sim.nodes.len() {
            sim.submit(node, Buf::F32(f32_values(&mut rng, len)), Op::Sum);
        }
        for _ in 0..steps {
            sim.step();
        }
        let rank = pick % world;
        sim.restart_rank(rank);
        let others: Vec<usize> = (0..sim.nodes.len()).filter(|&n| sim.nodes[n].rank != rank).collect();
        sim.drive(STEPS, |s| others.iter().all(|&n| failure(s, n).is_some())).unwrap();
        let named = WorkerError::Refused { reason: AbortReason::RankRestarted, detail: rank };
        let overtaken = WorkerError::Refused { reason: AbortReason::SessionEnded, detail: 0 };
        for &n in &others {
            let got = failure(&sim, n);
            prop_assert!(got == Some(named) || got == Some(overtaken), "node {}: {:?}", n, got);
        }
        prop_assert_eq!(sim.switch.counters().drops(DropReason::Malformed), 0);
    }
}
