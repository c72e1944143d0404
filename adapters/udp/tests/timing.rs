//! A communicator reports what its lanes measured of their round trips: after an
//! all-reduce every lane has a smoothed round trip, and its timeout is never below the
//! configured floor nor above the ceiling.

mod common;

use common::*;
use switchml_udp::Op;

#[test]
fn every_lane_reports_its_round_trip_and_timeout_within_bounds() {
    let world = 2;
    let sw = switch(world, 32, 0.0, 0);
    let addr = sw.addr();
    let timings = per_rank(
        world,
        |rank| config(rank, world, addr),
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
