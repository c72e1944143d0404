//! Scenario tests of the reference switch. Topology for all of them:
//!
//! ```text
//!   rank 0 ──┐
//!   rank 1 ──┼── switch (job 7: 3 ranks, pool slots 4..12 = job slots 0..8)
//!   rank 2 ──┘
//! ```
//!
//! `switch` returns it with the run open: every rank joined with key `KEY` and nonce
//! `100 + rank`, so the session is `SESSION` (rank 0's nonce); `fresh_switch` has no run.

use super::*;

mod counters;
mod runs;
use crate::wire::{
    AbortPacket, AbortReason, AbortRepr, JoinFlags, JoinPacket, JoinRepr, Message, ProbePacket,
    ProbeRepr, SlotState,
};

type TestSwitch<'a> = Switch<'a, 8, 1, 2>;
const OUT: usize = TestSwitch::OUT_LEN;

fn pool() -> [Slot<8, 1>; 16] {
    [Slot::IDLE; 16]
}

const KEY: u64 = 0x005E_C2E7;
const SESSION: u32 = 100;

fn fresh_switch(pool: &mut [Slot<8, 1>]) -> TestSwitch<'_> {
    let mut s = Switch::new(pool, 0xE90C);
    s.add_job(JobConfig {
        id: 7,
        world: 3,
        slot_lo: 4,
        slot_count: 8,
        key: KEY,
    })
    .unwrap();
    s
}

fn switch(pool: &mut [Slot<8, 1>]) -> TestSwitch<'_> {
    let mut s = fresh_switch(pool);
    let mut out = [0u8; OUT];
    for rank in 0..3 {
        let v = s.process(&join(rank, 3, 0, 8, 8), &mut out);
        assert!(!matches!(v, Verdict::Drop(_)), "{v:?}");
    }
    assert_eq!(s.job(7).unwrap().session(), SESSION);
    s
}

fn contribution(rank: u16, slot: u16, seq: u32, exp: u8, values: &[i32]) -> [u8; 64] {
    let repr = DataRepr {
        kind: DataKind::Contribution,
        job: 7,
        rank,
        slot,
        ver: (seq & 1) as u8,
        flags: Flags::default(),
        count: values.len() as u16,
        seq,
        exp,
        session: SESSION,
    };
    let mut buf = [0u8; 64];
    let mut p = DataPacket::new_unchecked(&mut buf[..repr.buffer_len()]);
    repr.emit(&mut p);
    pool::store(values, p.values_mut());
    buf
}

fn send(s: &mut TestSwitch<'_>, bytes: &[u8], out: &mut [u8]) -> Verdict {
    s.process(bytes, out)
}

fn data_len(values: usize) -> usize {
    wire::data::HEADER_LEN + 4 * values
}

fn result_of(out: &[u8], len: usize) -> (DataRepr, heapless::Vec<i32, 8>) {
    match Message::parse(&out[..len]) {
        Ok(Message::Data(r, payload)) => (
            r,
            payload
                .chunks_exact(4)
                .map(|c| i32::from_be_bytes([c[0], c[1], c[2], c[3]]))
                .collect(),
        ),
        other => panic!("not a result: {other:?}"),
    }
}

#[test]
fn three_contributions_complete_and_multicast_the_sum() {
    let mut pool = pool();
    let mut s = switch(&mut pool);
    let mut out = [0u8; OUT];
    let n = data_len(2);
    assert_eq!(
        send(&mut s, &contribution(0, 1, 0, 130, &[1, 2])[..n], &mut out),
        Verdict::Consumed
    );
    assert_eq!(
        send(
            &mut s,
            &contribution(2, 1, 0, 140, &[10, 20])[..n],
            &mut out
        ),
        Verdict::Consumed
    );
    let v = send(
        &mut s,
        &contribution(1, 1, 0, 135, &[100, -200])[..n],
        &mut out,
    );
    assert_eq!(v, Verdict::Multicast { job: 7, len: n });
    let (r, values) = result_of(&out, n);
    assert_eq!(r.kind, DataKind::Result);
    assert_eq!(
        (r.rank, r.slot, r.ver, r.seq, r.exp),
        (RANK_ALL, 1, 0, 0, 140)
    );
    assert_eq!(r.flags, Flags::default());
    assert_eq!(values, [111, -178]);
    let job = s.job(7).unwrap().counters();
    assert_eq!((job.contributions, job.completions), (3, 1));
    // The pool index is slot_lo + slot.
    assert!(s.slot(7, 1).unwrap().version(0).is_complete());
}

#[test]
fn duplicate_to_incomplete_use_is_dropped_and_not_counted_twice() {
    let mut pool = pool();
    let mut s = switch(&mut pool);
    let mut out = [0u8; OUT];
    let n = data_len(1);
    let p = contribution(0, 0, 0, 0, &[5]);
    assert_eq!(send(&mut s, &p[..n], &mut out), Verdict::Consumed);
    assert_eq!(
        send(&mut s, &p[..n], &mut out),
        Verdict::Drop(DropReason::Duplicate)
    );
    send(&mut s, &contribution(1, 0, 0, 0, &[1])[..n], &mut out);
    let v = send(&mut s, &contribution(2, 0, 0, 0, &[1])[..n], &mut out);
    assert_eq!(v, Verdict::Multicast { job: 7, len: n });
    assert_eq!(result_of(&out, n).1, [7]);
    assert_eq!(s.counters().drops(DropReason::Duplicate), 1);
}

#[test]
fn retransmission_to_completed_use_gets_the_stored_result_unicast() {
    let mut pool = pool();
    let mut s = switch(&mut pool);
    let mut out = [0u8; OUT];
    let n = data_len(1);
    for r in 0..3 {
        send(
            &mut s,
            &contribution(r, 2, 4, 0, &[i32::from(r) + 1])[..n],
            &mut out,
        );
    }
    let v = send(&mut s, &contribution(1, 2, 4, 0, &[2])[..n], &mut out);
    assert_eq!(
        v,
        Verdict::Unicast {
            job: 7,
            rank: 1,
            len: n
        }
    );
    let (r, values) = result_of(&out, n);
    assert_eq!((r.rank, r.flags, r.seq), (1, Flags::RETRANSMIT, 4));
    assert_eq!(values, [6]);
    assert_eq!(s.job(7).unwrap().counters().retransmit_replies, 1);
}

#[test]
fn a_resend_of_another_count_to_a_completed_use_is_not_answered() {
    let mut pool = pool();
    let mut s = switch(&mut pool);
    let mut out = [0u8; OUT];
    let n = data_len(2);
    for r in 0..3 {
        send(&mut s, &contribution(r, 2, 4, 0, &[1, 2])[..n], &mut out);
    }
    // One value where the use holds two: a short datagram must not draw the long answer.
    let short = data_len(1);
    let v = send(&mut s, &contribution(1, 2, 4, 0, &[1])[..short], &mut out);
    assert_eq!(v, Verdict::Drop(DropReason::CountMismatch));
    let job = s.job(7).unwrap().counters();
    assert_eq!((job.retransmit_replies, job.rejected), (0, 1));
    // The same count still gets the stored result.
    let v = send(&mut s, &contribution(1, 2, 4, 0, &[1, 2])[..n], &mut out);
    assert!(matches!(v, Verdict::Unicast { rank: 1, .. }));
}

#[test]
fn next_use_overwrites_and_leaves_the_other_version_alone() {
    let mut pool = pool();
    let mut s = switch(&mut pool);
    let mut out = [0u8; OUT];
    let n = data_len(1);
    for r in 0..3 {
        send(&mut s, &contribution(r, 0, 0, 0, &[100])[..n], &mut out);
    }
    // Use 1 (version 1) from rank 0: version 0 keeps its result and its bitmap.
    assert_eq!(
        send(&mut s, &contribution(0, 0, 1, 0, &[1])[..n], &mut out),
        Verdict::Consumed
    );
    let slot = s.slot(7, 0).unwrap();
    assert_eq!(slot.version(0).seen().len(), 3);
    assert_eq!(slot.version(0).values(), [300]);
    // Use 2 (version 0 again) starts afresh: first contribution overwrites.
    send(&mut s, &contribution(1, 0, 1, 0, &[1])[..n], &mut out);
    send(&mut s, &contribution(2, 0, 1, 0, &[1])[..n], &mut out);
    assert_eq!(
        send(&mut s, &contribution(2, 0, 2, 0, &[9])[..n], &mut out),
        Verdict::Consumed
    );
    let v0 = s.slot(7, 0).unwrap().version(0);
    assert_eq!((v0.seq(), v0.remaining(), v0.values()), (2, 2, &[9][..]));
    assert_eq!(v0.seen().iter().collect::<heapless::Vec<u16, 4>>(), [2]);
}

#[test]
fn a_rank_that_skips_ahead_is_never_counted_twice() {
    // Found by the switch_sequence fuzzer: with the paper's clearing of seen[1−v], rank 0's
    // use-1 contribution erased its bit in the incomplete use 0, and its resend of use 0
    // was counted again — use 0 completed with rank 0 twice and rank 2 never.
    let mut pool = pool();
    let mut s = switch(&mut pool);
    let mut out = [0u8; OUT];
    let n = data_len(1);
    send(&mut s, &contribution(0, 0, 0, 0, &[1])[..n], &mut out);
    send(&mut s, &contribution(0, 0, 1, 0, &[5])[..n], &mut out);
    let v = send(&mut s, &contribution(0, 0, 0, 0, &[1])[..n], &mut out);
    assert_eq!(v, Verdict::Drop(DropReason::Duplicate));
    send(&mut s, &contribution(1, 0, 0, 0, &[10])[..n], &mut out);
    let v = send(&mut s, &contribution(2, 0, 0, 0, &[100])[..n], &mut out);
    assert_eq!(v, Verdict::Multicast { job: 7, len: n });
    assert_eq!(result_of(&out, n).1, [111]);
}

#[test]
fn a_delayed_network_duplicate_is_stale_and_changes_nothing() {
    // The paper's scoreboard would count this copy again (docs/protocol.md §4, "Why seq").
    let mut pool = pool();
    let mut s = switch(&mut pool);
    let mut out = [0u8; OUT];
    let n = data_len(1);
    let old = contribution(0, 3, 0, 0, &[1000]);
    for r in 0..3 {
        send(&mut s, &contribution(r, 3, 0, 0, &[1])[..n], &mut out);
    }
    for r in 0..3 {
        send(&mut s, &contribution(r, 3, 1, 0, &[2])[..n], &mut out);
    }
    send(&mut s, &contribution(0, 3, 2, 0, &[3])[..n], &mut out);
    // The copy of rank 0's use-0 packet arrives now, after use 2 began on version 0.
    assert_eq!(
        send(&mut s, &old[..n], &mut out),
        Verdict::Drop(DropReason::Stale)
    );
    send(&mut s, &contribution(1, 3, 2, 0, &[3])[..n], &mut out);
    let v = send(&mut s, &contribution(2, 3, 2, 0, &[3])[..n], &mut out);
    assert_eq!(v, Verdict::Multicast { job: 7, len: n });
    assert_eq!(result_of(&out, n).1, [9]);
    // A copy of use 1 after completion only earns a harmless unicast answer.
    let v = send(&mut s, &contribution(0, 3, 1, 0, &[2])[..n], &mut out);
    assert!(matches!(v, Verdict::Unicast { rank: 0, .. }));
    assert_eq!(result_of(&out, n).1, [6]);
}

#[test]
fn int32_overflow_is_flagged_in_the_result() {
    let mut pool = pool();
    let mut s = switch(&mut pool);
    let mut out = [0u8; OUT];
    let n = data_len(2);
    send(
        &mut s,
        &contribution(0, 0, 0, 0, &[i32::MAX, 1])[..n],
        &mut out,
    );
    send(&mut s, &contribution(1, 0, 0, 0, &[1, 1])[..n], &mut out);
    send(&mut s, &contribution(2, 0, 0, 0, &[0, 1])[..n], &mut out);
    let (r, values) = result_of(&out, n);
    assert!(r.flags.contains(Flags::OVERFLOW));
    assert_eq!(values, [i32::MIN, 3]);
    assert_eq!(s.job(7).unwrap().counters().overflows, 1);
}

/// `contribution` with `flags` set.
fn flagged(rank: u16, seq: u32, values: &[i32], flags: Flags) -> [u8; 64] {
    let mut buf = contribution(rank, 0, seq, 0, values);
    let n = data_len(values.len());
    DataPacket::new_unchecked(&mut buf[..n]).set_flags(flags);
    buf
}

#[test]
fn non_finite_flags_are_ored_into_the_result_and_a_workers_overflow_is_not() {
    let mut pool = pool();
    let mut s = switch(&mut pool);
    let mut out = [0u8; OUT];
    let n = data_len(2);
    send(
        &mut s,
        &flagged(0, 0, &[1, 0], Flags::POS_INF)[..n],
        &mut out,
    );
    let both = Flags::NEG_INF.with(Flags::OVERFLOW).with(Flags(0x80));
    send(&mut s, &flagged(1, 0, &[2, 0], both)[..n], &mut out);
    send(
        &mut s,
        &flagged(2, 0, &[4, 0], Flags::RETRANSMIT)[..n],
        &mut out,
    );
    let (r, values) = result_of(&out, n);
    // The kinds of every rank; not a worker's OVERFLOW, RETRANSMIT or unknown bits.
    assert_eq!(r.flags, Flags::POS_INF.with(Flags::NEG_INF));
    assert_eq!(values, [7, 0]);
    // A resend after completion is answered with the same flags, plus RETRANSMIT.
    let v = send(
        &mut s,
        &flagged(1, 0, &[2, 0], Flags::RETRANSMIT)[..n],
        &mut out,
    );
    assert!(matches!(v, Verdict::Unicast { rank: 1, .. }));
    let kinds = Flags::POS_INF.with(Flags::NEG_INF);
    assert_eq!(result_of(&out, n).0.flags, kinds.with(Flags::RETRANSMIT));
    // The slot's next use starts clean.
    send(
        &mut s,
        &flagged(0, 2, &[1, 0], Flags::default())[..n],
        &mut out,
    );
    send(&mut s, &flagged(1, 2, &[1, 0], Flags::NAN)[..n], &mut out);
    send(
        &mut s,
        &flagged(2, 2, &[1, 0], Flags::default())[..n],
        &mut out,
    );
    assert_eq!(result_of(&out, n).0.flags, Flags::NAN);
    assert_eq!(s.job(7).unwrap().counters().overflows, 0);
}

#[test]
fn bad_packets_are_dropped_by_reason_and_never_touch_state() {
    let mut pool = pool();
    let mut s = switch(&mut pool);
    let mut out = [0u8; OUT];
    let n = data_len(1);
    let mut foreign = contribution(0, 0, 0, 0, &[1]);
    foreign[3] = 8; // job 8
    let cases: [(&[u8], DropReason); 8] = [
        (&[1, 2, 3], DropReason::Malformed),
        (
            &contribution(0, 0, 0, 0, &[1])[..n - 1],
            DropReason::Malformed,
        ),
        (&foreign[..n], DropReason::UnknownJob),
        (
            &contribution(3, 0, 0, 0, &[1])[..n],
            DropReason::UnknownRank,
        ),
        (&contribution(0, 8, 0, 0, &[1])[..n], DropReason::SlotRange),
        (
            &contribution(0, 0, 0, 0, &[1; 9])[..data_len(9)],
            DropReason::CountTooLarge,
        ),
        (&[1, 0x7f, 0, 7, 0, 0], DropReason::UnknownType),
        (&[1, 0x02, 0, 7, 0, 0], DropReason::UnexpectedType),
    ];
    for (bytes, reason) in cases {
        let before = s.counters().drops(reason);
        assert_eq!(
            send(&mut s, bytes, &mut out),
            Verdict::Drop(reason),
            "{reason:?}"
        );
        assert_eq!(s.counters().drops(reason), before + 1);
    }
    let mut bad_ver = contribution(0, 0, 1, 0, &[1]);
    bad_ver[8] = 0; // ver 0 with seq 1
    assert_eq!(
        send(&mut s, &bad_ver[..n], &mut out),
        Verdict::Drop(DropReason::BadVersion)
    );
    assert!(!s.slot(7, 0).unwrap().version(0).seen().contains(0));
    assert_eq!(s.counters().total_drops(), 9);
    let mut small = [0u8; 8];
    assert_eq!(
        send(&mut s, &contribution(0, 0, 0, 0, &[1])[..n], &mut small),
        Verdict::Drop(DropReason::OutputTooSmall)
    );
}

#[test]
fn count_mismatch_is_dropped() {
    let mut pool = pool();
    let mut s = switch(&mut pool);
    let mut out = [0u8; OUT];
    send(
        &mut s,
        &contribution(0, 0, 0, 0, &[1, 2])[..data_len(2)],
        &mut out,
    );
    let v = send(
        &mut s,
        &contribution(1, 0, 0, 0, &[1])[..data_len(1)],
        &mut out,
    );
    assert_eq!(v, Verdict::Drop(DropReason::CountMismatch));
}

fn join(rank: u16, world: u16, slot_lo: u16, slot_count: u16, count: u16) -> [u8; 44] {
    join_as(
        rank,
        world,
        slot_lo,
        slot_count,
        count,
        100 + u32::from(rank),
        KEY,
    )
}

/// A Join of a rank whose lanes of `slot_count` slots fill the job's 8 slots.
fn join_as(
    rank: u16,
    world: u16,
    slot_lo: u16,
    slot_count: u16,
    count: u16,
    nonce: u32,
    key: u64,
) -> [u8; 44] {
    let lanes = 8u16.checked_div(slot_count).unwrap_or(1).max(1);
    let repr = JoinRepr {
        job: 7,
        rank,
        world,
        slot_lo,
        slot_count,
        count,
        lanes,
        nonce,
        cookie: 0,
        tag: [0; 16],
    }
    .sign(key);
    join_repr(repr)
}

fn join_repr(repr: JoinRepr) -> [u8; 44] {
    let mut b = [0u8; 44];
    repr.emit(&mut JoinPacket::new_unchecked(&mut b[..]));
    b
}

#[test]
fn joins_report_who_is_in_and_the_last_one_multicasts_complete() {
    let mut pool = pool();
    let mut s = fresh_switch(&mut pool);
    let mut out = [0u8; OUT];
    let v = send(&mut s, &join(2, 3, 0, 4, 8), &mut out);
    let Verdict::Unicast { rank: 2, len, .. } = v else {
        panic!("{v:?}")
    };
    let Ok(Message::JoinReply(r)) = Message::parse(&out[..len]) else {
        panic!()
    };
    assert_eq!(
        (r.world, r.max_count, r.epoch, r.slot_count, r.session),
        (3, 8, 0xE90C, 8, 102),
        "the first Join opens the run with its nonce as the session"
    );
    assert!(!r.flags.contains(JoinFlags::COMPLETE));
    assert_eq!(r.joined, [0b100]);
    send(&mut s, &join(0, 3, 0, 4, 8), &mut out);
    let v = send(&mut s, &join(1, 3, 4, 4, 8), &mut out);
    let Verdict::Multicast { len, .. } = v else {
        panic!("{v:?}")
    };
    let Ok(Message::JoinReply(r)) = Message::parse(&out[..len]) else {
        panic!()
    };
    assert!(r.flags.contains(JoinFlags::COMPLETE));
    assert_eq!((r.rank, r.joined), (RANK_ALL, &[0b111][..]));
    // A late lane of a joined rank hears COMPLETE at once.
    let v = send(&mut s, &join(1, 3, 0, 4, 8), &mut out);
    let Verdict::Unicast { len, .. } = v else {
        panic!("{v:?}")
    };
    let Ok(Message::JoinReply(r)) = Message::parse(&out[..len]) else {
        panic!()
    };
    assert!(r.flags.contains(JoinFlags::COMPLETE));
}

fn abort_of(out: &[u8], v: Verdict) -> AbortRepr {
    let Verdict::Unicast { len, .. } = v else {
        panic!("{v:?}")
    };
    AbortRepr::parse(&AbortPacket::new_unchecked(&out[..len])).unwrap()
}

#[test]
fn bad_joins_are_refused_with_a_reason() {
    let mut pool = pool();
    let mut s = fresh_switch(&mut pool);
    let mut out = [0u8; OUT];
    let mut unknown = join(0, 3, 0, 8, 8);
    unknown[3] = 9;
    let cases = [
        (unknown, AbortReason::UnknownJob, 0),
        (join(3, 3, 0, 8, 8), AbortReason::UnknownRank, 3),
        (join(0, 4, 0, 8, 8), AbortReason::WorldMismatch, 3),
        (join(0, 3, 4, 5, 8), AbortReason::SlotRange, 8),
        (join(0, 3, 0, 8, 9), AbortReason::CountTooLarge, 8),
        (join(0, 3, 0, 8, 0), AbortReason::CountTooLarge, 8),
        (join(0, 3, 2, 4, 8), AbortReason::SlotRange, 8),
        (join_as(0, 3, 0, 8, 8, 5, KEY ^ 1), AbortReason::BadKey, 0),
    ];
    for (bytes, reason, detail) in cases {
        let v = send(&mut s, &bytes, &mut out);
        let a = abort_of(&out, v);
        let nonce = JoinPacket::new_unchecked(&bytes[..]).nonce();
        assert_eq!(
            (a.reason, a.detail, a.epoch, a.session),
            (reason, detail, 0xE90C, nonce),
            "a refusal names the nonce of the Join it answers"
        );
    }
    let job = s.job(7).unwrap();
    assert!(job.joined().is_empty() && !job.has_run());
    assert_eq!(job.counters().unauthorized, 1);
}

#[test]
fn probes_name_the_ranks_seen() {
    let mut pool = pool();
    let mut s = switch(&mut pool);
    let mut out = [0u8; OUT];
    send(
        &mut s,
        &contribution(0, 5, 6, 0, &[1])[..data_len(1)],
        &mut out,
    );
    send(
        &mut s,
        &contribution(2, 5, 6, 0, &[1])[..data_len(1)],
        &mut out,
    );
    let mut b = probe_for_use_6(crate::wire::ProbeFlags::NONE);
    let v = send(&mut s, &b, &mut out);
    let Verdict::Unicast { rank: 0, len, .. } = v else {
        panic!("{v:?}")
    };
    let Ok(Message::ProbeReply(r)) = Message::parse(&out[..len]) else {
        panic!()
    };
    assert_eq!(
        (r.state, r.remaining, r.seq, r.world),
        (SlotState::Collecting, 1, 6, 3)
    );
    assert_eq!(r.seen, [0b101]);
    ProbeRepr {
        job: 7,
        rank: 0,
        slot: 5,
        ver: 1,
        seq: 7,
        session: SESSION,
        flags: crate::wire::ProbeFlags::NONE,
    }
    .emit(&mut ProbePacket::new_unchecked(&mut b[..]));
    let v = send(&mut s, &b, &mut out);
    let Verdict::Unicast { len, .. } = v else {
        panic!()
    };
    let Ok(Message::ProbeReply(r)) = Message::parse(&out[..len]) else {
        panic!()
    };
    assert_eq!(r.state, SlotState::Idle);
    ProbeRepr {
        job: 7,
        rank: 0,
        slot: 9,
        ver: 1,
        seq: 7,
        session: SESSION,
        flags: crate::wire::ProbeFlags::NONE,
    }
    .emit(&mut ProbePacket::new_unchecked(&mut b[..]));
    let v = send(&mut s, &b, &mut out);
    assert_eq!(abort_of(&out, v).reason, AbortReason::SlotRange);
}

/// A Probe of rank 0 for (slot 5, use 6) of job 7, with `flags`.
fn probe_for_use_6(flags: crate::wire::ProbeFlags) -> [u8; 20] {
    let mut b = [0u8; 20];
    ProbeRepr {
        job: 7,
        rank: 0,
        slot: 5,
        ver: 0,
        seq: 6,
        session: SESSION,
        flags,
    }
    .emit(&mut ProbePacket::new_unchecked(&mut b[..]));
    b
}

#[test]
fn a_probe_asking_for_a_lost_result_gets_it_where_the_switch_offers_it() {
    use crate::wire::ProbeFlags;
    let mut pool = pool();
    let mut s = switch(&mut pool);
    let mut out = [0u8; OUT];
    let asks = probe_for_use_6(ProbeFlags::RESULT);
    // A switch that does not offer PROBE_RESULTS reads the byte as reserved.
    let v = send(&mut s, &asks, &mut out);
    assert_eq!(v, Verdict::Drop(DropReason::Malformed));
    s.set_probe_results(true);
    // Still collecting: the flag changes nothing, the answer is a ProbeReply.
    send(
        &mut s,
        &contribution(0, 5, 6, 0, &[1])[..data_len(1)],
        &mut out,
    );
    let v = send(&mut s, &asks, &mut out);
    let Verdict::Unicast { rank: 0, len, .. } = v else {
        panic!("{v:?}")
    };
    assert!(matches!(
        Message::parse(&out[..len]),
        Ok(Message::ProbeReply(_))
    ));
    for rank in 1..3 {
        send(
            &mut s,
            &contribution(rank, 5, 6, 0, &[2])[..data_len(1)],
            &mut out,
        );
    }
    // Complete: a plain Probe hears so; one that asks gets the stored Result, unicast.
    let v = send(&mut s, &probe_for_use_6(ProbeFlags::NONE), &mut out);
    let Verdict::Unicast { len, .. } = v else {
        panic!("{v:?}")
    };
    let Ok(Message::ProbeReply(r)) = Message::parse(&out[..len]) else {
        panic!()
    };
    assert_eq!(r.state, SlotState::Complete);
    let v = send(&mut s, &asks, &mut out);
    let Verdict::Unicast { rank: 0, len, .. } = v else {
        panic!("{v:?}")
    };
    let Ok(Message::Data(r, values)) = Message::parse(&out[..len]) else {
        panic!()
    };
    assert_eq!((r.kind, r.seq, r.count), (DataKind::Result, 6, 1));
    assert!(r.flags.contains(Flags::RETRANSMIT));
    assert_eq!(values, 5i32.to_be_bytes());
    assert_eq!(s.job(7).unwrap().counters().retransmit_replies, 1);
}

#[test]
fn a_workers_abort_is_passed_on_to_the_job() {
    let mut pool = pool();
    let mut s = switch(&mut pool);
    let mut out = [0u8; OUT];
    let mut b = [0u8; 20];
    let mut a = AbortRepr {
        job: 7,
        rank: 1,
        reason: AbortReason::WorkerFailed,
        detail: 2,
        epoch: 0,
        session: SESSION ^ 1,
    };
    a.emit(&mut AbortPacket::new_unchecked(&mut b[..]));
    assert_eq!(
        send(&mut s, &b, &mut out),
        Verdict::Drop(DropReason::BadSession),
        "an Abort from outside the run is dropped"
    );
    a.session = SESSION;
    a.emit(&mut AbortPacket::new_unchecked(&mut b[..]));
    assert_eq!(
        send(&mut s, &b, &mut out),
        Verdict::Multicast { job: 7, len: 20 }
    );
    assert_eq!(out[..20], b);
    let job = s.job(7).unwrap();
    assert_eq!(job.counters().aborts, 1);
    assert!(!job.has_run(), "the Abort ended the run");
}

#[test]
fn control_plane_validates_jobs() {
    let mut pool = pool();
    let mut s = switch(&mut pool);
    let job = |id, world, slot_lo, slot_count| JobConfig {
        id,
        world,
        slot_lo,
        slot_count,
        key: 0,
    };
    assert_eq!(s.add_job(job(7, 2, 0, 2)), Err(JobError::DuplicateId(7)));
    assert_eq!(s.add_job(job(8, 2, 10, 2)), Err(JobError::Overlap(7)));
    assert_eq!(
        s.add_job(job(8, 0, 0, 2)),
        Err(JobError::World {
            world: 0,
            capacity: 64
        })
    );
    assert_eq!(
        s.add_job(job(8, 65, 0, 2)),
        Err(JobError::World {
            world: 65,
            capacity: 64
        })
    );
    assert_eq!(
        s.add_job(job(8, 2, 14, 3)),
        Err(JobError::SlotRange { pool: 16 })
    );
    assert_eq!(
        s.add_job(job(8, 2, 0, 0)),
        Err(JobError::SlotRange { pool: 16 })
    );
    assert_eq!(s.add_job(job(8, 2, 0, 4)), Ok(()));
    assert_eq!(s.add_job(job(9, 2, 12, 4)), Err(JobError::TableFull(2)));
    assert_eq!(s.jobs().count(), 2);
    assert!(s.remove_job(8).is_ok());
    assert_eq!(s.remove_job(8).err(), Some(JobError::UnknownJob(8)));
    assert_eq!(s.add_job(job(9, 2, 12, 4)), Ok(()));
}

#[test]
fn two_jobs_share_the_pool_without_interference() {
    let mut pool = pool();
    let mut s = switch(&mut pool);
    s.add_job(JobConfig {
        id: 8,
        world: 1,
        slot_lo: 0,
        slot_count: 4,
        key: KEY,
    })
    .unwrap();
    let mut out = [0u8; OUT];
    let mut j = join(0, 1, 0, 4, 8);
    let repr = JoinRepr::parse(&JoinPacket::new_unchecked(&j[..])).unwrap();
    JoinRepr { job: 8, ..repr }
        .sign(KEY)
        .emit(&mut JoinPacket::new_unchecked(&mut j[..]));
    assert!(matches!(
        send(&mut s, &j, &mut out),
        Verdict::Multicast { job: 8, .. }
    ));
    let mut p = contribution(0, 1, 0, 0, &[42]);
    p[3] = 8;
    let v = send(&mut s, &p[..data_len(1)], &mut out);
    assert_eq!(
        v,
        Verdict::Multicast {
            job: 8,
            len: data_len(1)
        }
    );
    assert_eq!(result_of(&out, data_len(1)).1, [42]);
    assert!(!s.slot(7, 1).unwrap().version(0).is_complete());
}

#[test]
fn status_reports_joined_ranks_and_counters() {
    use crate::wire::{StatusFlags, StatusPacket, StatusRepr};
    let mut pool = pool();
    let mut s = fresh_switch(&mut pool);
    let mut out = [0u8; OUT];
    send(&mut s, &join(0, 3, 0, 8, 8), &mut out);
    send(&mut s, &join(2, 3, 0, 8, 8), &mut out);
    send(
        &mut s,
        &contribution(0, 0, 0, 0, &[1])[..data_len(1)],
        &mut out,
    );
    send(&mut s, &[0xEE; 5], &mut out);
    let mut b = [0u8; 36];
    StatusRepr {
        job: 7,
        rank: 0xFFFF,
        nonce: 1,
        cookie: 0,
        tag: [0; 16],
    }
    .sign(KEY)
    .emit(&mut StatusPacket::new_unchecked(&mut b[..]));
    let v = send(&mut s, &b, &mut out);
    let Verdict::Unicast {
        rank: 0xFFFF, len, ..
    } = v
    else {
        panic!("{v:?}")
    };
    let Ok(Message::StatusReply(r)) = Message::parse(&out[..len]) else {
        panic!()
    };
    assert_eq!(
        (r.world, r.slot_count, r.epoch, r.joined),
        (3, 8, 0xE90C, &[0b101][..])
    );
    assert!(!r.flags.contains(StatusFlags::ALL_JOINED));
    assert!(r.flags.contains(StatusFlags::RUN_OPEN));
    assert_eq!((r.counters.joins, r.counters.contributions), (2, 1));
    assert_eq!((r.counters.received, r.counters.dropped), (5, 1));
    assert_eq!(r.counters.runs, 1);
    // Drops the adapter counted itself are reported by class too.
    s.count_drop(DropReason::BadSource);
    let v = send(&mut s, &b, &mut out);
    let Verdict::Unicast { len, .. } = v else {
        panic!("{v:?}")
    };
    let Ok(Message::StatusReply(r)) = Message::parse(&out[..len]) else {
        panic!()
    };
    let class = |d: DropReason| DropReason::ALL.iter().position(|x| *x == d).unwrap();
    assert_eq!(r.counters.drops[class(DropReason::Malformed)], 1);
    assert_eq!(r.counters.drops[class(DropReason::BadSource)], 1);
    assert_eq!(r.counters.dropped, 2);
    // Nothing to a stranger (§3.7, §4.2): a Status of an unknown job, or without the key,
    // is dropped unanswered and counted.
    b[3] = 99;
    let v = send(&mut s, &b, &mut out);
    assert_eq!(v, Verdict::Drop(DropReason::UnknownJob));
    let mut forged = [0u8; 36];
    StatusRepr {
        job: 7,
        rank: 0,
        nonce: 1,
        cookie: 0,
        tag: [0; 16],
    }
    .sign(KEY ^ 1)
    .emit(&mut StatusPacket::new_unchecked(&mut forged[..]));
    let before = s.job(7).unwrap().counters().unauthorized;
    assert_eq!(
        send(&mut s, &forged, &mut out),
        Verdict::Drop(DropReason::BadSession)
    );
    assert_eq!(s.job(7).unwrap().counters().unauthorized, before + 1);
}

#[test]
fn a_hundred_ranks_fit_in_two_bitmap_words() {
    // The original is stuck at 32 workers; WORDS = 2 gives 128.
    let mut pool = [Slot::<8, 2>::IDLE; 2];
    let mut s: Switch<'_, 8, 2, 1> = Switch::new(&mut pool, 1);
    s.add_job(JobConfig {
        id: 7,
        world: 100,
        slot_lo: 0,
        slot_count: 2,
        key: KEY,
    })
    .unwrap();
    let mut out = [0u8; Switch::<8, 2, 1>::OUT_LEN];
    for r in 0..100 {
        let v = send_wide(
            &mut s,
            &join_as(r, 100, 0, 2, 8, 100 + u32::from(r), KEY),
            &mut out,
        );
        assert!(!matches!(v, Verdict::Drop(_)));
    }
    let n = data_len(1);
    for r in 0..99 {
        let v = send_wide(&mut s, &contribution(r, 1, 0, 0, &[1])[..n], &mut out);
        assert_eq!(v, Verdict::Consumed, "rank {r}");
    }
    let v = send_wide(&mut s, &contribution(99, 1, 0, 0, &[1])[..n], &mut out);
    assert_eq!(v, Verdict::Multicast { job: 7, len: n });
    assert_eq!(result_of(&out, n).1, [100]);
    assert_eq!(s.slot(7, 1).unwrap().version(0).seen().len(), 100);
}

fn send_wide(s: &mut Switch<'_, 8, 2, 1>, bytes: &[u8], out: &mut [u8]) -> Verdict {
    s.process(bytes, out)
}

#[test]
fn a_congestion_mark_reaches_every_rank_from_a_contribution_or_the_switch() {
    let mut pool = pool();
    let mut s = switch(&mut pool);
    let mut out = [0u8; OUT];
    let n = data_len(1);
    // One rank's mark is ORed into the multicast Result (protocol.md §6.3).
    send(
        &mut s,
        &flagged(0, 0, &[1], Flags::default())[..n],
        &mut out,
    );
    send(
        &mut s,
        &flagged(1, 0, &[2], Flags::CONGESTED)[..n],
        &mut out,
    );
    send(
        &mut s,
        &flagged(2, 0, &[4], Flags::default())[..n],
        &mut out,
    );
    assert_eq!(result_of(&out, n).0.flags, Flags::CONGESTED);
    // A switch told its queues are deep marks the uses it counts, whatever the ranks say.
    s.set_congested(true);
    for rank in 0..3 {
        send(
            &mut s,
            &flagged(rank, 2, &[1], Flags::default())[..n],
            &mut out,
        );
    }
    assert_eq!(result_of(&out, n).0.flags, Flags::CONGESTED);
    // And stops when told the queues drained.
    s.set_congested(false);
    for rank in 0..3 {
        send(
            &mut s,
            &flagged(rank, 4, &[1], Flags::default())[..n],
            &mut out,
        );
    }
    assert_eq!(result_of(&out, n).0.flags, Flags::default());
}
