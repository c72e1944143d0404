//! Liveness apart from progress (protocol.md §4.3) on loopback: a rank that is alive but
//! busy for far longer than the retry budget is waited for, and the job finishes exact.
//! (A killed rank, named by the switch: `adapters/cli/tests/processes.rs`, with SIGKILL.)

mod common;

use std::time::Duration;

use common::*;
use switchml_worker::Op;

fn a_rank_busy_for_five_seconds_is_waited_for_past_the_retry_budget(pipeline: SwitchPipeline) {
    // Issue 27: rank 0 running validation for 21 s ended the job. Timeouts so short here
    // that the old rule gave up within a tenth of a second (10 timeouts of at most 8 ms):
    // rank 1's lanes keep alive while its thread sleeps, so rank 0 waits for it.
    let world = 2;
    let (len, seed) = (20_000, 27);
    let sw = switch(pipeline, world, 64, 0.0, 0);
    let addr = sw.addr();
    let make = |rank| {
        config(rank, world, addr)
            .into_builder()
            .rto(Duration::from_millis(2))
            .max_rto(Duration::from_millis(8))
            .retries(10)
            .timeout(Duration::from_secs(300))
            .build()
    };
    let outcomes = per_rank(world, make, |comm| {
        let rank = comm.rank();
        if rank == 1 {
            std::thread::sleep(Duration::from_secs(5));
        }
        let mut x = ints(rank, world, len, seed);
        comm.allreduce(&mut x, Op::Sum).map(|()| x)
    });
    let want = int_sum(world, len, seed);
    for (rank, outcome) in outcomes.into_iter().enumerate() {
        let got = outcome
            .expect("connects")
            .unwrap_or_else(|e| panic!("rank {rank}: {e}"));
        assert!(got == want, "rank {rank}: the sum is not exact");
    }
    drop(sw);
}

on_both_pipelines!(a_rank_busy_for_five_seconds_is_waited_for_past_the_retry_budget);
