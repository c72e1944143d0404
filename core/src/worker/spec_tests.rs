//! What protocol.md says a worker does where an implementer once had to guess (issue 26,
//! item 7): the wire slot of a lane slot, which refusals are current, when an Abort goes
//! out, how long a peer waits, and how a switch restart shows in a refusal.
//!
//! ```text
//!   worker (rank 0 of 2) ──▶ switch (job 3, 4 slots) ◀── rank 1 played by the test
//! ```

extern crate std;

use super::tests::{config, exchange, job_3, join_both, ms, rank1_join, TestWorker, RANK1_NONCE};
use super::*;
use crate::switch::{Slot, Verdict};
use crate::wire::{AbortPacket, AbortReason, AbortRepr, JoinPacket, JoinRepr, Message};

/// Everything the worker sends now, parsed.
fn sent(w: &mut TestWorker<'_>, now: Instant) -> std::vec::Vec<std::vec::Vec<u8>> {
    let mut buf = [0u8; 64];
    let mut out = std::vec::Vec::new();
    while let Some(len) = w.poll_transmit(now, &mut buf) {
        out.push(buf[..len].to_vec());
    }
    out
}

fn abort(reason: AbortReason, detail: u16, epoch: u32, session: u32) -> [u8; 20] {
    let mut b = [0u8; 20];
    AbortRepr {
        job: 3,
        rank: 0,
        reason,
        detail,
        epoch,
        session,
    }
    .emit(&mut AbortPacket::new_unchecked(&mut b[..]));
    b
}

/// Lane 1 of 2, 2 slots each: job slots 2 and 3.
fn lane_1() -> Config {
    Config {
        slot_lo: 2,
        lanes: 2,
        ..config()
    }
}

/// §1 Terms, §3.1, §6: lane slot `i` is job slot `slot_lo + i` in every Contribution and
/// Probe of the lane.
#[test]
fn a_lane_sends_its_lane_slot_i_as_job_slot_slot_lo_plus_i() {
    let mut pool = [Slot::<8, 1>::IDLE; 4];
    let mut s = job_3(&mut pool);
    let mut w = TestWorker::new(lane_1()).unwrap();
    join_both(&mut w, &mut s);
    let mut data = [1, 2, 3, 4, 5, 6];
    w.submit(ms(0), &mut data[..], Op::Sum).unwrap();
    let slots = |w: &mut TestWorker<'_>, now| {
        sent(w, now)
            .iter()
            .map(|b| match Message::parse(b) {
                Ok(Message::Data(c, _)) => c.slot,
                Ok(Message::Probe(p)) => p.slot,
                other => panic!("{other:?}"),
            })
            .collect::<std::vec::Vec<_>>()
    };
    // Chunks 0 and 1 on lane slots 0 and 1.
    assert_eq!(slots(&mut w, ms(0)), [2, 3]);
    // Rank 1 is late: the Probes name the same job slots.
    let due = w.poll_timeout().unwrap();
    w.handle_timeout(due);
    assert_eq!(slots(&mut w, due), [2, 3]);
}

/// §3.6, "Which Join a refusal answers": the reference worker proposes one thing, so the
/// only stale refusal it can get is a second `WrongShard` (a Join already on its way to the
/// old port); that one is ignored, and a refusal of the current Join is taken.
#[test]
fn after_a_redirect_a_second_wrong_shard_is_stale_and_a_current_refusal_is_fatal() {
    let mut w = TestWorker::new(lane_1()).unwrap();
    let nonce = w.config().nonce;
    assert_eq!(sent(&mut w, ms(0)).len(), 1, "the first Join");
    w.handle_packet(ms(1), &abort(AbortReason::WrongShard, 2, 9, nonce));
    assert!(matches!(
        w.poll_event(),
        Some(Event::Redirected {
            shard: 1,
            shards: 2
        })
    ));
    assert_eq!(
        sent(&mut w, ms(1)).len(),
        1,
        "the Join again, to shard 1, at once"
    );
    w.handle_packet(ms(2), &abort(AbortReason::WrongShard, 2, 9, nonce));
    assert_eq!(w.failure(), None, "a stale WrongShard ended the lane");
    assert!(w.poll_event().is_none());
    // The shard that serves the lane refuses its shape: that is about this Join.
    w.handle_packet(ms(3), &abort(AbortReason::LaneMismatch, 4, 9, nonce));
    assert_eq!(
        w.failure(),
        Some(&WorkerError::Refused {
            reason: AbortReason::LaneMismatch,
            detail: 4
        })
    );
}

/// §3.6: SlotRange names the job's slot count `J`, not a lane's; lanes of `⌊J / L⌋`
/// slots fit.
#[test]
fn slot_range_names_the_jobs_slot_count_and_floor_j_over_l_fits() {
    let mut pool = [Slot::<8, 1>::IDLE; 4];
    let mut s = job_3(&mut pool);
    let mut out = [0u8; 512];
    let join = |slot_count: u16| {
        let mut b = [0u8; 44];
        JoinRepr {
            job: 3,
            rank: 0,
            world: 2,
            slot_lo: slot_count,
            slot_count,
            count: 2,
            lanes: 2,
            nonce: 5,
            cookie: 0,
            tag: [0; 16],
        }
        .sign(0)
        .emit(&mut JoinPacket::new_unchecked(&mut b[..]));
        b
    };
    // Lane 1 of 2 lanes of 3 slots runs past the job's 4.
    let Verdict::Unicast { len, .. } = s.process(&join(3), &mut out) else {
        panic!()
    };
    let Ok(Message::Abort(a)) = Message::parse(&out[..len]) else {
        panic!()
    };
    assert_eq!((a.reason, a.detail), (AbortReason::SlotRange, 4));
    // ⌊4 / 2⌋ = 2 slots a lane: lane 1 is job slots 2..4.
    let Verdict::Unicast { len, .. } = s.process(&join(4 / 2), &mut out) else {
        panic!()
    };
    assert!(matches!(
        Message::parse(&out[..len]),
        Ok(Message::JoinReply(_))
    ));
}

/// §6, "When a worker sends Abort": a join timeout after a JoinReply sends one Abort
/// `WorkerFailed` naming the lowest missing rank, in the session taken; it is never
/// repeated, and ends the run at the switch.
#[test]
fn a_join_timeout_sends_one_abort_naming_the_missing_rank() {
    let mut pool = [Slot::<8, 1>::IDLE; 4];
    let mut s = job_3(&mut pool);
    let mut w = TestWorker::new(config()).unwrap();
    for answer in exchange(&mut w, &mut s, ms(0)) {
        w.handle_packet(ms(0), &answer);
    }
    assert!(!w.is_running(), "rank 1 never joins");
    let mut now = ms(0);
    let mut sent_after = std::vec::Vec::new();
    while w.failure().is_none() {
        now = w.poll_timeout().expect("a timer");
        w.handle_timeout(now);
        sent_after = sent(&mut w, now);
    }
    assert_eq!(now, ms(30_000), "the default join timeout");
    assert!(matches!(w.failure(), Some(WorkerError::JoinTimeout { .. })));
    let [only] = &sent_after[..] else {
        panic!("{} datagrams", sent_after.len())
    };
    let Ok(Message::Abort(a)) = Message::parse(only) else {
        panic!()
    };
    assert_eq!(
        (a.rank, a.reason, a.detail, a.session),
        (0, AbortReason::WorkerFailed, 1, w.config().nonce)
    );
    assert!(sent(&mut w, now).is_empty(), "one Abort, never repeated");
    let mut out = [0u8; 512];
    assert!(matches!(
        s.process(only, &mut out),
        Verdict::Multicast { .. }
    ));
}

/// §6: a lane that never heard a JoinReply has no session to name: it fails unreachable
/// and sends no Abort.
#[test]
fn a_join_timeout_without_any_answer_sends_no_abort() {
    let mut w = TestWorker::new(config()).unwrap();
    let mut now = ms(0);
    while w.failure().is_none() {
        let _ = sent(&mut w, now);
        now = w.poll_timeout().expect("a timer");
        w.handle_timeout(now);
    }
    assert!(matches!(
        w.failure(),
        Some(WorkerError::SwitchUnreachable { .. })
    ));
    assert!(sent(&mut w, now).is_empty());
}

/// §6.2: with the default timers (first timeout 5 ms doubling to 200 ms, 30 retries) a
/// peer's stall probe comes after 31 timeouts of one use — 5 + 10 + … + 160 and then
/// 25 × 200 ms, 5,315 ms — and finds the switch holding its Contribution: the peer the
/// switch waits for is alive as far as it knows (this switch sweeps nothing, so nobody
/// is declared silent), and the worker waits on until the use is `timeout` old; only then
/// does it fail and abort, naming the rank.
#[test]
fn a_peer_waits_for_a_silent_rank_until_the_timeout() {
    let mut pool = [Slot::<8, 1>::IDLE; 4];
    let mut s = job_3(&mut pool);
    let defaults = Config::new(3, 0, 2);
    let timeout = Duration::from_secs(20);
    let mut w = TestWorker::new(Config {
        window: 2,
        count: 2,
        timeout,
        ..defaults
    })
    .unwrap();
    join_both(&mut w, &mut s);
    let mut data = [1, 2, 3, 4];
    w.submit(ms(0), &mut data[..], Op::Sum).unwrap();
    assert!(exchange(&mut w, &mut s, ms(0)).is_empty());
    let mut now = ms(0);
    let mut aborts = std::vec::Vec::new();
    while w.failure().is_none() && now < ms(60_000) {
        now = w.poll_timeout().expect("a timer");
        w.handle_timeout(now);
        for answer in exchange(&mut w, &mut s, now) {
            if let Ok(Message::Abort(a)) = Message::parse(&answer) {
                aborts.push(a);
            }
            w.handle_packet(now, &answer);
        }
        assert!(
            w.failure().is_none() || now >= ms(20_000),
            "gave up at {:?}, before the timeout",
            now
        );
    }
    // Stall probes come every `retries + 1` expiries (the first at 5,315 ms); the wait ends
    // at the first one after the use is 20 s old, at most one such round later.
    assert!(
        now >= ms(20_000) && now <= ms(20_000 + 5_315),
        "gave up at {now:?}, not when the use was {timeout:?} old"
    );
    let Some(WorkerError::Stalled { report, .. }) = w.failure() else {
        panic!("{:?}", w.failure())
    };
    let StallReport::Probed { missing, .. } = report else {
        panic!("{report:?}")
    };
    assert_eq!(missing.iter().collect::<std::vec::Vec<_>>(), [1]);
    // The Abort it sends (multicast back by the switch) names rank 1.
    for answer in exchange(&mut w, &mut s, now) {
        if let Ok(Message::Abort(a)) = Message::parse(&answer) {
            aborts.push(a);
        }
    }
    assert_eq!(
        aborts
            .iter()
            .map(|a| (a.rank, a.detail))
            .collect::<std::vec::Vec<_>>(),
        [(0, 1)]
    );
}

/// §6, "A switch that restarted": a refusal of the lane's own run (`SessionEnded`, or
/// `UnknownJob`) carrying an epoch other than the one the lane joined under means the
/// switch restarted; with the same epoch the run ended without a restart.
#[test]
fn session_ended_with_another_epoch_is_a_restart_and_with_the_same_a_refusal() {
    for (reason, epoch, want) in [
        (
            AbortReason::SessionEnded,
            0xBAD,
            WorkerError::SwitchRestarted { old: 1, new: 0xBAD },
        ),
        (
            AbortReason::UnknownJob,
            0xBAD,
            WorkerError::SwitchRestarted { old: 1, new: 0xBAD },
        ),
        (
            AbortReason::SessionEnded,
            1,
            WorkerError::Refused {
                reason: AbortReason::SessionEnded,
                detail: 0,
            },
        ),
    ] {
        let mut pool = [Slot::<8, 1>::IDLE; 4];
        let mut s = job_3(&mut pool);
        let mut w = TestWorker::new(config()).unwrap();
        join_both(&mut w, &mut s);
        // The job's switch announced epoch 1 (`job_3`).
        w.handle_packet(ms(1), &abort(reason, 0, epoch, RANK1_NONCE));
        assert_eq!(w.failure(), Some(&want), "{reason:?} in epoch {epoch:#x}");
    }
}

/// §3.6: a `WrongShard` answers a Join, never a run. A copy of it that arrives after the
/// lane joined its shard (a Join resent to the old port, or the network's duplicate) is
/// stale. It names the lane's nonce, which is also the run's session when this process
/// opened the job's first run (`nonce + 0`), so it used to pass as an Abort of the run and
/// end a running lane. So did a late copy of any other refusal only a Join draws.
#[test]
fn a_wrong_shard_that_arrives_after_the_lane_joined_is_stale() {
    let mut pool = [Slot::<8, 1>::IDLE; 4];
    let mut s = job_3(&mut pool);
    let mut w = TestWorker::new(lane_1()).unwrap();
    let nonce = w.config().nonce;
    let wrong_shard = abort(AbortReason::WrongShard, 2, 1, nonce);
    assert_eq!(sent(&mut w, ms(0)).len(), 1, "the first Join, to port P");
    w.handle_packet(ms(1), &wrong_shard);
    assert!(matches!(
        w.poll_event(),
        Some(Event::Redirected { shard: 1, .. })
    ));
    // At its shard (the test's switch) this lane opens the run: its session is its nonce.
    for answer in exchange(&mut w, &mut s, ms(1)) {
        w.handle_packet(ms(1), &answer);
    }
    let mut out = [0u8; 512];
    let Verdict::Multicast { len, .. } = s.process(&rank1_join(w.config()), &mut out) else {
        panic!("rank 1's Join did not complete the run")
    };
    w.handle_packet(ms(2), &out[..len]);
    assert!(w.is_running());
    assert_eq!(s.job(3).unwrap().session(), nonce);
    // The copy of the redirect, late; likewise a late copy of any refusal only a Join
    // draws.
    w.handle_packet(ms(3), &wrong_shard);
    w.handle_packet(ms(3), &abort(AbortReason::LaneMismatch, 4, 1, nonce));
    assert_eq!(w.failure(), None);
    assert!(w.is_running());
    // An Abort of the run still ends it.
    w.handle_packet(ms(4), &abort(AbortReason::Shutdown, 0, 1, nonce));
    assert!(matches!(
        w.failure(),
        Some(WorkerError::Refused {
            reason: AbortReason::Shutdown,
            ..
        })
    ));
}
