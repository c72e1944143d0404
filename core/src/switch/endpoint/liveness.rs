//! The switch's dead rule (protocol.md §4.3): a run whose rank has been silent for the
//! dead interval ends with Abort `RankSilent` naming it, multicast to the run's lanes; a
//! refused Join of a rank while the others wait ends it with `RankRefused`. Only messages
//! of the run's session count as hearing a rank.

use super::tests::{dests, join, TestEndpoint, JOB_7, OUT};
use super::*;
use crate::switch::{Slot, Switch};
use crate::wire::{AbortRepr, JoinRepr, ProbeFlags, ProbePacket, ProbeRepr, RANK_ALL};

/// Rank 0's nonce opens the run: the run's session.
const SESSION: u32 = 5;

fn probe(rank: u16, session: u32) -> [u8; 20] {
    let mut b = [0u8; 20];
    ProbeRepr {
        job: 7,
        rank,
        slot: 0,
        ver: 0,
        seq: 0,
        session,
        flags: ProbeFlags::NONE,
    }
    .emit(&mut ProbePacket::new_unchecked(&mut b[..]));
    b
}

fn ms(t: u64) -> Instant {
    Instant::from_millis(t)
}

/// Job 7's endpoint with both ranks joined at time 0 (rank 0 from 10, rank 1 from 20).
fn joined(pool: &mut [Slot<8, 1>]) -> TestEndpoint<'_> {
    let mut e: TestEndpoint<'_> = Endpoint::new(Switch::new(pool, 1), Duration::from_secs(3600));
    e.add_job(JOB_7, [None; 4]).unwrap();
    let mut out = [0u8; OUT];
    e.handle_admitted(ms(0), 10, &join(0, 0, SESSION), &mut out);
    e.handle_admitted(ms(0), 20, &join(1, 0, 6), &mut out);
    assert_eq!(e.switch().job(7).unwrap().session(), SESSION);
    e
}

/// Run the endpoint's timers until `until`; every 250 ms deliver what `each_tick` gives
/// (from, bytes). Return the first Abort it multicasts, when, and to whom.
fn run(
    e: &mut TestEndpoint<'_>,
    until: u64,
    each_tick: impl Fn() -> heapless::Vec<(u32, [u8; 20]), 4>,
) -> Option<(AbortRepr, Instant, heapless::Vec<u32, 8>)> {
    let mut out = [0u8; OUT];
    let mut tick = ms(250);
    loop {
        let next = e.poll_timeout().map_or(tick, |t| t.min(tick));
        if next > ms(until) {
            return None;
        }
        if next == tick {
            for (from, bytes) in each_tick() {
                e.handle(tick, from, &bytes, &mut out);
            }
            tick += Duration::from_millis(250);
        }
        e.handle_timeout(next);
        while let Some(t) = e.poll_transmit(&mut out) {
            let Transmit::Lanes { len, up: false, .. } = t else {
                continue;
            };
            let a = AbortRepr::parse(&AbortPacket::new_unchecked(&out[..len])).unwrap();
            return Some((a, next, dests(e, &t, 0)));
        }
    }
}

#[test]
fn a_silent_rank_is_named_to_the_others_between_one_and_one_and_a_quarter_dead_intervals() {
    let mut pool = [Slot::IDLE; 4];
    let mut e = joined(&mut pool);
    // Rank 0 keeps alive; rank 1 sends nothing after its Join at 0.
    let alive = || heapless::Vec::from_slice(&[(10, probe(0, SESSION))]).unwrap();
    let (a, at, to) = run(&mut e, 60_000, alive).expect("rank 1 was never named");
    assert_eq!(
        (a.reason, a.detail, a.rank, a.session),
        (AbortReason::RankSilent, 1, RANK_ALL, SESSION)
    );
    assert!(at >= ms(1500) && at <= ms(1875), "named at {at:?}");
    assert_eq!(to, [10, 20], "multicast to the run's lanes");
    assert!(!e.switch().job(7).unwrap().has_run(), "the run is over");
}

#[test]
fn ranks_that_keep_alive_are_never_named() {
    let mut pool = [Slot::IDLE; 4];
    let mut e = joined(&mut pool);
    let both = || heapless::Vec::from_slice(&[(10, probe(0, SESSION)), (20, probe(1, SESSION))]);
    assert_eq!(run(&mut e, 60_000, || both().unwrap()), None);
    assert!(e.switch().job(7).unwrap().has_run());
}

#[test]
fn a_forged_keep_alive_without_the_session_keeps_no_dead_rank_alive() {
    // A forger who cannot read the run sends rank 1's keep-alives with guessed sessions,
    // from rank 1's own address and from its own: rank 1 is still named.
    let mut pool = [Slot::IDLE; 4];
    let mut e = joined(&mut pool);
    let forged = || {
        heapless::Vec::from_slice(&[
            (10, probe(0, SESSION)),
            (20, probe(1, SESSION + 1)),
            (99, probe(1, 0xDEAD)),
        ])
        .unwrap()
    };
    let (a, at, _) = run(&mut e, 60_000, forged).expect("rank 1 was never named");
    assert_eq!((a.reason, a.detail), (AbortReason::RankSilent, 1));
    assert!(at <= ms(1875));
}

#[test]
fn without_a_dead_interval_the_switch_never_sweeps() {
    let mut pool = [Slot::IDLE; 4];
    let mut e = joined(&mut pool).with_dead_after(None);
    assert_eq!(e.poll_timeout(), Some(ms(3_600_000)), "idle expiry only");
    assert_eq!(run(&mut e, 60_000, heapless::Vec::new), None);
}

#[test]
fn a_refused_join_is_relayed_to_the_ranks_that_wait() {
    // Issue 27: rank 1 joined with another chunk size; rank 0, already in the run, waited
    // out its join timeout and reported "ranks 1 never joined".
    let mut pool = [Slot::IDLE; 4];
    let mut e: TestEndpoint<'_> =
        Endpoint::new(Switch::new(&mut pool, 1), Duration::from_secs(3600));
    e.add_job(JOB_7, [None; 4]).unwrap();
    let mut out = [0u8; OUT];
    e.handle_admitted(ms(0), 10, &join(0, 0, SESSION), &mut out);
    let mut other = [0u8; 44];
    let j = JoinRepr::parse(&JoinPacket::new_unchecked(&join(1, 0, 6)[..])).unwrap();
    JoinRepr { count: 2, ..j }
        .sign(9)
        .emit(&mut JoinPacket::new_unchecked(&mut other[..]));
    let t = e.handle_admitted(ms(10), 20, &other, &mut out);
    assert!(matches!(t, Transmit::Reply { .. }));
    let refusal = AbortRepr::parse(&AbortPacket::new_unchecked(&out[..20])).unwrap();
    assert_eq!(
        (refusal.reason, refusal.detail, refusal.session),
        (AbortReason::ChunkMismatch, 1, 6),
        "the refused rank hears why"
    );
    let alive = || heapless::Vec::from_slice(&[(10, probe(0, SESSION))]).unwrap();
    let (a, at, to) = run(&mut e, 60_000, alive).expect("rank 0 was never told");
    assert_eq!(
        (a.reason, a.detail, a.session),
        (AbortReason::RankRefused, 1, SESSION)
    );
    assert!(at <= ms(375), "at the first sweep, not {at:?}");
    assert_eq!(to, [10]);
}
