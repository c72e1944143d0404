//! Exact int32 and bounded-error f32 all-reduce for P = 2..8 workers over real loopback
//! sockets, with 0 %, 1 % and 5 % of datagrams lost at the switch (each way).

mod common;

use common::*;
use switchml_worker::Op;

/// One job of `world` ranks at `drop_rate`: two int32 tensors and one f32 tensor each,
/// submitted asynchronously so that they are in flight together. Returns the lost Results
/// the ranks fetched with a Probe (protocol.md §6.1).
fn run(pipeline: SwitchPipeline, world: u16, drop_rate: f64) -> u64 {
    let len = 3000 + usize::from(world) * 17;
    let sw = switch(
        pipeline,
        world,
        32,
        drop_rate,
        u64::from(world) * 1000 + (drop_rate * 100.0) as u64,
    );
    let addr = sw.addr();
    let outcomes = per_rank(
        world,
        |r| config(r, world, addr),
        |comm| {
            let r = comm.rank();
            let a = comm.allreduce_async(ints(r, world, len, 1), Op::Sum);
            let b = comm.allreduce_async(floats(r, len, 2), Op::Sum);
            let mut c = ints(r, world, len / 3, 3);
            comm.allreduce(&mut c, Op::Sum).map_err(|e| e.to_string())?;
            let a = a.wait().map_err(|e| e.to_string())?;
            let b = b.wait().map_err(|e| e.to_string())?;
            Ok::<_, String>((a, b, c, comm.stats()))
        },
    );
    let expect_int = |l: usize, seed: u64| -> Vec<i32> {
        let inputs: Vec<Vec<i32>> = (0..world).map(|r| ints(r, world, l, seed)).collect();
        (0..l)
            .map(|i| inputs.iter().fold(0i32, |s, x| s.wrapping_add(x[i])))
            .collect()
    };
    let (ea, ec) = (expect_int(len, 1), expect_int(len / 3, 3));
    let inputs: Vec<Vec<f32>> = (0..world).map(|r| floats(r, len, 2)).collect();
    let exact = f64_sum(&inputs);
    let max_abs = inputs
        .iter()
        .flatten()
        .fold(0f64, |m, x| m.max(f64::from(x.abs())));
    // Resends of lost Contributions and fetches of lost Results (protocol.md §6.1).
    let mut recoveries = 0;
    let mut fetches = 0;
    for (rank, outcome) in outcomes.into_iter().enumerate() {
        let (a, b, c, stats) = outcome
            .unwrap_or_else(|e| panic!("rank {rank} could not connect: {e}"))
            .unwrap_or_else(|e| panic!("rank {rank} failed: {e}"));
        assert_eq!(a, ea, "rank {rank}: int32 sum (async) wrong");
        assert_eq!(c, ec, "rank {rank}: int32 sum (in place) wrong");
        for (i, (y, x)) in b.iter().zip(&exact).enumerate() {
            let err = (f64::from(*y) - x).abs();
            assert!(
                err <= sum_bound(world, max_abs, *x),
                "rank {rank} element {i}: {y} vs {x}"
            );
        }
        recoveries += stats.retransmissions + stats.fetches;
        fetches += stats.fetches;
    }
    let counters = sw.stop().unwrap();
    if drop_rate > 0.0 {
        assert!(
            counters.injected_losses > 0,
            "the loss injector lost nothing"
        );
        assert!(recoveries > 0, "losses but no resend or fetch");
    } else {
        assert_eq!(counters.injected_losses, 0);
    }
    fetches
}

fn no_loss_p2_to_p8(pipeline: SwitchPipeline) {
    for world in 2..=8 {
        assert_eq!(run(pipeline, world, 0.0), 0);
    }
}

fn one_percent_loss_p2_to_p8(pipeline: SwitchPipeline) {
    for world in 2..=8 {
        run(pipeline, world, 0.01);
    }
}

fn five_percent_loss_p2_to_p8(pipeline: SwitchPipeline) {
    let fetches: u64 = (2..=8).map(|world| run(pipeline, world, 0.05)).sum();
    // The software switch offers PROBE_RESULTS, so lost Results are fetched; the P4
    // model, like the programs, does not, and its ranks resend instead.
    match pipeline {
        SwitchPipeline::Reference => assert!(fetches > 0, "no lost Result was fetched"),
        SwitchPipeline::P4Model => assert_eq!(fetches, 0),
    }
}

on_both_pipelines!(
    no_loss_p2_to_p8,
    one_percent_loss_p2_to_p8,
    five_percent_loss_p2_to_p8
);
