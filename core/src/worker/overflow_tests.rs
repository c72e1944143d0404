//! A float sum beyond the element type's range (protocol.md §5.2): with
//! `NonFinitePolicy::Refuse` an overflow, reported like int32's, not an infinity handed back
//! as a result; by default (`Propagate`) the ±∞ that IEEE addition gives, and no error:
//!
//! ```text
//!   worker (rank 0 of 2) ──▶ switch (job 3, 2 slots) ◀── worker (rank 1 of 2)
//! ```

use super::one_switch_tests::{all_reduce, setup_with};
use super::*;
use crate::switch::Slot;

/// Each rank's outcome, and its result.
type Outcomes = ([Option<Result<(), TensorError>>; 2], [[f32; 8]; 2]);

/// Two ranks whose sums at elements 3 and 4 are beyond f32 (±6e38), under `non_finite`.
fn beyond_f32(non_finite: NonFinitePolicy) -> Outcomes {
    let input = [1.0f32, 2.0, 0.5, 3e38, -3e38, 0.25, 3e38, 1.0];
    let (a, mut b) = (input, input);
    b[6] = -1.0;
    let mut pool = [Slot::IDLE; 2];
    let (mut w, mut s) = setup_with::<_, 2>(&mut pool, non_finite);
    let o = all_reduce((&mut w, &mut s), [a, b], Op::Sum);
    assert!(w.iter().all(|w| w.failure().is_none() && w.is_idle()));
    for y in o.bufs.iter().flatten() {
        assert_eq!(y[3..5], [f32::INFINITY, f32::NEG_INFINITY]);
        assert_eq!(y[..2], [2.0, 4.0]);
        assert!(y[2].is_finite() && y[5].is_finite());
        assert!((y[6] - 3e38).abs() < 1e32, "{}", y[6]);
    }
    (o.results, o.bufs.map(Option::unwrap))
}

#[test]
fn a_float_sum_beyond_f32_is_an_overflow_naming_its_first_element() {
    let overflow = Err(TensorError::Overflow {
        index: 3,
        element: crate::quant::ElementType::F32,
    });
    let (results, _) = beyond_f32(NonFinitePolicy::Refuse);
    assert_eq!(results, [Some(overflow), Some(overflow)]);
}

#[test]
fn a_float_sum_beyond_f32_is_infinity_at_every_rank_by_default() {
    let (results, [a, b]) = beyond_f32(NonFinitePolicy::Propagate);
    assert_eq!(results, [Some(Ok(())), Some(Ok(()))]);
    assert_eq!(a.map(f32::to_bits), b.map(f32::to_bits));
}
