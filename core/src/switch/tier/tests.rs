//! Scenario tests of two levels. Topology for all of them:
//!
//! ```text
//!   rank 0 ──┐
//!   rank 1 ──┴── child A (job 7: ranks 0‥1 of 4) ──member 0──┐
//!   rank 2 ──┐                                                ├── parent (job 9: 2 members)
//!   rank 3 ──┴── child B (job 7: ranks 2‥3 of 4) ──member 1──┘
//! ```
//!
//! `Tree::joined` returns the tree with every run open and complete; a worker's nonce is
//! `100 + rank` at A and `200 + rank` at B, so A's run is 100 and B's 202, and the parent's
//! is A's (its Join came first).

use super::super::*;
use crate::wire::{
    AbortPacket, AbortRepr, JoinFlags, JoinPacket, JoinReplyPacket, JoinReplyRepr, JoinRepr,
    ProbePacket, ProbeReplyPacket, ProbeReplyRepr, ProbeRepr,
};

pub(crate) type S<'a> = Switch<'a, 8, 1, 2>;
pub(crate) const OUT: usize = S::OUT_LEN;
pub(crate) const KEY: u64 = 0x5EC2E7;
pub(crate) const PARENT_KEY: u64 = 0x9A7E27;

/// Child `member`'s link: ranks `2·member ‥` of 4, parent job 9 of 2 members.
pub(crate) fn link(member: u16) -> ParentLink {
    ParentLink {
        world: 4,
        rank_lo: 2 * member,
        job: 9,
        member,
        members: 2,
        key: PARENT_KEY,
    }
}

/// Job `id` of `world` ranks on slots 0‥4.
pub(crate) fn config(id: u16, world: u16, key: u64) -> JobConfig {
    JobConfig {
        id,
        world,
        slot_lo: 0,
        slot_count: 4,
        key,
    }
}

pub(crate) fn join(rank: u16) -> [u8; 44] {
    let mut b = [0u8; 44];
    JoinRepr {
        job: 7,
        rank,
        world: 4,
        slot_lo: 0,
        slot_count: 4,
        count: 2,
        lanes: 1,
        nonce: if rank < 2 { 100 } else { 200 } + u32::from(rank),
        cookie: 0,
        tag: [0; 16],
    }
    .sign(KEY)
    .emit(&mut JoinPacket::new_unchecked(&mut b[..]));
    b
}

pub(crate) fn session(rank: u16) -> u32 {
    if rank < 2 {
        100
    } else {
        202
    }
}

fn contribution(rank: u16, seq: u32, exp: u8, values: &[i32], flags: Flags) -> [u8; 32] {
    let repr = DataRepr {
        kind: DataKind::Contribution,
        job: 7,
        rank,
        slot: 1,
        ver: (seq & 1) as u8,
        flags,
        count: values.len() as u16,
        seq,
        exp,
        session: session(rank),
    };
    let mut buf = [0u8; 32];
    let mut p = DataPacket::new_unchecked(&mut buf[..repr.buffer_len()]);
    repr.emit(&mut p);
    pool::store(values, p.values_mut());
    buf
}

fn data(out: &[u8]) -> (DataRepr, [i32; 2]) {
    let p = DataPacket::new_checked(out).unwrap();
    let r = DataRepr::parse(&p).unwrap();
    let mut v = [0; 2];
    pool::load(&mut v, p.values());
    (r, v)
}

pub(crate) struct Tree<'a> {
    pub(crate) parent: S<'a>,
    pub(crate) children: [S<'a>; 2],
}

/// Pools for a tree: the parent's and each child's.
pub(crate) type Pools = [[Slot<8, 1>; 4]; 3];

impl<'a> Tree<'a> {
    pub(crate) fn new(pools: &'a mut Pools) -> Tree<'a> {
        let [p, a, b] = pools;
        let mut parent = Switch::new(p, 1);
        parent
            .add_tiered_job(config(9, 2, PARENT_KEY), Tier::Parent)
            .unwrap();
        let mut children = [Switch::new(a, 2), Switch::new(b, 3)];
        for (i, c) in children.iter_mut().enumerate() {
            let tier = Tier::Child(link(i as u16));
            c.add_tiered_job(config(7, 2, KEY), tier).unwrap();
        }
        Tree { parent, children }
    }

    /// Every worker joins; the third Join of each child goes up.
    pub(crate) fn joined(pools: &'a mut Pools) -> Tree<'a> {
        let mut t = Tree::new(pools);
        let mut out = [0u8; OUT];
        let mut up = [0u8; OUT];
        for c in 0..2 {
            let (r0, r1) = (2 * c as u16, 2 * c as u16 + 1);
            for rank in [r0, r1] {
                let v = t.children[c].process(&join(rank), &mut out);
                assert!(matches!(v, Verdict::Unicast { .. }), "{v:?}");
            }
            let Verdict::Up { job: 9, len } = t.children[c].process(&join(r0), &mut up) else {
                panic!("a Join of a complete child run goes up");
            };
            let v = t.parent.process(&up[..len], &mut out);
            let (Verdict::Unicast { len, .. } | Verdict::Multicast { len, .. }) = v else {
                panic!("{v:?}");
            };
            let reply = out;
            for child in 0..=c {
                let v = t.children[child].process(&reply[..len], &mut up);
                if c == 1 {
                    let Verdict::Multicast { job: 7, len } = v else {
                        panic!("{v:?}");
                    };
                    let r = JoinReplyPacket::new_unchecked(&up[..len]);
                    let r = JoinReplyRepr::parse(&r).unwrap();
                    assert!(r.flags.contains(JoinFlags::COMPLETE));
                    assert_eq!((r.world, r.session), (4, session(2 * child as u16)));
                } else {
                    assert_eq!(v, Verdict::Consumed);
                }
            }
        }
        t
    }

    /// Send `bytes` to child `c`; return what it sends up (its length) or its verdict.
    pub(crate) fn send(&mut self, c: usize, bytes: &[u8], out: &mut [u8]) -> Verdict {
        self.children[c].process(bytes, out)
    }
}

#[test]
fn a_childs_ranks_hear_complete_only_once_the_parents_run_is() {
    let mut pools = [[Slot::IDLE; 4], [Slot::IDLE; 4], [Slot::IDLE; 4]];
    let mut t = Tree::new(&mut pools);
    let mut out = [0u8; OUT];
    // Rank 0 joins child A: the reply states the whole job's world and global bitmap.
    let Verdict::Unicast { rank: 0, len, .. } = t.send(0, &join(0), &mut out) else {
        panic!();
    };
    let r = JoinReplyRepr::parse(&JoinReplyPacket::new_unchecked(&out[..len])).unwrap();
    assert_eq!((r.world, r.joined, r.session), (4, &[0b0001][..], 100));
    // Ranks of the other child are not A's.
    let v = t.send(0, &join(2), &mut out);
    let a = AbortRepr::parse(&AbortPacket::new_unchecked(&out[..20])).unwrap();
    assert!(matches!(v, Verdict::Unicast { .. }));
    assert_eq!((a.reason, a.detail), (AbortReason::UnknownRank, 4));
    // Rank 1 completes A's run, but not the job's: no COMPLETE.
    let Verdict::Unicast { len, .. } = t.send(0, &join(1), &mut out) else {
        panic!();
    };
    let r = JoinReplyRepr::parse(&JoinReplyPacket::new_unchecked(&out[..len])).unwrap();
    assert!(!r.flags.contains(JoinFlags::COMPLETE));
    // Child B's bitmap puts its members at their global ranks.
    let Verdict::Unicast { len, .. } = t.send(1, &join(3), &mut out) else {
        panic!();
    };
    let r = JoinReplyRepr::parse(&JoinReplyPacket::new_unchecked(&out[..len])).unwrap();
    assert_eq!(r.joined, &[0b1000]);
    let t = Tree::joined(&mut pools);
    assert!(t
        .children
        .iter()
        .all(|c| c.job(7).unwrap().run.parent == 100));
    assert_eq!(t.parent.job(9).unwrap().session(), 100);
    assert!(t.parent.job(9).unwrap().all_joined());
}

#[test]
fn a_lost_complete_is_recovered_by_a_workers_join() {
    let mut pools = [[Slot::IDLE; 4], [Slot::IDLE; 4], [Slot::IDLE; 4]];
    let mut t = Tree::joined(&mut pools);
    let mut out = [0u8; OUT];
    // A worker of A that missed the multicast COMPLETE joins again: COMPLETE, unicast.
    let Verdict::Unicast { rank: 1, len, .. } = t.send(0, &join(1), &mut out) else {
        panic!();
    };
    let r = JoinReplyRepr::parse(&JoinReplyPacket::new_unchecked(&out[..len])).unwrap();
    assert!(r.flags.contains(JoinFlags::COMPLETE));
    assert_eq!(r.joined, &[0b0011]);
    // A JoinReply naming neither this child's nonce nor, COMPLETE, its parent's session.
    let mut stray = [0u8; OUT];
    let repr = JoinReplyRepr {
        job: 9,
        session: 55,
        nonce: 55,
        ..r
    };
    let stray_len = repr.buffer_len();
    repr.emit(&mut JoinReplyPacket::new_unchecked(&mut stray[..stray_len]));
    let v = t.send(0, &stray[..stray_len], &mut out);
    assert_eq!(v, Verdict::Drop(DropReason::BadSession));
    // To a switch with no child job, a JoinReply is still unexpected.
    let v = t.parent.process(&stray[..stray_len], &mut out);
    assert_eq!(v, Verdict::Drop(DropReason::UnexpectedType));
}

/// Contribute `[a, b]`-style values: rank r gives `[r + 1, 10 * (r + 1)]`, exp `120 + r`.
fn give(t: &mut Tree<'_>, rank: u16, seq: u32, out: &mut [u8]) -> Verdict {
    let r = i32::from(rank) + 1;
    let c = usize::from(rank / 2);
    t.send(
        c,
        &contribution(rank, seq, 120 + rank as u8, &[r, 10 * r], Flags::default()),
        out,
    )
}

#[test]
fn a_use_completes_through_the_parent_with_the_global_sum_and_exponent() {
    let mut pools = [[Slot::IDLE; 4], [Slot::IDLE; 4], [Slot::IDLE; 4]];
    let mut t = Tree::joined(&mut pools);
    let mut out = [0u8; OUT];
    let mut down = [0u8; OUT];
    assert_eq!(give(&mut t, 0, 0, &mut out), Verdict::Consumed);
    // A's partial sum goes up as member 0 of job 9, in the parent's run.
    let Verdict::Up { job: 9, len } = give(&mut t, 1, 0, &mut out) else {
        panic!();
    };
    let (up, v) = data(&out[..len]);
    assert_eq!(
        (up.kind, up.job, up.rank, up.session),
        (DataKind::Contribution, 9, 0, 100)
    );
    assert_eq!((up.slot, up.seq, up.exp, v), (1, 0, 121, [3, 30]));
    assert_eq!(t.parent.process(&out[..len], &mut down), Verdict::Consumed);
    give(&mut t, 2, 0, &mut out);
    let Verdict::Up { len, .. } = give(&mut t, 3, 0, &mut out) else {
        panic!();
    };
    let Verdict::Multicast { job: 9, len } = t.parent.process(&out[..len], &mut down) else {
        panic!();
    };
    // Each child keeps the parent's Result and multicasts it in its own run.
    for c in 0..2 {
        let Verdict::Multicast { job: 7, len } = t.send(c, &down[..len], &mut out) else {
            panic!();
        };
        let (r, v) = data(&out[..len]);
        assert_eq!(
            (r.kind, r.rank, r.session),
            (DataKind::Result, RANK_ALL, session(2 * c as u16))
        );
        assert_eq!((r.exp, v, r.flags), (123, [10, 100], Flags::default()));
        // The same Result again (a duplicate in the network) is not sent down twice.
        let v = t.send(c, &down[..len], &mut out);
        assert_eq!(v, Verdict::Drop(DropReason::Duplicate));
    }
    // A worker's resend now gets the final sum from its child, unicast.
    let resend = contribution(1, 0, 121, &[2, 20], Flags::RETRANSMIT);
    let Verdict::Unicast { rank: 1, len, .. } = t.send(0, &resend, &mut out) else {
        panic!();
    };
    assert_eq!(data(&out[..len]).1, [10, 100]);
    assert_eq!(
        t.children[0].slot(7, 1).unwrap().version(0).values(),
        [10, 100]
    );
}

#[test]
fn a_lost_partial_sum_or_result_is_sent_again_on_a_workers_resend() {
    let mut pools = [[Slot::IDLE; 4], [Slot::IDLE; 4], [Slot::IDLE; 4]];
    let mut t = Tree::joined(&mut pools);
    let mut out = [0u8; OUT];
    let mut down = [0u8; OUT];
    for rank in 0..4 {
        give(&mut t, rank, 0, &mut out); // A's and B's sums up: both lost.
    }
    // Rank 0 resends: A sends its stored partial sum again, marked as a resend.
    let resend = contribution(0, 0, 120, &[1, 10], Flags::RETRANSMIT);
    let Verdict::Up { len, .. } = t.send(0, &resend, &mut out) else {
        panic!();
    };
    let (up, v) = data(&out[..len]);
    assert_eq!((up.flags, v), (Flags::RETRANSMIT, [3, 30]));
    t.parent.process(&out[..len], &mut down);
    // A second copy is a duplicate at the parent, never counted twice.
    let v = t.parent.process(&out[..len], &mut down);
    assert_eq!(v, Verdict::Drop(DropReason::Duplicate));
    let resend = contribution(3, 0, 123, &[4, 40], Flags::RETRANSMIT);
    let Verdict::Up { len, .. } = t.send(1, &resend, &mut out) else {
        panic!();
    };
    let Verdict::Multicast { len, .. } = t.parent.process(&out[..len], &mut down) else {
        panic!();
    };
    // The multicast is lost on the way to A. Of A's two ranks' next resends, one goes up
    // (one in n: both wait on the use); the parent answers its member with the stored
    // Result, A sends it down.
    let _lost = &down[..len];
    let resend = contribution(1, 0, 121, &[2, 20], Flags::RETRANSMIT);
    assert_eq!(t.send(0, &resend, &mut out), Verdict::Consumed);
    let resend = contribution(0, 0, 120, &[1, 10], Flags::RETRANSMIT);
    let Verdict::Up { len, .. } = t.send(0, &resend, &mut out) else {
        panic!();
    };
    let Verdict::Unicast {
        job: 9,
        rank: 0,
        len,
    } = t.parent.process(&out[..len], &mut down)
    else {
        panic!();
    };
    let Verdict::Multicast { job: 7, len } = t.send(0, &down[..len], &mut out) else {
        panic!();
    };
    assert_eq!(data(&out[..len]).1, [10, 100]);
    let c = t.parent.job(9).unwrap().counters();
    assert_eq!((c.contributions, c.duplicates, c.completions), (2, 1, 1));
}

#[test]
fn a_childs_overflow_reaches_every_rank() {
    let mut pools = [[Slot::IDLE; 4], [Slot::IDLE; 4], [Slot::IDLE; 4]];
    let mut t = Tree::joined(&mut pools);
    let mut out = [0u8; OUT];
    let mut down = [0u8; OUT];
    let flags = Flags::default();
    t.send(0, &contribution(0, 0, 0, &[i32::MAX, 0], flags), &mut out);
    let Verdict::Up { len, .. } = t.send(0, &contribution(1, 0, 0, &[1, 0], flags), &mut out)
    else {
        panic!();
    };
    assert!(data(&out[..len]).0.flags.contains(Flags::OVERFLOW));
    t.parent.process(&out[..len], &mut down);
    t.send(1, &contribution(2, 0, 0, &[0, 0], flags), &mut out);
    let Verdict::Up { len, .. } = t.send(1, &contribution(3, 0, 0, &[0, 0], flags), &mut out)
    else {
        panic!();
    };
    assert!(!data(&out[..len]).0.flags.contains(Flags::OVERFLOW));
    let Verdict::Multicast { len, .. } = t.parent.process(&out[..len], &mut down) else {
        panic!();
    };
    let Verdict::Multicast { len, .. } = t.send(1, &down[..len], &mut out) else {
        panic!();
    };
    assert!(
        data(&out[..len]).0.flags.contains(Flags::OVERFLOW),
        "B's ranks are told"
    );
}

#[test]
fn a_ranks_non_finite_kinds_reach_every_rank_through_the_parent() {
    let mut pools = [[Slot::IDLE; 4], [Slot::IDLE; 4], [Slot::IDLE; 4]];
    let mut t = Tree::joined(&mut pools);
    let mut out = [0u8; OUT];
    let mut down = [0u8; OUT];
    let none = Flags::default();
    t.send(0, &contribution(0, 0, 0, &[1, 0], Flags::NAN), &mut out);
    let Verdict::Up { len, .. } = t.send(0, &contribution(1, 0, 0, &[1, 0], none), &mut out) else {
        panic!();
    };
    assert_eq!(
        data(&out[..len]).0.flags,
        Flags::NAN,
        "the child sends its OR up"
    );
    t.parent.process(&out[..len], &mut down);
    t.send(1, &contribution(2, 0, 0, &[0, 0], none), &mut out);
    let Verdict::Up { len, .. } =
        t.send(1, &contribution(3, 0, 0, &[0, 0], Flags::POS_INF), &mut out)
    else {
        panic!();
    };
    let Verdict::Multicast { len, .. } = t.parent.process(&out[..len], &mut down) else {
        panic!();
    };
    assert_eq!(data(&down[..len]).0.flags, Flags::NAN.with(Flags::POS_INF));
    let Verdict::Multicast { len, .. } = t.send(1, &down[..len], &mut out) else {
        panic!();
    };
    assert_eq!(
        data(&out[..len]).0.flags,
        Flags::NAN.with(Flags::POS_INF),
        "B's ranks are told of A's NaN"
    );
}

#[test]
fn results_a_child_did_not_ask_for_change_nothing() {
    let mut pools = [[Slot::IDLE; 4], [Slot::IDLE; 4], [Slot::IDLE; 4]];
    let mut t = Tree::joined(&mut pools);
    let mut out = [0u8; OUT];
    give(&mut t, 0, 0, &mut out);
    let result = |session: u32, rank: u16, seq: u32| {
        let repr = DataRepr {
            kind: DataKind::Result,
            job: 9,
            rank,
            slot: 1,
            ver: (seq & 1) as u8,
            flags: Flags::default(),
            count: 2,
            seq,
            exp: 1,
            session,
        };
        let mut b = [0u8; 32];
        repr.emit(&mut DataPacket::new_unchecked(&mut b[..]));
        b
    };
    let cases = [
        (result(7, 0, 0), DropReason::BadSession),
        (result(100, 1, 0), DropReason::UnknownRank),
        (result(100, 0, 0), DropReason::Stale), // A's use is not complete
        (result(100, RANK_ALL, 2), DropReason::Stale),
    ];
    for (bytes, reason) in cases {
        assert_eq!(t.send(0, &bytes, &mut out), Verdict::Drop(reason));
    }
    let v = t.children[0].slot(7, 1).unwrap().version(0);
    assert_eq!(
        (v.remaining(), v.values(), v.relayed()),
        (1, &[1, 10][..], false)
    );
    // A flat switch still refuses Results.
    assert_eq!(
        t.parent.process(&result(100, 0, 0), &mut out),
        Verdict::Drop(DropReason::UnexpectedType)
    );
}

#[test]
fn a_child_probe_names_its_members_at_their_global_ranks() {
    let mut pools = [[Slot::IDLE; 4], [Slot::IDLE; 4], [Slot::IDLE; 4]];
    let mut t = Tree::joined(&mut pools);
    let mut out = [0u8; OUT];
    give(&mut t, 3, 0, &mut out);
    let mut probe = [0u8; 20];
    ProbeRepr {
        job: 7,
        rank: 2,
        slot: 1,
        ver: 0,
        seq: 0,
        session: 202,
        flags: crate::wire::ProbeFlags::NONE,
    }
    .emit(&mut ProbePacket::new_unchecked(&mut probe[..]));
    let Verdict::Unicast { len, .. } = t.send(1, &probe, &mut out) else {
        panic!();
    };
    let r = ProbeReplyRepr::parse(&ProbeReplyPacket::new_unchecked(&out[..len])).unwrap();
    assert_eq!((r.world, r.remaining, r.seen), (4, 1, &[0b1000][..]));
}

#[test]
fn a_thousand_ranks_in_children_of_32() {
    let mut pool = [Slot::<8, 1>::IDLE; 4];
    let mut s: S<'_> = Switch::new(&mut pool, 1);
    let child = |rank_lo, member| {
        Tier::Child(ParentLink {
            world: 1024,
            rank_lo,
            job: 9,
            member,
            members: 32,
            key: 0,
        })
    };
    assert_eq!(s.add_tiered_job(config(7, 32, 0), child(992, 31)), Ok(()));
    let mut out = [0u8; OUT];
    let mut j = join(0);
    let repr = JoinRepr::parse(&JoinPacket::new_unchecked(&j[..])).unwrap();
    let repr = JoinRepr {
        rank: 1023,
        world: 1024,
        cookie: 0,
        tag: [0; 16],
        ..repr
    }
    .sign(0);
    repr.emit(&mut JoinPacket::new_unchecked(&mut j[..]));
    let Verdict::Unicast { len, .. } = s.process(&j, &mut out) else {
        panic!();
    };
    let r = JoinReplyRepr::parse(&JoinReplyPacket::new_unchecked(&out[..len])).unwrap();
    assert_eq!((r.world, r.joined.len(), r.joined[127]), (1024, 128, 0x80));
    s.remove_job(7).unwrap();
    for bad in [child(1000, 31), child(992, 32)] {
        assert_eq!(s.add_tiered_job(config(7, 32, 0), bad), Err(JobError::Tree));
    }
}

#[test]
fn a_probe_asking_for_a_result_the_parent_has_not_sent_asks_the_parent() {
    let mut pools = [[Slot::IDLE; 4], [Slot::IDLE; 4], [Slot::IDLE; 4]];
    let mut t = Tree::joined(&mut pools);
    t.children[0].set_probe_results(true);
    let mut out = [0u8; OUT];
    let mut down = [0u8; OUT];
    give(&mut t, 0, 0, &mut out);
    let _lost = give(&mut t, 1, 0, &mut out); // A's sum goes up and is lost.
    let asks = |rank: u16| {
        let mut b = [0u8; 20];
        ProbeRepr {
            job: 7,
            rank,
            slot: 1,
            ver: 0,
            seq: 0,
            session: 100,
            flags: crate::wire::ProbeFlags::RESULT,
        }
        .emit(&mut ProbePacket::new_unchecked(&mut b[..]));
        b
    };
    // Both ranks of A ask for the Result: one in n sends the partial sum up again, and
    // nothing comes down until the parent answers (its Result answers them all).
    let Verdict::Up { len, .. } = t.send(0, &asks(0), &mut out) else {
        panic!();
    };
    let (up, v) = data(&out[..len]);
    assert_eq!((up.flags, v), (Flags::RETRANSMIT, [3, 30]));
    assert_eq!(t.parent.process(&out[..len], &mut down), Verdict::Consumed);
    assert_eq!(t.send(0, &asks(1), &mut out), Verdict::Consumed);
    // B completes the parent's use; A relays the Result down; a later ask gets it.
    give(&mut t, 2, 0, &mut out);
    let Verdict::Up { len, .. } = give(&mut t, 3, 0, &mut out) else {
        panic!();
    };
    let Verdict::Multicast { len, .. } = t.parent.process(&out[..len], &mut down) else {
        panic!();
    };
    let result = down;
    let Verdict::Multicast { job: 7, .. } = t.send(0, &result[..len], &mut out) else {
        panic!();
    };
    let Verdict::Unicast { rank: 1, len, .. } = t.send(0, &asks(1), &mut out) else {
        panic!();
    };
    assert_eq!(data(&out[..len]).1, [10, 100]);
}

#[test]
fn one_id_names_one_job_at_either_level() {
    // A parent's Abort names the parent's job: at a switch where that id is also a job's,
    // or another child's parent's, it would be taken for theirs.
    let mut pool = [Slot::<8, 1>::IDLE; 4];
    let mut s: S<'_> = Switch::new(&mut pool, 1);
    let job = |id, slot_lo| JobConfig {
        slot_lo,
        slot_count: 1,
        ..config(id, 2, KEY)
    };
    s.add_job(job(9, 0)).unwrap();
    let taken = Err(JobError::ParentIdTaken(9));
    assert_eq!(s.add_tiered_job(job(7, 1), Tier::Child(link(0))), taken);
    s.remove_job(9).unwrap();
    s.add_tiered_job(job(7, 1), Tier::Child(link(0))).unwrap();
    assert_eq!(s.add_job(job(9, 0)), taken);
    assert_eq!(s.add_tiered_job(job(8, 2), Tier::Child(link(1))), taken);
    let own = ParentLink { job: 6, ..link(0) };
    let e = s.add_tiered_job(job(6, 3), Tier::Child(own));
    assert_eq!(e, Err(JobError::ParentIdTaken(6)));
}
