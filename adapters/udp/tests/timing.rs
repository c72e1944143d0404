//! A communicator reports what its lanes measured of their round trips: after an
//! all-reduce every lane has a smoothed round trip, and its timeout is never below the
//! configured floor nor above the ceiling.

mod common;

use common::*;
use switchml_udp::{CommConfig, Op};

#[test]
fn every_lane_reports_its_round_trip_and_timeout_within_bounds() {
    let world = 2;
    let sw = switch(SwitchPipeline::Reference, world, 32, 0.0, 0);
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

/// An f32 tensor is scanned for NaN/Inf before anything is sent. The first round's timers
/// must start after that scan: they used to start from a clock reading the lane took before
/// scanning its part, so with a scan longer than the timeout every slot of the first round
/// was resent at once on a lossless network (seen on the emulated links at 256 MiB). The
/// communicator now scans the whole tensor before handing parts to the lanes.
#[test]
fn a_long_submission_scan_does_not_expire_the_first_rounds_timers() {
    use std::time::{Duration, Instant};
    use switchml_core::quant::check_finite_f32;

    let rto = Duration::from_millis(40);
    // Size the tensor so that scanning it takes at least three timeouts here (this build's
    // scan speed, measured), within 64 Mi elements.
    let probe = floats(0, 1 << 20, 1);
    let started = Instant::now();
    for _ in 0..4 {
        assert!(check_finite_f32(std::hint::black_box(&probe)).is_ok());
    }
    let per_mi = started.elapsed() / 4;
    let mis = (3 * rto.as_nanos() / per_mi.as_nanos().max(1) + 1).min(64) as usize;
    let len = mis << 20;
    assert!(
        per_mi * mis as u32 > 2 * rto,
        "scanning 64 Mi elements takes {:?}: too fast for this test's timeout",
        per_mi * mis as u32
    );

    let world = 1;
    let window = 32;
    let sw = switch(SwitchPipeline::Reference, world, window, 0.0, 0);
    let addr = sw.addr();
    let stats = per_rank(
        world,
        |rank| CommConfig {
            lanes: 1,
            window,
            count: 256,
            rto,
            max_rto: 10 * rto,
            coalesce: Duration::ZERO,
            ..config(rank, world, addr)
        },
        move |comm| {
            let mut x = floats(comm.rank(), len, 9);
            comm.allreduce(&mut x, Op::Sum).unwrap();
            comm.stats()
        },
    );
    let stats = stats.into_iter().next().unwrap().expect("rank connects");
    // A whole window resent means the first round's timers had expired before it was sent;
    // a scheduling stall of a timeout or more would have to hit this one run to come close.
    assert!(
        stats.retransmissions < u64::from(window) / 2,
        "{} retransmissions on a lossless loopback ({len} elements): {stats:?}",
        stats.retransmissions
    );
    drop(sw);
}
