//! The loud fallback to a host ring all-reduce (issue 14): when the switch cannot serve the
//! job at start or fails mid-job, ranks with a fallback address finish every tensor over
//! TCP among themselves, bit-identical across ranks, and their stats say so; without one,
//! the old errors come back, and a ring peer that is gone is named.

mod common;

use std::net::{SocketAddr, TcpListener};
use std::sync::atomic::Ordering;
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use common::*;
use switchml_switchd::JobSpec;
use switchml_worker::{CommConfig, Communicator, Error, Op};

/// A loopback TCP address nothing listens at (bound and released).
fn free_tcp() -> SocketAddr {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap()
}

/// [`config`] with the fallback on at `at`, timeouts short enough for a test.
fn with_fallback(rank: u16, world: u16, switch: SocketAddr, at: SocketAddr) -> CommConfig {
    config(rank, world, switch)
        .into_builder()
        .fallback(at)
        .fallback_timeout(Duration::from_secs(5))
        .join_timeout(Duration::from_secs(2))
        .build()
}

/// What one rank reduced: each tensor's i32 and f32 results, and its stats.
type Run = (Vec<Vec<i32>>, Vec<Vec<f32>>, switchml_worker::FallbackStats);

/// Reduce `tensors` pairs (i32, f32) of `len` elements; after tensor `signal_after`, rank 0
/// says so on `tx`.
fn reduce(
    comm: &Communicator,
    tensors: u64,
    len: usize,
    signal: Option<(u64, mpsc::Sender<()>)>,
) -> Result<Run, Error> {
    let (rank, world) = (comm.rank(), comm.world_size());
    let (mut ints_out, mut floats_out) = (Vec::new(), Vec::new());
    for t in 0..tensors {
        let mut i = ints(rank, world, len, t);
        comm.allreduce(&mut i, Op::Sum)?;
        let mut f = floats(rank, len, t);
        comm.allreduce(&mut f, Op::Sum)?;
        ints_out.push(i);
        floats_out.push(f);
        if let Some((after, tx)) = &signal {
            if t == *after && rank == 0 {
                let _ = tx.send(());
            }
        }
    }
    Ok((ints_out, floats_out, comm.fallback_stats()))
}

/// Stop `sw` when the returned sender says so (or when every sender is gone); the thread
/// returns the switch's final counters.
fn stop_on_signal(
    sw: switchml_switchd::RunningSwitch,
) -> (
    mpsc::Sender<()>,
    std::thread::JoinHandle<switchml_switchd::DaemonCounters>,
) {
    let (tx, rx) = mpsc::channel();
    let stopper = std::thread::spawn(move || {
        let _ = rx.recv_timeout(Duration::from_secs(20));
        sw.stop().unwrap()
    });
    (tx, stopper)
}

/// Every rank's results are the exact i32 sums and f32 sums within float tolerance of the
/// true sum, and the f32 results are the same bits at every rank.
fn check_results(runs: &[Run], world: u16, len: usize) {
    for t in 0..runs[0].0.len() {
        let exact = int_sum(world, len, t as u64);
        let inputs: Vec<Vec<f32>> = (0..world).map(|r| floats(r, len, t as u64)).collect();
        let truth = f64_sum(&inputs);
        for (rank, run) in runs.iter().enumerate() {
            assert_eq!(run.0[t], exact, "rank {rank} tensor {t}: i32 sum");
            let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            assert_eq!(
                bits(&run.1[t]),
                bits(&runs[0].1[t]),
                "rank {rank} tensor {t}: bits"
            );
            for (i, (&got, &want)) in run.1[t].iter().zip(&truth).enumerate() {
                let bound = sum_bound(world, 100.0, want) + 1e-4 * want.abs() + 1e-5;
                assert!(
                    (f64::from(got) - want).abs() <= bound,
                    "tensor {t}[{i}]: {got} vs {want}"
                );
            }
        }
    }
}

fn start_fallback(switch: SwitchPipeline, jobs: &[JobSpec], world: u16, why: &str) {
    let sw = switch_serving(switch, jobs);
    let at = free_tcp();
    let len = 3000;
    let runs = per_rank(
        world,
        |r| with_fallback(r, world, sw.addr(), at),
        |c| reduce(c, 3, len, None),
    );
    let runs: Vec<Run> = runs
        .into_iter()
        .map(|r| r.expect("connect").expect("every tensor"))
        .collect();
    check_results(&runs, world, len);
    for (rank, (.., stats)) in runs.iter().enumerate() {
        assert!(stats.enabled && stats.active, "rank {rank}: {stats:?}");
        assert_eq!(
            (stats.fallbacks, stats.tensors, stats.adopted),
            (1, 6, 0),
            "rank {rank}"
        );
        assert_eq!(stats.bytes, 6 * 4 * len as u64);
        let reason = stats.reason.as_deref().unwrap_or_default();
        assert!(reason.contains(why), "rank {rank}: {reason}");
    }
    sw.stop().unwrap();
}

#[test]
fn an_unregistered_job_falls_back_at_start() {
    let other = JobSpec {
        id: JOB + 1,
        ..job_spec(3, 256)
    };
    start_fallback(
        SwitchPipeline::Reference,
        &[other],
        3,
        "does not know this job",
    );
}

#[test]
fn a_job_the_pool_cannot_hold_falls_back_at_start() {
    // The workers drive 2 lanes × 16 slots; the job has 8.
    start_fallback(
        SwitchPipeline::Reference,
        &[job_spec(2, 8)],
        2,
        "slot range",
    );
}

#[test]
fn an_unreachable_switch_falls_back_at_start() {
    // Bound and released: nothing listens at this UDP port.
    let nowhere = std::net::UdpSocket::bind("127.0.0.1:0")
        .and_then(|s| s.local_addr())
        .unwrap();
    let at = free_tcp();
    let runs = per_rank(
        2,
        |r| with_fallback(r, 2, nowhere, at),
        |c| reduce(c, 1, 500, None),
    );
    let runs: Vec<Run> = runs
        .into_iter()
        .map(|r| r.expect("connect").expect("every tensor"))
        .collect();
    check_results(&runs, 2, 500);
    for (.., stats) in &runs {
        let reason = stats.reason.as_deref().unwrap_or_default();
        assert!(
            reason.contains(&format!("nothing listens at {nowhere}")),
            "{reason}"
        );
    }
}

#[test]
fn a_switch_stopped_mid_job_hands_the_tensor_in_flight_and_the_rest_to_the_ring() {
    let (world, len, tensors) = (2, 40_000, 12);
    let sw = switch(SwitchPipeline::Reference, world, 256, 0.0, 0);
    let at = free_tcp();
    let addr = sw.addr();
    let (tx, stopper) = stop_on_signal(sw);
    let runs = per_rank(
        world,
        |r| with_fallback(r, world, addr, at),
        |c| reduce(c, tensors, len, Some((3, tx.clone()))),
    );
    drop(tx);
    let counters = stopper.join().unwrap();
    let runs: Vec<Run> = runs
        .into_iter()
        .map(|r| r.expect("connect").expect("every tensor"))
        .collect();
    check_results(&runs, world, len);
    for (rank, (.., stats)) in runs.iter().enumerate() {
        eprintln!("rank {rank}: {stats:?}");
        assert_eq!(stats.fallbacks, 1, "rank {rank}: {stats:?}");
        // Tensors 0..=3 (8 all-reduces) went through the switch at rank 0 at least.
        assert!(
            (1..=2 * tensors - 8).contains(&stats.tensors),
            "rank {rank}: {stats:?}"
        );
        assert!(stats.reason.is_some());
    }
    let job = counters.job(JOB).expect("the job's counters");
    assert!(
        job.switch.completions > 0,
        "the switch did serve the first tensors"
    );
}

#[test]
fn without_a_fallback_address_the_old_errors_come_back_and_nothing_hangs() {
    let other = JobSpec {
        id: JOB + 1,
        ..job_spec(2, 256)
    };
    let sw = switch_serving(SwitchPipeline::Reference, &[other]);
    let outcomes = per_rank(2, |r| config(r, 2, sw.addr()), |_| ());
    for o in outcomes {
        let e = o.expect_err("no such job");
        assert!(e.to_string().contains("does not know this job"), "{e}");
    }
    sw.stop().unwrap();
    // Mid-job: the switch stops; the tensor fails with an error, within its stall detection.
    let sw = switch(SwitchPipeline::Reference, 2, 256, 0.0, 0);
    let addr = sw.addr();
    let (tx, stopper) = stop_on_signal(sw);
    let started = Instant::now();
    let outcomes = per_rank(
        2,
        |r| config(r, 2, addr),
        |c| reduce(c, 50, 40_000, Some((1, tx.clone()))),
    );
    drop(tx);
    stopper.join().unwrap();
    for o in outcomes {
        let e = o.expect("connect").expect_err("the switch is gone");
        assert!(matches!(e, Error::Worker { .. }), "{e}");
    }
    assert!(started.elapsed() < Duration::from_secs(30));
}

#[test]
fn a_ring_peer_that_is_gone_or_silent_is_named() {
    let other = JobSpec {
        id: JOB + 1,
        ..job_spec(2, 256)
    };
    let sw = switch_serving(SwitchPipeline::Reference, &[other]);
    let quick = |r, at| {
        with_fallback(r, 2, sw.addr(), at)
            .into_builder()
            .fallback_timeout(Duration::from_millis(800))
            .build()
    };
    // Rank 1 never starts: rank 0's rendezvous names it.
    let e = Communicator::connect(&quick(0, free_tcp()))
        .err()
        .expect("alone");
    assert!(
        matches!(e, Error::Timeout { .. }) && e.to_string().contains("ranks [1]"),
        "{e}"
    );
    // Rank 1 closes its communicator; rank 1 hangs: rank 0's tensor fails naming rank 1.
    for hang in [false, true] {
        let at = free_tcp();
        let outcomes = per_rank(
            2,
            |r| quick(r, at),
            |c| {
                if c.rank() == 1 {
                    if hang {
                        std::thread::sleep(Duration::from_secs(2));
                    }
                    return Ok(());
                }
                c.allreduce(&mut [1i32; 100], Op::Sum)
            },
        );
        let e = outcomes[0]
            .clone()
            .expect("connect")
            .expect_err("rank 1 is not there");
        let text = e.to_string();
        assert!(text.contains("rank 1"), "{text}");
        assert_eq!(matches!(e, Error::Timeout { .. }), hang, "{text}");
    }
    sw.stop().unwrap();
}

/// Each rank's i32 results (tensor `t` from seed `t`) are the exact sums and it fell back
/// once; return each rank's stats.
fn exact_after_one_fallback(
    runs: Vec<Result<Result<IntRun, Error>, Error>>,
    world: u16,
    len: usize,
) -> Vec<switchml_worker::FallbackStats> {
    let mut all = Vec::new();
    for (rank, run) in runs.into_iter().enumerate() {
        let (out, stats) = run.expect("connect").expect("every tensor");
        for (t, got) in out.iter().enumerate() {
            assert_eq!(
                got,
                &int_sum(world, len, t as u64),
                "rank {rank} tensor {t}"
            );
        }
        assert_eq!(stats.fallbacks, 1, "rank {rank}: {stats:?}");
        all.push(stats);
    }
    all
}

/// One rank's i32 results and stats.
type IntRun = (Vec<Vec<i32>>, switchml_worker::FallbackStats);

#[test]
fn tensors_in_flight_with_allreduce_async_are_finished_by_the_ring() {
    let (world, len, groups, depth) = (2u16, 20_000, 6u64, 4u64);
    let sw = switch(SwitchPipeline::Reference, world, 256, 0.0, 0);
    let at = free_tcp();
    let addr = sw.addr();
    let (tx, stopper) = stop_on_signal(sw);
    let runs = per_rank(
        world,
        |r| with_fallback(r, world, addr, at),
        |c| {
            let mut out = Vec::new();
            for g in 0..groups {
                // Rank 0 says when to stop with a group in flight.
                let pending: Vec<_> = (0..depth)
                    .map(|k| c.allreduce_async(ints(c.rank(), world, len, g * depth + k), Op::Sum))
                    .collect();
                if g == 2 && c.rank() == 0 {
                    let _ = tx.send(());
                }
                for p in pending {
                    out.push(p.wait()?);
                }
            }
            Ok::<_, Error>((out, c.fallback_stats()))
        },
    );
    drop(tx);
    stopper.join().unwrap();
    for (rank, stats) in exact_after_one_fallback(runs, world, len)
        .iter()
        .enumerate()
    {
        assert!(
            stats.tensors >= depth && stats.tensors <= (groups - 2) * depth,
            "rank {rank}: {stats:?}"
        );
    }
}

/// Rank 1 loses every Result of tensor 3 (a relay mutes the switch's answers to it from
/// then on) while rank 0 gets them; then the switch stops. Rank 0 fails on tensor 4, rank
/// 1 on tensor 3: the ranks agree that tensor 3 takes rank 0's switch result, and every
/// later tensor goes over the ring.
#[test]
fn a_tensor_one_rank_finished_through_the_switch_is_adopted_by_the_others() {
    // i32 tensors of one chunk a slot: no use waits on a Result rank 1 lost.
    let (world, len, tensors) = (2u16, 1000, 8u64);
    let sw = switch(SwitchPipeline::Reference, world, 256, 0.0, 0);
    let relay = common::relay::Relay::start(sw.addr());
    let at = free_tcp();
    let (addr, mute) = (sw.addr(), Arc::clone(&relay.mute));
    let (tx, stopper) = stop_on_signal(sw);
    let runs = per_rank(
        world,
        |r| {
            with_fallback(r, world, addr, at)
                .into_builder()
                .switch(if r == 1 { relay.addr } else { addr })
                .build()
        },
        |c| {
            let mut out = Vec::new();
            for t in 0..tensors {
                if t == 3 && c.rank() == 1 {
                    mute.store(true, Ordering::SeqCst);
                }
                let mut x = ints(c.rank(), world, len, t);
                c.allreduce(&mut x, Op::Sum)?;
                if t == 3 && c.rank() == 0 {
                    let _ = tx.send(());
                }
                out.push(x);
            }
            Ok::<_, Error>((out, c.fallback_stats()))
        },
    );
    drop(tx);
    stopper.join().unwrap();
    let stats = exact_after_one_fallback(runs, world, len);
    // Tensors 4..8 over the ring at both ranks; 3 adopted by rank 1.
    for (rank, stats) in stats.iter().enumerate() {
        assert_eq!(stats.tensors, tensors - 4, "rank {rank}: {stats:?}");
    }
    assert_eq!(stats.iter().map(|s| s.adopted).collect::<Vec<_>>(), [0, 1]);
}
