//! The workers' congestion window (protocol.md §6.3) in the simulator, against the same
//! scenario without it: it costs nothing on a network of its own, loses no sum under loss,
//! and on an uplink that marks (ECN) and that a bulk TCP flow shares, it backs off and
//! drains the queue.
//!
//! ```text
//!  rank 0 ──uplink (shared with a Reno flow)──▶ ┌────────┐
//!  rank 1..3 ──uplinks──────────────────────────▶ │ switch │ ──downlinks──▶ every rank
//!                                                └────────┘
//! ```
//!
//! 100 Mb/s links, 50 µs each way, 128 KiB tail-drop queues: the emulated links of
//! `bench/testbed`, scaled down to 2 MiB a rank.

use switchml_sim::in_network;
use switchml_sim::Scenario;

fn shared_link(congestion: bool) -> Scenario {
    Scenario {
        workers: 4,
        bits_per_sec: 100_000_000,
        propagation: 50_000,
        queue_bytes: 128 << 10,
        elements: 1 << 19,
        bucket_elements: 1 << 18,
        window: 128,
        rto_us: 20_000,
        max_rto_us: 800_000,
        congestion,
        ..Scenario::default()
    }
}

#[test]
fn on_a_network_of_its_own_the_window_costs_nothing() {
    let off = in_network::simulate(&shared_link(false));
    let on = in_network::simulate(&shared_link(true));
    let (t_off, t_on) = (off.completion.unwrap(), on.completion.unwrap());
    assert_eq!(on.wrong_elements, 0);
    // Within 1% of SwitchML's fixed window (the queue it no longer fills can only help).
    assert!(t_on * 100 <= t_off * 101, "on {t_on} ns, off {t_off} ns");
}

#[test]
fn under_random_loss_every_sum_stays_exact_and_the_time_that_of_no_controller() {
    let lossy = |congestion| Scenario {
        loss: 0.01,
        ..shared_link(congestion)
    };
    let off = in_network::simulate(&lossy(false));
    let on = in_network::simulate(&lossy(true));
    assert!(on.failures.is_empty(), "{:?}", on.failures);
    assert_eq!(on.wrong_elements, 0);
    let (t_off, t_on) = (off.completion.unwrap(), on.completion.unwrap());
    // Random loss is not congestion: no more than 3% slower than the fixed window.
    assert!(t_on * 100 <= t_off * 103, "on {t_on} ns, off {t_off} ns");
}

#[test]
fn on_a_marking_uplink_shared_with_a_flow_the_job_backs_off_and_the_queue_drains() {
    let shared = |congestion| Scenario {
        competing_flow: true,
        mark_bytes: 32 << 10,
        ..shared_link(congestion)
    };
    let (off, off_share) = in_network::simulate_shared(&shared(false));
    let (on, on_share) = in_network::simulate_shared(&shared(true));
    assert_eq!(on.wrong_elements, 0);
    let bps = shared(true).bits_per_sec;
    let (_, flow_off, jain_off) = off_share.shares(bps, off.completion.unwrap());
    let (_, flow_on, jain_on) = on_share.shares(bps, on.completion.unwrap());
    assert!(
        flow_on > flow_off,
        "the flow's share: on {flow_on}, off {flow_off}"
    );
    assert!(
        jain_on > jain_off,
        "Jain's index: on {jain_on}, off {jain_off}"
    );
    let mean_queue =
        |s: &in_network::SharedReport| s.uplink0.queued_bytes_sum / s.uplink0.packets.max(1);
    assert!(mean_queue(&on_share) < mean_queue(&off_share) / 2);
    assert!(on.uplinks[0].tail_dropped < off.uplinks[0].tail_dropped);
}
