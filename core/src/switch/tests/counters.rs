//! Each counter of the StatusReply as protocol.md §3.8 defines it, one test per definition
//! that an implementer once had to guess (issue 26, item 7.8), on the scenario set-up of
//! the parent: job 7, ranks 0–2 joined, session `SESSION`.

use super::*;
use crate::wire::{LeavePacket, LeaveRepr, ProbeFlags};

fn counters(s: &TestSwitch<'_>) -> JobCounters {
    *s.job(7).unwrap().counters()
}

fn data(rank: u16, slot: u16, seq: u32, values: &[i32]) -> heapless::Vec<u8, 64> {
    heapless::Vec::from_slice(&contribution(rank, slot, seq, 0, values)[..data_len(values.len())])
        .unwrap()
}

fn abort_in(session: u32) -> [u8; 20] {
    let mut b = [0u8; 20];
    AbortRepr {
        job: 7,
        rank: 1,
        reason: AbortReason::WorkerFailed,
        detail: 0xFFFF,
        epoch: 0,
        session,
    }
    .emit(&mut AbortPacket::new_unchecked(&mut b[..]));
    b
}

fn probe(rank: u16, slot: u16, session: u32) -> [u8; 20] {
    let mut b = [0u8; 20];
    ProbeRepr {
        job: 7,
        rank,
        slot,
        ver: 0,
        seq: 0,
        session,
        flags: ProbeFlags::NONE,
    }
    .emit(&mut ProbePacket::new_unchecked(&mut b[..]));
    b
}

/// `contributions` counts the Contributions added into a slot, and nothing else: not a
/// duplicate, a resend answered from a complete use, a stale copy or a rejected one.
/// `completions` counts completed uses; `retransmit_replies` stored Results sent again.
#[test]
fn contributions_counts_added_ones_only() {
    let mut pool = pool();
    let mut s = switch(&mut pool);
    let mut out = [0u8; OUT];
    for rank in 0..3 {
        send(&mut s, &data(rank, 0, 2, &[1]), &mut out);
    }
    send(&mut s, &data(0, 1, 0, &[1]), &mut out);
    let before = counters(&s);
    assert_eq!((before.contributions, before.completions), (4, 1));
    let outcomes = [
        (data(0, 1, 0, &[1]), Verdict::Drop(DropReason::Duplicate)),
        (
            data(1, 0, 2, &[1]),
            Verdict::Unicast {
                job: 7,
                rank: 1,
                len: data_len(1),
            },
        ),
        (data(1, 0, 0, &[1]), Verdict::Drop(DropReason::Stale)),
        (
            data(1, 1, 0, &[1, 2]),
            Verdict::Drop(DropReason::CountMismatch),
        ),
    ];
    for (bytes, want) in outcomes {
        assert_eq!(send(&mut s, &bytes, &mut out), want);
    }
    let after = counters(&s);
    assert_eq!((after.contributions, after.completions), (4, 1));
    assert_eq!(
        (
            after.duplicates,
            after.retransmit_replies,
            after.stale,
            after.rejected
        ),
        (1, 1, 1, 1)
    );
}

/// `overflows` counts uses whose sum overflowed, once per use however many of its values
/// did.
#[test]
fn overflows_counts_uses_not_values() {
    let mut pool = pool();
    let mut s = switch(&mut pool);
    let mut out = [0u8; OUT];
    for rank in 0..3 {
        send(
            &mut s,
            &data(rank, 0, 0, &[i32::MAX, i32::MIN, 1]),
            &mut out,
        );
    }
    assert_eq!((counters(&s).overflows, counters(&s).completions), (1, 1));
}

/// `rejected` counts the job's Contributions of its current run dropped for their rank,
/// slot, count or slot version — not those of an unknown job or of another session
/// (`unauthorized`).
#[test]
fn rejected_counts_bad_fields_of_the_run_only() {
    let mut pool = pool();
    let mut s = switch(&mut pool);
    let mut out = [0u8; OUT];
    let mut bad_ver = data(0, 0, 0, &[1]);
    bad_ver[8] = 1;
    let mut other_session = data(0, 0, 0, &[1]);
    DataPacket::new_unchecked(&mut other_session[..]).set_session(SESSION + 1);
    for (bytes, reason) in [
        (data(3, 0, 0, &[1]), DropReason::UnknownRank),
        (data(0, 8, 0, &[1]), DropReason::SlotRange),
        (bad_ver, DropReason::BadVersion),
        (other_session, DropReason::BadSession),
    ] {
        assert_eq!(send(&mut s, &bytes, &mut out), Verdict::Drop(reason));
    }
    let c = counters(&s);
    assert_eq!((c.rejected, c.unauthorized, c.contributions), (3, 1, 0));
}

/// The protocol version (byte 0) and the slot version (`ver`) are counted apart: another
/// protocol version is `Malformed`, a `ver` that is not `seq mod 2` is `BadVersion`.
#[test]
fn a_wrong_protocol_version_is_malformed_and_a_wrong_slot_version_bad_version() {
    let mut pool = pool();
    let mut s = switch(&mut pool);
    let mut out = [0u8; OUT];
    let mut protocol_2 = data(0, 0, 0, &[1]);
    protocol_2[0] = 2;
    assert_eq!(
        send(&mut s, &protocol_2, &mut out),
        Verdict::Drop(DropReason::Malformed)
    );
    let mut ver_1 = data(0, 0, 0, &[1]);
    ver_1[8] = 1;
    assert_eq!(
        send(&mut s, &ver_1, &mut out),
        Verdict::Drop(DropReason::BadVersion)
    );
    let c = s.counters();
    assert_eq!(
        (
            c.drops(DropReason::Malformed),
            c.drops(DropReason::BadVersion)
        ),
        (1, 1)
    );
}

/// `probes` counts the Probes answered (ProbeReply or stored Result). A Probe of another
/// session is refused `SessionEnded` and counted `unauthorized`, not `probes`; one of an
/// unknown rank or slot is refused and counted in neither.
#[test]
fn probes_counts_answered_probes_and_a_refused_one_is_not_a_probe() {
    let mut pool = pool();
    let mut s = switch(&mut pool);
    let mut out = [0u8; OUT];
    let reply = send(&mut s, &probe(0, 0, SESSION), &mut out);
    assert!(matches!(reply, Verdict::Unicast { .. }));
    for (bytes, reason) in [
        (probe(0, 0, SESSION + 1), AbortReason::SessionEnded),
        (probe(3, 0, SESSION), AbortReason::UnknownRank),
        (probe(0, 8, SESSION), AbortReason::SlotRange),
    ] {
        let v = send(&mut s, &bytes, &mut out);
        assert_eq!(abort_of(&out, v).reason, reason);
    }
    let c = counters(&s);
    assert_eq!((c.probes, c.unauthorized), (1, 1));
}

/// `aborts` counts runs ended by an Abort sent on to the ranks: a worker's, and a
/// `RankRestarted`; not a `Shutdown` or a `JobRemoved` from the control plane, nor an Abort
/// of another session (`unauthorized`).
#[test]
fn aborts_counts_workers_aborts_and_rank_restarts() {
    let mut pool = pool();
    let mut s = switch(&mut pool);
    let mut out = [0u8; OUT];
    assert_eq!(
        send(&mut s, &abort_in(SESSION + 1), &mut out),
        Verdict::Drop(DropReason::BadSession)
    );
    assert!(matches!(
        send(&mut s, &abort_in(SESSION), &mut out),
        Verdict::Multicast { .. }
    ));
    assert_eq!((counters(&s).aborts, counters(&s).unauthorized), (1, 1));
    // A new run, completed, then ended by a new process of rank 1.
    for rank in 0..3 {
        send(&mut s, &join(rank, 3, 0, 8, 8), &mut out);
    }
    let v = send(&mut s, &join_as(1, 3, 0, 8, 8, 555, KEY), &mut out);
    let Verdict::Multicast { len, .. } = v else {
        panic!("{v:?}")
    };
    let a = AbortRepr::parse(&AbortPacket::new_unchecked(&out[..len])).unwrap();
    assert_eq!(a.reason, AbortReason::RankRestarted);
    assert_eq!(counters(&s).aborts, 2);
    // The restarted rank opens a third run; the control plane ends it.
    send(&mut s, &join_as(1, 3, 0, 8, 8, 555, KEY), &mut out);
    assert!(s.shutdown_run(7, AbortReason::Shutdown, &mut out).is_some());
    let c = counters(&s);
    assert_eq!((c.aborts, c.runs), (2, 3));
}

/// `joins` counts the Joins answered with a JoinReply, resends and every lane included;
/// a refused Join is not counted there (a wrong key counts as `unauthorized`).
#[test]
fn joins_counts_answered_joins_only() {
    let mut pool = pool();
    let mut s = fresh_switch(&mut pool);
    let mut out = [0u8; OUT];
    send(&mut s, &join(0, 3, 0, 4, 8), &mut out);
    send(&mut s, &join(0, 3, 0, 4, 8), &mut out);
    send(&mut s, &join(0, 3, 4, 4, 8), &mut out);
    let v = send(&mut s, &join(1, 3, 0, 2, 8), &mut out);
    assert_eq!(abort_of(&out, v).reason, AbortReason::LaneMismatch);
    let v = send(&mut s, &join_as(1, 3, 0, 4, 8, 101, KEY ^ 1), &mut out);
    assert_eq!(abort_of(&out, v).reason, AbortReason::BadKey);
    let c = counters(&s);
    assert_eq!((c.joins, c.runs, c.unauthorized), (3, 1, 1));
}

/// `unauthorized` counts the messages naming the job that a stranger could have sent: a
/// Join or Status with a wrong tag, and a Contribution, Probe, Abort or Leave of a session
/// that is not the run's.
#[test]
fn unauthorized_counts_wrong_keys_and_sessions() {
    let mut pool = pool();
    let mut s = switch(&mut pool);
    let mut out = [0u8; OUT];
    let wrong = SESSION ^ 0x40;
    let mut other = data(0, 0, 0, &[1]);
    DataPacket::new_unchecked(&mut other[..]).set_session(wrong);
    let mut leave = [0u8; 12];
    LeaveRepr {
        job: 7,
        rank: 0,
        session: wrong,
    }
    .emit(&mut LeavePacket::new_unchecked(&mut leave[..]));
    let join = join_as(2, 3, 0, 8, 8, 102, KEY ^ 1);
    let strangers: [&[u8]; 5] = [&other, &probe(0, 0, wrong), &abort_in(wrong), &leave, &join];
    for bytes in strangers {
        assert!(matches!(
            send(&mut s, bytes, &mut out),
            Verdict::Drop(DropReason::BadSession) | Verdict::Unicast { .. }
        ));
    }
    assert_eq!(counters(&s).unauthorized, 5);
    assert!(s.job(7).unwrap().has_run(), "nothing of it reached the run");
}
