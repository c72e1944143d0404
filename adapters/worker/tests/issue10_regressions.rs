//! Regression tests for issue 10 (who may take part in a job), end to end through a real
//! switch daemon and real communicators on loopback. Each test is named after the defect it
//! closes and says why it failed before the job key, run sessions and the run lifecycle
//! (protocol.md §4.1). Before, the daemon admitted by source address: a lane's address was
//! learned from any Join and locked once every rank had joined, and an Abort was passed on
//! if it came from a learned lane. The stranger here is `common/attacker.rs`: no key, no
//! session, any loopback address.

mod common;

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use common::attacker::{Attacker, Budget, Via};
use common::doctor::{status, status_when};
use common::fate::Target;
use common::forge::{bytes_of, contribution, Forger};
use common::hold::{spawn_ranks, Hold};
use common::proc_udp;
use common::*;
use switchml_core::switch::DropReason;
use switchml_core::wire::{AbortReason, AbortRepr, JoinRepr, Message};
use switchml_core::worker::WorkerError;
use switchml_switchd::JobSpec;
use switchml_worker::{CommConfig, Communicator, Error, Op, Pending};

/// int32 values per all-reduce.
const LEN: usize = 3000;

/// All-reduce round `round`'s int32 input and check the exact sum.
fn exact(comm: &Communicator, round: u64) -> Result<(), String> {
    let (r, world) = (comm.rank(), comm.world_size());
    let mut x = ints(r, world, LEN, round);
    comm.allreduce(&mut x, Op::Sum)
        .map_err(|e| format!("rank {r} round {round}: {e}"))?;
    if x != int_sum(world, LEN, round) {
        return Err(format!("rank {r} round {round}: wrong sum"));
    }
    Ok(())
}

/// A stranger to the switch at `addr`, attacking `targets`.
fn stranger(addr: SocketAddr, targets: &[Target], seed: u64) -> Attacker {
    Attacker::new(addr, targets, Forger::new(targets, seed, Vec::new()))
}

/// A Join of `rank` of `t` for `slot_count` slots from `slot_lo`, chunks of `count`, with
/// `key`.
fn join(t: &Target, rank: u16, slot_lo: u16, slot_count: u16, count: u16, key: u64) -> Vec<u8> {
    bytes_of(&Message::Join(
        JoinRepr {
            job: t.job,
            rank,
            world: t.world,
            slot_lo,
            slot_count,
            count,
            lanes: 4,
            nonce: 0x5712_A45E,
            cookie: 0,
            tag: [0; 16],
        }
        .sign(key),
    ))
}

/// An Abort from `rank` of `t` that says it gave up, in `session`.
fn abort(t: &Target, rank: u16, session: u32) -> Vec<u8> {
    bytes_of(&Message::Abort(AbortRepr {
        job: t.job,
        rank,
        reason: AbortReason::WorkerFailed,
        detail: 1,
        epoch: 0,
        session,
    }))
}

/// Run `world` ranks of `spec` at `addr`: each all-reduces round 0, waits at `pause` until
/// the test has done `middle`, then all-reduces rounds 1 to 3. Return what each rank saw and
/// what `middle` returned.
fn around<R>(
    spec: &JobSpec,
    addr: SocketAddr,
    middle: impl FnOnce() -> R,
) -> (Vec<Result<(), String>>, R) {
    let pause = Hold::default();
    std::thread::scope(|s| {
        let ranks = s.spawn(|| {
            per_rank(
                spec.world,
                |r| job_config(spec, r, addr),
                |comm| {
                    let first = exact(comm, 0);
                    pause.arrive();
                    first?;
                    (1..=3).try_for_each(|round| exact(comm, round))
                },
            )
        });
        pause.wait_for(usize::from(spec.world), Duration::from_secs(30));
        let r = middle();
        pause.release();
        (flat(ranks.join().unwrap()), r)
    })
}

/// Each rank's outcome of [`per_rank`], its connect error included.
fn flat(outcomes: Vec<Result<Result<(), String>, Error>>) -> Vec<Result<(), String>> {
    outcomes
        .into_iter()
        .map(|o| o.map_err(|e| e.to_string()).and_then(|o| o))
        .collect()
}

fn all_ok(outcomes: Vec<Result<(), String>>) {
    for o in outcomes {
        o.unwrap_or_else(|e| panic!("{e}"));
    }
}

fn defect2_a_strangers_join_then_abort_for_rank_0_do_not_end_a_running_job(
    pipeline: SwitchPipeline,
) {
    // Before: the stranger's Join for rank 0 on slots no lane used took nothing from anyone,
    // so it was admitted and the stranger learned as a lane of rank 0; its Abort then came
    // from "a lane of rank 0" and was passed on: every rank failed, "rank 0 gave up". Now
    // the Join has no key (BadKey) and the Abort no session (BadSession).
    let spec = job_spec(2, 64); // the ranks' lanes use slots 0..32
    let sw = switch_serving(pipeline, &[spec]);
    let t = target(&spec);
    let (outcomes, (tally, c)) = around(&spec, sw.addr(), || {
        let mut a = stranger(sw.addr(), &[t], 2);
        a.send(&join(&t, 0, 32, 16, 64, 0), Via::Socket(0));
        a.send(&join(&t, 0, 32, 16, 64, KEY ^ 1), Via::Socket(0));
        // Any session: none, its own Join's nonce, guesses.
        for session in [0, 0x5712_A45E, 1, u32::MAX] {
            a.send(&abort(&t, 0, session), Via::Socket(0));
        }
        a.collect(Duration::from_secs(30), &sw);
        (a.tally, settle(&sw))
    });
    all_ok(outcomes);
    assert_eq!(tally.got_refusals, tally.refusals);
    assert_eq!(tally.refusals(AbortReason::BadKey), 2);
    let job = c.job(JOB).unwrap();
    assert_eq!(c.switch.drops(DropReason::BadSession), 4);
    assert_eq!((job.switch.unauthorized, job.switch.aborts), (6, 0));
    assert_eq!(
        job.multicasts,
        job.switch.completions + 1,
        "no Abort multicast"
    );
    assert!(sw.is_running());
}

fn defect3_a_job_id_runs_again_on_the_same_switch(pipeline: SwitchPipeline) {
    // Before: a job could run once per switch lifetime. The first communicators locked the
    // address table; the second set's Joins came from new ports, were refused as spoofed,
    // and connect timed out. Now the first set's Leaves end the run and the job is free.
    let world = 2;
    let sw = switch(pipeline, world, 32, 0.0, 0);
    for generation in 0..2 {
        let outcomes = per_rank(
            world,
            |r| config(r, world, sw.addr()),
            |comm| exact(comm, generation),
        );
        all_ok(flat(outcomes));
        // What `switchml doctor` shows once every rank left.
        let s = status_when(sw.addr(), JOB, |s| !s.run_open());
        assert!(!s.run_open() && s.nobody_joined(), "{s:?}");
        assert_eq!(s.counters.runs, generation + 1, "{s:?}");
    }
}

fn defect4_strangers_joins_before_the_ranks_arrive_do_not_lock_the_job(pipeline: SwitchPipeline) {
    // Before: a Join needed no key. Joins from a stranger for every rank completed the job
    // and locked its address table to the stranger; the real ranks' Joins were refused as
    // spoofed and they timed out joining. Now the stranger has no key: nothing opens.
    let spec = job_spec(3, 32);
    let sw = switch_serving(pipeline, &[spec]);
    let t = target(&spec);
    let mut a = stranger(sw.addr(), &[t], 4);
    let strangers_joins = |a: &mut Attacker| {
        for rank in 0..t.world {
            for (slot_lo, slot_count, count) in [(0, 16, 64), (16, 16, 64), (0, 8, 32)] {
                for key in [0, KEY ^ 0x8000_0000_0000_0000, KEY.rotate_left(7)] {
                    let j = join(&t, rank, slot_lo, slot_count, count, key);
                    a.send(&j, Via::Socket(usize::from(rank)));
                }
            }
        }
    };
    strangers_joins(&mut a);
    a.collect(Duration::from_secs(30), &sw);
    let before = status(sw.addr(), JOB);
    assert!(!before.run_open() && before.nobody_joined(), "{before:?}");
    assert_eq!(
        (before.counters.runs, before.counters.unauthorized),
        (0, 27)
    );
    // The ranks join while the stranger goes on.
    let done = AtomicBool::new(false);
    let outcomes = std::thread::scope(|s| {
        s.spawn(|| {
            while !done.load(Ordering::Relaxed) && a.tally.sent < 20_000 {
                strangers_joins(&mut a);
                a.pace();
            }
            a.collect(Duration::from_secs(30), &sw);
        });
        let outcomes = per_rank(
            t.world,
            |r| config(r, t.world, sw.addr()),
            |comm| (0..3).try_for_each(|round| exact(comm, round)),
        );
        done.store(true, Ordering::Relaxed);
        outcomes
    });
    all_ok(flat(outcomes));
    assert_eq!(a.tally.refusals(AbortReason::BadKey), a.tally.sent);
    // Every refusal came back or was held back by the per-destination limit; a Join the
    // per-source junk limit dropped unread was refused by nobody.
    let c = settle(&sw);
    a.read_answers();
    assert!(a.tally.check_answers(&c) <= c.throttled, "{c:?}");
    let after = status(sw.addr(), JOB);
    // The ranks' Leaves that came after their run ended are refused too: not counted here.
    assert_eq!(after.counters.runs, 1, "{after:?}");
    assert_eq!(
        after.refused_joins() + c.throttled,
        a.tally.sent,
        "{after:?}"
    );
}

fn defect5_a_flood_of_huge_joins_gets_the_cheap_refusal_and_the_job_completes(
    pipeline: SwitchPipeline,
) {
    // Before: a Join cost work in proportion to its slot range (the daemon looked up every
    // slot of it in its address table before anything checked it: 65,535 lookups for one
    // 28-byte datagram), and one covering the job's slots was accepted without a key — the
    // flood's Joins for ranks 0 and 1 completed the job and locked it to the stranger. Now
    // the key is checked first, whatever the fields say: each Join gets the one 20-byte
    // BadKey Abort that any wrong-key Join gets, and changes nothing. (How long that takes
    // is a benchmark's question, not a test's.)
    let spec = job_spec(2, 1024);
    let sw = switch_serving(pipeline, &[spec]);
    let t = target(&spec);
    let flood = |a: &mut Attacker, n: u64| {
        for i in 0..n {
            let r = mix(i ^ 0xF100D);
            let j = JoinRepr {
                job: t.job,
                rank: [0, 1, u16::MAX][(r % 3) as usize],
                world: [t.world, u16::MAX][(r >> 8) as usize % 2],
                slot_lo: [0, 0, 512, u16::MAX][(r >> 16) as usize % 4],
                slot_count: [t.slots, u16::MAX, 32768, 512][(r >> 24) as usize % 4],
                count: [64, u16::MAX, 16370][(r >> 32) as usize % 3],
                lanes: u16::MAX,
                nonce: (r >> 40) as u32 | 1,
                cookie: 0,
                tag: [0; 16],
            }
            .sign(r ^ KEY.rotate_left(3));
            a.send(&bytes_of(&Message::Join(j)), Via::Socket(i as usize));
            if i % 16 == 15 {
                a.read_answers();
                a.pace();
            }
        }
    };
    let mut a = stranger(sw.addr(), &[t], 5);
    flood(&mut a, 5_000);
    a.collect(Duration::from_secs(30), &sw);
    let before = status(sw.addr(), JOB);
    assert!(!before.run_open() && before.nobody_joined(), "{before:?}");
    let (outcomes, ()) = around(&spec, sw.addr(), || flood(&mut a, 5_000));
    all_ok(outcomes);
    a.collect(Duration::from_secs(30), &sw);
    assert_eq!(a.tally.sent, 10_000);
    assert_eq!(a.tally.refusals(AbortReason::BadKey), 10_000);
    // Every Join answered once, or its answer held back by the per-destination limit (or
    // the Join dropped unread by the per-source junk limit).
    let c = settle(&sw);
    a.read_answers();
    assert!(a.tally.check_answers(&c) <= c.throttled, "{c:?}");
    assert!(a.tally.strange.is_empty(), "{:?}", a.tally.strange);
    let after = status(sw.addr(), JOB);
    assert_eq!(
        (after.counters.runs, after.refused_joins() + c.throttled),
        (1, 10_000)
    );
}

/// A Contribution that would add `1_000_000` to each of 64 values of rank `rank`'s use
/// `seq` of `slot`, in `session`.
fn poison(t: &Target, rank: u16, slot: u16, seq: u32, session: u32) -> Vec<u8> {
    let values: Vec<u8> = (0..64).flat_map(|_| 1_000_000i32.to_be_bytes()).collect();
    contribution(t.job, rank, slot, seq, session, &values)
}

fn defect6_spoofed_contributions_before_and_while_ranks_join_are_never_summed(
    pipeline: SwitchPipeline,
) {
    // Before: a contribution was admitted if it came from the address learned for its
    // rank's lane. With CAP_NET_RAW this test forges that very address (the lanes' ports
    // read from /proc/net/udp as soon as they exist): such a contribution, sent while the
    // ranks join and run, was summed, and the result was wrong. (Without the raw socket it
    // only sends from other addresses, which the old daemon dropped too.) Now no source
    // address admits anything: without the run's session every one is dropped.
    let spec = job_spec(2, 32);
    let sw = switch_serving(pipeline, &[spec]);
    let t = target(&spec);
    let SocketAddr::V4(at) = sw.addr() else {
        unreachable!()
    };
    let started = Hold::default();
    let (done, hold) = (AtomicBool::new(false), Hold::default());
    let body = |comm: &Communicator| -> Result<u64, String> {
        (0..20).try_for_each(|round| exact(comm, round))?;
        Ok(comm.stats().sent)
    };
    let configs: Vec<CommConfig> = (0..2).map(|r| config(r, 2, sw.addr())).collect();
    let (tally, spoofed, raw, c, sent) = std::thread::scope(|s| {
        let attack = s.spawn(|| {
            let mut a = stranger(sw.addr(), &[t], 6);
            let mut spoofed = 0u64;
            let mut i = 0u64;
            while !done.load(Ordering::Relaxed) && i < 200_000 {
                let r = mix(i);
                let (rank, slot, seq) =
                    ((r % 2) as u16, (r >> 8) as u16 % 32, (r >> 16) as u32 % 12);
                let session = a.forger.session();
                a.send(
                    &poison(&t, rank, slot, seq, session),
                    Via::Socket(i as usize),
                );
                if a.has_raw() {
                    for lane in proc_udp::connected_to(at) {
                        spoofed += u64::from(a.send(
                            &poison(&t, rank, slot, seq, session),
                            Via::Spoofed(lane.port()),
                        ));
                    }
                }
                if i == 500 {
                    started.release();
                }
                i += 1;
                if i % 16 == 0 {
                    a.pace();
                }
            }
            started.release();
            let raw = a.has_raw();
            (a.tally, spoofed, raw)
        });
        // The ranks start once the stranger has sent 500 contributions.
        started.arrive();
        let ranks = spawn_ranks(s, configs, &body, &hold);
        hold.wait_for(2, Duration::from_secs(60));
        done.store(true, Ordering::Relaxed);
        let (tally, spoofed, raw) = attack.join().unwrap();
        let c = settle(&sw);
        hold.release();
        let sent: Vec<_> = ranks.into_iter().map(|h| h.join().unwrap()).collect();
        (tally, spoofed, raw, c, sent)
    });
    let sent: u64 = sent
        .into_iter()
        .map(|o| o.unwrap_or_else(|e| panic!("{e}")))
        .sum();
    println!(
        "{} forged contributions, {spoofed} of them from the lanes' own addresses",
        tally.sent
    );
    if raw {
        assert!(
            spoofed > 0,
            "no contribution was sent from a lane's address"
        );
    } else {
        println!("no CAP_NET_RAW: no contribution was sent from a lane's own address");
    }
    let job = c.job(JOB).unwrap().switch;
    assert_eq!(job.unauthorized, tally.sent);
    assert_eq!(c.switch.drops(DropReason::BadSession), tally.sent);
    assert_eq!(job.rejected, 0);
    let handled = job.contributions + job.retransmit_replies + job.duplicates + job.stale;
    assert_eq!(handled, sent, "only the ranks' contributions: {job:?}");
}

/// A rank that waits out a busy machine for as long as these tests run: its stall detection
/// takes about 1,000 s (1,000 resends, up to 1 s apart), so only an Abort can end an
/// all-reduce within seconds.
fn long_stall(spec: &JobSpec, rank: u16, addr: SocketAddr) -> CommConfig {
    job_config(spec, rank, addr)
        .into_builder()
        .rto(Duration::from_millis(20))
        .max_rto(Duration::from_secs(1))
        .retries(1000)
        .join_timeout(Duration::from_secs(20))
        .build()
}

/// How long a test waits for a worker to hear an Abort: far less than its stall detection
/// (~1,000 s, [`long_stall`]), so only an Abort ends it in time, and far more than a busy
/// machine needs to pass one on.
const TOLD_WITHIN: Duration = Duration::from_secs(60);

/// Return whether `e` is the switch's Abort `reason` with `detail`.
fn refused(e: &Error, reason: AbortReason, detail: u16) -> bool {
    matches!(e, Error::Worker { error, .. }
        if **error == WorkerError::Refused { reason, detail })
}

/// Start an all-reduce that cannot finish: a peer never submits, or has gone.
fn stuck(comm: &Communicator) -> Pending<i32> {
    comm.allreduce_async(ints(comm.rank(), comm.world_size(), LEN, 99), Op::Sum)
}

/// Return the error `stuck` ended with, or say that none came within [`TOLD_WITHIN`].
fn told(rank: u16, stuck: Pending<i32>) -> Result<Error, String> {
    match stuck.wait_timeout(TOLD_WITHIN) {
        Ok(Err(e)) => Ok(e),
        Ok(Ok(_)) => Err(format!("rank {rank}: the all-reduce finished")),
        Err(_) => Err(format!(
            "rank {rank}: not told within {TOLD_WITHIN:?}; it would have waited for its stall detection"
        )),
    }
}

fn a_restarted_rank_ends_the_run_its_peers_hear_rank_restarted_at_once_and_all_rejoin(
    pipeline: SwitchPipeline,
) {
    // Before: a rank's new process joined from new ports, which the locked address table
    // refused as spoofed; its peers waited for its contributions until their stall
    // detection (here ~1,000 s) and then blamed it as missing. Now the new process's Join
    // ends the run with Abort RankRestarted naming it, and its next Join opens the next one.
    let spec = job_spec(3, 32);
    let sw = switch_serving(pipeline, &[spec]);
    let addr = sw.addr();
    let (first, gone) = (Hold::default(), Hold::default());
    let rank = |r: u16| -> Result<(), String> {
        let connect =
            || Communicator::connect(&long_stall(&spec, r, addr)).map_err(|e| e.to_string());
        let comm = connect();
        let round0 = comm
            .as_ref()
            .map_err(Clone::clone)
            .and_then(|c| exact(c, 0));
        first.arrive();
        round0?;
        let comm = comm?;
        if r == 1 {
            // Rank 1's process ends (its communicator closes) and a new one starts.
            drop(comm);
            gone.arrive();
            let again = connect()?;
            return exact(&again, 1);
        }
        // Ranks 0 and 2 wait in an all-reduce when rank 1 comes back.
        let waiting = stuck(&comm);
        gone.arrive();
        let e = told(r, waiting)?;
        if !refused(&e, AbortReason::RankRestarted, 1) {
            return Err(format!("rank {r}: {e}"));
        }
        assert!(e.to_string().contains("restarted"), "{e}");
        drop(comm);
        exact(&connect()?, 1)
    };
    let outcomes: Vec<_> = std::thread::scope(|s| {
        let ranks: Vec<_> = (0..3).map(|r| s.spawn(move || rank(r))).collect();
        first.wait_for(3, Duration::from_secs(30));
        first.release();
        gone.wait_for(3, Duration::from_secs(30));
        gone.release();
        ranks.into_iter().map(|h| h.join().unwrap()).collect()
    });
    all_ok(outcomes);
    let s = status(addr, JOB);
    assert_eq!((s.counters.runs, s.counters.aborts), (2, 1), "{s:?}");
}

fn two_jobs_under_attack_each_with_its_own_key_both_sum_exactly(pipeline: SwitchPipeline) {
    // Before: there were no keys, so a stranger's Join for job 4's rank 0 on slots no lane
    // used was admitted whatever it carried, and its Abort ended job 4 (the defect-2 path).
    // Here the stranger even holds job 3's key — as a rank of job 3 would — and uses it on
    // job 4, while a smaller version of the hostile-traffic attack hits both jobs.
    let a_job = job_spec(2, 64);
    let b_job = JobSpec {
        id: 4,
        world: 3,
        slots: 64,
        key: Some(0x0B0B_0000_0000_0B0B),
    };
    let sw = switch_serving(pipeline, &[a_job, b_job]);
    let addr = sw.addr();
    let targets = [target(&a_job), target(&b_job)];
    let b = targets[1];
    let hold = Hold::default();
    let body = |comm: &Communicator| -> Result<(), String> {
        (0..4).try_for_each(|round| exact(comm, round))?;
        let mut f = floats(comm.rank(), 1000, 7);
        comm.allreduce(&mut f, Op::Sum).map_err(|e| e.to_string())?;
        let inputs: Vec<Vec<f32>> = (0..comm.world_size()).map(|q| floats(q, 1000, 7)).collect();
        let max = inputs
            .iter()
            .flatten()
            .fold(0f64, |m, v| m.max(f64::from(v.abs())));
        for (got, want) in f.iter().zip(f64_sum(&inputs)) {
            if (f64::from(*got) - want).abs() > sum_bound(comm.world_size(), max, want) {
                return Err(format!(
                    "job {}: f32 {got} far from {want}",
                    comm.config().job
                ));
            }
        }
        Ok(())
    };
    let configs: Vec<CommConfig> = [a_job, b_job]
        .iter()
        .flat_map(|j| (0..j.world).map(|r| job_config(j, r, addr)))
        .collect();
    let (tally, c, outcomes) = std::thread::scope(|s| {
        let attack = s.spawn(|| {
            let mut a = Attacker::new(addr, &targets, Forger::new(&targets, 10, Vec::new()));
            for round in 0..50 {
                a.send(&join(&b, 0, 32, 16, 64, KEY), Via::Socket(round));
                for session in [0, round as u32, 0x5712_A45E] {
                    a.send(&abort(&b, 0, session), Via::Socket(round));
                }
                a.run(
                    Budget {
                        packets: a.tally.sent + 100,
                        time: Duration::from_secs(1),
                    },
                    &sw,
                );
            }
            a.tally
        });
        let ranks = spawn_ranks(s, configs, &body, &hold);
        hold.wait_for(5, Duration::from_secs(60));
        let tally = attack.join().unwrap();
        let c = settle(&sw);
        hold.release();
        let outcomes: Vec<_> = ranks.into_iter().map(|h| h.join().unwrap()).collect();
        (tally, c, outcomes)
    });
    all_ok(outcomes);
    assert!(
        tally.refusals(AbortReason::BadKey) >= 50,
        "job 3's key opened job 4"
    );
    assert!(tally.check_answers(&c) <= c.throttled, "{c:?}");
    for t in &targets {
        let job = c.job(t.job).unwrap().switch;
        tally.check_unauthorized(t.job, job.unauthorized, c.throttled, 0);
        assert_eq!(
            (job.aborts, job.runs, job.rejected),
            (0, 1, 0),
            "job {}: {job:?}",
            t.job
        );
    }
}

fn defect8_stopping_the_switch_tells_waiting_workers_it_is_shutting_down(pipeline: SwitchPipeline) {
    // Before: a stopping switch said nothing; a worker waiting on it learned only from its
    // stall detection (here ~1,000 s), or from a new switch's epoch. Now it sends Abort
    // Shutdown to every run first.
    let spec = job_spec(2, 32);
    let sw = switch_serving(pipeline, &[spec]);
    let addr = sw.addr();
    let (joined, stopped) = (Hold::default(), Hold::default());
    let rank = |r: u16| -> Result<(), String> {
        let comm = Communicator::connect(&long_stall(&spec, r, addr));
        joined.arrive();
        let comm = comm.map_err(|e| e.to_string())?;
        // Rank 0 waits in an all-reduce that rank 1 never joins; rank 1 is idle.
        let waiting = (r == 0).then(|| stuck(&comm));
        stopped.arrive();
        let e = if let Some(waiting) = waiting {
            told(r, waiting)?
        } else {
            let deadline = std::time::Instant::now() + TOLD_WITHIN;
            while comm.failure().is_none() && std::time::Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(5));
            }
            comm.failure()
                .ok_or(format!("rank 1: not told within {TOLD_WITHIN:?}"))?
        };
        if !refused(&e, AbortReason::Shutdown, 0) || !e.to_string().contains("shutting down") {
            return Err(format!("rank {r}: {e}"));
        }
        Ok(())
    };
    let outcomes: Vec<_> = std::thread::scope(|s| {
        let ranks: Vec<_> = (0..2).map(|r| s.spawn(move || rank(r))).collect();
        joined.wait_for(2, Duration::from_secs(30));
        joined.release();
        stopped.wait_for(2, Duration::from_secs(30));
        stopped.release();
        sw.stop().expect("the switch stops cleanly");
        ranks.into_iter().map(|h| h.join().unwrap()).collect()
    });
    all_ok(outcomes);
}

on_both_pipelines!(
    defect2_a_strangers_join_then_abort_for_rank_0_do_not_end_a_running_job,
    defect3_a_job_id_runs_again_on_the_same_switch,
    defect4_strangers_joins_before_the_ranks_arrive_do_not_lock_the_job,
    defect5_a_flood_of_huge_joins_gets_the_cheap_refusal_and_the_job_completes,
    defect6_spoofed_contributions_before_and_while_ranks_join_are_never_summed,
    a_restarted_rank_ends_the_run_its_peers_hear_rank_restarted_at_once_and_all_rejoin,
    two_jobs_under_attack_each_with_its_own_key_both_sum_exactly,
    defect8_stopping_the_switch_tells_waiting_workers_it_is_shutting_down
);
