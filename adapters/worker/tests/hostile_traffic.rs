//! A bounded, seeded attack on a switch while two jobs, each with its own key, all-reduce
//! int32 and f32 tensors through it. The attacker (`common/attacker.rs`) is off-path: no key,
//! no session. It sends every kind of forgery (`common/forge.rs`) — random bytes, cut and
//! padded messages, forged Contributions, Joins (cheap and expensive), Probes, Aborts, Leaves
//! and Statuses, the switch-only and unknown types, datagrams longer than any message, and
//! replays of a real lane's traffic (`common/capture.rs`) with the session rewritten — from
//! six sockets on 127.0.0.1–127.0.0.5 and, where the test may open raw sockets, from UDP
//! port 0.
//!
//! What must hold: int32 results are the exact sums and f32 results are, bit for bit, those
//! of a clean run; the daemon keeps running; and the counters add up — every hostile
//! datagram is in the drop class or got the answer the spec gives it (`common/fate.rs`),
//! every answer came back to its sender and none was a JoinReply or a Result, and every
//! contribution the switch counted is one the ranks sent.
//!
//! Smoke-sized by default (20,000 datagrams, at most 5 s of attack). A long run, by hand:
//!
//! ```sh
//! SWITCHML_HOSTILE_SECONDS=60 SWITCHML_HOSTILE_PACKETS=100000000 \
//!     cargo test --release -p switchml-worker --test hostile_traffic -- --nocapture
//! ```

mod common;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use common::attacker::{Attacker, Budget};
use common::capture::lane_stream;
use common::fate::Tally;
use common::forge::Forger;
use common::hold::{spawn_ranks, Hold};
use common::*;
use switchml_core::switch::DropReason;
use switchml_core::worker::Stats;
use switchml_switchd::JobSpec;
use switchml_worker::{CommConfig, Communicator, Op};

/// int32 values per all-reduce.
const INTS: usize = 2000;
/// f32 values per all-reduce.
const FLOATS: usize = 1500;
/// Distinct f32 inputs, each reduced once on a clean switch first.
const SETS: u64 = 3;
/// The attacker's seed.
const SEED: u64 = 0x0A77_AC4E;

fn jobs() -> [JobSpec; 2] {
    [
        job_spec(3, 32),
        JobSpec {
            id: 4,
            world: 2,
            slots: 64,
            key: Some(0x0B0B_1234_5678_9ABC),
        },
    ]
}

/// A rank of `job` that waits out a busy machine: stall detection after ~20 s, not ~1 s.
fn patient(job: &JobSpec, rank: u16, switch: SocketAddr) -> CommConfig {
    job_config(job, rank, switch)
        .into_builder()
        .max_rto(Duration::from_millis(200))
        .retries(100)
        .build()
}

fn bits(x: &[f32]) -> Vec<u32> {
    x.iter().map(|v| v.to_bits()).collect()
}

/// Every job's f32 results for each input set on a clean switch, checked against the f64 sum
/// within the bound of protocol.md §5.2.
fn clean_f32(pipeline: SwitchPipeline, jobs: &[JobSpec]) -> BTreeMap<u16, Vec<Vec<u32>>> {
    let sw = switch_serving(pipeline, jobs);
    let hold = Hold::default();
    let body = |comm: &Communicator| -> Result<(u16, Vec<Vec<u32>>), String> {
        let mut sets = Vec::new();
        for set in 0..SETS {
            let mut f = floats(comm.rank(), FLOATS, set);
            comm.allreduce(&mut f, Op::Sum).map_err(|e| e.to_string())?;
            let inputs: Vec<Vec<f32>> = (0..comm.world_size())
                .map(|q| floats(q, FLOATS, set))
                .collect();
            let exact = f64_sum(&inputs);
            let max = inputs
                .iter()
                .flatten()
                .fold(0f64, |m, v| m.max(f64::from(v.abs())));
            for (i, (got, want)) in f.iter().zip(&exact).enumerate() {
                let bound = sum_bound(comm.world_size(), max, *want);
                if (f64::from(*got) - want).abs() > bound {
                    return Err(format!(
                        "set {set} element {i}: {got} is not within {bound} of {want}"
                    ));
                }
            }
            sets.push(bits(&f));
        }
        Ok((comm.config().job, sets))
    };
    let configs = jobs
        .iter()
        .flat_map(|j| (0..j.world).map(|r| patient(j, r, sw.addr())))
        .collect();
    let outcomes: Vec<_> = std::thread::scope(|s| {
        let ranks = spawn_ranks(s, configs, &body, &hold);
        hold.release();
        ranks.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let mut clean = BTreeMap::new();
    for o in outcomes {
        let (job, sets) = o.unwrap_or_else(|e| panic!("clean run: {e}"));
        let first = clean.entry(job).or_insert_with(|| sets.clone());
        assert_eq!(*first, sets, "job {job}: ranks of a clean run disagree");
    }
    clean
}

/// Says the attack is over when dropped, even by a panic: the ranks must not wait for it.
struct Ends<'a>(&'a AtomicBool);

impl Drop for Ends<'_> {
    fn drop(&mut self) {
        self.0.store(false, Ordering::Relaxed);
    }
}

/// What one rank did: all-reduce rounds, and its lanes' counters.
type Done = (u64, Stats);

fn an_off_path_attacker_changes_no_result_and_every_datagram_is_accounted_for(
    pipeline: SwitchPipeline,
) {
    let jobs = jobs();
    let clean = clean_f32(pipeline, &jobs);
    let budget = Budget::from_env(20_000, Duration::from_secs(5));
    let sw = switch_serving(pipeline, &jobs);
    let addr = sw.addr();
    let targets: Vec<_> = jobs.iter().map(target).collect();
    // A real lane's traffic, recorded in a made-up session with a wrong key, for replays.
    let mut replays = Vec::new();
    for (i, j) in jobs.iter().enumerate() {
        for rank in 0..j.world {
            for lane in 0..2 {
                let session = 0x5E55_0000 + (i as u32) * 256 + u32::from(rank) * 2 + lane;
                let config = patient(j, rank, addr);
                let key = !j.key.unwrap_or(0);
                replays.extend(lane_stream(&config, lane as u16, session, key, 300));
            }
        }
    }
    let attacking = AtomicBool::new(true);
    let hold = Hold::default();
    let body = |comm: &Communicator| -> Result<Done, String> {
        let (r, world) = (comm.rank(), comm.world_size());
        let clean = &clean[&comm.config().job];
        let fail = |what: &str, round: u64| {
            format!("job {} rank {r} round {round}: {what}", comm.config().job)
        };
        for round in 0..1_000_000u64 {
            let mut x = ints(r, world, INTS, round);
            comm.allreduce(&mut x, Op::Sum)
                .map_err(|e| fail(&e.to_string(), round))?;
            if x != int_sum(world, INTS, round) {
                return Err(fail("wrong int32 sum", round));
            }
            let set = round % SETS;
            let mut f = floats(r, FLOATS, set);
            comm.allreduce(&mut f, Op::Sum)
                .map_err(|e| fail(&e.to_string(), round))?;
            if bits(&f) != clean[set as usize] {
                return Err(fail("f32 sum differs from the clean run's", round));
            }
            // Go on until every rank has seen the attack end (agreed by an all-reduce).
            let mut more = [i32::from(attacking.load(Ordering::Relaxed))];
            comm.allreduce(&mut more, Op::Sum)
                .map_err(|e| fail(&e.to_string(), round))?;
            if more[0] == 0 {
                return Ok((round + 1, comm.stats()));
            }
        }
        Err(fail("the attack never ended", 0))
    };
    let configs: Vec<_> = jobs
        .iter()
        .flat_map(|j| (0..j.world).map(|r| patient(j, r, addr)))
        .collect();
    let ranks = configs.len();
    let job_of: Vec<u16> = configs.iter().map(|c| c.job).collect();
    let (attack, running, c, kernel_drops, outcomes) = std::thread::scope(|s| {
        let attacker = s.spawn(|| {
            let _ends = Ends(&attacking);
            let mut a = Attacker::new(addr, &targets, Forger::new(&targets, SEED, replays));
            let ran = a.run(budget, &sw);
            let raw = a.has_raw();
            (a.tally, ran, raw)
        });
        let handles = spawn_ranks(s, configs, &body, &hold);
        hold.wait_for(ranks, budget.time + Duration::from_secs(300));
        let attack = attacker.join();
        let running = sw.is_running();
        // Every rank holds its communicator open: no Leave has been sent yet.
        let c = settle(&sw);
        let kernel_drops = match addr {
            SocketAddr::V4(a) => proc_udp::socket_at(a).map(|s| s.drops),
            SocketAddr::V6(_) => None,
        };
        hold.release();
        let outcomes: Vec<_> = handles.into_iter().map(|h| h.join().unwrap()).collect();
        (attack, running, c, kernel_drops, outcomes)
    });
    let (tally, ran, raw) = attack.unwrap_or_else(|_| panic!("the attacker panicked"));
    println!(
        "attack: {} datagrams in {ran:?} ({} from port 0: {}), {} answers owed, {} back",
        tally.sent,
        tally.drops(DropReason::BadSource),
        if raw { "raw socket" } else { "no CAP_NET_RAW" },
        tally.owed,
        tally.answered()
    );
    println!("predicted drops: {:?}", named(&tally.drops));
    println!("switch drops:    {:?}", named(&c.switch.dropped));
    println!(
        "predicted refusals {:?}, StatusReplies back {}",
        tally.refusals, tally.got_statuses
    );
    let (mut sent, mut rounds) = (BTreeMap::new(), BTreeMap::new());
    for (o, job) in outcomes.into_iter().zip(job_of) {
        let (r, stats) = o.unwrap_or_else(|e| panic!("{e}"));
        assert!(r >= 1);
        *sent.entry(job).or_default() += stats.sent;
        rounds.insert(job, r);
    }
    for j in c.jobs.iter() {
        println!(
            "job {}: {} rounds (int32 + f32 each), lanes sent {} contributions; {:?}",
            j.job, rounds[&j.job], sent[&j.job], j.switch
        );
    }
    assert!(running, "the daemon stopped under attack");
    assert_eq!(
        kernel_drops.unwrap_or(0),
        0,
        "the kernel dropped datagrams at the switch's socket: nothing can add up"
    );
    check_accounting(&tally, &c, &jobs, &sent);
    sw.stop().expect("the daemon stops cleanly");
}

#[test]
fn every_forgery_has_a_fate_and_the_mix_covers_every_kind_of_drop_and_answer() {
    // The attacker's own check, offline: each kind forges without panicking, and the mix
    // reaches every fate an off-path sender can meet.
    let jobs = jobs();
    let targets: Vec<_> = jobs.iter().map(target).collect();
    let config = patient(&jobs[0], 1, "127.0.0.1:9".parse().unwrap());
    let replays = lane_stream(&config, 1, 0x5E55_0001, 0, 300);
    let mut forger = Forger::new(&targets, SEED, replays);
    let mut tally = Tally::default();
    for i in 0..20_000 {
        let bytes = forger.any();
        tally.record(common::fate::fate(&bytes, i % 16 == 0, &targets), false);
    }
    use switchml_core::wire::AbortReason;
    for r in [
        DropReason::Malformed,
        DropReason::UnknownType,
        DropReason::UnexpectedType,
        DropReason::UnknownJob,
        DropReason::BadSession,
        DropReason::Oversized,
        DropReason::BadSource,
    ] {
        assert!(tally.drops(r) > 0, "no forgery is dropped as {}", r.name());
    }
    for r in [
        AbortReason::UnknownJob,
        AbortReason::BadKey,
        AbortReason::SessionEnded,
    ] {
        assert!(tally.refusals(r) > 0, "no forgery is refused with {r}");
    }
    assert!(targets.iter().all(|t| tally.unauthorized(t.job) > 0));
}

fn named(counts: &[u64]) -> Vec<(&'static str, u64)> {
    DropReason::ALL
        .iter()
        .zip(counts)
        .filter(|(_, n)| **n > 0)
        .map(|(r, n)| (r.name(), *n))
        .collect()
}

/// Every hostile datagram is where the spec puts it, and nothing else happened: checked on
/// counters read while every rank still held its communicator (no Leave sent).
fn check_accounting(
    tally: &Tally,
    c: &switchml_switchd::DaemonCounters,
    jobs: &[JobSpec],
    sent: &BTreeMap<u16, u64>,
) {
    // What came back to the attacker: the answers it was owed, all refusals or
    // StatusReplies, but for those its sockets' per-destination limit held back
    // (`replies_limited`) and those of datagrams the per-source junk limit dropped unread.
    let never_decided = tally.check_answers(c);
    // The daemon refused exactly the oversized datagrams and the ones from port 0 itself
    // (both before its per-source limits look).
    assert_eq!(
        (c.injected_losses, c.recv_errors, c.send_failures),
        (0, 0, 0)
    );
    assert_eq!(c.oversized, tally.drops(DropReason::Oversized));
    assert_eq!(c.bad_source, tally.drops(DropReason::BadSource));
    // Before any Leave the jobs' ranks cause no drop but duplicates and stale resends, so
    // every other class holds the hostile datagrams the spec puts there, less those
    // dropped unread (exactly, when none were).
    let ranks = [
        (DropReason::Duplicate, u64::MAX),
        (DropReason::Stale, u64::MAX),
    ];
    tally.check_drops(c, &ranks, never_decided);
    let (mut multicasts, mut consumed) = (0, 0);
    for j in jobs {
        let t = c.job(j.id).unwrap();
        let s = t.switch;
        tally.check_unauthorized(j.id, s.unauthorized, c.throttled, 0);
        assert_eq!(
            (s.rejected, s.aborts, s.overflows, s.runs),
            (0, 0, 0, 1),
            "job {}: {s:?}",
            j.id
        );
        // Every contribution counted is one a rank sent: each of the ranks' datagrams was
        // counted, answered as a resend, or dropped as a duplicate or stale; a hostile one
        // counted would push the right side past the left.
        let handled = s.contributions + s.retransmit_replies + s.duplicates + s.stale;
        assert_eq!(handled, sent[&j.id], "job {}: {s:?}", j.id);
        assert_eq!(
            s.contributions,
            u64::from(j.world) * s.completions,
            "job {}",
            j.id
        );
        // Multicasts: one per completed use, and the run's COMPLETE JoinReply; no Abort.
        assert_eq!(t.multicasts, s.completions + 1, "job {}", j.id);
        multicasts += s.completions + 1;
        consumed += s.contributions - s.completions;
    }
    assert_eq!(
        c.switch.multicast, multicasts,
        "multicasts: only the jobs' own"
    );
    assert_eq!(
        c.switch.consumed, consumed,
        "consumed: only the ranks' contributions"
    );
    assert!(c.switch.unicast >= tally.answered() + c.replies_limited);
}

on_both_pipelines!(an_off_path_attacker_changes_no_result_and_every_datagram_is_accounted_for);
