//! f16 and bf16 tensors end to end through the software switch on loopback: quantized
//! through f32 like f32 tensors (protocol.md §5), results within the §5.2 bound plus the
//! rounding to the half-precision type, every rank's result bit for bit the same, through
//! `allreduce` and `allreduce_async`; with `non_finite: Refuse`, a NaN or an infinity is
//! refused before anything is sent.

mod common;

use common::*;
use switchml_worker::{bf16, f16, Element, Error, Op};

/// Not a multiple of the test configuration's 64 values per packet.
const LEN: usize = 30_001;

/// What a half-precision type needs for this test.
trait Half: Element + PartialEq + std::fmt::Debug {
    /// The unit roundoff of rounding an f32 to this type.
    const UNIT: f64;
    /// Half the smallest subnormal.
    const TINY: f64;
    const NAN: Self;
    const INFINITY: Self;
    fn from_f32(x: f32) -> Self;
    fn to_f64(self) -> f64;
    fn bits(self) -> u16;
}

impl Half for f16 {
    const UNIT: f64 = 1.0 / 2048.0;
    const TINY: f64 = 1.0 / 33_554_432.0;
    const NAN: f16 = f16::NAN;
    const INFINITY: f16 = f16::INFINITY;
    fn from_f32(x: f32) -> f16 {
        f16::from_f32(x)
    }
    fn to_f64(self) -> f64 {
        f64::from(self)
    }
    fn bits(self) -> u16 {
        self.to_bits()
    }
}

impl Half for bf16 {
    const UNIT: f64 = 1.0 / 256.0;
    const TINY: f64 = 1e-38;
    const NAN: bf16 = bf16::NAN;
    const INFINITY: bf16 = bf16::INFINITY;
    fn from_f32(x: f32) -> bf16 {
        bf16::from_f32(x)
    }
    fn to_f64(self) -> f64 {
        f64::from(self)
    }
    fn bits(self) -> u16 {
        self.to_bits()
    }
}

/// Rank `rank`'s input: [`floats`] rounded to `T`.
fn input<T: Half>(rank: u16, seed: u64) -> Vec<T> {
    floats(rank, LEN, seed)
        .into_iter()
        .map(T::from_f32)
        .collect()
}

/// Check `result` against the exact sum of every rank's input (or its mean).
fn check<T: Half>(result: &[T], world: u16, seed: u64, op: Op) {
    let inputs: Vec<Vec<f32>> = (0..world)
        .map(|r| {
            input::<T>(r, seed)
                .into_iter()
                .map(|v| v.to_f64() as f32)
                .collect()
        })
        .collect();
    let max_abs = inputs
        .iter()
        .flatten()
        .fold(0f64, |m, v| m.max(f64::from(v.abs())));
    let n = f64::from(world);
    for (i, (y, exact)) in result.iter().zip(f64_sum(&inputs)).enumerate() {
        let mut bound = sum_bound(world, max_abs, exact) + exact.abs() * T::UNIT + T::TINY;
        let mut exact = exact;
        if op == Op::Average {
            exact /= n;
            bound /= n;
        }
        let err = (y.to_f64() - exact).abs();
        assert!(
            err <= bound,
            "element {i}: {y:?} vs {exact} (bound {bound})"
        );
    }
}

fn end_to_end<T: Half>(pipeline: SwitchPipeline, seed: u64) {
    let world = 3;
    let sw = switch(pipeline, world, 32, 0.0, 0);
    let addr = sw.addr();
    let outcomes = per_rank(
        world,
        |r| config(r, world, addr),
        |comm| {
            let mut x = input::<T>(comm.rank(), seed);
            comm.allreduce(&mut x, Op::Sum)?;
            let mean = comm
                .allreduce_async(input::<T>(comm.rank(), seed + 1), Op::Average)
                .wait()?;
            Ok::<_, Error>((x, mean))
        },
    );
    let results: Vec<(Vec<T>, Vec<T>)> = outcomes
        .into_iter()
        .map(|o| o.expect("rank connects").expect("all-reduces"))
        .collect();
    let (sum, mean) = &results[0];
    check(sum, world, seed, Op::Sum);
    check(mean, world, seed + 1, Op::Average);
    for (rank, (s, m)) in results.iter().enumerate().skip(1) {
        let same = |a: &[T], b: &[T]| a.iter().map(|v| v.bits()).eq(b.iter().map(|v| v.bits()));
        assert!(same(s, sum), "rank {rank}'s sum differs from rank 0's");
        assert!(same(m, mean), "rank {rank}'s mean differs from rank 0's");
    }
    drop(sw);
}

fn refusal<T: Half>() {
    let world = 2;
    let sw = switch(SwitchPipeline::Reference, world, 32, 0.0, 0);
    let addr = sw.addr();
    let outcomes = per_rank(
        world,
        |r| {
            config(r, world, addr)
                .into_builder()
                .non_finite(switchml_core::worker::NonFinitePolicy::Refuse)
                .build()
        },
        |comm| {
            let mut x = input::<T>(comm.rank(), 5);
            if comm.rank() == 0 {
                x[LEN - 1] = T::NAN;
                let before: Vec<u16> = x.iter().map(|v| v.bits()).collect();
                let blocking = comm.allreduce(&mut x, Op::Sum);
                assert!(x.iter().map(|v| v.bits()).eq(before), "left untouched");
                let mut y = input::<T>(0, 5);
                y[1] = T::INFINITY;
                let pending = comm.allreduce_async(y, Op::Sum).wait();
                x[LEN - 1] = T::from_f32(0.0);
                (
                    blocking.err(),
                    pending.err(),
                    comm.allreduce(&mut x, Op::Sum),
                )
            } else {
                (None, None, comm.allreduce(&mut x, Op::Sum))
            }
        },
    );
    let mut outcomes = outcomes.into_iter().map(|o| o.expect("rank connects"));
    let (blocking, pending, replacement) = outcomes.next().unwrap();
    assert_eq!(blocking, Some(Error::NonFinite { index: LEN - 1 }));
    assert_eq!(pending, Some(Error::NonFinite { index: 1 }));
    replacement.expect("rank 0's replacement is reduced");
    outcomes
        .next()
        .unwrap()
        .2
        .expect("rank 1's tensor is reduced");
    drop(sw);
}

on_both_pipelines!(
    f16_tensors_reduce_through_the_switch,
    bf16_tensors_reduce_through_the_switch
);

fn f16_tensors_reduce_through_the_switch(pipeline: SwitchPipeline) {
    end_to_end::<f16>(pipeline, 11);
}

fn bf16_tensors_reduce_through_the_switch(pipeline: SwitchPipeline) {
    end_to_end::<bf16>(pipeline, 12);
}

#[test]
fn f16_nan_and_infinity_are_refused_before_anything_is_sent() {
    refusal::<f16>();
}

#[test]
fn bf16_nan_and_infinity_are_refused_before_anything_is_sent() {
    refusal::<bf16>();
}
