//! An f32 sum beyond the f32 range (protocol.md §5.2): with `SWITCHML_NON_FINITE=error` it
//! is reported like an int32 overflow, naming the element (its position in the caller's
//! tensor, whichever lane carried it), never handed back as a silent infinity; by default
//! it is ±∞ at every rank, as IEEE addition gives it (§5.4). The stream goes on: the next
//! all-reduce works.

mod common;

use common::*;
use switchml_worker::{ElementType, Error, NonFinitePolicy, Op};

/// Each rank's outcome of an all-reduce whose sum is beyond f32 at elements 150,000 (+)
/// and 190,000 (−), those two elements, and the next all-reduce's outcome.
type Outcome = (Result<(), Error>, [f32; 2], Result<(), Error>);

fn run(pipeline: SwitchPipeline, non_finite: NonFinitePolicy) -> Vec<Outcome> {
    let world = 4;
    let sw = switch(pipeline, world, 32, 0.0, 0);
    let addr = sw.addr();
    let outcomes = per_rank(
        world,
        |r| {
            config(r, world, addr)
                .into_builder()
                .non_finite(non_finite)
                .build()
        },
        |comm| {
            let mut x = floats(comm.rank(), 200_000, 9);
            // In the second lane's part; 4 × 3e38 = 1.2e39 is beyond f32 (3.4e38).
            x[150_000] = 3e38;
            x[190_000] = -3e38;
            let first = comm.allreduce(&mut x, Op::Sum);
            let mut y = ints(comm.rank(), world, 1_000, 2);
            let next = comm.allreduce(&mut y, Op::Sum);
            (first, [x[150_000], x[190_000]], next)
        },
    );
    outcomes.into_iter().map(|o| o.unwrap()).collect()
}

fn an_f32_sum_beyond_the_range_is_an_overflow_naming_the_element(pipeline: SwitchPipeline) {
    let outcomes = run(pipeline, NonFinitePolicy::Refuse);
    for (rank, (first, overflowed, next)) in outcomes.into_iter().enumerate() {
        let e = first.expect_err("an infinite sum must not pass as a result");
        let want = Error::Overflow {
            index: 150_000,
            element: ElementType::F32,
        };
        assert_eq!(e, want, "rank {rank}: {e}");
        assert!(e.to_string().contains("element 150000"), "{e}");
        assert_eq!(overflowed, [f32::INFINITY, f32::NEG_INFINITY]);
        next.unwrap_or_else(|e| panic!("rank {rank}: the next all-reduce failed: {e}"));
    }
}

/// By default the sum is what IEEE addition gives, ±∞, at every rank, with no error (as
/// with Gloo: GradScaler then skips the step).
fn an_f32_sum_beyond_the_range_is_infinity_by_default(pipeline: SwitchPipeline) {
    for (rank, (first, overflowed, next)) in run(pipeline, NonFinitePolicy::Propagate)
        .into_iter()
        .enumerate()
    {
        first.unwrap_or_else(|e| panic!("rank {rank}: {e}"));
        assert_eq!(overflowed, [f32::INFINITY, f32::NEG_INFINITY]);
        next.unwrap_or_else(|e| panic!("rank {rank}: the next all-reduce failed: {e}"));
    }
}

on_both_pipelines!(
    an_f32_sum_beyond_the_range_is_an_overflow_naming_the_element,
    an_f32_sum_beyond_the_range_is_infinity_by_default
);
