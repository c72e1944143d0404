//! A communicator dropped with an all-reduce in flight tells the job: its peers fail with an
//! error naming it ("rank 1 gave up"), instead of waiting out their stall detection and
//! reporting a silent rank.

mod common;

use std::sync::Barrier;
use std::time::Duration;

use common::*;
use switchml_worker::{Communicator, Op};

fn dropping_a_communicator_mid_job_fails_its_peers_naming_it(pipeline: SwitchPipeline) {
    let world = 2;
    let sw = switch(pipeline, world, 32, 0.0, 0);
    let addr = sw.addr();
    let left = Barrier::new(2);
    let (leaver, stayer) = std::thread::scope(|s| {
        let leaver = s.spawn(|| {
            let comm = Communicator::connect(&config(1, world, addr)).unwrap();
            let mut x = ints(1, world, 1_000, 3);
            comm.allreduce(&mut x, Op::Sum).unwrap();
            // Rank 0 will not join this one until rank 1 has gone.
            let pending = comm.allreduce_async(ints(1, world, 200_000, 4), Op::Sum);
            std::thread::sleep(Duration::from_millis(50));
            drop(comm);
            left.wait();
            pending.wait()
        });
        let stayer = s.spawn(|| {
            let comm = Communicator::connect(&config(0, world, addr)).unwrap();
            let mut x = ints(0, world, 1_000, 3);
            comm.allreduce(&mut x, Op::Sum).unwrap();
            left.wait();
            let mut y = ints(0, world, 200_000, 4);
            comm.allreduce(&mut y, Op::Sum)
        });
        (leaver.join().unwrap(), stayer.join().unwrap())
    });
    assert!(
        leaver.is_err(),
        "the dropped communicator's own tensor cannot succeed"
    );
    let text = stayer.expect_err("rank 0 must fail").to_string();
    assert!(text.contains("rank 1 gave up"), "{text}");
    drop(sw);
}

on_both_pipelines!(dropping_a_communicator_mid_job_fails_its_peers_naming_it);
