//! Shared set-up of the end-to-end tests: a switch on an ephemeral loopback port, a job of
//! `world` ranks, one communicator per rank on its own thread, deterministic inputs and
//! exact references. Timeouts are short so that failures show within seconds.
//!
//! Every test that needs a switch takes the [`SwitchPipeline`] it runs on, and
//! [`on_both_pipelines!`] makes two tests of it, `reference::NAME` and `p4_model::NAME`:
//! the daemon serves the same workers through the reference switch and through the P4
//! model, and both must pass.

#![allow(dead_code)]

pub mod attacker;
pub mod capture;
pub mod doctor;
pub mod fate;
pub mod forge;
pub mod hold;
pub mod proc_udp;
pub mod raw_udp;
pub mod relay;

use std::net::SocketAddr;
use std::time::{Duration, Instant};

pub use switchml_switchd::SwitchPipeline;
use switchml_switchd::{DaemonCounters, JobSpec, RunningSwitch, SwitchConfig};
use switchml_worker::{CommConfig, Communicator};

/// For each `fn NAME(pipeline: SwitchPipeline)` named, a test `reference::NAME` and a test
/// `p4_model::NAME` that run it on that pipeline.
#[allow(unused_macros)]
macro_rules! on_both_pipelines {
    ($($name:ident),+ $(,)?) => {
        mod reference {
            $(
                #[test]
                fn $name() {
                    super::$name(super::common::SwitchPipeline::Reference)
                }
            )+
        }
        mod p4_model {
            $(
                #[test]
                fn $name() {
                    super::$name(super::common::SwitchPipeline::P4Model)
                }
            )+
        }
    };
}
#[allow(unused_imports)]
pub(crate) use on_both_pipelines;

/// The job id the tests use.
pub const JOB: u16 = 3;
/// The job's key.
pub const KEY: u64 = 0x7E57_0000_5EC2_E700;

/// Start a switch on `pipeline` serving job [`JOB`] of `world` ranks over `slots` slots.
pub fn switch(
    pipeline: SwitchPipeline,
    world: u16,
    slots: u16,
    drop_rate: f64,
    seed: u64,
) -> RunningSwitch {
    start(pipeline, &[job_spec(world, slots)], drop_rate, seed)
}

/// Start a switch on `pipeline` serving `jobs`, with no injected loss.
pub fn switch_serving(pipeline: SwitchPipeline, jobs: &[JobSpec]) -> RunningSwitch {
    start(pipeline, jobs, 0.0, 0)
}

fn start(pipeline: SwitchPipeline, jobs: &[JobSpec], drop_rate: f64, seed: u64) -> RunningSwitch {
    RunningSwitch::start(&SwitchConfig {
        drop_rate,
        seed,
        pipeline,
        ..SwitchConfig::new("127.0.0.1:0".parse().unwrap(), jobs.to_vec())
    })
    .expect("switch starts")
}

/// Job [`JOB`] of `world` ranks over `slots` slots, with key [`KEY`].
pub fn job_spec(world: u16, slots: u16) -> JobSpec {
    JobSpec {
        id: JOB,
        world,
        slots,
        key: Some(KEY),
    }
}

/// The job as an attacker sees it.
pub fn target(job: &JobSpec) -> fate::Target {
    fate::Target {
        job: job.id,
        world: job.world,
        slots: job.slots,
        key: job.key.unwrap_or(0),
    }
}

/// [`config`] for rank `rank` of `job`.
pub fn job_config(job: &JobSpec, rank: u16, switch: SocketAddr) -> CommConfig {
    config(rank, job.world, switch)
        .into_builder()
        .job(job.id)
        .key(job.key.unwrap_or(0))
        .build()
}

/// A worker configuration for tests: 2 lanes × 16 slots, short timeouts.
pub fn config(rank: u16, world: u16, switch: SocketAddr) -> CommConfig {
    CommConfig::builder(rank, world, switch, JOB)
        .lanes(2)
        .window(16)
        .count(64)
        .rto(Duration::from_millis(3))
        .max_rto(Duration::from_millis(40))
        .retries(25)
        .join_timeout(Duration::from_secs(10))
        .key(KEY)
        .build()
}

/// SplitMix64's output function, for inputs.
pub use switchml_core::splitmix::mix;

/// Rank `rank`'s int32 input: values whose `world`-way sum cannot overflow.
pub fn ints(rank: u16, world: u16, len: usize, seed: u64) -> Vec<i32> {
    let bound = i64::from(i32::MAX / i32::from(world));
    (0..len)
        .map(|i| {
            let r = mix(seed ^ (u64::from(rank) << 40) ^ i as u64);
            ((r % (2 * bound as u64 + 1)) as i64 - bound) as i32
        })
        .collect()
}

/// The exact (wrapping) sum of every rank's [`ints`].
pub fn int_sum(world: u16, len: usize, seed: u64) -> Vec<i32> {
    let inputs: Vec<Vec<i32>> = (0..world).map(|q| ints(q, world, len, seed)).collect();
    (0..len)
        .map(|i| inputs.iter().fold(0i32, |s, v| s.wrapping_add(v[i])))
        .collect()
}

/// Rank `rank`'s f32 input: mixed signs and magnitudes.
pub fn floats(rank: u16, len: usize, seed: u64) -> Vec<f32> {
    (0..len)
        .map(|i| {
            let r = mix(seed ^ (u64::from(rank) << 40) ^ i as u64);
            let unit = (r >> 11) as f64 / (1u64 << 53) as f64 - 0.5;
            let scale = [1e-3, 1.0, 100.0][(r % 3) as usize];
            (unit * scale) as f32
        })
        .collect()
}

/// Run `body(comm)` on one thread per rank, each connected to `switch`; return each
/// rank's outcome in rank order.
pub fn per_rank<R: Send + 'static>(
    world: u16,
    make: impl Fn(u16) -> CommConfig + Sync,
    body: impl Fn(&Communicator) -> R + Sync,
) -> Vec<Result<R, switchml_worker::Error>> {
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..world)
            .map(|rank| {
                let (make, body) = (&make, &body);
                s.spawn(move || Communicator::connect(&make(rank)).map(|c| body(&c)))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("rank thread"))
            .collect()
    })
}

/// The exact sum of every rank's input, element by element, in f64.
pub fn f64_sum(inputs: &[Vec<f32>]) -> Vec<f64> {
    let mut out = vec![0f64; inputs[0].len()];
    for x in inputs {
        for (o, v) in out.iter_mut().zip(x) {
            *o += f64::from(*v);
        }
    }
    out
}

/// The largest error protocol.md §5.2 allows for a sum of `world` values whose block
/// maximum magnitude is below `max_abs`: `n · 2^(e + p − 31)`, `p = max(1, ⌈log₂ n⌉)`,
/// plus f32 rounding.
pub fn sum_bound(world: u16, max_abs: f64, exact: f64) -> f64 {
    let e = max_abs.log2().floor() + 1.0;
    let n = f64::from(world);
    let p = f64::from(world.max(2).next_power_of_two().trailing_zeros());
    n * 2f64.powf(e + p - 31.0) + exact.abs() * 2f64.powi(-23) + 1e-30
}

/// Return `sw`'s counters once they satisfy `done`, or after 30 s the last ones published.
/// A daemon publishes every 50 ms when it gets the CPU; a fixed sleep races a busy
/// machine, so wait for what the caller knows must come (what it then asserts), bounded.
pub fn counters_when(sw: &RunningSwitch, done: impl Fn(&DaemonCounters) -> bool) -> DaemonCounters {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let c = sw.counters();
        if done(&c) || Instant::now() >= deadline {
            return c;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Wait until the switch's published counters stop changing (nothing arrived for three
/// publications in a row; at most 10 s) and return them.
pub fn settle(sw: &RunningSwitch) -> DaemonCounters {
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut last = sw.counters();
    let mut same = 0;
    while same < 3 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(60));
        let now = sw.counters();
        if now == last {
            same += 1;
        } else {
            (last, same) = (now, 0);
        }
    }
    last
}

/// Send `join` (signed with `key`) from `s` to `to` as a worker would: again with the
/// switch's Cookie if one comes first (protocol.md §4.2). Return the answer to the Join
/// with the cookie, or the first answer that is not a Cookie.
pub fn send_join(
    s: &std::net::UdpSocket,
    to: SocketAddr,
    join: switchml_core::wire::JoinRepr,
    key: u64,
) -> Vec<u8> {
    use switchml_core::wire::{JoinRepr, Message};
    let mut repr = JoinRepr { cookie: 0, ..join }.sign(key);
    let mut buf = [0u8; 2048];
    for _ in 0..3 {
        s.send_to(&forge::bytes_of(&Message::Join(repr)), to)
            .unwrap();
        let n = s.recv(&mut buf).expect("an answer to the Join");
        match Message::parse(&buf[..n]) {
            Ok(Message::Cookie(c)) if c.nonce == repr.nonce => {
                repr = JoinRepr {
                    cookie: c.cookie,
                    ..repr
                }
                .sign(key);
            }
            _ => return buf[..n].to_vec(),
        }
    }
    panic!("the switch answered every Join with a Cookie")
}
