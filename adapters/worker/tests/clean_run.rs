//! A run that goes right ends right: every rank's communicator closes idle, the run ends on
//! the last rank's Leave, and the switch counts no Leave it could not place (one Leave per
//! rank, not per lane: protocol.md §6).

mod common;

use common::doctor::{status, status_when};
use common::fate::class;
use common::*;
use switchml_core::switch::DropReason;
use switchml_worker::{Error, Op};

on_both_pipelines!(a_finished_run_ends_on_the_ranks_leaves_without_a_bad_session_drop);

fn a_finished_run_ends_on_the_ranks_leaves_without_a_bad_session_drop(pipeline: SwitchPipeline) {
    let world = 3;
    let sw = switch(pipeline, world, 32, 0.0, 0);
    let addr = sw.addr();
    let outcomes = per_rank(
        world,
        |r| config(r, world, addr),
        |comm| {
            let mut x = vec![1.0f32; 1000];
            comm.allreduce(&mut x, Op::Sum)?;
            Ok::<_, Error>(x[999])
        },
    );
    for o in outcomes {
        assert_eq!(o.expect("rank connects").expect("all-reduces"), 3.0);
    }
    // Two lanes per rank (common::config), one Leave per rank.
    let s = status_when(addr, JOB, |s| !s.run_open());
    assert!(
        !s.run_open(),
        "{pipeline}: the run is still open after every rank left"
    );
    let bad_session = s.counters.drops[class(DropReason::BadSession)];
    assert_eq!(bad_session, 0, "{pipeline}: Leaves after the run ended");
    assert_eq!(status(addr, JOB).counters.runs, 1, "{pipeline}");
}
