//! Quantization throughput against memcpy of the same buffer.
//!
//! A worker moves every element of a float tensor through `quantize_f32` into a packet
//! payload and later back through `dequantize_f32` from the result's payload. This measures
//! that round trip over a 64 Ki-element f32 buffer in 256-element blocks (one packet
//! payload, reused, as a worker reuses its packet buffers) next to a plain
//! `copy_from_slice` of the same buffer, and prints the throughput ratio from its own timing
//! in the same process.
//!
//! Before any of it, a float tensor is checked for NaN/∞ and each block's exponent found:
//! `block_exponent+check_finite` does both per block, `finite_block_exponents (fused)` in
//! one pass over the buffer; and the last lines time, over 16 Mi elements streaming from
//! memory, the worker's two passes without an exponent cache (the check over the whole
//! tensor, then each block's exponent) against the fused one.

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{criterion_group, Criterion, Throughput};
use switchml_core::quant::{
    block_exponent_f32, check_finite_f32, finite_block_exponents_f32, Op, Scale, Unscale,
};

/// Elements in the buffer.
const LEN: usize = 64 * 1024;
/// Elements per block (per packet).
const BLOCK: usize = 256;
/// World size used for scaling (any value costs the same).
const WORLD: u16 = 8;

/// Gradient-like values: a deterministic mix of signs and magnitudes, a few exact zeros.
fn gradient(len: usize) -> Vec<f32> {
    let mut state = 0x2545_f491_4f6c_dd1du64;
    (0..len)
        .map(|i| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let unit = (state >> 40) as f32 / (1u64 << 24) as f32 - 0.5;
            if i % 97 == 0 {
                0.0
            } else {
                unit * (1 << (i % 9)) as f32 * 1e-3
            }
        })
        .collect()
}

/// The block exponents a job would agree on (here: this worker's own).
fn exponents(src: &[f32]) -> Vec<u8> {
    src.chunks(BLOCK).map(block_exponent_f32).collect()
}

/// Quantize every block into the payload and dequantize it back (the average) into `dst`.
fn round_trip(src: &[f32], exps: &[u8], payload: &mut [u8; 4 * BLOCK], dst: &mut [f32]) {
    for ((block, out), &e) in src.chunks(BLOCK).zip(dst.chunks_mut(BLOCK)).zip(exps) {
        Scale::new(WORLD, e).quantize_finite_f32(block, payload);
        Unscale::new(WORLD, e, Op::Average).dequantize_f32(payload, out);
    }
}

fn bench_round_trip(c: &mut Criterion) {
    let src = gradient(LEN);
    let exps = exponents(&src);
    let mut dst = vec![0.0f32; LEN];
    let mut payload = [0u8; 4 * BLOCK];

    let mut group = c.benchmark_group("quant 64Ki f32");
    group.throughput(Throughput::Bytes((4 * LEN) as u64));
    group.bench_function("memcpy", |b| {
        b.iter(|| dst.copy_from_slice(black_box(&src)));
    });
    group.bench_function("quantize+dequantize", |b| {
        b.iter(|| round_trip(black_box(&src), &exps, &mut payload, &mut dst));
    });
    // The path of a tensor checked finite whole (every tensor the UDP communicator sends
    // but one that holds a NaN or ∞).
    group.bench_function("quantize only", |b| {
        b.iter(|| {
            for (block, &e) in black_box(&src).chunks(BLOCK).zip(&exps) {
                Scale::new(WORLD, e).quantize_finite_f32(block, &mut payload);
                black_box(&payload);
            }
        });
    });
    // The path of a chunk that may hold a NaN or ∞ (protocol.md §5.4): each value is
    // looked at, a NaN or ∞ sent as 0 and reported.
    group.bench_function("quantize, looking for NaN/Inf", |b| {
        b.iter(|| {
            for (block, &e) in black_box(&src).chunks(BLOCK).zip(&exps) {
                black_box(Scale::new(WORLD, e).quantize_f32(block, &mut payload));
                black_box(&payload);
            }
        });
    });
    group.bench_function("dequantize only", |b| {
        b.iter(|| {
            for (out, &e) in dst.chunks_mut(BLOCK).zip(&exps) {
                Unscale::new(WORLD, e, Op::Average).dequantize_f32(black_box(&payload), out);
            }
        });
    });
    group.bench_function("block_exponent+check_finite", |b| {
        b.iter(|| {
            for block in black_box(&src).chunks(BLOCK) {
                black_box(block_exponent_f32(block));
                black_box(check_finite_f32(block)).ok();
            }
        });
    });
    let mut block_exps = vec![0u8; LEN.div_ceil(BLOCK)];
    group.bench_function("finite_block_exponents (fused)", |b| {
        b.iter(|| {
            black_box(finite_block_exponents_f32(
                black_box(&src),
                BLOCK,
                &mut block_exps,
            ))
            .ok();
        });
    });
    group.finish();
}

/// Median time per call of `a` and of `b`, over `reps` rounds of `iters` calls of each;
/// the rounds alternate between the two so that both see the same machine load.
fn median_times(
    reps: usize,
    iters: u32,
    mut a: impl FnMut(),
    mut b: impl FnMut(),
) -> (Duration, Duration) {
    let time = |f: &mut dyn FnMut()| {
        let start = Instant::now();
        for _ in 0..iters {
            f();
        }
        start.elapsed() / iters
    };
    let (mut ta, mut tb) = (Vec::new(), Vec::new());
    for _ in 0..reps {
        ta.push(time(&mut a));
        tb.push(time(&mut b));
    }
    ta.sort();
    tb.sort();
    (ta[reps / 2], tb[reps / 2])
}

/// Time memcpy and the round trip over `len` elements in this process; print their ratio.
///
/// Two sizes are reported: 64 Ki elements (256 KiB, in cache, where memcpy runs at cache
/// bandwidth) and 16 Mi elements (64 MiB, a typical gradient tensor, where both stream from
/// memory as a worker's all-reduce does).
fn report_ratio(len: usize, reps: usize, iters: u32) {
    let src = gradient(len);
    let exps = exponents(&src);
    let mut copy = vec![0.0f32; len];
    let mut dst = vec![0.0f32; len];
    let mut payload = [0u8; 4 * BLOCK];
    let (memcpy, quant) = median_times(
        reps,
        iters,
        || {
            copy.copy_from_slice(black_box(&src));
            black_box(&mut copy);
        },
        || {
            round_trip(black_box(&src), &exps, &mut payload, &mut dst);
            black_box(&mut dst);
        },
    );
    let gbps = |t: Duration| (4 * len) as f64 / t.as_secs_f64() / 1e9;
    println!(
        "{len} f32: memcpy {:?} ({:.2} GB/s), quantize+dequantize {:?} ({:.2} GB/s)",
        memcpy,
        gbps(memcpy),
        quant,
        gbps(quant)
    );
    println!(
        "quant round-trip / memcpy throughput ratio ({len} f32): {:.2}",
        memcpy.as_secs_f64() / quant.as_secs_f64()
    );
}

/// Time the two scans a worker makes without an exponent cache (`check_finite_f32` over the
/// whole tensor, then `block_exponent_f32` per block) against the fused pass, over `len`
/// elements in this process; print both.
fn report_scans(len: usize, reps: usize, iters: u32) {
    let src = gradient(len);
    let mut exps = vec![0u8; len.div_ceil(BLOCK)];
    let mut fused = vec![0u8; len.div_ceil(BLOCK)];
    let (two, one) = median_times(
        reps,
        iters,
        || {
            black_box(check_finite_f32(black_box(&src))).ok();
            for (block, e) in src.chunks(BLOCK).zip(exps.iter_mut()) {
                *e = block_exponent_f32(block);
            }
            black_box(&mut exps);
        },
        || {
            black_box(finite_block_exponents_f32(
                black_box(&src),
                BLOCK,
                &mut fused,
            ))
            .ok();
        },
    );
    assert_eq!(exps, fused);
    let gbps = |t: Duration| (4 * len) as f64 / t.as_secs_f64() / 1e9;
    println!(
        "{len} f32: check_finite, then block_exponent per block {two:?} ({:.2} GB/s); \
         finite_block_exponents {one:?} ({:.2} GB/s), {:.2}x",
        gbps(two),
        gbps(one),
        two.as_secs_f64() / one.as_secs_f64()
    );
}

criterion_group!(benches, bench_round_trip);

// `criterion_main!` would end `main` after the summary; the ratio line follows it here.
fn main() {
    benches();
    Criterion::default().configure_from_args().final_summary();
    report_ratio(LEN, 31, 200);
    report_ratio(16 << 20, 7, 3);
    report_scans(16 << 20, 7, 3);
}
