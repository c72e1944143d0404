//! Liveness apart from progress (protocol.md §4.3, §6): a lane with nothing to send still
//! shows the switch it is alive, and a use held by the switch waits for a busy peer up to
//! the user's timeout instead of giving up after its retries.

use super::tests::{config, exchange, job_3, join_both, ms, rank1, TestWorker};
use super::*;
use crate::switch::{Slot, Verdict};
use crate::wire::{Message, MessageType};

#[test]
fn an_idle_lane_sends_a_keep_alive_probe_every_interval_and_no_more() {
    let mut pool = [Slot::<8, 1>::IDLE; 4];
    let mut s = job_3(&mut pool);
    let cfg = Config {
        keep_alive: Duration::from_millis(250),
        ..config()
    };
    let mut w = TestWorker::new(cfg).unwrap();
    join_both(&mut w, &mut s);
    assert!(w.is_running());
    let mut buf = [0u8; 64];
    let mut probes = heapless::Vec::<u64, 16>::new();
    // Nothing to send for two seconds: the lane wakes for its keep-alive alone.
    while let Some(t) = w.poll_timeout().filter(|t| *t <= ms(2000)) {
        w.handle_timeout(t);
        while let Some(len) = w.poll_transmit(t, &mut buf) {
            let Ok((MessageType::Probe, _, _)) = crate::wire::peek(&buf[..len]) else {
                panic!("an idle lane sent {:?}", crate::wire::peek(&buf[..len]));
            };
            let Ok(Message::Probe(p)) = Message::parse(&buf[..len]) else {
                panic!()
            };
            assert_eq!((p.session, p.rank, p.slot), (RANK_NONCE_OF_RUN, 0, 0));
            probes.push(t.total_micros() / 1000).unwrap();
        }
    }
    assert_eq!(probes, [250, 500, 750, 1000, 1250, 1500, 1750, 2000]);
    assert_eq!(w.stats().keep_alives, 8);
    // The switch answers it like any Probe; the answer changes nothing here.
    let mut out = [0u8; 512];
    let len = w.poll_transmit(ms(2250), &mut buf);
    assert_eq!(len, None, "not due before its timer");
    w.handle_timeout(ms(2250));
    let len = w.poll_transmit(ms(2250), &mut buf).unwrap();
    let Verdict::Unicast { len, .. } = s.process(&buf[..len], &mut out) else {
        panic!()
    };
    w.handle_packet(ms(2250), &out[..len]);
    assert!(w.failure().is_none() && w.is_running());
}

/// The session of job 3's run in these tests: rank 1 opened it with its nonce.
const RANK_NONCE_OF_RUN: u32 = super::tests::RANK1_NONCE;

/// Drive `w` through `s` until `until`; rank 1 sends nothing. Return the failure, if any.
fn wait_for_rank_1(
    w: &mut TestWorker<'_>,
    s: &mut crate::switch::Switch<'_, 8, 1, 1>,
    until: Instant,
) -> Option<WorkerError> {
    while let Some(t) = w.poll_timeout().filter(|t| *t <= until) {
        w.handle_timeout(t);
        for a in exchange(w, s, t) {
            w.handle_packet(t, &a);
        }
        if let Some(f) = w.failure() {
            return Some(*f);
        }
    }
    None
}

#[test]
fn a_use_held_by_the_switch_waits_for_a_busy_peer_past_its_retries() {
    // Issue 27: rank 1 busy (validation, a checkpoint) for longer than the retry budget
    // (5 timeouts of at most 4 ms here) ended the job; the switch still hears it, so rank 0
    // waits, up to its timeout.
    let mut pool = [Slot::<8, 1>::IDLE; 4];
    let mut s = job_3(&mut pool);
    let cfg = Config {
        window: 1,
        timeout: Duration::from_secs(300),
        ..config()
    };
    let mut w = TestWorker::new(cfg).unwrap();
    join_both(&mut w, &mut s);
    let mut data = [7, 8];
    w.submit(ms(0), &mut data[..], Op::Sum).unwrap();
    for a in exchange(&mut w, &mut s, ms(0)) {
        w.handle_packet(ms(0), &a);
    }
    assert_eq!(wait_for_rank_1(&mut w, &mut s, ms(60_000)), None);
    assert!(w.stats().peer_waits > 0, "{:?}", w.stats());
    // Rank 1 comes back after a minute: the use completes with the exact sum.
    let mut out = [0u8; 512];
    let Verdict::Multicast { len, .. } = s.process(&rank1(0, 0, &[1, 2]), &mut out) else {
        panic!("rank 0's contribution is not held")
    };
    w.handle_packet(ms(60_000), &out[..len]);
    let mut done = None;
    while let Some(e) = w.poll_event() {
        if let Event::Done { result, .. } = e {
            done = Some(result);
        }
    }
    assert_eq!(done, Some(Ok(())));
    assert_eq!(data, [8, 10]);
}

#[test]
fn a_peer_that_stays_away_past_the_timeout_is_reported_missing() {
    let mut pool = [Slot::<8, 1>::IDLE; 4];
    let mut s = job_3(&mut pool);
    let cfg = Config {
        window: 1,
        timeout: Duration::from_secs(2),
        ..config()
    };
    let mut w = TestWorker::new(cfg).unwrap();
    join_both(&mut w, &mut s);
    let mut data = [7, 8];
    w.submit(ms(0), &mut data[..], Op::Sum).unwrap();
    let Some(WorkerError::Stalled {
        report: StallReport::Probed { missing, .. },
        ..
    }) = wait_for_rank_1(&mut w, &mut s, ms(60_000))
    else {
        panic!("{:?}", w.failure())
    };
    assert_eq!(missing.iter().collect::<heapless::Vec<u16, 2>>(), [1]);
    assert!(w.stats().peer_waits > 0);
}

#[test]
fn a_switch_that_stops_answering_still_ends_the_wait_after_the_retries() {
    let mut w = TestWorker::new(Config {
        window: 1,
        ..config()
    })
    .unwrap();
    let mut pool = [Slot::<8, 1>::IDLE; 4];
    let mut s = job_3(&mut pool);
    join_both(&mut w, &mut s);
    let mut data = [7, 8];
    w.submit(ms(0), &mut data[..], Op::Sum).unwrap();
    let mut buf = [0u8; 64];
    // Nothing reaches the switch any more.
    let mut last = ms(0);
    while let Some(t) = w.poll_timeout().filter(|t| *t <= ms(60_000)) {
        w.handle_timeout(t);
        while w.poll_transmit(t, &mut buf).is_some() {}
        last = t;
        if w.failure().is_some() {
            break;
        }
    }
    assert_eq!(
        w.failure().copied().map(|f| matches!(
            f,
            WorkerError::Stalled {
                report: StallReport::NoAnswer,
                ..
            }
        )),
        Some(true)
    );
    assert!(
        last < ms(1000),
        "gave up at {last:?}, not after its retries"
    );
}

#[test]
fn every_abort_about_a_rank_names_it() {
    extern crate std;
    use std::string::ToString;
    // Issue 27: "a rank of the job restarted: this run is over (detail 0)".
    for (reason, want) in [
        (crate::wire::AbortReason::RankRestarted, "rank 0 restarted"),
        (crate::wire::AbortReason::RankSilent, "rank 0 is gone"),
        (crate::wire::AbortReason::RankRefused, "rank 0's Join"),
    ] {
        let text = WorkerError::Refused { reason, detail: 0 }.to_string();
        assert!(text.contains(want), "{text}");
        assert!(!text.contains("detail"), "{text}");
    }
}
