//! The congestion window (protocol.md §6.3): the controller on its own, then lanes that
//! use it through a reference switch over a network with a delay and seeded loss.
//!
//! ```text
//!   rank 0 ──1 ms──▶ ┌────────────────────────────┐
//!     ⋮              │ switch (job 3, 8 slots),   │ ──1 ms──▶ every rank
//!   rank N−1 ─1 ms─▶ │ marking when told to       │   (a Result may be lost)
//!                    └────────────────────────────┘
//! ```

extern crate std;
use std::vec::Vec;

use super::congestion::{CongestionWindow, Decrease};
use super::*;
use crate::splitmix::SplitMix64;
use crate::switch::{JobConfig, Slot, Switch, Verdict};

const MS: fn(u64) -> Duration = Duration::from_millis;
const AT: fn(u64) -> Instant = Instant::from_millis;

/// The controller with a 2 ms headroom and Swift's decrease on delay (`β` = 0.8), whatever
/// the default.
fn on(min_window: u16) -> CongestionControl {
    CongestionControl::On(CongestionParams {
        min_window,
        headroom: MS(2),
        delay_beta_per_mille: 800,
        ..CongestionParams::DEFAULT
    })
}

#[test]
fn a_mark_halves_the_window_at_most_once_a_round_trip() {
    let mut w = CongestionWindow::new(on(1), 64, 1);
    let srtt = Some(MS(10));
    assert_eq!(w.window(), 64, "starts open");
    assert_eq!(
        w.on_result(AT(0), Some(MS(10)), srtt, true),
        Some(Decrease::Mark)
    );
    assert_eq!(w.window(), 32);
    assert_eq!(w.on_result(AT(5), Some(MS(10)), srtt, true), None);
    assert_eq!(w.window(), 32, "a second mark in the same round trip");
    assert_eq!(
        w.on_result(AT(10), Some(MS(10)), srtt, true),
        Some(Decrease::Mark)
    );
    assert_eq!(w.window(), 16);
    for t in 0..20 {
        w.on_result(AT(20 + 10 * t), Some(MS(10)), srtt, true);
    }
    assert_eq!(w.window(), 1, "never below the minimum");
}

#[test]
fn the_window_grows_by_its_increase_a_window_of_results_up_to_the_lanes_slots() {
    let mut w = CongestionWindow::new(on(1), 16, 1);
    let srtt = Some(MS(10));
    w.on_result(AT(0), Some(MS(10)), srtt, true);
    assert_eq!(w.window(), 8);
    // A window of unmarked Results (about a round trip) with no queue: `increase` (2)
    // slots more, about a TCP segment's bytes.
    assert_eq!(CongestionParams::DEFAULT.increase, 2);
    for t in 1..=7u64 {
        w.on_result(AT(t), Some(MS(10)), srtt, false);
    }
    assert_eq!(w.window(), 8);
    w.on_result(AT(8), Some(MS(10)), srtt, false);
    assert_eq!(w.window(), 10, "eight Results at a window of 8");
    for t in 9..=18u64 {
        w.on_result(AT(t), Some(MS(10)), srtt, false);
    }
    assert_eq!(w.window(), 12, "ten more at a window of 10");
    for t in 19..=400u64 {
        w.on_result(AT(t), Some(MS(10)), srtt, false);
    }
    assert_eq!(w.window(), 16, "capped at the lane's slots");
}

#[test]
fn a_standing_queue_shrinks_the_window_in_proportion_to_the_excess() {
    let mut w = CongestionWindow::new(on(1), 100, 1);
    // Base round trip 10 ms, target 12 ms.
    w.on_result(AT(0), Some(MS(10)), Some(MS(10)), false);
    let mut decreases = 0;
    for t in 1..=40u64 {
        // Every sample of these round trips is 20 ms: a standing queue of 10 ms.
        if w.on_result(AT(t), Some(MS(20)), Some(MS(10)), false) == Some(Decrease::Delay) {
            decreases += 1;
        }
    }
    // β·(20 − 12)/20 = 0.32 of the window a round trip, at most once a round trip.
    assert!((2..=4).contains(&decreases), "{decreases}");
    assert!(w.window() < 70 && w.window() >= 20, "{}", w.window());
}

#[test]
fn one_long_sample_a_round_trip_is_not_a_queue() {
    let mut w = CongestionWindow::new(on(1), 100, 1);
    for t in 0..=200u64 {
        // A use that waited for another rank's lost Contribution now and then; the
        // smallest sample of each round trip is the base.
        let sample = if t % 7 == 3 { MS(60) } else { MS(10) };
        assert_eq!(w.on_result(AT(t), Some(sample), Some(MS(10)), false), None);
    }
    assert_eq!(w.window(), 100);
}

#[test]
fn random_losses_are_not_congestion_but_a_burst_is() {
    let mut w = CongestionWindow::new(on(1), 64, 1);
    let srtt = Some(MS(10));
    w.on_result(AT(0), Some(MS(10)), srtt, false);
    // One loss a round trip, no queue: 1% of 64 slots and more.
    for t in 1..=100u64 {
        w.on_result(AT(t * 5), Some(MS(10)), srtt, false);
        if t % 2 == 0 {
            assert_eq!(w.on_loss(AT(t * 5), srtt, true), None);
        }
    }
    assert_eq!(w.window(), 64);
    assert!(!w.marks(AT(600)));
    // Half the window lost in one round trip: a tail-drop queue overflowing.
    let decreases: Vec<_> = (0..32)
        .filter_map(|_| w.on_loss(AT(601), srtt, true))
        .collect();
    assert_eq!(decreases, [Decrease::Loss], "halved once");
    assert_eq!(w.window(), 32);
    assert!(
        w.marks(AT(605)),
        "its own Contributions were lost: it marks them"
    );
    assert!(!w.marks(AT(611)), "for one round trip");
}

#[test]
fn a_loss_in_a_round_trip_of_high_delay_is_congestion() {
    let mut w = CongestionWindow::new(on(1), 64, 1);
    let srtt = Some(MS(10));
    w.on_result(AT(0), Some(MS(10)), srtt, false);
    // The first round trip had the base sample; the second a standing queue of 20 ms.
    for t in 1..=22u64 {
        w.on_result(AT(t), Some(MS(30)), srtt, false);
    }
    let before = w.window();
    assert!(before < 64);
    assert_eq!(w.on_loss(AT(25), srtt, false), None, "once a round trip");
    // A round trip (now the 30 ms the queue makes it) past the decrease, the delay still
    // high: one loss is enough.
    assert_eq!(w.on_loss(AT(49), srtt, false), None, "once a round trip");
    assert_eq!(w.on_loss(AT(51), srtt, false), Some(Decrease::Loss));
    assert_eq!(w.window(), before / 2);
    assert!(
        !w.marks(AT(36)),
        "a loss of unknown direction is not marked"
    );
}

#[test]
fn by_default_the_delay_only_says_which_losses_are_congestion() {
    let round_trips = |w: &mut CongestionWindow, from: u64, sample: u64| {
        for t in from..from + 200 {
            assert_eq!(
                w.on_result(AT(t), Some(MS(sample)), Some(MS(sample)), false),
                None,
                "no decrease on delay alone"
            );
        }
    };
    // A short queue (4 ms over a 1 ms base, under the 10 ms headroom): a loss is random.
    let mut w = CongestionWindow::new(CongestionControl::DEFAULT_ON, 64, 1);
    w.on_result(AT(0), Some(MS(1)), Some(MS(1)), false);
    round_trips(&mut w, 1, 5);
    assert_eq!(w.on_loss(AT(300), Some(MS(5)), true), None);
    assert_eq!(w.window(), 64);
    // A standing queue (a TCP flow's: 19 ms): the window stays, but a loss halves it.
    round_trips(&mut w, 301, 20);
    assert_eq!(w.window(), 64, "a full queue alone costs nothing");
    assert_eq!(w.on_loss(AT(600), Some(MS(20)), true), Some(Decrease::Loss));
    assert_eq!(w.window(), 32);
}

#[test]
fn a_ranks_lanes_grow_as_one_flow() {
    // The window after `n` unmarked Results a millisecond apart at a 1 ms round trip.
    let grown = |lanes: u16, n: u64| {
        let mut w = CongestionWindow::new(CongestionControl::DEFAULT_ON, 64, lanes);
        w.on_result(AT(0), Some(MS(1)), Some(MS(1)), false);
        assert_eq!(
            w.on_loss(AT(1), Some(MS(1)), true),
            None,
            "random: no decrease"
        );
        // Halve it by a mark, then count Results until it has grown back.
        assert_eq!(
            w.on_result(AT(2), Some(MS(1)), Some(MS(1)), true),
            Some(Decrease::Mark)
        );
        assert_eq!(w.window(), 32);
        for t in 0..n {
            w.on_result(AT(3 + t), Some(MS(1)), Some(MS(1)), false);
        }
        w.window()
    };
    // One lane: 2 slots for each window (32, then 34, ...) of Results.
    assert_eq!(grown(1, 32), 34);
    assert_eq!(grown(1, 32 + 34), 36);
    // Two lanes share the increase: each grows 2 slots every two windows.
    assert_eq!(grown(2, 32), 32);
    assert_eq!(grown(2, 64), 34);
}

#[test]
fn a_lane_follows_its_siblings_backoff_once_a_round_trip() {
    let mut w = CongestionWindow::new(CongestionControl::DEFAULT_ON, 64, 2);
    assert_eq!(
        w.on_lane_backoff(AT(0), None),
        None,
        "no round trip known yet"
    );
    w.on_result(AT(0), Some(MS(10)), Some(MS(10)), false);
    assert_eq!(w.on_lane_backoff(AT(1), Some(MS(10))), Some(Decrease::Lane));
    assert_eq!(w.window(), 32);
    assert_eq!(
        w.on_lane_backoff(AT(5), Some(MS(10))),
        None,
        "once a round trip"
    );
    assert_eq!(
        w.on_lane_backoff(AT(12), Some(MS(10))),
        Some(Decrease::Lane)
    );
    assert_eq!(w.window(), 16);
    let mut off = CongestionWindow::new(CongestionControl::Off, 64, 2);
    assert_eq!(off.on_lane_backoff(AT(1), Some(MS(10))), None);
    assert_eq!(off.window(), 64);
}

#[test]
fn off_keeps_every_slot_in_flight() {
    let mut w = CongestionWindow::new(CongestionControl::Off, 16, 1);
    assert_eq!(w.on_result(AT(0), Some(MS(10)), Some(MS(10)), true), None);
    for _ in 0..100 {
        assert_eq!(w.on_loss(AT(1), Some(MS(10)), true), None);
    }
    assert_eq!(w.window(), 16);
}

/// The network of the lane tests: 1 ms each way; `loss_pct` of Results to each rank lost.
struct Net {
    rng: SplitMix64,
    loss_pct: u64,
    /// (due, to the switch or to rank r, bytes).
    flight: Vec<(Instant, Option<usize>, Vec<u8>)>,
}

/// What an all-reduce of `VALUES` values per rank gave: each rank's buffer, the largest
/// number of uses one rank had in flight after its window first reached its minimum, and
/// each rank's counters.
struct Run {
    bufs: Vec<Option<[i32; VALUES]>>,
    most_in_flight_at_min: usize,
    stats: Vec<Stats>,
    windows: Vec<u16>,
    /// Each rank's first sends (RETRANSMIT clear) of a chunk while an older chunk whose
    /// slot was free (the Result of its slot's previous use had come) was not sent yet.
    out_of_order: Vec<Vec<(u32, u32)>>,
}

/// Values per rank: 200 chunks of 2.
const VALUES: usize = 400;

fn run<const N: usize>(controls: [CongestionControl; N], marking: bool, loss_pct: u64) -> Run {
    let mut pool = [Slot::<8, 1>::IDLE; 8];
    let mut s: Switch<'_, 8, 1, 1> = Switch::new(&mut pool, 1);
    s.add_job(JobConfig {
        id: 3,
        world: N as u16,
        slot_lo: 0,
        slot_count: 8,
        key: 0,
    })
    .unwrap();
    s.set_congested(marking);
    let mut w: [Worker<[i32; VALUES], 8, 2>; N] = core::array::from_fn(|r| {
        Worker::new(Config {
            window: 8,
            count: 2,
            rto: MS(20),
            congestion: controls[r],
            ..Config::new(3, r as u16, N as u16)
        })
        .unwrap()
    });
    for (r, w) in w.iter_mut().enumerate() {
        let input: [i32; VALUES] = core::array::from_fn(|v| v as i32 * (r as i32 + 1));
        assert!(w.submit(Instant::ZERO, input, Op::Sum).is_ok());
    }
    let mut net = Net {
        rng: SplitMix64::new(7),
        loss_pct,
        flight: Vec::new(),
    };
    let mut out = Run {
        bufs: (0..N).map(|_| None).collect(),
        most_in_flight_at_min: 0,
        stats: Vec::new(),
        windows: Vec::new(),
        out_of_order: (0..N).map(|_| Vec::new()).collect(),
    };
    // Per rank: chunks first sent, and chunks whose Result came (one int32 tensor from
    // rotation 0: chunk j is use j / 8 of slot j mod 8).
    let mut sent = [[false; VALUES / 2]; N];
    let mut answered = [[false; VALUES / 2]; N];
    let chunk = |d: &wire::DataRepr| (d.seq * 8 + u32::from(d.slot)) as usize;
    let (mut buf, mut reply) = ([0u8; 64], [0u8; 512]);
    let mut outstanding = [[false; 8]; N];
    let mut reached_min = [false; N];
    // 100 simulated seconds at most: a lane at one slot recovers each lost Result on its
    // timer, which the waits for other ranks' losses have made long.
    for t in 0..1_000_000u64 {
        let now = Instant::from_micros(t * 100);
        let (due, later): (Vec<_>, Vec<_>) = net.flight.drain(..).partition(|f| f.0 <= now);
        net.flight = later;
        for (_, to, bytes) in due {
            match to {
                Some(r) => {
                    if let Ok(wire::Message::Data(d, _)) = wire::Message::parse(&bytes) {
                        outstanding[r][usize::from(d.slot)] = false;
                        if let Some(a) = answered[r].get_mut(chunk(&d)) {
                            *a = true;
                        }
                    }
                    w[r].handle_packet(now, &bytes);
                }
                None => {
                    let verdict = s.process(&bytes, &mut reply);
                    let mut deliver = |r: usize, len: usize| {
                        if net.rng.next_u64() % 100 >= net.loss_pct {
                            net.flight
                                .push((now + MS(1), Some(r), reply[..len].to_vec()));
                        }
                    };
                    match verdict {
                        Verdict::Multicast { len, .. } => (0..N).for_each(|r| deliver(r, len)),
                        Verdict::Unicast { rank, len, .. } => deliver(usize::from(rank), len),
                        _ => {}
                    }
                }
            }
        }
        for r in 0..N {
            if w[r].poll_timeout().is_some_and(|d| d <= now) {
                w[r].handle_timeout(now);
            }
            while let Some(len) = w[r].poll_transmit(now, &mut buf) {
                if let Ok(wire::Message::Data(d, _)) = wire::Message::parse(&buf[..len]) {
                    outstanding[r][usize::from(d.slot)] = true;
                    let y = chunk(&d);
                    if !d.flags.contains(wire::Flags::RETRANSMIT) && y < VALUES / 2 {
                        let free = |x: usize| x < 8 || answered[r][x - 8];
                        if let Some(x) = (0..y).find(|&x| !sent[r][x] && free(x)) {
                            out.out_of_order[r].push((y as u32, x as u32));
                        }
                        sent[r][y] = true;
                    }
                }
                net.flight.push((now + MS(1), None, buf[..len].to_vec()));
            }
            reached_min[r] |= w[r].congestion_window() == 1;
            if reached_min[r] {
                let n = outstanding[r].iter().filter(|&&o| o).count();
                out.most_in_flight_at_min = out.most_in_flight_at_min.max(n);
            }
            while let Some(e) = w[r].poll_event() {
                if let Event::Done { buf, result, .. } = e {
                    assert_eq!(result, Ok(()), "rank {r}");
                    out.bufs[r] = Some(buf);
                }
            }
        }
        if out.bufs.iter().all(Option::is_some) {
            break;
        }
    }
    out.stats = w.iter().map(|w| *w.stats()).collect();
    out.windows = w.iter().map(|w| w.congestion_window()).collect();
    out
}

fn exact_sum(n: usize) -> [i32; VALUES] {
    let factor: i32 = (1..=n as i32).sum();
    core::array::from_fn(|v| v as i32 * factor)
}

#[test]
fn marked_results_shrink_every_window_to_its_minimum_and_the_sums_stay_exact() {
    let r = run([on(1); 3], true, 0);
    for (rank, b) in r.bufs.iter().enumerate() {
        assert_eq!(b.as_ref(), Some(&exact_sum(3)), "rank {rank}");
    }
    assert!(r.stats.iter().all(|s| s.cwnd_mark_decreases >= 3));
    assert_eq!(r.windows, [1, 1, 1]);
    // A window of one slot, and the oldest use: never more than two in flight.
    assert!(r.most_in_flight_at_min <= 2, "{}", r.most_in_flight_at_min);
    assert!(r.stats.iter().all(|s| s.cwnd == 1));
}

#[test]
fn unmarked_lossless_lanes_keep_every_slot() {
    let r = run([on(1); 3], false, 0);
    assert!(r.bufs.iter().all(|b| b.as_ref() == Some(&exact_sum(3))));
    assert_eq!(r.windows, [8, 8, 8]);
    assert!(r
        .stats
        .iter()
        .all(|s| s.cwnd_mark_decreases + s.cwnd_delay_decreases + s.cwnd_loss_decreases == 0));
}

#[test]
fn windows_at_the_minimum_under_loss_never_deadlock() {
    // Lost Results make the ranks' slots ready in different orders; every rank holds one
    // slot. Without the oldest-use rule, two ranks each wait on a use the other holds back.
    let r = run([on(1); 3], true, 5);
    for (rank, b) in r.bufs.iter().enumerate() {
        assert_eq!(b.as_ref(), Some(&exact_sum(3)), "rank {rank}");
    }
    assert!(r.stats.iter().any(|s| s.cwnd_waits > 0));
}

#[test]
fn a_switch_mark_off_leaves_a_lane_with_the_controller_off_alone() {
    let r = run([CongestionControl::Off, on(1)], true, 0);
    assert!(r.bufs.iter().all(|b| b.as_ref() == Some(&exact_sum(2))));
    assert_eq!(r.windows, [8, 1]);
    assert_eq!(r.stats[0].cwnd_mark_decreases, 0);
}

#[test]
fn every_rank_sends_its_fresh_uses_oldest_first() {
    // Lost Results make the ranks' slots free in different orders; the window sends what
    // is free in the order every rank shares, so Results come back in it.
    let r = run([on(1); 3], true, 5);
    for (rank, late) in r.out_of_order.iter().enumerate() {
        assert_eq!(
            late,
            &[],
            "rank {rank}: (chunk sent, older free chunk not sent)"
        );
    }
}
