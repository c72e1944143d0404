//! Recovery by asking first (protocol.md §6.1), driven by hand against a reference switch:
//!
//! ```text
//!   worker (rank 0 of 2) ──▶ switch (job 3, 4 slots) ◀── rank 1 played by the test
//! ```
//!
//! The test decides which of the worker's datagrams, and which answers, are lost.

use super::tests::{config, exchange, job_3, join_both, ms, rank1, TestWorker};
use super::*;
use crate::switch::{Slot, Switch, Verdict};
use crate::wire::{DataKind, Flags, Message};

/// Rank 1 contributes `values` to `(slot, seq)`; return the switch's multicast Result.
fn rank1_completes(
    s: &mut Switch<'_, 8, 1, 1>,
    slot: u16,
    seq: u32,
    values: &[i32],
) -> heapless::Vec<u8, 64> {
    let mut out = [0u8; 512];
    match s.process(&rank1(slot, seq, values), &mut out) {
        Verdict::Multicast { len, .. } => heapless::Vec::from_slice(&out[..len]).unwrap(),
        other => panic!("rank 1's contribution to ({slot}, {seq}) did not complete: {other:?}"),
    }
}

/// Pass what the worker sends through the switch and hand every answer back to it.
fn round_trip(w: &mut TestWorker<'_>, s: &mut Switch<'_, 8, 1, 1>, now: Instant) {
    for answer in exchange(w, s, now) {
        w.handle_packet(now, &answer);
    }
}

fn one_slot() -> Config {
    Config {
        window: 1,
        ..config()
    }
}

/// A one-slot worker of job 3, joined with rank 1, that has submitted `data`.
fn one_slot_running<'a>(
    pool: &'a mut [Slot<8, 1>],
    data: &'a mut [i32],
) -> (Switch<'a, 8, 1, 1>, TestWorker<'a>) {
    let mut s = job_3(pool);
    let mut w = TestWorker::new(one_slot()).unwrap();
    join_both(&mut w, &mut s);
    w.submit(ms(0), data, Op::Sum).unwrap();
    (s, w)
}

fn done(w: &mut TestWorker<'_>) -> heapless::Vec<i32, 16> {
    match w.poll_event() {
        Some(Event::Done {
            buf,
            result: Ok(()),
            ..
        }) => heapless::Vec::from_slice(buf).unwrap(),
        other => panic!("no finished tensor: {:?}", other.map(|_| ())),
    }
}

#[test]
fn a_lost_contribution_is_resent_once_the_switch_says_it_is_missing() {
    let mut pool = [Slot::<8, 1>::IDLE; 4];
    let mut data = [7, 8];
    let (mut s, mut w) = one_slot_running(&mut pool, &mut data);
    let mut buf = [0u8; 64];
    assert!(
        w.poll_transmit(ms(0), &mut buf).is_some(),
        "lost on the way"
    );
    let mut out = [0u8; 512];
    assert!(matches!(
        s.process(&rank1(0, 0, &[1, 1]), &mut out),
        Verdict::Drop(_) | Verdict::Consumed
    ));
    let t = w.poll_timeout().unwrap();
    w.handle_timeout(t);
    // The timeout sends a Probe, not the Contribution; the answer makes the resend.
    let mut sent = [0u8; 64];
    let len = w.poll_transmit(t, &mut sent).unwrap();
    assert!(matches!(
        Message::parse(&sent[..len]),
        Ok(Message::Probe(_))
    ));
    let Verdict::Unicast { len: rlen, .. } = s.process(&sent[..len], &mut out) else {
        panic!()
    };
    w.handle_packet(t, &out[..rlen]);
    let len = w.poll_transmit(t, &mut sent).unwrap();
    let Ok(Message::Data(r, _)) = Message::parse(&sent[..len]) else {
        panic!()
    };
    assert!(r.flags.contains(Flags::RETRANSMIT) && r.kind == DataKind::Contribution);
    let Verdict::Multicast { len: rlen, .. } = s.process(&sent[..len], &mut out) else {
        panic!()
    };
    w.handle_packet(t, &out[..rlen]);
    assert_eq!(done(&mut w), [8, 9]);
    let st = w.stats();
    assert_eq!((st.probes, st.retransmissions, st.probe_waits), (1, 1, 0));
}

#[test]
fn a_lost_result_is_fetched_with_one_resend() {
    let mut pool = [Slot::<8, 1>::IDLE; 4];
    let mut data = [7, 8];
    let (mut s, mut w) = one_slot_running(&mut pool, &mut data);
    assert!(exchange(&mut w, &mut s, ms(0)).is_empty());
    let _lost_on_the_way_back = rank1_completes(&mut s, 0, 0, &[1, 1]);
    // Timeout: the Probe finds the use complete, the resend gets the stored Result.
    let t = w.poll_timeout().unwrap();
    w.handle_timeout(t);
    round_trip(&mut w, &mut s, t);
    round_trip(&mut w, &mut s, t);
    assert_eq!(done(&mut w), [8, 9]);
    let st = w.stats();
    assert_eq!((st.probes, st.retransmissions), (1, 1));
}

#[test]
fn a_lost_result_is_fetched_with_a_probe_where_the_switch_offers_it() {
    let mut pool = [Slot::<8, 1>::IDLE; 4];
    let mut s = job_3(&mut pool);
    s.set_probe_results(true);
    let mut w = TestWorker::new(one_slot()).unwrap();
    join_both(&mut w, &mut s);
    let mut data = [7, 8];
    w.submit(ms(0), &mut data[..], Op::Sum).unwrap();
    assert!(exchange(&mut w, &mut s, ms(0)).is_empty());
    let _lost_on_the_way_back = rank1_completes(&mut s, 0, 0, &[1, 1]);
    // Timeout: the Probe finds the use complete; the second Probe asks for the Result.
    let t = w.poll_timeout().unwrap();
    w.handle_timeout(t);
    round_trip(&mut w, &mut s, t);
    let mut sent = [0u8; 64];
    let len = w.poll_transmit(t, &mut sent).unwrap();
    let Ok(Message::Probe(p)) = Message::parse(&sent[..len]) else {
        panic!("no fetch")
    };
    assert!(p.flags.contains(crate::wire::ProbeFlags::RESULT));
    let mut out = [0u8; 512];
    let Verdict::Unicast { len: rlen, .. } = s.process(&sent[..len], &mut out) else {
        panic!()
    };
    w.handle_packet(t, &out[..rlen]);
    assert_eq!(done(&mut w), [8, 9]);
    let st = w.stats();
    assert_eq!((st.probes, st.fetches, st.retransmissions), (2, 1, 0));
    assert_eq!(
        w.smoothed_rtt(),
        None,
        "a fetched Result is no round-trip sample"
    );
}

#[test]
fn uses_completed_after_a_lost_one_expose_it_before_any_timeout() {
    let mut pool = [Slot::<8, 1>::IDLE; 4];
    let mut s = job_3(&mut pool);
    let mut w = TestWorker::new(Config {
        window: 4,
        ..config()
    })
    .unwrap();
    join_both(&mut w, &mut s);
    let mut data = [1; 16];
    w.submit(ms(0), &mut data[..], Op::Sum).unwrap();
    // Four uses go out in slot order (send orders 0..4); slot 0's is lost.
    let mut buf = [0u8; 64];
    let mut out = [0u8; 512];
    for slot in 0..4 {
        let len = w.poll_transmit(ms(0), &mut buf).unwrap();
        if slot > 0 {
            let _ = s.process(&buf[..len], &mut out);
        }
    }
    // Slots 1-3 complete, and their next uses (orders 4..7) go out.
    for slot in 1..4 {
        let r = rank1_completes(&mut s, slot, 0, &[1, 1]);
        w.handle_packet(ms(0), &r);
    }
    assert!(exchange(&mut w, &mut s, ms(0)).is_empty());
    assert_eq!(
        w.stats().suspected,
        0,
        "three later uses are within the reorder allowance"
    );
    // A use sent four sends after slot 0's completes: slot 0 is probed at once.
    let r = rank1_completes(&mut s, 1, 1, &[1, 1]);
    w.handle_packet(ms(0), &r);
    assert_eq!(w.stats().suspected, 1);
    let len = w.poll_transmit(ms(0), &mut buf).unwrap();
    let Ok(Message::Probe(p)) = Message::parse(&buf[..len]) else {
        panic!("expected a Probe for slot 0")
    };
    assert_eq!((p.slot, p.seq), (0, 0));
    // Rank 1 had not sent slot 0 yet: the reply shows no Contribution of rank 0, so it
    // resends, still at time 0.
    let Verdict::Unicast { len: rlen, .. } = s.process(&buf[..len], &mut out) else {
        panic!()
    };
    w.handle_packet(ms(0), &out[..rlen]);
    let len = w.poll_transmit(ms(0), &mut buf).unwrap();
    let Ok(Message::Data(r, _)) = Message::parse(&buf[..len]) else {
        panic!()
    };
    assert_eq!((r.slot, r.seq), (0, 0));
    assert_eq!(w.stats().retransmissions, 1);
}

#[test]
fn an_unanswered_probe_is_followed_by_a_resend_whose_backoff_carries_over() {
    let mut pool = [Slot::<8, 1>::IDLE; 4];
    let mut data = [7, 8, 9, 10];
    let (mut s, mut w) = one_slot_running(&mut pool, &mut data);
    let mut buf = [0u8; 64];
    assert!(w.poll_transmit(ms(0), &mut buf).is_some(), "lost");
    // 1 ms: the Probe is lost too; 3 ms: resend, the timeout now 4 ms (doubled twice).
    w.handle_timeout(ms(1));
    let len = w.poll_transmit(ms(1), &mut buf).unwrap();
    assert!(matches!(Message::parse(&buf[..len]), Ok(Message::Probe(_))));
    assert_eq!(w.poll_timeout(), Some(ms(3)));
    w.handle_timeout(ms(3));
    assert!(
        exchange(&mut w, &mut s, ms(3)).is_empty(),
        "rank 1 has not sent"
    );
    assert_eq!(w.stats().retransmissions, 1);
    let r = rank1_completes(&mut s, 0, 0, &[1, 1]);
    w.handle_packet(ms(3), &r);
    // The next use starts with the backed-off timeout: the switch never explained the loss.
    assert!(exchange(&mut w, &mut s, ms(3)).is_empty());
    assert_eq!(w.poll_timeout(), Some(ms(7)));
}

#[test]
fn a_loss_the_switch_explained_leaves_the_next_use_at_the_measured_timeout() {
    let mut pool = [Slot::<8, 1>::IDLE; 4];
    let mut data = [7, 8, 9, 10];
    let (mut s, mut w) = one_slot_running(&mut pool, &mut data);
    let mut buf = [0u8; 64];
    assert!(w.poll_transmit(ms(0), &mut buf).is_some(), "lost");
    let r0 = rank1(0, 0, &[1, 1]);
    let mut out = [0u8; 512];
    let _ = s.process(&r0, &mut out);
    w.handle_timeout(ms(1));
    round_trip(&mut w, &mut s, ms(1)); // Probe: missing; resend: complete.
    round_trip(&mut w, &mut s, ms(1));
    assert_eq!(w.stats().results, 1);
    // Use 1 goes out at 1 ms with the floor (1 ms), not the doubled 2 ms.
    assert!(exchange(&mut w, &mut s, ms(1)).is_empty());
    assert_eq!(w.poll_timeout(), Some(ms(2)));
}

#[test]
fn an_answer_to_an_earlier_probe_is_ignored() {
    let mut pool = [Slot::<8, 1>::IDLE; 4];
    let mut data = [7, 8, 9, 10];
    let (mut s, mut w) = one_slot_running(&mut pool, &mut data);
    assert!(exchange(&mut w, &mut s, ms(0)).is_empty());
    w.handle_timeout(ms(1));
    // The Probe's answer is delayed past the use's Result.
    let late = exchange(&mut w, &mut s, ms(1));
    let r = rank1_completes(&mut s, 0, 0, &[1, 1]);
    w.handle_packet(ms(1), &r);
    let ignored = w.stats().ignored;
    for a in late {
        w.handle_packet(ms(2), &a);
    }
    assert_eq!(w.stats().ignored, ignored + 1);
    assert_eq!(w.stats().retransmissions, 0);
}
