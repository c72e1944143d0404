//! A switch spread over several shards (protocol.md §1.1), in one deterministic process:
//! one core `Endpoint` per shard, each around its own reference switch and pool, and the
//! workers' lanes, which all start at shard 0 and must find their shard by themselves.
//!
//! ```text
//!   rank r lane 0 ──┐            ┌─ shard 0 (lanes 0, 3, ..) ─┐
//!   rank r lane 1 ──┼─ lossy ────┼─ shard 1 (lanes 1, 4, ..)  ├─ results to each rank's lane
//!   rank r lane 2 ──┘   network  └─ shard 2 (lanes 2, 5, ..) ─┘
//! ```
//!
//! The little network here only moves bytes: a lane's datagrams go to the shard it last
//! heard it belongs to (`Event::Redirected`), answers go where the endpoint says. Loss is
//! seeded; time jumps to the next deadline.

use proptest::prelude::*;
use switchml_core::quant::Op;
use switchml_core::shard::{shard_of_lane, Shard};
use switchml_core::switch::{Endpoint, JobConfig, Route, Slot, Switch, Transmit};
use switchml_core::time::{Duration, Instant};
use switchml_core::wire::{AbortReason, Message};
use switchml_core::worker::{Event, TensorId, WorkerError};
use switchml_tests::harness::{i32_values, sim_config, JOB, K, KEY};
use switchml_tests::sim::{lane_configs, Buf, Rng, SimWorker};

type ShardSwitch = Switch<'static, K, 1, 4>;
type ShardEndpoint = Endpoint<usize, Vec<Route<usize>>, ShardSwitch, 4>;
const OUT: usize = ShardEndpoint::OUT_LEN;

/// Shards, lanes and the network between them.
struct Net {
    shards: Vec<ShardEndpoint>,
    lanes: Vec<SimWorker>,
    /// The shard each lane sends to.
    to: Vec<usize>,
    /// Redirects each lane heard.
    moves: Vec<u32>,
    failures: Vec<Option<WorkerError>>,
    done: Vec<Vec<(TensorId, Buf)>>,
    rng: Rng,
    drop: f64,
    now: Instant,
}

/// One shard: every shard holds the whole job, as the software switch's shards do.
fn shard(index: u16, count: u16, world: u16, slots: u16, epoch: u32) -> ShardEndpoint {
    let pool: &'static mut [Slot<K, 1>] =
        Box::leak(vec![Slot::IDLE; usize::from(slots)].into_boxed_slice());
    let shard = Shard::new(index, count).expect("a shard");
    let mut e = Endpoint::new(Switch::new(pool, epoch), Duration::from_secs(60)).with_shard(shard);
    let job = JobConfig {
        id: JOB,
        world,
        slot_lo: 0,
        slot_count: slots,
        key: KEY,
    };
    e.add_job(job, vec![None; usize::from(world) * 16])
        .expect("job fits");
    e
}

impl Net {
    fn new(shards: u16, world: u16, lanes: u16, drop: f64, seed: u64) -> Net {
        let window = 4;
        let slots = window * lanes;
        let mut rng = Rng::new(seed);
        let mut configs = lane_configs(sim_config(world, window, 64), lanes);
        for c in &mut configs {
            // Every lane of a rank shares its process's nonce (§4.1).
            c.nonce = 1000 + u32::from(c.rank);
        }
        let lanes: Vec<SimWorker> = configs
            .into_iter()
            .map(|c| SimWorker::new(c).expect("lane config"))
            .collect();
        let n = lanes.len();
        Net {
            shards: (0..shards)
                .map(|i| shard(i, shards, world, slots, 9))
                .collect(),
            lanes,
            to: vec![0; n],
            moves: vec![0; n],
            failures: vec![None; n],
            done: vec![Vec::new(); n],
            drop,
            now: Instant::from_millis(0),
            rng: Rng::new(rng.next_u64()),
        }
    }

    fn lost(&mut self) -> bool {
        self.drop > 0.0 && self.rng.unit() < self.drop
    }

    /// Move every datagram once; return whether anything moved.
    fn round(&mut self) -> bool {
        let mut moved = false;
        let mut buf = [0u8; 2048];
        let mut out = [0u8; OUT];
        for i in 0..self.lanes.len() {
            self.events(i);
            while let Some(len) = self.lanes[i].poll_transmit(self.now, &mut buf) {
                moved = true;
                if self.lost() {
                    continue;
                }
                let s = self.to[i];
                let t = self.shards[s].handle(self.now, i, &buf[..len], &mut out);
                let len = match t {
                    Transmit::Nothing => continue,
                    Transmit::Reply { len } | Transmit::Lanes { len, .. } => len,
                };
                let dests: Vec<usize> = self.shards[s].destinations(&t, &i).copied().collect();
                for d in dests {
                    if !self.lost() {
                        self.lanes[d].handle_packet(self.now, &out[..len]);
                    }
                }
                // A redirect must move the lane before it sends again, as adapters do.
                self.events(i);
            }
        }
        moved
    }

    fn events(&mut self, i: usize) {
        while let Some(e) = self.lanes[i].poll_event() {
            match e {
                Event::Redirected { shard, shards } => {
                    assert_eq!(usize::from(shards), self.shards.len());
                    self.to[i] = usize::from(shard);
                    self.moves[i] += 1;
                }
                Event::Joined { .. } => {}
                // A failed lane's tensors come back unfinished; its failure says why.
                Event::Done { id, buf, result } => {
                    if result.is_ok() {
                        self.done[i].push((id, buf));
                    }
                }
                Event::Failed(e) => self.failures[i] = Some(e),
            }
        }
    }

    /// Run until `until` holds, rounds and timeouts at most `bound` times.
    fn drive(&mut self, bound: usize, until: impl Fn(&Net) -> bool) {
        for _ in 0..bound {
            if until(self) {
                return;
            }
            if self.round() {
                continue;
            }
            let next = self.lanes.iter().filter_map(|w| w.poll_timeout()).min();
            let Some(next) = next else { return };
            self.now = self.now.max(next);
            let now = self.now;
            for w in &mut self.lanes {
                if w.poll_timeout().is_some_and(|t| t <= now) {
                    w.handle_timeout(now);
                }
            }
        }
        panic!("not done after {bound} rounds (now {:?})", self.now);
    }
}

/// Submit one i32 tensor of `len` per rank, split across the rank's lanes as an adapter
/// would (each lane its contiguous part); return the expected sum.
fn submit_all(net: &mut Net, lanes: usize, len: usize, rng: &mut Rng) -> Vec<i64> {
    let world = net.lanes.len() / lanes;
    let mut sum = vec![0i64; len];
    let per_lane = len.div_ceil(lanes);
    for r in 0..world {
        let v = i32_values(rng, len, world as u16);
        for (s, x) in sum.iter_mut().zip(&v) {
            *s += i64::from(*x);
        }
        for l in 0..lanes {
            let part = v[(l * per_lane).min(len)..((l + 1) * per_lane).min(len)].to_vec();
            net.lanes[r * lanes + l]
                .submit(net.now, Buf::I32(part), Op::Sum)
                .expect("queued");
        }
    }
    sum
}

fn check(net: &Net, lanes: usize, sum: &[i64]) {
    let per_lane = sum.len().div_ceil(lanes);
    for (i, done) in net.done.iter().enumerate() {
        let l = i % lanes;
        let want = &sum[(l * per_lane).min(sum.len())..((l + 1) * per_lane).min(sum.len())];
        let [(_, Buf::I32(got))] = done.as_slice() else {
            panic!("lane {i}: {} results", done.len());
        };
        let got: Vec<i64> = got.iter().map(|&x| i64::from(x)).collect();
        assert_eq!(got, want, "lane {i}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// Whatever the shards, lanes, loss and seed: every lane ends on its shard, moved there
    /// at most once, and every rank's sum is exact; each shard runs its own run.
    #[test]
    fn lanes_find_their_shards_and_every_sum_is_exact_with_loss(
        shards in 1u16..=4, lanes in 1u16..=5, drop in 0.0..0.1f64, seed in any::<u64>(),
    ) {
        let world = 3;
        let mut net = Net::new(shards, world, lanes, drop, seed);
        let mut rng = Rng::new(seed);
        let sum = submit_all(&mut net, usize::from(lanes), 2000, &mut rng);
        net.drive(1_000_000, |n| n.done.iter().all(|d| !d.is_empty()));
        prop_assert!(net.failures.iter().all(Option::is_none), "{:?}", net.failures);
        check(&net, usize::from(lanes), &sum);
        for (i, w) in net.lanes.iter().enumerate() {
            let lane = (i % usize::from(lanes)) as u16;
            let shard = usize::from(shard_of_lane(lane, shards));
            prop_assert_eq!(net.to[i], shard, "lane {} ended on its shard", i);
            prop_assert_eq!(net.moves[i], u32::from(shard != 0), "lane {}: one move at most", i);
            prop_assert_eq!(w.shards(), shards, "lane {} learned the count", i);
        }
        for (s, e) in net.shards.iter().enumerate() {
            let job = e.switch().job(JOB).expect("job");
            prop_assert_eq!(job.has_run(), s < usize::from(lanes), "shard {}", s);
            if s > 0 {
                prop_assert_eq!(e.redirected(), 0, "lanes come to shard {} only when sent", s);
            }
        }
        let redirects: u64 = net.shards.iter().map(ShardEndpoint::redirected).sum();
        prop_assert!(redirects >= net.moves.iter().map(|&m| u64::from(m)).sum::<u64>());
    }
}

#[test]
fn a_rank_leaves_every_shard_and_each_shards_run_ends() {
    let (shards, lanes, world) = (3u16, 4u16, 2u16);
    let mut net = Net::new(shards, world, lanes, 0.0, 7);
    let mut rng = Rng::new(7);
    let sum = submit_all(&mut net, usize::from(lanes), 600, &mut rng);
    net.drive(1_000_000, |n| n.done.iter().all(|d| !d.is_empty()));
    check(&net, usize::from(lanes), &sum);
    for w in &mut net.lanes {
        w.leave();
    }
    net.round();
    for (s, e) in net.shards.iter().enumerate() {
        let job = e.switch().job(JOB).expect("job");
        assert!(
            !job.has_run(),
            "shard {s}: its run ended with its ranks' Leaves"
        );
        assert_eq!(
            e.switch()
                .counters()
                .drops(switchml_core::switch::DropReason::BadSession),
            0,
            "shard {s}: one Leave per rank, none after the run ended"
        );
    }
}

#[test]
fn a_restarted_shard_fails_its_lanes_naming_the_restart_and_nothing_hangs() {
    let (shards, lanes, world) = (2u16, 2u16, 2u16);
    let mut net = Net::new(shards, world, lanes, 0.0, 11);
    net.drive(100_000, |n| n.lanes.iter().all(SimWorker::is_running));
    // Shard 1 restarts: a new switch, a new epoch, the job registered again.
    net.shards[1] = shard(1, shards, world, 4 * lanes, 10);
    let mut rng = Rng::new(11);
    submit_all(&mut net, usize::from(lanes), 600, &mut rng);
    net.drive(1_000_000, |n| {
        (0..n.lanes.len()).all(|i| !n.done[i].is_empty() || n.failures[i].is_some())
    });
    for (i, f) in net.failures.iter().enumerate() {
        let lane = i % usize::from(lanes);
        match (lane, f) {
            (0, None) => assert_eq!(net.done[i].len(), 1, "lane {i} on the live shard"),
            (1, Some(WorkerError::SwitchRestarted { old: 9, new: 10 })) => {}
            (
                1,
                Some(WorkerError::Refused {
                    reason: AbortReason::SessionEnded | AbortReason::UnknownJob,
                    ..
                }),
            ) => {}
            other => panic!("lane {i}: {other:?}"),
        }
    }
}

#[test]
fn a_join_at_the_wrong_shard_is_answered_with_the_shard_count_and_its_nonce() {
    let mut e = shard(0, 3, 2, 8, 9);
    // Lane 1 of a rank with 2 lanes of 4 slots, process nonce 77.
    let lane_1 = || {
        let config = switchml_core::worker::Config {
            slot_lo: 4,
            lanes: 2,
            nonce: 77,
            ..sim_config(2, 4, 64)
        };
        SimWorker::new(config).expect("lane 1")
    };
    let mut w = lane_1();
    let mut buf = [0u8; 64];
    let mut out = [0u8; OUT];
    let now = Instant::from_millis(0);
    let len = w.poll_transmit(now, &mut buf).expect("a Join");
    let t = e.handle(now, 0, &buf[..len], &mut out);
    let Transmit::Reply { len } = t else {
        panic!("{t:?}")
    };
    let Ok(Message::Abort(a)) = Message::parse(&out[..len]) else {
        panic!("not an Abort")
    };
    assert_eq!(
        (a.reason, a.detail, a.session, a.epoch),
        (AbortReason::WrongShard, 3, 77, 9)
    );
    assert!(
        !e.switch().job(JOB).expect("job").has_run(),
        "nothing opened"
    );
    w.handle_packet(now, &out[..len]);
    assert!(matches!(
        w.poll_event(),
        Some(Event::Redirected {
            shard: 1,
            shards: 3
        })
    ));
    assert!(
        w.poll_transmit(now, &mut buf).is_some(),
        "the Join again, at once"
    );
    // The same answer to a Join already on its way moves nothing.
    w.handle_packet(now, &out[..len]);
    assert!(w.poll_event().is_none());
    // An Abort of this reason that names another nonce is nobody's business here.
    let mut forged = out;
    forged[16..20].copy_from_slice(&78u32.to_be_bytes());
    let mut fresh = lane_1();
    assert!(fresh.poll_transmit(now, &mut buf).is_some());
    fresh.handle_packet(now, &forged[..len]);
    assert!(fresh.poll_event().is_none());
}
