//! An explicit `Communicator::close`: the ranks leave as on a drop, and the call says how
//! the lanes ended.

mod common;

use common::doctor::status_when;
use common::*;
use switchml_worker::{Error, Op};

on_both_pipelines!(an_explicit_close_leaves_the_job_and_says_it_went_well);

/// `close` does what a drop does (each rank leaves, the run ends) and reports how the lanes
/// ended: every lane thread finished cleanly.
fn an_explicit_close_leaves_the_job_and_says_it_went_well(pipeline: SwitchPipeline) {
    let world = 2;
    let sw = switch(pipeline, world, 32, 0.0, 0);
    let addr = sw.addr();
    let closed: Vec<Result<(), Error>> = std::thread::scope(|s| {
        let ranks: Vec<_> = (0..world)
            .map(|r| {
                s.spawn(move || {
                    let comm = switchml_worker::Communicator::connect(&config(r, world, addr))?;
                    let mut x = vec![1i32; 100];
                    comm.allreduce(&mut x, Op::Sum)?;
                    assert_eq!(x[99], 2);
                    comm.close()
                })
            })
            .collect();
        ranks
            .into_iter()
            .map(|t| t.join().expect("rank thread"))
            .collect()
    });
    for c in closed {
        c.expect("every lane ends cleanly");
    }
    let s = status_when(addr, JOB, |s| !s.run_open());
    assert!(
        !s.run_open(),
        "{pipeline}: the run is still open after close"
    );
}
