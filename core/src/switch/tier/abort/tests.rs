//! Aborts across two levels, on the tree of `tier/tests.rs`:
//!
//! ```text
//!   rank 0 ──┐
//!   rank 1 ──┴── child A (job 7: ranks 0‥1 of 4, run 100) ──member 0──┐
//!   rank 2 ──┐                                                         ├── parent (job 9,
//!   rank 3 ──┴── child B (job 7: ranks 2‥3 of 4, run 202) ──member 1──┘     run 100)
//! ```

use crate::switch::tier::tests::{join, session, Pools, Tree, OUT};
use crate::switch::{DropReason, Slot, Verdict};
use crate::wire::{AbortPacket, AbortReason, AbortRepr, JoinPacket, JoinRepr, RANK_ALL};

pub(crate) fn abort(
    job: u16,
    rank: u16,
    reason: AbortReason,
    detail: u16,
    session: u32,
) -> [u8; 20] {
    let mut b = [0u8; 20];
    AbortRepr {
        job,
        rank,
        reason,
        detail,
        epoch: 0,
        session,
    }
    .emit(&mut AbortPacket::new_unchecked(&mut b[..]));
    b
}

fn parsed(out: &[u8]) -> AbortRepr {
    AbortRepr::parse(&AbortPacket::new_checked(out).unwrap()).unwrap()
}

fn pools() -> Pools {
    [[Slot::IDLE; 4], [Slot::IDLE; 4], [Slot::IDLE; 4]]
}

#[test]
fn a_rank_that_gives_up_under_one_child_ends_the_run_under_every_child() {
    let mut pools = pools();
    let mut t = Tree::joined(&mut pools);
    let (mut out, mut up, mut down) = ([0u8; OUT], [0u8; OUT], [0u8; OUT]);
    // Rank 1 gives up waiting for rank 3: A's ranks hear it unchanged, as at any switch.
    let gave_up = abort(7, 1, AbortReason::WorkerFailed, 3, session(1));
    let Verdict::Multicast { job: 7, len } = t.send(0, &gave_up, &mut out) else {
        panic!();
    };
    assert_eq!(&out[..len], &gave_up[..]);
    // And A owes its parent an Abort, as member 0 of the parent's run; only once, and
    // not lost to a buffer too short for it.
    assert_eq!(t.children[0].poll_up(&mut [0u8; 19]), None);
    let Some(Verdict::Up { job: 9, len }) = t.children[0].poll_up(&mut up) else {
        panic!("A tells its parent");
    };
    assert_eq!(t.children[0].poll_up(&mut out), None);
    let a = parsed(&up[..len]);
    assert_eq!(
        (a.rank, a.reason, a.detail, a.session),
        (0, AbortReason::WorkerFailed, 0xFFFF, 100)
    );
    // The parent passes it on to every member and its run ends.
    let Verdict::Multicast { job: 9, len } = t.parent.process(&up[..len], &mut down) else {
        panic!();
    };
    assert!(!t.parent.job(9).unwrap().has_run());
    // B's ranks hear that the parent's run ended, naming child A; B's run ends.
    let Verdict::Multicast { job: 7, len: n } = t.send(1, &down[..len], &mut out) else {
        panic!();
    };
    let a = parsed(&out[..n]);
    assert_eq!(
        (a.rank, a.reason, a.detail, a.session),
        (RANK_ALL, AbortReason::ParentFailed, 0, session(2))
    );
    assert!(!t.children[1].job(7).unwrap().has_run());
    assert_eq!(t.children[1].poll_up(&mut out), None, "nothing back up");
    // A, whose run is over, drops its own Abort coming back, as no forgery.
    let v = t.send(0, &down[..len], &mut out);
    assert_eq!(v, Verdict::Drop(DropReason::Duplicate));
    assert_eq!(t.children[0].job(7).unwrap().counters().unauthorized, 0);
    // A stranger's Abort from A's member index in any other session is no echo: before,
    // it counted as a duplicate too, hiding it; now it is forged (unauthorized).
    let forged = abort(9, 0, AbortReason::WorkerFailed, 0xFFFF, 0x0BAD_5E55);
    let v = t.send(0, &forged, &mut out);
    assert_eq!(v, Verdict::Drop(DropReason::BadSession));
    let c = t.children[0].job(7).unwrap().counters();
    assert_eq!((c.unauthorized, c.duplicates), (1, 1));
    assert_eq!(t.children[1].job(7).unwrap().counters().aborts, 1);
}

#[test]
fn a_parents_refusal_of_a_childs_join_reaches_the_childs_ranks() {
    let mut pools = pools();
    let mut t = Tree::new(&mut pools);
    t.parent.remove_job(9).unwrap();
    let (mut out, mut up) = ([0u8; OUT], [0u8; OUT]);
    t.send(0, &join(0), &mut out);
    t.send(0, &join(1), &mut out);
    let Verdict::Up { len, .. } = t.send(0, &join(0), &mut up) else {
        panic!("A's run is complete: its Join goes up");
    };
    // The parent does not know job 9: it refuses member 0, naming the Join's nonce.
    let Verdict::Unicast { len, .. } = t.parent.process(&up[..len], &mut out) else {
        panic!();
    };
    let refusal = out;
    let a = parsed(&refusal[..len]);
    assert_eq!((a.reason, a.session), (AbortReason::UnknownJob, session(0)));
    let Verdict::Multicast { job: 7, len: n } = t.send(0, &refusal[..len], &mut out) else {
        panic!();
    };
    let a = parsed(&out[..n]);
    assert_eq!((a.reason, a.detail), (AbortReason::ParentFailed, 0));
    assert!(!t.children[0].job(7).unwrap().has_run());
    assert_eq!(
        t.children[0].poll_up(&mut out),
        None,
        "A joined no parent run"
    );
}

#[test]
fn only_an_abort_of_the_parents_run_or_to_the_childs_join_counts() {
    let mut pools = pools();
    let mut t = Tree::joined(&mut pools);
    let mut out = [0u8; OUT];
    let cases = [
        // Another parent run, also from B's own member index (B sent no Abort up with
        // session 55: no echo, a forgery), and B's own session once B has joined the
        // parent's run.
        (
            abort(9, 0, AbortReason::WorkerFailed, 0, 55),
            DropReason::BadSession,
        ),
        (
            abort(9, 1, AbortReason::WorkerFailed, 0, 55),
            DropReason::BadSession,
        ),
        (
            abort(9, RANK_ALL, AbortReason::Shutdown, 0, session(2)),
            DropReason::BadSession,
        ),
        // No member of the parent's job.
        (
            abort(9, 2, AbortReason::WorkerFailed, 0, 100),
            DropReason::UnknownRank,
        ),
    ];
    for (bytes, reason) in cases {
        assert_eq!(t.send(1, &bytes, &mut out), Verdict::Drop(reason));
    }
    // Each forgery of the parent's session is counted where a user looks for forgeries.
    let c = t.children[1].job(7).unwrap().counters();
    assert_eq!((c.unauthorized, c.duplicates), (3, 0));
    assert!(t.children[1].job(7).unwrap().has_run());
    // The parent restarting member 1 (rank 0xFFFF, detail 1) names member 1.
    let restart = abort(9, RANK_ALL, AbortReason::RankRestarted, 1, 100);
    let Verdict::Multicast { len, .. } = t.send(1, &restart, &mut out) else {
        panic!();
    };
    assert_eq!(parsed(&out[..len]).detail, 1);
    // The parent stopping names nobody.
    let stop = abort(9, RANK_ALL, AbortReason::Shutdown, 0, 100);
    let Verdict::Multicast { len, .. } = t.send(0, &stop, &mut out) else {
        panic!();
    };
    assert_eq!(parsed(&out[..len]).detail, 0xFFFF);
    // A flat switch has no parent: an Abort of a job it lacks is still unknown.
    assert_eq!(
        t.parent
            .process(&abort(3, 0, AbortReason::Shutdown, 0, 1), &mut out),
        Verdict::Drop(DropReason::UnknownJob)
    );
}

#[test]
fn a_restart_or_a_stop_at_a_child_goes_up_too() {
    let mut pools = pools();
    let mut t = Tree::joined(&mut pools);
    let mut out = [0u8; OUT];
    // Rank 1 of A joins again as a new process: A's run ends, and the parent's.
    let mut again = join(1);
    let repr = JoinRepr::parse(&JoinPacket::new_unchecked(&again[..])).unwrap();
    JoinRepr { nonce: 7, ..repr }
        .sign(crate::switch::tier::tests::KEY)
        .emit(&mut JoinPacket::new_unchecked(&mut again[..]));
    let v = t.send(0, &again, &mut out);
    assert!(matches!(v, Verdict::Multicast { job: 7, .. }), "{v:?}");
    let Some(Verdict::Up { len, .. }) = t.children[0].poll_up(&mut out) else {
        panic!();
    };
    let a = parsed(&out[..len]);
    assert_eq!(
        (a.rank, a.reason, a.detail),
        (0, AbortReason::RankRestarted, 0)
    );
    // B stops: its ranks hear Shutdown, and its parent hears it as member 1's.
    let Some(Verdict::Multicast { .. }) =
        t.children[1].shutdown_run(7, AbortReason::Shutdown, &mut out)
    else {
        panic!();
    };
    let Some(Verdict::Up { len, .. }) = t.children[1].poll_up(&mut out) else {
        panic!();
    };
    let a = parsed(&out[..len]);
    assert_eq!(
        (a.rank, a.reason, a.detail, a.session),
        (1, AbortReason::Shutdown, 0, 100)
    );
}
