//! A float sum beyond the element type's range is an overflow, reported like int32's, not
//! an infinity handed back as a result (protocol.md §5.2):
//!
//! ```text
//!   worker (rank 0 of 2) ──▶ switch (job 3, 2 slots) ◀── worker (rank 1 of 2)
//! ```

use super::one_switch_tests::{all_reduce, setup};
use super::*;
use crate::switch::Slot;

#[test]
fn a_float_sum_beyond_f32_is_an_overflow_naming_its_first_element() {
    let input = [1.0f32, 2.0, 0.5, 3e38, -3e38, 0.25, 3e38, 1.0];
    let (a, mut b) = (input, input);
    b[6] = -1.0;
    let mut pool = [Slot::IDLE; 2];
    let (mut w, mut s) = setup::<_, 2>(&mut pool);
    let o = all_reduce((&mut w, &mut s), [a, b], Op::Sum);
    let overflow = Err(TensorError::Overflow {
        index: 3,
        element: crate::quant::ElementType::F32,
    });
    assert_eq!(o.results, [Some(overflow), Some(overflow)]);
    assert!(w.iter().all(|w| w.failure().is_none() && w.is_idle()));
    for y in o.bufs.map(Option::unwrap) {
        assert_eq!(y[3..5], [f32::INFINITY, f32::NEG_INFINITY]);
        assert_eq!(y[..2], [2.0, 4.0]);
        assert!(y[2].is_finite() && y[5].is_finite());
        assert!((y[6] - 3e38).abs() < 1e32, "{}", y[6]);
    }
}
