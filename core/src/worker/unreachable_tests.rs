//! A switch address where nothing listens: the adapter reports each ICMP port unreachable
//! with `handle_unreachable`, and a joining worker gives up at once instead of waiting out
//! its join timeout; a running one carries on as before.
//!
//! ```text
//!   worker (rank 0 of 2) ──▶ switch (job 3), or ICMP port unreachable
//! ```

use super::*;
use crate::switch::{JobConfig, Slot, Switch, Verdict};

type TestWorker<'a> = Worker<&'a mut [i32], 4, 2>;

fn config(world: u16) -> Config {
    Config {
        window: 2,
        count: 2,
        join_timeout: Duration::from_secs(60),
        ..Config::new(3, 0, world)
    }
}

/// Send the worker's Joins (and whatever else) to the switch and feed back its answers.
fn exchange(w: &mut TestWorker<'_>, s: &mut Switch<'_, 8, 1, 1>, now: Instant) {
    let (mut buf, mut out) = ([0u8; 64], [0u8; 512]);
    while let Some(len) = w.poll_transmit(now, &mut buf) {
        if let Verdict::Unicast { len, .. } | Verdict::Multicast { len, .. } =
            s.process(&buf[..len], &mut out)
        {
            w.handle_packet(now, &out[..len]);
        }
    }
}

#[test]
fn refused_joins_fail_the_worker_long_before_its_join_timeout() {
    let mut w = TestWorker::new(config(2)).unwrap();
    let mut buf = [0u8; 64];
    let mut t = Instant::ZERO;
    for i in 0..UNREACHABLE_JOINS {
        if i > 0 {
            t = w.poll_timeout().unwrap();
            w.handle_timeout(t);
        }
        assert!(w.failure().is_none());
        // A Join goes out and comes back refused.
        assert!(w.poll_transmit(t, &mut buf).is_some());
        w.handle_unreachable(t);
    }
    let waited = Duration::from_millis(200);
    assert_eq!(w.failure(), Some(&WorkerError::PortUnreachable { waited }));
    assert!(matches!(
        w.poll_event(),
        Some(Event::Failed(WorkerError::PortUnreachable { .. }))
    ));
    // Nobody to tell: no Abort, no timer.
    assert_eq!(w.poll_transmit(t, &mut buf), None);
    assert_eq!(w.poll_timeout(), None);
}

#[test]
fn a_switch_that_answers_in_between_resets_the_count() {
    let mut pool = [Slot::<8, 1>::IDLE; 2];
    let mut s: Switch<'_, 8, 1, 1> = Switch::new(&mut pool, 1);
    let job = JobConfig {
        id: 3,
        world: 2,
        slot_lo: 0,
        slot_count: 2,
        key: 0,
    };
    s.add_job(job).unwrap();
    let mut w = TestWorker::new(config(2)).unwrap();
    // A switch still starting up refuses a couple of Joins, then answers one.
    for _ in 1..UNREACHABLE_JOINS {
        w.handle_unreachable(Instant::ZERO);
    }
    exchange(&mut w, &mut s, Instant::ZERO);
    for _ in 1..UNREACHABLE_JOINS {
        w.handle_unreachable(Instant::ZERO);
    }
    assert!(w.failure().is_none());
    assert!(!w.is_running(), "rank 1 has not joined");
}

#[test]
fn a_running_worker_ignores_refusals() {
    let mut pool = [Slot::<8, 1>::IDLE; 2];
    let mut s: Switch<'_, 8, 1, 1> = Switch::new(&mut pool, 1);
    s.add_job(JobConfig {
        id: 3,
        world: 1,
        slot_lo: 0,
        slot_count: 2,
        key: 0,
    })
    .unwrap();
    let mut w = TestWorker::new(config(1)).unwrap();
    exchange(&mut w, &mut s, Instant::ZERO);
    assert!(w.is_running());
    // A switch restarting: refusals are left to the retransmissions and stall detection.
    for _ in 0..10 * UNREACHABLE_JOINS {
        w.handle_unreachable(Instant::ZERO);
    }
    assert!(w.failure().is_none());
    let mut data = [1, 2, 3];
    w.submit(Instant::ZERO, &mut data[..], Op::Sum).unwrap();
    exchange(&mut w, &mut s, Instant::ZERO);
    assert!(matches!(w.poll_event(), Some(Event::Joined { .. })));
    assert!(matches!(
        w.poll_event(),
        Some(Event::Done { result: Ok(()), .. })
    ));
}
