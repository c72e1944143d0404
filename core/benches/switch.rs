//! Reference-switch aggregation against a plain int32 vector add of the same bytes.
//!
//! The switch's data plane does, per Contribution: parse and validate the header, find the
//! job and slot, check and update the use number, seen bitmap and countdown, and add k
//! big-endian int32 into the slot (with overflow detection); one packet in `world` also
//! writes the Result. The baseline is the bare arithmetic of the same packet: `acc[i] +=
//! x[i]` over k native int32. The ratio printed is baseline time / switch time (1.0 means
//! the switch costs nothing beyond the additions).

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{criterion_group, Criterion, Throughput};
use switchml_core::switch::{JobConfig, Slot, Switch, Verdict};
use switchml_core::wire::data::HEADER_LEN;
use switchml_core::wire::{DataKind, DataPacket, DataRepr, Flags, JoinPacket, JoinRepr};

/// Values per packet.
const K: usize = 256;
/// The session of the job's run (rank 0's nonce).
const SESSION: u32 = 1;
/// Ranks per job.
const WORLD: u16 = 4;
/// Slots the packets cycle through.
const SLOTS: u16 = 64;

type BenchSwitch = Switch<'static, K, 1, 4>;

/// One round of traffic: for every slot, one use with a contribution from every rank.
/// Returns the packets for `uses` consecutive uses so that seq keeps advancing.
fn traffic(uses: u32) -> Vec<Vec<u8>> {
    let mut packets = Vec::new();
    for seq in 0..uses {
        for slot in 0..SLOTS {
            for rank in 0..WORLD {
                let repr = DataRepr {
                    kind: DataKind::Contribution,
                    job: 1,
                    rank,
                    slot,
                    ver: (seq & 1) as u8,
                    flags: Flags::default(),
                    count: K as u16,
                    seq,
                    exp: 120,
                    session: SESSION,
                };
                let mut b = vec![0u8; repr.buffer_len()];
                let mut p = DataPacket::new_unchecked(&mut b[..]);
                repr.emit(&mut p);
                for (i, v) in p.values_mut().chunks_exact_mut(4).enumerate() {
                    v.copy_from_slice(&((i as i32 * 7919) ^ i32::from(rank)).to_be_bytes());
                }
                packets.push(b);
            }
        }
    }
    packets
}

fn switch() -> BenchSwitch {
    let pool = Box::leak(vec![Slot::IDLE; usize::from(SLOTS)].into_boxed_slice());
    let mut s = Switch::new(pool, 1);
    s.add_job(JobConfig {
        id: 1,
        world: WORLD,
        slot_lo: 0,
        slot_count: SLOTS,
        key: 0,
    })
    .unwrap();
    // Open the job's run: every rank joins; rank 0's nonce is the session.
    let mut out = vec![0u8; BenchSwitch::OUT_LEN];
    for rank in 0..WORLD {
        let join = JoinRepr {
            job: 1,
            rank,
            world: WORLD,
            slot_lo: 0,
            slot_count: SLOTS,
            count: K as u16,
            lanes: 1,
            nonce: SESSION + u32::from(rank),
            cookie: 0,
            tag: [0; 16],
        }
        .sign(0);
        let mut b = [0u8; 44];
        join.emit(&mut JoinPacket::new_unchecked(&mut b[..]));
        assert!(!matches!(s.process(&b, &mut out), Verdict::Drop(_)));
    }
    s
}

/// Feed every packet once; return how many results came out (so nothing is optimized away).
fn run_switch(s: &mut BenchSwitch, packets: &[Vec<u8>], out: &mut [u8]) -> usize {
    packets
        .iter()
        .filter(|p| matches!(s.process(black_box(p), out), Verdict::Multicast { .. }))
        .count()
}

/// The baseline: the same packets' payload bytes, read as native int32 and added into
/// per-slot accumulators: no parsing, no byte swapping, no scoreboard.
fn run_add(acc: &mut [[i32; K]], packets: &[Vec<u8>]) {
    for (i, p) in packets.iter().enumerate() {
        let a = &mut acc[i / usize::from(WORLD) % acc.len()];
        for (a, x) in a.iter_mut().zip(p[HEADER_LEN..].chunks_exact(4)) {
            *a = a.wrapping_add(i32::from_ne_bytes([x[0], x[1], x[2], x[3]]));
        }
    }
}

fn bench(c: &mut Criterion) {
    // Uses advance across iterations, so each criterion iteration feeds fresh uses.
    let packets = traffic(64);
    let mut out = vec![0u8; BenchSwitch::OUT_LEN];
    let mut acc = vec![[0i32; K]; usize::from(SLOTS)];
    let mut group = c.benchmark_group("switch k=256 world=4");
    group.throughput(Throughput::Elements(packets.len() as u64));
    group.bench_function("plain i32 add", |b| {
        b.iter(|| run_add(&mut acc, black_box(&packets)));
    });
    group.bench_function("reference switch", |b| {
        b.iter_batched_ref(
            switch,
            |s| run_switch(s, &packets, &mut out),
            criterion::BatchSize::LargeInput,
        );
    });
    group.finish();
}

/// Median over `reps` of the time `f` takes, with `setup` run untimed before each.
fn median<S>(reps: usize, mut setup: impl FnMut() -> S, mut f: impl FnMut(&mut S)) -> Duration {
    let mut times: Vec<Duration> = (0..reps)
        .map(|_| {
            let mut s = setup();
            let start = Instant::now();
            f(&mut s);
            start.elapsed()
        })
        .collect();
    times.sort();
    times[reps / 2]
}

fn report_ratio() {
    let uses = std::env::var("USES")
        .ok()
        .and_then(|u| u.parse().ok())
        .unwrap_or(64);
    let packets = traffic(uses);
    let mut out = vec![0u8; BenchSwitch::OUT_LEN];
    let reps = 31;
    let add = median(
        reps,
        || vec![[0i32; K]; usize::from(SLOTS)],
        |acc| {
            run_add(acc, black_box(&packets));
            black_box(acc);
        },
    );
    let sw = median(reps, switch, |s| {
        black_box(run_switch(s, &packets, &mut out));
    });
    let per = |d: Duration| d.as_nanos() as f64 / packets.len() as f64;
    println!(
        "switch per packet: {:.1} ns, plain i32 add of the same values: {:.1} ns \
         ({} packets of {K} values, world {WORLD})",
        per(sw),
        per(add),
        packets.len()
    );
    println!(
        "reference switch / plain i32 add throughput ratio: {:.2}",
        add.as_secs_f64() / sw.as_secs_f64()
    );
}

criterion_group!(benches, bench);

fn main() {
    benches();
    Criterion::default().configure_from_args().final_summary();
    report_ratio();
}
