//! A communicator reports what its lanes measured of their round trips: after an
//! all-reduce every lane has a smoothed round trip, and its timeout is never below the
//! configured floor nor above the ceiling.
//!
//! That a long submission scan does not expire the first round's timers used to be checked
//! here by counting resends of a lossless loopback run, which a busy machine changes (a
//! lane off the CPU for a timeout resends, rightly). The property is the core worker's:
//! a round's timers start from the time it is sent, not the time it was queued
//! (`core/src/worker/tests.rs`,
//! `the_first_rounds_timers_start_when_it_is_sent_not_when_it_was_queued`, on the test's
//! clock); the lane reads the clock again after queueing (`adapters/worker/src/lane.rs`).

mod common;

use common::*;
use std::time::Duration;

use switchml_worker::Op;

#[test]
fn every_lane_reports_its_round_trip_and_timeout_within_bounds() {
    let world = 2;
    let sw = switch(SwitchPipeline::Reference, world, 32, 0.0, 0);
    let addr = sw.addr();
    let timings = per_rank(
        world,
        // A floor far above a loopback round trip: a use resent is no sample (Karn), and
        // with the common 3 ms floor a busy machine could leave a lane none.
        |rank| {
            config(rank, world, addr)
                .into_builder()
                .rto(Duration::from_millis(100))
                .max_rto(Duration::from_secs(2))
                .build()
        },
        |comm| {
            let before = comm.timing();
            let mut x = ints(comm.rank(), world, 20_000, 5);
            comm.allreduce(&mut x, Op::Sum).unwrap();
            (before, comm.timing(), comm.config().clone())
        },
    );
    for timing in timings {
        let (before, after, config) = timing.expect("rank connects");
        assert_eq!(before.len(), usize::from(config.lanes));
        assert!(before.iter().all(|t| t.srtt.is_none()), "{before:?}");
        assert_eq!(after.len(), usize::from(config.lanes));
        for t in after {
            assert!(t.srtt.is_some(), "{t:?}");
            assert!(t.rto >= config.rto && t.rto <= config.max_rto, "{t:?}");
        }
    }
    drop(sw);
}
