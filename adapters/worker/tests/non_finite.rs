//! A tensor with a NaN or an infinity is refused whole, before any lane sends anything,
//! and the error names the element's position in the caller's tensor. With two lanes it
//! used to be refused by the second lane only (naming a position within that lane's part),
//! after the first lane had already sent its half.
//!
//! Rank 0 is refused, then submits the documented remedy, a replacement of the same shape;
//! rank 1 submits once. The replacement pairs with rank 1's tensor, as nothing of the
//! refused one reached the switch.

mod common;

use common::*;
use switchml_worker::{Error, Op};

const LEN: usize = 200_000;

#[test]
fn a_non_finite_tensor_is_refused_before_any_lane_sends() {
    let world = 2;
    let sw = switch(SwitchPipeline::Reference, world, 32, 0.0, 0);
    let addr = sw.addr();
    let outcomes = per_rank(
        world,
        |r| config(r, world, addr),
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
    let inputs = [x0, floats(1, LEN, 1)];
    let max_abs = inputs
        .iter()
        .flatten()
        .fold(0f64, |m, v| m.max(f64::from(v.abs())));
    for (i, (y, exact)) in result0.iter().zip(f64_sum(&inputs)).enumerate() {
        let bound = sum_bound(world, max_abs, exact);
        assert!(
            (f64::from(*y) - exact).abs() <= bound,
            "element {i}: {y} vs {exact}"
        );
    }
}
