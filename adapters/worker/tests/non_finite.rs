//! NaN and ±∞ (protocol.md §5.4). By default they travel like Gloo's: every rank gets
//! non-finite values over the same chunks, and the next all-reduce is normal. With
//! `non_finite: Refuse` (`SWITCHML_NON_FINITE=error`):
//! a tensor with a NaN or an infinity is refused whole, before any lane sends anything,
//! and the error names the element's position in the caller's tensor. With two lanes it
//! used to be refused by the second lane only (naming a position within that lane's part),
//! after the first lane had already sent its half.
//!
//! Rank 0 is refused, then submits the documented remedy, a replacement of the same shape;
//! rank 1 submits once. The replacement pairs with rank 1's tensor, as nothing of the
//! refused one reached the switch.

mod common;

use common::*;
use switchml_core::worker::NonFinitePolicy;
use switchml_worker::{Error, Op};

const LEN: usize = 200_000;

#[test]
fn a_non_finite_tensor_is_refused_before_any_lane_sends_where_configured() {
    let world = 2;
    let sw = switch(SwitchPipeline::Reference, world, 32, 0.0, 0);
    let addr = sw.addr();
    let outcomes = per_rank(
        world,
        |r| {
            config(r, world, addr)
                .into_builder()
                .non_finite(NonFinitePolicy::Refuse)
                .build()
        },
        |comm| {
            let mut x = floats(comm.rank(), LEN, 1);
            if comm.rank() == 1 {
                return (None, comm.allreduce(&mut x, Op::Sum).map(|()| x));
            }
            // The last element: in the second lane's part.
            x[LEN - 1] = f32::NAN;
            let before: Vec<u32> = x.iter().map(|v| v.to_bits()).collect();
            let blocking = comm.allreduce(&mut x, Op::Sum);
            let untouched = x.iter().map(|v| v.to_bits()).eq(before);
            // The first element: in the first lane's part.
            let mut y = x.clone();
            y[0] = f32::NEG_INFINITY;
            let pending = comm.allreduce_async(y, Op::Sum).wait();
            x[LEN - 1] = 0.0;
            let replacement = comm.allreduce(&mut x, Op::Sum).map(|()| x);
            (Some((blocking, untouched, pending.err())), replacement)
        },
    );
    let mut outcomes = outcomes.into_iter().map(|o| o.expect("rank connects"));
    let (refused, result0) = outcomes.next().unwrap();
    let (_, result1) = outcomes.next().unwrap();
    let (blocking, untouched, pending) = refused.unwrap();
    let e = blocking.expect_err("a NaN must be refused");
    assert_eq!(e, Error::NonFinite { index: LEN - 1 });
    let text = e.to_string();
    assert!(
        text.contains("element 199999") && text.contains("nothing was sent"),
        "{text}"
    );
    assert!(untouched, "a refused tensor must be left as it was");
    assert_eq!(pending, Some(Error::NonFinite { index: 0 }));

    let result0 = result0.expect("rank 0's replacement");
    let result1 = result1.expect("rank 1's tensor");
    assert!(result0
        .iter()
        .zip(&result1)
        .all(|(a, b)| a.to_bits() == b.to_bits()));
    let mut x0 = floats(0, LEN, 1);
    x0[LEN - 1] = 0.0;
    assert_within_bound(world, &[x0, floats(1, LEN, 1)], &result0);
}

/// Assert that `result` is the sum of `inputs` within protocol.md §5.2's bound.
fn assert_within_bound(world: u16, inputs: &[Vec<f32>], result: &[f32]) {
    let max_abs = inputs
        .iter()
        .flatten()
        .fold(0f64, |m, v| m.max(f64::from(v.abs())));
    for (i, (y, exact)) in result.iter().zip(f64_sum(inputs)).enumerate() {
        let bound = sum_bound(world, max_abs, exact);
        assert!(
            (f64::from(*y) - exact).abs() <= bound,
            "element {i}: {y} vs {exact}"
        );
    }
}

/// Two ranks over loopback, with two lanes of chunks of 64: rank 1 has +∞ at element 130
/// (chunk 128..192, lane 0) and rank 0 a NaN at 150,000 (chunk 149,952..150,016, lane 1).
/// Both get +∞ and NaN over exactly those chunks, the same finite bits elsewhere; the
/// next all-reduce, all finite, is normal.
#[test]
fn non_finite_values_reach_every_rank_over_the_same_chunks() {
    let world = 2;
    let sw = switch(SwitchPipeline::Reference, world, 32, 0.0, 0);
    let addr = sw.addr();
    let outcomes = per_rank(
        world,
        |r| config(r, world, addr),
        |comm| {
            let mut x = floats(comm.rank(), LEN, 2);
            match comm.rank() {
                1 => x[130] = f32::INFINITY,
                _ => x[150_000] = f32::NAN,
            }
            let first = comm.allreduce(&mut x, Op::Sum).map(|()| x);
            let mut y = floats(comm.rank(), LEN, 3);
            let next = comm.allreduce(&mut y, Op::Sum).map(|()| y);
            (first, next)
        },
    );
    let results: Vec<_> = outcomes
        .into_iter()
        .map(|o| o.expect("rank connects"))
        .map(|(first, next)| (first.expect("propagated"), next.expect("next tensor")))
        .collect();
    let (x0, y0) = &results[0];
    let (x1, y1) = &results[1];
    let bits = |v: &[f32]| v.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
    assert_eq!(bits(x0), bits(x1), "every rank gets the same bits");
    for (i, v) in x0.iter().enumerate() {
        match i {
            128..192 => assert_eq!(*v, f32::INFINITY, "element {i}"),
            149_952..150_016 => assert!(v.is_nan(), "element {i}"),
            _ => assert!(v.is_finite(), "element {i}: {v}"),
        }
    }
    assert_eq!(bits(y0), bits(y1));
    assert_within_bound(world, &[floats(0, LEN, 3), floats(1, LEN, 3)], y0);
}
