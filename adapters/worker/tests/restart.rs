//! A switch stopped and restarted mid-job: the workers fail with an error that says so,
//! instead of hanging or mixing the new switch's empty slots into their sums. A switch that
//! stops tells its runs (Abort `Shutdown`, protocol.md §4.1: issue 10, defect 8 — before, it
//! said nothing and the workers learned only from the new switch's epoch); a switch that
//! died without a word is caught by its epoch (`SwitchRestarted`, core worker tests).

mod common;

use common::*;
use switchml_switchd::{JobSpec, RunningSwitch, SwitchConfig};
use switchml_worker::Op;

fn a_stopped_and_restarted_switch_is_reported_as_such(pipeline: SwitchPipeline) {
    let world = 2;
    let sw = switch(pipeline, world, 32, 0.0, 0);
    let addr = sw.addr();
    let restarted = std::sync::Barrier::new(usize::from(world) + 1);
    let first_done = std::sync::Barrier::new(usize::from(world) + 1);
    let outcomes = std::thread::scope(|s| {
        let ranks = s.spawn(|| {
            per_rank(
                world,
                |r| config(r, world, addr),
                |comm| {
                    let mut x = ints(comm.rank(), world, 5000, 1);
                    let first = comm.allreduce(&mut x, Op::Sum);
                    first_done.wait();
                    restarted.wait();
                    let second = comm.allreduce(&mut x, Op::Sum);
                    (first, second)
                },
            )
        });
        first_done.wait();
        drop(sw.stop().unwrap());
        let again = RunningSwitch::start(&SwitchConfig {
            bind: addr,
            jobs: vec![JobSpec {
                id: JOB,
                world,
                slots: 32,
                key: Some(KEY),
            }],
            pipeline,
            ..SwitchConfig::new(addr, vec![])
        })
        .expect("restart on the same port");
        restarted.wait();
        let outcomes = ranks.join().unwrap();
        drop(again);
        outcomes
    });
    for (rank, o) in outcomes.into_iter().enumerate() {
        let (first, second) = o.unwrap();
        first.unwrap_or_else(|e| panic!("rank {rank}: first all-reduce failed: {e}"));
        let e = second.expect_err("an all-reduce through a restarted switch must fail");
        let text = e.to_string();
        assert!(text.contains("shutting down"), "rank {rank}: {text}");
    }
}

on_both_pipelines!(a_stopped_and_restarted_switch_is_reported_as_such);
