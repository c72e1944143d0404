//! The run lifecycle at the reference switch: sessions, strangers, re-runs, restarts, the
//! agreed lane shape and shutdown (protocol.md §4.1), on the scenario set-up of the parent.

use super::*;

fn leave(rank: u16, session: u32) -> [u8; 12] {
    let mut b = [0u8; 12];
    crate::wire::LeaveRepr {
        job: 7,
        rank,
        session,
    }
    .emit(&mut crate::wire::LeavePacket::new_unchecked(&mut b[..]));
    b
}

fn contribution_in(session: u32, rank: u16, slot: u16, seq: u32, values: &[i32]) -> [u8; 64] {
    let mut b = contribution(rank, slot, seq, 0, values);
    wire::DataPacket::new_unchecked(&mut b[..]).set_session(session);
    b
}

#[test]
fn contributions_outside_the_run_are_dropped_and_never_summed() {
    // Issue 10, defect 6: forged contributions sent before a rank joins were summed.
    let mut pool = pool();
    let mut s = fresh_switch(&mut pool);
    let mut out = [0u8; OUT];
    let n = data_len(1);
    let forged = contribution_in(0, 1, 0, 0, &[1000]);
    assert_eq!(
        send(&mut s, &forged[..n], &mut out),
        Verdict::Drop(DropReason::BadSession)
    );
    let mut s = switch(&mut pool);
    for guess in [0, SESSION + 1, u32::MAX] {
        let forged = contribution_in(guess, 1, 0, 0, &[1000]);
        assert_eq!(
            send(&mut s, &forged[..n], &mut out),
            Verdict::Drop(DropReason::BadSession)
        );
    }
    for r in 0..3 {
        send(&mut s, &contribution(r, 0, 0, 0, &[1])[..n], &mut out);
    }
    assert_eq!(
        result_of(&out, n).1,
        [3],
        "only the run's contributions count"
    );
    assert_eq!(s.job(7).unwrap().counters().unauthorized, 3);
}

#[test]
fn a_stranger_cannot_join_or_end_a_running_job() {
    // Issue 10, defects 2 and 4: a Join from a stranger took the job; a Join then an Abort
    // for rank 0 killed a running job.
    let mut pool = pool();
    let mut s = fresh_switch(&mut pool);
    let mut out = [0u8; OUT];
    let v = send(&mut s, &join_as(0, 3, 0, 8, 8, 666, 0), &mut out);
    assert_eq!(abort_of(&out, v).reason, AbortReason::BadKey);
    assert!(!s.job(7).unwrap().has_run(), "the stranger opened nothing");
    let mut s = switch(&mut pool);
    let v = send(&mut s, &join_as(0, 3, 0, 8, 8, 666, KEY ^ 0xFF), &mut out);
    assert_eq!(abort_of(&out, v).reason, AbortReason::BadKey);
    let mut b = [0u8; 20];
    AbortRepr {
        job: 7,
        rank: 0,
        reason: AbortReason::WorkerFailed,
        detail: 1,
        epoch: 0,
        session: 0,
    }
    .emit(&mut AbortPacket::new_unchecked(&mut b[..]));
    assert_eq!(
        send(&mut s, &b, &mut out),
        Verdict::Drop(DropReason::BadSession)
    );
    assert_eq!(
        send(&mut s, &leave(0, 1), &mut out),
        Verdict::Drop(DropReason::BadSession)
    );
    let job = s.job(7).unwrap();
    assert!(job.has_run() && job.all_joined() && job.session() == SESSION);
}

#[test]
fn a_job_runs_again_after_every_rank_left() {
    // Issue 10, defect 3: a job id could run only once per switch lifetime.
    let mut pool = pool();
    let mut s = switch(&mut pool);
    let mut out = [0u8; OUT];
    let n = data_len(1);
    for r in 0..3 {
        send(&mut s, &contribution(r, 2, 0, 0, &[5])[..n], &mut out);
    }
    for r in 0..3 {
        assert_eq!(
            send(&mut s, &leave(r, SESSION), &mut out),
            Verdict::Consumed
        );
        assert_eq!(s.job(7).unwrap().has_run(), r < 2, "ends at the last Leave");
    }
    // The old run's packets are now strangers.
    let old = contribution(0, 2, 1, 0, &[5]);
    assert_eq!(
        send(&mut s, &old[..n], &mut out),
        Verdict::Drop(DropReason::BadSession)
    );
    // New processes (new nonces) run the job again from seq 0 on the same slots.
    for r in 0..3 {
        send(
            &mut s,
            &join_as(r, 3, 0, 8, 8, 900 + u32::from(r), KEY),
            &mut out,
        );
    }
    let job = s.job(7).unwrap();
    assert_eq!(
        (job.session(), job.counters().runs),
        (901, 2),
        "nonce + runs before"
    );
    for r in 0..3 {
        send(&mut s, &contribution_in(901, r, 2, 0, &[7])[..n], &mut out);
    }
    let (r, values) = result_of(&out, n);
    assert_eq!((r.seq, r.session, &values[..]), (0, 901, &[21][..]));
}

#[test]
fn a_restarted_rank_ends_the_complete_run_and_opens_the_next() {
    let mut pool = pool();
    let mut s = switch(&mut pool);
    let mut out = [0u8; OUT];
    // The same process again (a resend, another lane) changes nothing.
    assert!(matches!(
        send(&mut s, &join(1, 3, 0, 8, 8), &mut out),
        Verdict::Unicast { .. }
    ));
    // Rank 1 comes back as a new process: the run's ranks hear why it is over.
    let v = send(&mut s, &join_as(1, 3, 0, 8, 8, 555, KEY), &mut out);
    let Verdict::Multicast { len, .. } = v else {
        panic!("{v:?}")
    };
    let a = AbortRepr::parse(&AbortPacket::new_unchecked(&out[..len])).unwrap();
    assert_eq!(
        (a.rank, a.reason, a.detail, a.session),
        (RANK_ALL, AbortReason::RankRestarted, 1, SESSION)
    );
    assert!(!s.job(7).unwrap().has_run());
    // Its next Join opens the next run.
    let v = send(&mut s, &join_as(1, 3, 0, 8, 8, 555, KEY), &mut out);
    assert!(matches!(v, Verdict::Unicast { rank: 1, .. }));
    assert_eq!(s.job(7).unwrap().session(), 556, "nonce + runs before");
}

#[test]
fn the_same_processes_can_run_the_job_twice() {
    // A run's session is not its opener's nonce alone: the same processes joining again
    // after they left get a new session, so the old run's slot uses read as idle.
    let mut pool = pool();
    let mut s = switch(&mut pool);
    let mut out = [0u8; OUT];
    let n = data_len(1);
    for r in 0..3 {
        send(&mut s, &contribution(r, 2, 0, 0, &[5])[..n], &mut out);
    }
    for r in 0..3 {
        send(&mut s, &leave(r, SESSION), &mut out);
    }
    for r in 0..3 {
        send(&mut s, &join(r, 3, 0, 8, 8), &mut out);
    }
    let again = s.job(7).unwrap().session();
    assert_ne!(again, SESSION);
    for r in 0..3 {
        send(
            &mut s,
            &contribution_in(again, r, 2, 0, &[7])[..n],
            &mut out,
        );
    }
    assert_eq!(result_of(&out, n).1, [21]);
}

#[test]
fn a_run_agrees_one_lane_shape() {
    let mut pool = pool();
    let mut s = fresh_switch(&mut pool);
    let mut out = [0u8; OUT];
    send(&mut s, &join(0, 3, 0, 4, 8), &mut out);
    let v = send(&mut s, &join(1, 3, 0, 8, 8), &mut out);
    assert_eq!(
        (abort_of(&out, v).reason, abort_of(&out, v).detail),
        (AbortReason::LaneMismatch, 4)
    );
    let v = send(&mut s, &join(1, 3, 4, 4, 2), &mut out);
    assert_eq!(
        (abort_of(&out, v).reason, abort_of(&out, v).detail),
        (AbortReason::ChunkMismatch, 8)
    );
}

#[test]
fn a_run_agrees_the_number_of_lanes_per_rank() {
    // Issue 11: rank 0 with 2 lanes of 4 slots and rank 1 with 1 lane of 4 slots both
    // joined, split their tensors differently and deadlocked. Now the first Join fixes L.
    let mut pool = pool();
    let mut s = fresh_switch(&mut pool);
    let mut out = [0u8; OUT];
    let lane = |rank: u16, slot_lo: u16, lanes: u16| {
        join_repr(
            JoinRepr {
                job: 7,
                rank,
                world: 3,
                slot_lo,
                slot_count: 4,
                count: 8,
                lanes,
                nonce: 100 + u32::from(rank),
                cookie: 0,
                tag: [0; 16],
            }
            .sign(KEY),
        )
    };
    let v = send(&mut s, &lane(0, 0, 2), &mut out);
    assert!(matches!(v, Verdict::Unicast { rank: 0, .. }), "{v:?}");
    send(&mut s, &lane(0, 4, 2), &mut out);
    let v = send(&mut s, &lane(1, 0, 1), &mut out);
    let a = abort_of(&out, v);
    assert_eq!(
        (a.reason, a.detail, a.session),
        (AbortReason::LaneCountMismatch, 2, 101),
        "refused, naming the run's L and the Join's nonce"
    );
    assert_eq!(s.job(7).unwrap().joined().len(), 1, "rank 1 is not in");
    // With the run's L it joins.
    let v = send(&mut s, &lane(1, 0, 2), &mut out);
    assert!(matches!(v, Verdict::Unicast { rank: 1, .. }), "{v:?}");
    // A lane that is not one of the L its Join states is no lane at all: SlotRange, before
    // the run is asked, whatever its L.
    let v = send(&mut s, &lane(2, 4, 1), &mut out);
    let a = abort_of(&out, v);
    assert_eq!((a.reason, a.detail), (AbortReason::SlotRange, 8));
}

#[test]
fn shutdown_tells_every_run_and_ends_it() {
    let mut pool = pool();
    let mut s = switch(&mut pool);
    let mut out = [0u8; OUT];
    let Some(Verdict::Multicast { job: 7, len }) =
        s.shutdown_run(7, AbortReason::Shutdown, &mut out)
    else {
        panic!()
    };
    let a = AbortRepr::parse(&AbortPacket::new_unchecked(&out[..len])).unwrap();
    assert_eq!((a.reason, a.session), (AbortReason::Shutdown, SESSION));
    assert_eq!(
        s.shutdown_run(7, AbortReason::Shutdown, &mut out),
        None,
        "no run left"
    );
}

#[test]
fn removing_a_job_tells_its_run_job_removed_not_shutdown() {
    let mut pool = pool();
    let mut s = switch(&mut pool);
    let mut out = [0u8; OUT];
    let Some(Verdict::Multicast { job: 7, len }) =
        s.shutdown_run(7, AbortReason::JobRemoved, &mut out)
    else {
        panic!()
    };
    let a = AbortRepr::parse(&AbortPacket::new_unchecked(&out[..len])).unwrap();
    assert_eq!(
        (a.reason, a.detail, a.rank, a.session),
        (AbortReason::JobRemoved, 0, RANK_ALL, SESSION)
    );
    assert_eq!(u8::from(a.reason), 16);
}
