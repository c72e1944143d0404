//! A lane that lets datagrams gather before reading them (`CommConfig::coalesce`) still
//! gets exact sums, also when packets are lost and its timers must fire on time.

mod common;

use std::time::Duration;

use common::*;
use switchml_worker::Op;

fn coalescing_lanes_reduce_exactly_with_and_without_loss(pipeline: SwitchPipeline) {
    let world = 3;
    for (drop_rate, seed) in [(0.0, 1), (0.02, 2)] {
        let sw = switch(pipeline, world, 32, drop_rate, seed);
        let addr = sw.addr();
        let len = 50_000;
        let outcomes = per_rank(
            world,
            |rank| {
                let mut c = config(rank, world, addr);
                c.coalesce = Duration::from_micros(1_000);
                c
            },
            |comm| {
                let mut x = ints(comm.rank(), world, len, seed);
                comm.allreduce(&mut x, Op::Sum).map(|()| x)
            },
        );
        let inputs: Vec<Vec<i32>> = (0..world).map(|r| ints(r, world, len, seed)).collect();
        let expected: Vec<i32> = (0..len)
            .map(|i| inputs.iter().fold(0i32, |s, x| s.wrapping_add(x[i])))
            .collect();
        for (rank, outcome) in outcomes.into_iter().enumerate() {
            let got = outcome.expect("connects").expect("all-reduce succeeds");
            assert!(got == expected, "rank {rank} drop {drop_rate}: wrong sum");
        }
        drop(sw);
    }
}

on_both_pipelines!(coalescing_lanes_reduce_exactly_with_and_without_loss);
