//! Endpoints of two levels, wired by a tiny in-order network. Addresses are numbers:
//!
//! ```text
//!   rank 0 (10) ──┐
//!   rank 1 (11) ──┴── child A (50: job 7, ranks 0‥1 of 4) ──member 0──┐
//!   rank 2 (12) ──┐                                                   ├── parent (100: job 9)
//!   rank 3 (13) ──┴── child B (51: job 7, ranks 2‥3 of 4) ──member 1──┘
//! ```

extern crate std;

use std::collections::VecDeque;
use std::vec::Vec;

use super::*;
use crate::switch::tier::abort::tests::abort;
use crate::switch::tier::tests::{config, link, KEY, PARENT_KEY};
use crate::switch::{Slot, Switch};
use crate::wire::{
    AbortReason, DataKind, DataRepr, Flags, JoinFlags, JoinReplyRepr, JoinRepr, RANK_ALL,
};

type Sw<'a> = Switch<'a, 8, 1, 2>;
type Ep<'a> = Endpoint<u32, [Route<u32>; 4], Sw<'a>, 2>;
const OUT: usize = Sw::OUT_LEN;
const PARENT: u32 = 100;
const CHILDREN: [u32; 2] = [50, 51];

fn join(rank: u16) -> Vec<u8> {
    let mut b = std::vec![0u8; 44];
    JoinRepr {
        job: 7,
        rank,
        world: 4,
        slot_lo: 0,
        slot_count: 4,
        count: 1,
        lanes: 1,
        nonce: 100 + u32::from(rank),
        cookie: 0,
        tag: [0; 16],
    }
    .sign(KEY)
    .emit(&mut JoinPacket::new_unchecked(&mut b[..]));
    b
}

fn contribution(rank: u16, session: u32, value: i32) -> Vec<u8> {
    let mut b = std::vec![0u8; 28];
    let mut p = DataPacket::new_unchecked(&mut b[..]);
    DataRepr {
        kind: DataKind::Contribution,
        job: 7,
        rank,
        slot: 1,
        ver: 0,
        flags: Flags::default(),
        count: 1,
        seq: 0,
        exp: 0,
        session,
    }
    .emit(&mut p);
    p.values_mut().copy_from_slice(&value.to_be_bytes());
    b
}

/// The tree, and what reached each worker address.
struct Net<'a> {
    parent: Ep<'a>,
    children: [Ep<'a>; 2],
    /// `(from, to, bytes)` not yet delivered.
    wire: VecDeque<(u32, u32, Vec<u8>)>,
    /// What each worker (10 + rank) received.
    inbox: [Vec<Vec<u8>>; 4],
}

impl Net<'_> {
    fn send(&mut self, from: u32, to: u32, bytes: Vec<u8>) {
        self.wire.push_back((from, to, bytes));
    }

    /// Deliver everything, and what it causes.
    fn run(&mut self) {
        let mut out = [0u8; OUT];
        while let Some((from, to, bytes)) = self.wire.pop_front() {
            if (10..14).contains(&to) {
                self.inbox[(to - 10) as usize].push(bytes);
                continue;
            }
            let e = match to {
                PARENT => &mut self.parent,
                _ => &mut self.children[(to - CHILDREN[0]) as usize],
            };
            let t = e.handle_admitted(Instant::from_millis(0), from, &bytes, &mut out);
            let (Transmit::Reply { len } | Transmit::Lanes { len, .. }) = t else {
                continue;
            };
            let dests: Vec<u32> = e.destinations(&t, &from).copied().collect();
            for d in dests {
                self.wire.push_back((to, d, out[..len].to_vec()));
            }
            // A child's run that ended tells the parent too.
            if let Some(t @ Transmit::Lanes { len, .. }) = e.poll_transmit(&mut out) {
                let dests: Vec<u32> = e.destinations(&t, &from).copied().collect();
                for d in dests {
                    self.wire.push_back((to, d, out[..len].to_vec()));
                }
            }
        }
    }
}

fn session_of_complete(inbox: &[Vec<u8>]) -> Option<u32> {
    inbox.iter().find_map(|b| {
        let r = JoinReplyRepr::parse(&JoinReplyPacket::new_checked(&b[..]).ok()?).ok()?;
        r.flags.contains(JoinFlags::COMPLETE).then_some(r.session)
    })
}

type Pools = [[Slot<8, 1>; 4]; 3];

impl<'a> Net<'a> {
    /// The tree over `pools` (the parent's, then each child's), every rank joined; return
    /// it and each rank's session.
    fn joined(pools: &'a mut Pools) -> (Net<'a>, Vec<u32>) {
        let [pp, p0, p1] = pools;
        let mut parent: Ep<'_> = Endpoint::new(Switch::new(pp, 1), Duration::from_secs(60));
        parent
            .add_parent_job(config(9, 2, PARENT_KEY), [None; 4])
            .unwrap();
        let child = |pool, member: u16| {
            let mut e: Ep<'_> = Endpoint::new(Switch::new(pool, 2), Duration::from_secs(60));
            e.add_child_job(config(7, 2, KEY), link(member), PARENT, [None; 4])
                .unwrap();
            e
        };
        let children = [child(p0, 0), child(p1, 1)];
        assert_eq!(children[1].parent_of(7), Some(PARENT));
        let mut net = Net {
            parent,
            children,
            wire: VecDeque::new(),
            inbox: Default::default(),
        };
        // Every rank joins its child, twice (workers resend until COMPLETE): the second
        // round finds each child complete, which joins the parent.
        for _ in 0..2 {
            for rank in 0..4u16 {
                let child = CHILDREN[usize::from(rank / 2)];
                net.send(10 + u32::from(rank), child, join(rank));
            }
            net.run();
        }
        let sessions: Vec<u32> = net
            .inbox
            .iter()
            .map(|i| session_of_complete(i).expect("every rank hears COMPLETE"))
            .collect();
        (net, sessions)
    }
}

#[test]
fn a_sum_goes_up_through_the_children_and_comes_down_to_every_rank() {
    let mut pools = [[Slot::IDLE; 4], [Slot::IDLE; 4], [Slot::IDLE; 4]];
    let (mut net, sessions) = Net::joined(&mut pools);
    // The parent's JoinReply taught the children nothing: their lanes are the workers'.
    for (c, e) in net.children.iter().enumerate() {
        let lanes: Vec<u32> = e
            .routes
            .iter()
            .flatten()
            .flat_map(|r| r.storage.iter().flatten().map(|(a, _)| *a))
            .collect();
        assert_eq!(lanes, [10 + 2 * c as u32, 11 + 2 * c as u32]);
    }
    for rank in 0..4u16 {
        let child = CHILDREN[usize::from(rank / 2)];
        let session = sessions[usize::from(rank)];
        net.send(
            10 + u32::from(rank),
            child,
            contribution(rank, session, 1 << rank),
        );
    }
    net.run();
    for (rank, inbox) in net.inbox.iter().enumerate() {
        let result = inbox
            .iter()
            .filter_map(|b| DataPacket::new_checked(&b[..]).ok())
            .find(|p| p.msg_type() == MessageType::Result)
            .unwrap_or_else(|| panic!("rank {rank} got no Result"));
        assert_eq!(result.values(), 15i32.to_be_bytes(), "rank {rank}");
        assert_eq!(result.rank(), RANK_ALL);
    }
    assert_eq!(
        net.parent.switch().job(9).unwrap().counters().completions,
        1
    );
}

#[test]
fn a_rank_that_gives_up_under_one_child_fails_the_ranks_under_the_other() {
    let mut pools = [[Slot::IDLE; 4], [Slot::IDLE; 4], [Slot::IDLE; 4]];
    let (mut net, sessions) = Net::joined(&mut pools);
    for inbox in &mut net.inbox {
        inbox.clear();
    }
    // A stranger's Abort of the parent's job does not reach child B's switch.
    let forged = abort(9, RANK_ALL, AbortReason::Shutdown, 0, sessions[0]);
    net.send(99, CHILDREN[1], forged.to_vec());
    net.run();
    assert!(net.children[1].switch().job(7).unwrap().has_run());
    // Rank 1 (child A) gives up waiting for rank 3.
    let gave_up = abort(7, 1, AbortReason::WorkerFailed, 3, sessions[1]);
    net.send(11, CHILDREN[0], gave_up.to_vec());
    net.run();
    let aborts = |inbox: &[Vec<u8>]| -> Vec<AbortRepr> {
        inbox
            .iter()
            .filter_map(|b| AbortRepr::parse(&AbortPacket::new_checked(&b[..]).ok()?).ok())
            .collect()
    };
    assert_eq!(aborts(&net.inbox[0]), [parse_abort(&gave_up)]);
    for rank in [2, 3] {
        let got = aborts(&net.inbox[rank]);
        assert_eq!(got.len(), 1, "rank {rank}: {got:?}");
        assert_eq!(
            (got[0].reason, got[0].detail, got[0].session),
            (AbortReason::ParentFailed, 0, sessions[rank])
        );
    }
    for e in [&net.parent, &net.children[0], &net.children[1]] {
        assert!(e.switch().jobs().all(|j| !j.has_run()));
    }
}

fn parse_abort(b: &[u8]) -> AbortRepr {
    AbortRepr::parse(&AbortPacket::new_checked(b).unwrap()).unwrap()
}

#[test]
fn nothing_but_the_parent_speaks_for_it_and_the_parent_is_no_worker() {
    let mut pool = [Slot::IDLE; 4];
    let mut e: Ep<'_> = Endpoint::new(Switch::new(&mut pool, 2), Duration::from_secs(60));
    e.add_child_job(config(7, 2, KEY), link(0), PARENT, [None; 4])
        .unwrap();
    let mut out = [0u8; OUT];
    let t0 = Instant::from_millis(0);
    // A JoinReply of the parent's job from a stranger does not reach the switch.
    let mut reply = [0u8; 64];
    let repr = JoinReplyRepr {
        job: 9,
        rank: 0,
        world: 2,
        shards: 0,
        flags: JoinFlags::COMPLETE,
        max_count: 8,
        epoch: 1,
        slot_count: 4,
        session: 5,
        nonce: 100,
        lane_slots: 4,
        count: 1,
        joined: &[3],
    };
    let len = repr.buffer_len();
    repr.emit(&mut JoinReplyPacket::new_unchecked(&mut reply[..len]));
    let before = e.switch().counters().drops(DropReason::UnexpectedType);
    assert_eq!(
        e.handle_admitted(t0, 99, &reply[..len], &mut out),
        Transmit::Nothing
    );
    let after = e.switch().counters().drops(DropReason::UnexpectedType);
    assert_eq!(after, before + 1);
    // The parent's address sending a worker's Join is not taken for a worker's.
    assert_eq!(
        e.handle_admitted(t0, PARENT, &join(0), &mut out),
        Transmit::Nothing
    );
    assert_eq!(e.switch().job(7).unwrap().joined().len(), 0);
    // A worker's Join is answered, and rank 0 of this child is learned at its address.
    assert!(matches!(
        e.handle_admitted(t0, 10, &join(0), &mut out),
        Transmit::Reply { .. }
    ));
    // A rank of the other child is refused, and teaches nothing.
    e.handle_admitted(t0, 12, &join(2), &mut out);
    let learned: Vec<u32> = e.routes[0]
        .as_ref()
        .unwrap()
        .storage
        .iter()
        .flatten()
        .map(|(a, _)| *a)
        .collect();
    assert_eq!(learned, [10]);
    // Bytes that are no message never panic, from anyone.
    for from in [PARENT, 10, 99] {
        for n in 0..40 {
            let junk: Vec<u8> = (0..n).map(|i| (i * 37 + n) as u8).collect();
            let _ = e.handle_admitted(t0, from, &junk, &mut out);
        }
    }
}

#[test]
fn a_parent_learns_a_child_for_every_lane_from_any_of_its_joins() {
    let mut pool = [Slot::IDLE; 4];
    let mut e: Ep<'_> = Endpoint::new(Switch::new(&mut pool, 1), Duration::from_secs(60));
    e.add_parent_job(config(9, 2, PARENT_KEY), [None; 4])
        .unwrap();
    let mut b = [0u8; 44];
    // Child B's Join of its ranks' lane 1 (slots 2‥4 of 2 lanes).
    JoinRepr {
        job: 9,
        rank: 1,
        world: 2,
        slot_lo: 2,
        slot_count: 2,
        count: 1,
        lanes: 2,
        nonce: 202,
        cookie: 0,
        tag: [0; 16],
    }
    .sign(PARENT_KEY)
    .emit(&mut JoinPacket::new_unchecked(&mut b[..]));
    let mut out = [0u8; OUT];
    let t = e.handle_admitted(Instant::from_millis(0), CHILDREN[1], &b, &mut out);
    assert!(matches!(t, Transmit::Reply { .. }));
    let table = &e.routes[0].as_ref().unwrap().storage;
    let learned: Vec<Option<u32>> = table.iter().map(|r| r.map(|(a, _)| a)).collect();
    // Member 0 unknown; member 1 at child B for lane 0 too, which it never joined.
    assert_eq!(learned, [None, None, Some(CHILDREN[1]), Some(CHILDREN[1])]);
}

proptest::proptest! {
    /// Any datagrams, from a worker, a stranger or the parent, to a child mid-run: no
    /// panic, and an answer goes only to the parent, the sender or learned lanes.
    #[test]
    fn a_child_survives_any_bytes_from_anyone(
        datagrams in proptest::collection::vec(
            (0u8..3, proptest::collection::vec(proptest::num::u8::ANY, 0..48)),
            0..40,
        ),
    ) {
        let mut pool = [Slot::IDLE; 4];
        let mut e: Ep<'_> = Endpoint::new(Switch::new(&mut pool, 2), Duration::from_secs(60));
        e.add_child_job(config(7, 2, KEY), link(0), PARENT, [None; 4]).unwrap();
        let mut out = [0u8; OUT];
        let t0 = Instant::from_millis(0);
        e.handle_admitted(t0, 10, &join(0), &mut out);
        e.handle_admitted(t0, 11, &join(1), &mut out);
        for (who, mut bytes) in datagrams {
            let from = [10, 99, PARENT][usize::from(who)];
            // The version, a known type and job 7 or 9, so that most reach the switch.
            if let [v, kind, hi, lo, ..] = &mut bytes[..] {
                (*v, *kind, *hi) = (crate::wire::VERSION, *kind % 12, 0);
                *lo = if *lo & 1 == 0 { 7 } else { 9 };
            }
            let t = e.handle_admitted(t0, from, &bytes, &mut out);
            for to in e.destinations(&t, &from) {
                proptest::prop_assert!([10, 11, from, PARENT].contains(to));
            }
        }
    }
}
