//! What the simulated protocol does under loss, full queues and a straggler, and that a
//! seed replays exactly.

use switchml_sim::analytic::{switchml_link_bytes, time_bound_ns};
use switchml_sim::{in_network, ring, Dtype, LossOn, Scenario, Straggler, SwitchModel};

fn small(workers: u16) -> Scenario {
    Scenario {
        workers,
        elements: 1 << 19,
        bucket_elements: 1 << 18,
        window: 64,
        dtype: Dtype::F32,
        ..Scenario::default()
    }
}

#[test]
fn under_loss_every_sum_is_still_exact_and_lost_packets_are_resent() {
    let s = Scenario {
        loss: 0.01,
        ..small(4)
    };
    let r = in_network::simulate(&s);
    let (lost, _) = r.network_drops();
    let p = r.protocol.unwrap();
    assert!(lost > 0);
    assert_eq!(r.wrong_elements, 0);
    assert!(r.failures.is_empty(), "{:?}", r.failures);
    // About one resend or fetch per loss (a lost Contribution needs a resend, a lost Result
    // a Probe that fetches it; a lost Probe or answer costs one only if its use is still
    // late when the timer fires), and only by a rank that needed it: never the P resends
    // per loss of a timeout-only recovery.
    let recovered = p.retransmissions + p.fetches;
    assert!(
        (lost * 4 / 5..=lost + lost / 10).contains(&recovered),
        "{} resends and {} fetches for {lost} losses",
        p.retransmissions,
        p.fetches
    );
    assert!(p.fetches > 0 && p.retransmissions > 0, "{p:?}");
    assert!(
        p.probes >= p.retransmissions / 2 && p.suspected > 0,
        "{p:?}"
    );
}

#[test]
fn only_the_rank_that_lost_a_packet_resends() {
    // A Contribution lost on an uplink leaves its use incomplete: every rank finds the use
    // late (later uses complete, or its timer fires) and asks with a Probe; the switch holds
    // the Contributions of all but the losing rank, so only that one resends (protocol.md
    // §6.1). A Result lost on a downlink: only its rank finds the use late (the others got
    // the Result), asks, hears "complete" and fetches the stored Result with a second
    // Probe (a switch that offers PROBE_RESULTS; from one that does not, as the P4
    // programs, it resends and the switch answers the resend with the Result); the others'
    // next use of that slot waits for it, so they ask too, and wait. The timeout-only
    // recovery of the paper costs P resends for the first and up to several for the second
    // (docs/simulation.md).
    let s = Scenario {
        loss: 0.002,
        max_rto_us: 1000,
        ..small(8)
    };
    let per_loss = |loss_on, probe_results| {
        let r = in_network::simulate(&Scenario {
            loss_on,
            probe_results,
            ..s
        });
        let (lost, _) = r.network_drops();
        let p = r.protocol.unwrap();
        assert!(lost > 0 && r.wrong_elements == 0, "{:?}", r.failures);
        let lost = lost as f64;
        (
            p.retransmissions as f64 / lost,
            p.probes as f64 / lost,
            p.switch_duplicates,
            p.fetches as f64 / lost,
        )
    };
    let (up, up_probes, up_duplicates, _) = per_loss(LossOn::Uplinks, true);
    assert!(
        (0.9..=1.05).contains(&up),
        "{up} resends per lost Contribution"
    );
    assert!(
        up_probes >= 7.0,
        "{up_probes} Probes per lost Contribution: all 8 ranks ask"
    );
    assert_eq!(up_duplicates, 0, "nobody resent what the switch held");
    let (down, down_probes, _, fetched) = per_loss(LossOn::Downlinks, true);
    assert!(
        (0.9..=1.05).contains(&fetched) && down <= 0.05,
        "{fetched} fetches and {down} resends per lost Result"
    );
    let (down_resent, _, _, none) = per_loss(LossOn::Downlinks, false);
    assert!(
        (0.9..=1.05).contains(&down_resent) && none == 0.0,
        "{down_resent} resends per lost Result from a switch without PROBE_RESULTS"
    );
    // The other ranks' next use of the slot waits for the late rank and is found late
    // too: they ask (20 bytes each) and wait; they do not resend. The late rank asks
    // twice (the second Probe fetches the Result).
    assert!(
        down_probes <= 10.0,
        "{down_probes} Probes per lost Result: one per rank at most, and the fetch"
    );
}

#[test]
fn a_queue_too_short_for_the_window_tail_drops_and_the_protocol_recovers() {
    let s = Scenario {
        queue_packets: 16,
        ..small(4)
    };
    let r = in_network::simulate(&s);
    let (_, tail_dropped) = r.network_drops();
    assert!(tail_dropped > 0);
    assert_eq!(r.wrong_elements, 0);
    assert!(r.completion.is_some(), "{:?}", r.failures);
}

#[test]
fn a_seed_replays_exactly_and_another_seed_loses_other_packets() {
    let s = Scenario {
        loss: 0.005,
        ..small(4)
    };
    let a = in_network::simulate(&s);
    let b = in_network::simulate(&s);
    assert_eq!(
        (a.completion, a.protocol, a.network_drops(), &a.uplinks),
        (b.completion, b.protocol, b.network_drops(), &b.uplinks)
    );
    let c = in_network::simulate(&Scenario { seed: 2, ..s });
    assert_ne!(a.uplinks, c.uplinks);
}

#[test]
fn a_late_rank_delays_both_algorithms_by_its_lateness() {
    // Nothing aggregates in the switch without the late rank, and the ring's late rank
    // passes nothing on before it starts: either way every rank waits for it.
    let delay = 2_000_000;
    let s = small(4);
    let late = Scenario {
        straggler: Straggler {
            delay,
            bits_per_sec: None,
        },
        ..s
    };
    for (algorithm, simulate) in [
        ("switchml", in_network::simulate as fn(&Scenario) -> _),
        ("ring", ring::simulate),
    ] {
        let on_time = simulate(&s).completion.unwrap();
        let t = simulate(&late).completion.unwrap();
        let ratio = t as f64 / (on_time + delay) as f64;
        assert!(
            (0.999..1.001).contains(&ratio),
            "{algorithm}: {t} vs {on_time} + {delay}"
        );
    }
}

#[test]
fn a_rank_on_a_slower_link_sets_the_pace_and_the_ring_needs_no_bounded_queue() {
    let s = Scenario {
        straggler: Straggler {
            delay: 0,
            bits_per_sec: Some(25_000_000_000),
        },
        ..small(4)
    };
    let r = in_network::simulate(&s);
    let t = r.completion.unwrap() as f64;
    let slow = Scenario {
        bits_per_sec: 25_000_000_000,
        ..s
    };
    let bound = time_bound_ns(&slow, switchml_link_bytes(&s));
    assert!((1.0..1.02).contains(&(t / bound)), "{t} vs {bound}");
    // The ring's transport is flow-controlled: a slow rank backs up its neighbours, it does
    // not lose their packets.
    let ring = ring::simulate(&Scenario {
        queue_packets: 16,
        ..s
    });
    let ring_on_time = ring::simulate(&small(4)).completion.unwrap();
    assert!(ring.completion.unwrap() > 3 * ring_on_time);
}

#[test]
fn the_p4_model_makes_the_reference_switchs_decisions_under_loss() {
    // Same packets, same losses: every time and every counter must be the same whichever
    // switch aggregates (the reference without PROBE_RESULTS, which the P4 programs
    // cannot offer).
    let s = Scenario {
        loss: 0.003,
        probe_results: false,
        ..small(4)
    };
    let reference = in_network::simulate(&s);
    let model = in_network::simulate(&Scenario {
        switch: SwitchModel::P4Model,
        ..s
    });
    assert!(reference.network_drops().0 > 0);
    assert_eq!(model.wrong_elements, 0);
    assert_eq!(
        (
            reference.completion,
            reference.protocol,
            &reference.downlinks
        ),
        (model.completion, model.protocol, &model.downlinks)
    );
}
