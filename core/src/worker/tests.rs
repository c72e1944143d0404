//! The worker driven by hand, packet by packet, against a real reference switch:
//!
//! ```text
//!   worker (rank 0 of 2) ──▶ switch (job 3, 4 slots) ◀── rank 1 played by the test
//! ```

use super::*;
use crate::switch::{JobConfig, Slot, Switch, Verdict};
use crate::wire::{DataKind, DataPacket, DataRepr, Flags, Message};

pub(super) type TestWorker<'a> = Worker<&'a mut [i32], 4, 2>;

pub(super) fn config() -> Config {
    Config {
        window: 2,
        count: 2,
        rto: Duration::from_millis(1),
        max_rto: Duration::from_millis(4),
        retries: 5,
        ..Config::new(3, 0, 2)
    }
}

pub(super) fn ms(t: u64) -> Instant {
    Instant::from_millis(t)
}

/// Pass everything the worker sends through the switch; return the switch's answers.
pub(super) fn exchange(
    w: &mut TestWorker<'_>,
    s: &mut Switch<'_, 8, 1, 1>,
    now: Instant,
) -> heapless::Vec<heapless::Vec<u8, 64>, 16> {
    let mut answers = heapless::Vec::new();
    let mut buf = [0u8; 64];
    let mut out = [0u8; 512];
    while let Some(len) = w.poll_transmit(now, &mut buf) {
        match s.process(&buf[..len], &mut out) {
            Verdict::Multicast { len, .. } | Verdict::Unicast { len, .. } => {
                answers
                    .push(heapless::Vec::from_slice(&out[..len]).unwrap())
                    .unwrap();
            }
            _ => {}
        }
    }
    answers
}

/// Rank 1's process nonce: it joins first, so it is the run's session.
pub(super) const RANK1_NONCE: u32 = 0xB0B;

pub(super) fn rank1(slot: u16, seq: u32, values: &[i32]) -> heapless::Vec<u8, 64> {
    let repr = DataRepr {
        kind: DataKind::Contribution,
        job: 3,
        rank: 1,
        slot,
        ver: (seq & 1) as u8,
        flags: Flags::default(),
        count: values.len() as u16,
        seq,
        exp: 0,
        session: RANK1_NONCE,
    };
    let mut b = heapless::Vec::new();
    b.resize(repr.buffer_len(), 0).unwrap();
    let mut p = DataPacket::new_unchecked(&mut b[..]);
    repr.emit(&mut p);
    for (v, d) in values.iter().zip(p.values_mut().chunks_exact_mut(4)) {
        d.copy_from_slice(&v.to_be_bytes());
    }
    b
}

/// A switch over `pool` serving job 3: 2 ranks on slots 0..4, no key.
pub(super) fn job_3(pool: &mut [Slot<8, 1>]) -> Switch<'_, 8, 1, 1> {
    let mut s = Switch::new(pool, 1);
    s.add_job(JobConfig {
        id: 3,
        world: 2,
        slot_lo: 0,
        slot_count: 4,
        key: 0,
    })
    .unwrap();
    s
}

/// Rank 1's Join, in the lane shape of `c`.
pub(super) fn rank1_join(c: &Config) -> [u8; 44] {
    let join = crate::wire::JoinRepr {
        job: 3,
        rank: 1,
        world: 2,
        slot_lo: c.slot_lo,
        slot_count: c.window,
        count: c.count,
        lanes: c.lanes,
        nonce: RANK1_NONCE,
        cookie: 0,
        tag: [0; 16],
    }
    .sign(0);
    let mut b = [0u8; 44];
    join.emit(&mut crate::wire::JoinPacket::new_unchecked(&mut b[..]));
    b
}

pub(super) fn join_both(w: &mut TestWorker<'_>, s: &mut Switch<'_, 8, 1, 1>) {
    let mut out = [0u8; 512];
    let _ = s.process(&rank1_join(w.config()), &mut out);
    for a in exchange(w, s, ms(0)) {
        w.handle_packet(ms(0), &a);
    }
    assert!(w.is_running());
    assert!(matches!(w.poll_event(), Some(Event::Joined { .. })));
}

#[test]
fn waiting_for_a_peer_probes_with_backoff_and_resends_nothing() {
    let mut pool = [Slot::<8, 1>::IDLE; 4];
    let mut s = job_3(&mut pool);
    let mut w = TestWorker::new(config()).unwrap();
    join_both(&mut w, &mut s);
    let mut data = [1, 2, 3, 4, 5, 6];
    let id = w.submit(ms(0), &mut data[..], Op::Sum).unwrap();
    assert!(exchange(&mut w, &mut s, ms(0)).is_empty());
    assert_eq!(w.stats().sent, 2, "one chunk per slot of the window");
    // Rank 1 is late: each timeout (at 1, then 2, then 4, 4 ms apart: max_rto) sends a
    // Probe per slot, and the switch answers that it holds rank 0's Contribution.
    let mut t = 0;
    for gap in [1, 2, 4, 4] {
        assert_eq!(w.poll_timeout(), Some(ms(t + gap)), "after {t} ms");
        t += gap;
        w.handle_timeout(ms(t));
        for answer in exchange(&mut w, &mut s, ms(t)) {
            w.handle_packet(ms(t), &answer);
        }
    }
    let st = w.stats();
    assert_eq!((st.probes, st.probe_waits, st.retransmissions), (8, 8, 0));
    // Rank 1 contributes chunk 0 (slot 0, seq 0): the switch multicasts the sum.
    let mut out = [0u8; 512];
    let Verdict::Multicast { len, .. } = s.process(&rank1(0, 0, &[10, 20]), &mut out) else {
        panic!()
    };
    let result = heapless::Vec::<u8, 64>::from_slice(&out[..len]).unwrap();
    w.handle_packet(ms(t), &result);
    w.handle_packet(ms(t), &result);
    assert_eq!(w.stats().results, 1);
    assert_eq!(w.stats().stale_results, 1, "the duplicate is stale");
    // Slot 0 moves on to chunk 2 with seq 1; a result for seq 0 is stale from now on.
    let sent = exchange(&mut w, &mut s, ms(t));
    assert!(sent.is_empty());
    let Ok(Message::Data(r, _)) = Message::parse(&result) else {
        panic!()
    };
    assert_eq!((r.slot, r.seq), (0, 0));
    for (slot, seq, v) in [(1, 0, [30, 40]), (0, 1, [50, 60])] {
        let Verdict::Multicast { len, .. } = s.process(&rank1(slot, seq, &v), &mut out) else {
            panic!()
        };
        let result = heapless::Vec::<u8, 64>::from_slice(&out[..len]).unwrap();
        w.handle_packet(ms(t), &result);
    }
    let Some(Event::Done {
        id: done,
        buf,
        result,
    }) = w.poll_event()
    else {
        panic!()
    };
    assert_eq!((done, result), (id, Ok(())));
    assert_eq!(buf, [11, 22, 33, 44, 55, 66]);
    assert!(w.is_idle());
}

#[test]
fn a_result_during_the_probe_cancels_the_failure() {
    let mut pool = [Slot::<8, 1>::IDLE; 4];
    let mut s = job_3(&mut pool);
    let mut w = TestWorker::new(Config {
        window: 1,
        ..config()
    })
    .unwrap();
    join_both(&mut w, &mut s);
    let mut data = [7, 8];
    w.submit(ms(0), &mut data[..], Op::Sum).unwrap();
    let _ = exchange(&mut w, &mut s, ms(0));
    // Exhaust the retry budget: five timeouts probe for the use (answered: held, waiting),
    // the sixth starts the stall probe, whose answer is held back.
    let mut probe_reply = None;
    for expiry in 1..=6 {
        let t = w.poll_timeout().unwrap();
        w.handle_timeout(t);
        for a in exchange(&mut w, &mut s, t) {
            if expiry < 6 {
                w.handle_packet(t, &a);
            } else if let Ok(Message::ProbeReply(_)) = Message::parse(&a) {
                probe_reply = Some(a);
            }
        }
    }
    assert_eq!((w.stats().probes, w.stats().retransmissions), (5, 0));
    // Rank 1 shows up before the reply arrives: the use completes, nothing fails.
    let mut out = [0u8; 512];
    let Verdict::Multicast { len, .. } = s.process(&rank1(0, 0, &[1, 1]), &mut out) else {
        panic!()
    };
    let now = w.poll_timeout().unwrap_or(ms(100));
    w.handle_packet(now, &out[..len]);
    w.handle_packet(now, &probe_reply.unwrap());
    assert!(w.failure().is_none());
    let Some(Event::Done { buf, result, .. }) = w.poll_event() else {
        panic!()
    };
    assert_eq!((buf, result), (&mut [8, 9][..], Ok(())));
}

#[test]
fn every_contribution_stays_in_the_lanes_window() {
    let mut pool = [Slot::<8, 1>::IDLE; 8];
    let mut s: Switch<'_, 8, 1, 1> = Switch::new(&mut pool, 1);
    s.add_job(JobConfig {
        id: 3,
        world: 1,
        slot_lo: 0,
        slot_count: 8,
        key: 0,
    })
    .unwrap();
    let cfg = Config {
        world: 1,
        slot_lo: 3,
        window: 3,
        lanes: 2,
        ..config()
    };
    let mut w = TestWorker::new(cfg).unwrap();
    let mut data = [1; 23];
    w.submit(ms(0), &mut data[..], Op::Sum).unwrap();
    let mut buf = [0u8; 64];
    let mut out = [0u8; 512];
    let mut t = 0;
    let mut done = false;
    while !done {
        t += 1;
        assert!(t < 1000, "no progress");
        while let Some(len) = w.poll_transmit(ms(t), &mut buf) {
            if let Ok(Message::Data(r, _)) = Message::parse(&buf[..len]) {
                assert!((3..6).contains(&r.slot), "slot {}", r.slot);
                assert_eq!(u32::from(r.ver), r.seq & 1);
            }
            if let Verdict::Multicast { len, .. } | Verdict::Unicast { len, .. } =
                s.process(&buf[..len], &mut out)
            {
                w.handle_packet(ms(t), &out[..len]);
            }
        }
        while let Some(e) = w.poll_event() {
            if let Event::Done { buf, result, .. } = e {
                assert_eq!((&buf[..], result), (&[1; 23][..], Ok(())));
                done = true;
            }
        }
    }
    assert!(w.is_idle());
}

/// Issue 11: a rank whose number of lanes is not the run's was let in, split its tensors
/// otherwise than its peers and deadlocked. The run agrees `L` at Join: the worker learns
/// the run's `L` from the refusal and fails at once, naming it.
#[test]
fn a_lane_of_a_rank_with_another_number_of_lanes_fails_naming_the_runs() {
    let mut pool = [Slot::<8, 1>::IDLE; 4];
    let mut s = job_3(&mut pool);
    // Rank 1 opens the run with 2 lanes of 2 slots; this rank has 1 lane of 2 slots.
    let mut b = [0u8; 44];
    crate::wire::JoinRepr {
        job: 3,
        rank: 1,
        world: 2,
        slot_lo: 0,
        slot_count: 2,
        count: 2,
        lanes: 2,
        nonce: RANK1_NONCE,
        cookie: 0,
        tag: [0; 16],
    }
    .sign(0)
    .emit(&mut crate::wire::JoinPacket::new_unchecked(&mut b[..]));
    let mut out = [0u8; 512];
    let _ = s.process(&b, &mut out);
    let mut w = TestWorker::new(config()).unwrap();
    assert_eq!(w.config().lanes, 1);
    for a in exchange(&mut w, &mut s, ms(0)) {
        w.handle_packet(ms(0), &a);
    }
    assert!(!w.is_running());
    let refused = WorkerError::Refused {
        reason: crate::wire::AbortReason::LaneCountMismatch,
        detail: 2,
    };
    assert_eq!(w.failure().copied(), Some(refused));
    assert!(matches!(w.poll_event(), Some(Event::Failed(e)) if e == refused));
    assert_eq!(s.job(3).unwrap().joined().len(), 1, "only rank 1 is in");
}

#[test]
fn bad_configurations_are_refused() {
    let ok = config();
    let cases = [
        (Config { world: 0, ..ok }, ConfigError::World),
        (Config { rank: 2, ..ok }, ConfigError::Rank),
        (Config { window: 5, ..ok }, ConfigError::Window),
        (Config { window: 0, ..ok }, ConfigError::Window),
        (
            Config {
                slot_lo: 65535,
                ..ok
            },
            ConfigError::Window,
        ),
        (Config { count: 0, ..ok }, ConfigError::Count),
        (Config { lanes: 0, ..ok }, ConfigError::Lanes),
        (
            Config {
                slot_lo: 2,
                lanes: 1,
                ..ok
            },
            ConfigError::Lanes,
        ),
        (
            Config {
                rto: Duration::ZERO,
                ..ok
            },
            ConfigError::Timeout,
        ),
    ];
    for (cfg, err) in cases {
        assert_eq!(TestWorker::new(cfg).err(), Some(err));
    }
}

#[test]
fn a_too_small_transmit_buffer_fails_with_a_clear_error() {
    let mut w = TestWorker::new(config()).unwrap();
    assert_eq!(w.poll_transmit(ms(0), &mut [0u8; 8]), None);
    assert_eq!(w.failure(), Some(&WorkerError::BufferTooSmall { need: 44 }));
}

#[test]
fn a_second_stalled_slot_is_probed_after_the_first_recovers() {
    let mut pool = [Slot::<8, 1>::IDLE; 4];
    let mut s = job_3(&mut pool);
    // A timeout shorter than the retry budget: the first answered stall Probe reports.
    let cfg = Config {
        timeout: Duration::from_millis(1),
        ..config()
    };
    let mut w = TestWorker::new(cfg).unwrap();
    join_both(&mut w, &mut s);
    let mut data = [1, 2, 3, 4];
    w.submit(ms(0), &mut data[..], Op::Sum).unwrap();
    let _ = exchange(&mut w, &mut s, ms(0));
    let mut out = [0u8; 512];
    let mut recovered = false;
    for _ in 0..200 {
        let Some(t) = w.poll_timeout() else { break };
        w.handle_timeout(t);
        for a in exchange(&mut w, &mut s, t) {
            match Message::parse(&a) {
                // The first probe (slot 0) is answered by rank 1 finally contributing.
                Ok(Message::ProbeReply(r)) if r.slot == 0 && !recovered => {
                    recovered = true;
                    let Verdict::Multicast { len, .. } = s.process(&rank1(0, 0, &[0, 0]), &mut out)
                    else {
                        panic!()
                    };
                    w.handle_packet(t, &out[..len]);
                }
                _ => w.handle_packet(t, &a),
            }
        }
        if w.failure().is_some() {
            break;
        }
    }
    assert!(recovered);
    let Some(WorkerError::Stalled {
        slot: 1,
        report: StallReport::Probed { missing, .. },
        ..
    }) = w.failure().copied()
    else {
        panic!("{:?}", w.failure())
    };
    assert_eq!(missing.iter().collect::<heapless::Vec<u16, 2>>(), [1]);
}

#[test]
fn the_timeout_follows_measured_round_trips() {
    let mut pool = [Slot::<8, 1>::IDLE; 4];
    let mut s = job_3(&mut pool);
    let cfg = Config {
        window: 1,
        max_rto: Duration::from_millis(100),
        retries: 50,
        ..config()
    };
    let mut w = TestWorker::new(cfg).unwrap();
    join_both(&mut w, &mut s);
    assert_eq!(
        w.current_rto(),
        Duration::from_millis(1),
        "the floor before any sample"
    );
    let mut data = [0; 8];
    w.submit(ms(0), &mut data[..], Op::Sum).unwrap();
    // Rank 1 answers each use 10 ms after rank 0 sent it: every round trip is 10 ms.
    let mut out = [0u8; 512];
    let mut t = 0;
    for seq in 0..4u32 {
        let sent = exchange(&mut w, &mut s, ms(t));
        assert!(sent.is_empty());
        t += 10;
        // A timeout before then resends (only the very first use, at the 1 ms floor).
        while let Some(due) = w.poll_timeout().filter(|&d| d < ms(t)) {
            w.handle_timeout(due);
            let _ = exchange(&mut w, &mut s, due);
        }
        let Verdict::Multicast { len, .. } = s.process(&rank1(0, seq, &[1, 1]), &mut out) else {
            panic!("seq {seq}")
        };
        w.handle_packet(ms(t), &out[..len]);
    }
    assert_eq!(w.smoothed_rtt(), Some(Duration::from_millis(10)));
    assert!(
        w.current_rto() >= Duration::from_millis(10),
        "{}",
        w.current_rto()
    );
    // Only the first use (before any sample) was resent; later ones waited long enough.
    assert!(w.stats().retransmissions <= 4, "{:?}", w.stats());
}

#[test]
fn abort_hands_tensors_back_and_tells_the_job() {
    let mut w = TestWorker::new(config()).unwrap();
    let mut data = [1, 2, 3];
    w.submit(ms(0), &mut data[..], Op::Sum).unwrap();
    w.abort();
    assert_eq!(
        w.poll_event()
            .map(|e| matches!(e, Event::Failed(WorkerError::Cancelled))),
        Some(true)
    );
    let Some(Event::Done { result, .. }) = w.poll_event() else {
        panic!()
    };
    assert_eq!(result, Err(TensorError::Aborted));
    let mut buf = [0u8; 64];
    let len = w.poll_transmit(ms(0), &mut buf).unwrap();
    let Ok(Message::Abort(a)) = Message::parse(&buf[..len]) else {
        panic!()
    };
    assert_eq!(
        (a.rank, a.reason, a.detail),
        (0, crate::wire::AbortReason::WorkerFailed, 0xFFFF)
    );
    assert_eq!(w.poll_transmit(ms(0), &mut buf), None);
}

#[test]
fn a_parent_failure_fails_the_run_naming_the_child_and_sends_nothing_back() {
    use crate::wire::{AbortPacket, AbortReason, AbortRepr, RANK_ALL};
    use core::fmt::Write;
    let mut buf = [0u8; 64];
    for (detail, child) in [(2, Some(2)), (0xFFFF, None)] {
        let mut pool = [Slot::<8, 1>::IDLE; 4];
        let mut s = job_3(&mut pool);
        let mut w = TestWorker::new(config()).unwrap();
        join_both(&mut w, &mut s);
        let mut b = [0u8; 20];
        AbortRepr {
            job: 3,
            rank: RANK_ALL,
            reason: AbortReason::ParentFailed,
            detail,
            epoch: 1,
            session: RANK1_NONCE,
        }
        .emit(&mut AbortPacket::new_unchecked(&mut b[..]));
        w.handle_packet(ms(1), &b);
        let failure = w.failure().copied();
        assert_eq!(failure, Some(WorkerError::ParentFailed { child }));
        let mut text = heapless::String::<128>::new();
        write!(text, "{}", failure.unwrap()).unwrap();
        assert!(
            text.starts_with("the job's parent switch ended the run"),
            "{text}"
        );
        assert_eq!(text.contains("child switch 2"), child.is_some(), "{text}");
        assert_eq!(w.poll_transmit(ms(1), &mut buf), None, "the job knows");
    }
}

#[test]
fn submit_finite_trusts_the_caller_and_submit_scans_after_cheaper_refusals() {
    let mut w = Worker::<&mut [f32], 4, 1>::new(config()).unwrap();
    let (mut a, mut b) = ([1.0f32, 2.0], [0.0f32, f32::NAN]);
    // The caller checked the whole tensor already: no second scan here.
    w.submit_finite(ms(0), &mut a[..], Op::Sum).unwrap();
    // The queue (one tensor) is full: refused for that, without scanning.
    let e = w.submit(ms(0), &mut b[..], Op::Sum).unwrap_err();
    assert_eq!(e.kind, SubmitErrorKind::QueueFull);
    let refuse = Config {
        non_finite: NonFinitePolicy::Refuse,
        ..config()
    };
    let mut w = Worker::<&mut [f32], 4, 1>::new(refuse).unwrap();
    let e = w.submit(ms(0), &mut b[..], Op::Sum).unwrap_err();
    assert_eq!(
        e.kind,
        SubmitErrorKind::NonFinite(crate::quant::NonFinite { index: 1 })
    );
    // Propagated by default: queued, to be sent flagged.
    let mut w = Worker::<&mut [f32], 4, 1>::new(config()).unwrap();
    assert!(w.submit(ms(0), &mut b[..], Op::Sum).is_ok());
}

/// A joining worker takes only answers to its own Join (they name its nonce) and the
/// completion of the run those answers put it in: not the COMPLETE of a run another process
/// of its rank was in, and not an Abort that names nothing, which an off-path sender could
/// provoke to any address with a wrong-key Join or a Probe (protocol.md §4.1).
#[test]
fn a_joining_worker_takes_only_answers_to_its_own_join() {
    use crate::wire::{AbortPacket, AbortReason, AbortRepr, JoinFlags, JoinReplyPacket};
    let cfg = Config {
        nonce: 5,
        ..config()
    };
    let mut w = TestWorker::new(cfg).unwrap();
    let mut buf = [0u8; 64];
    assert!(w.poll_transmit(ms(0), &mut buf).is_some(), "a Join");
    let reply = |nonce: u32, session: u32, complete: bool| {
        let mut b = [0u8; 33];
        crate::wire::JoinReplyRepr {
            job: 3,
            rank: if complete { 0xFFFF } else { 0 },
            world: 2,
            shards: 0,
            flags: if complete {
                JoinFlags::COMPLETE
            } else {
                JoinFlags::default()
            },
            max_count: 8,
            epoch: 1,
            slot_count: 4,
            session,
            nonce,
            lane_slots: cfg.window,
            count: cfg.count,
            joined: &[0b11],
        }
        .emit(&mut JoinReplyPacket::new_unchecked(&mut b[..]));
        b
    };
    let abort = |session: u32| {
        let mut b = [0u8; 20];
        AbortRepr {
            job: 3,
            rank: 0,
            reason: AbortReason::BadKey,
            detail: 0,
            epoch: 1,
            session,
        }
        .emit(&mut AbortPacket::new_unchecked(&mut b[..]));
        b
    };
    // The old process's run completing, and refusals naming nothing or another nonce.
    w.handle_packet(ms(1), &reply(9, 77, true));
    w.handle_packet(ms(1), &abort(0));
    w.handle_packet(ms(1), &abort(9));
    assert!(!w.is_running() && w.failure().is_none());
    assert_eq!(w.stats().ignored, 3);
    // Its own answer puts it in run 88; that run's completion then counts.
    w.handle_packet(ms(2), &reply(5, 88, false));
    assert!(!w.is_running());
    w.handle_packet(ms(3), &reply(7, 88, true));
    assert!(w.is_running());
    // A refusal of its own Join counts, while it joins.
    let mut w = TestWorker::new(cfg).unwrap();
    let _ = w.poll_transmit(ms(0), &mut buf);
    w.handle_packet(ms(1), &abort(5));
    assert!(matches!(
        w.failure(),
        Some(WorkerError::Refused {
            reason: AbortReason::BadKey,
            ..
        })
    ));
    // An answer to its own Join that names another lane shape than this lane's: the lane
    // cannot work in that run, and says which field and the run's value.
    for (field, reason) in [
        (28, AbortReason::LaneMismatch),
        (30, AbortReason::ChunkMismatch),
    ] {
        let mut w = TestWorker::new(cfg).unwrap();
        let _ = w.poll_transmit(ms(0), &mut buf);
        let mut b = reply(5, 88, true);
        b[field..field + 2].copy_from_slice(&999u16.to_be_bytes());
        w.handle_packet(ms(1), &b);
        assert!(!w.is_running());
        assert_eq!(
            w.failure().copied(),
            Some(WorkerError::Refused {
                reason,
                detail: 999
            })
        );
    }
}

/// A tensor queued long before its first round goes out (a host that scanned it first, or
/// a lane that was off the CPU) times that round from when it is sent, never from when it
/// was queued: a timer started at submission would have expired the whole window at once
/// on a lossless network. The adapter's `timing` test used to count resends on loopback for
/// this, which a busy scheduler can change; here the clock is the test's.
#[test]
fn the_first_rounds_timers_start_when_it_is_sent_not_when_it_was_queued() {
    let mut pool = [Slot::<8, 1>::IDLE; 4];
    let mut s = job_3(&mut pool);
    let mut w = TestWorker::new(config()).unwrap();
    join_both(&mut w, &mut s);
    let mut data = [0; 8];
    w.submit(ms(0), &mut data[..], Op::Sum).unwrap();
    // Queued at 0, sent at 100 (a hundred timeouts later).
    let sent = exchange(&mut w, &mut s, ms(100));
    assert!(sent.is_empty(), "rank 1 has not contributed");
    assert_eq!(
        w.poll_timeout(),
        Some(ms(101)),
        "one timeout after the send"
    );
    // Nothing is due at the send itself, nor just before the timeout.
    w.handle_timeout(ms(100));
    assert!(exchange(&mut w, &mut s, ms(100)).is_empty());
    let st = w.stats();
    assert_eq!((st.retransmissions, st.probes), (0, 0), "{st:?}");
    // The timeout does act (a Probe for each slot first, §6.1): the check above could fail.
    w.handle_timeout(ms(101));
    let _ = exchange(&mut w, &mut s, ms(101));
    let st = w.stats();
    assert!(st.retransmissions + st.probes > 0, "{st:?}");
}
