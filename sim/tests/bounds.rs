//! The simulator against closed-form bounds. The simulation is deterministic, so these are
//! behaviour tests: a lossless run must take the time its bytes on the wire take at line
//! rate plus the last packet's trip (a lower bound), and at most 2% more; the bytes the
//! links carried must be exactly the protocol's.

use switchml_sim::analytic::{
    ring_elements_per_sec, ring_link_bytes, switchml_link_bytes, time_bound_ns,
    window_elements_per_sec,
};
use switchml_sim::{in_network, ring, Dtype, Scenario};

/// A small job: `workers` ranks, 1 Mi elements each in 256 Ki-element buckets.
fn small(workers: u16, dtype: Dtype) -> Scenario {
    Scenario {
        workers,
        elements: 1 << 20,
        bucket_elements: 1 << 18,
        window: 128,
        dtype,
        ..Scenario::default()
    }
}

fn assert_within(what: &str, simulated: f64, bound: f64, tolerance: f64) {
    let ratio = simulated / bound;
    assert!(
        (1.0..=1.0 + tolerance).contains(&ratio),
        "{what}: simulated {simulated:.0} vs bound {bound:.0} (ratio {ratio:.4})"
    );
}

#[test]
fn a_lossless_in_network_run_takes_its_wire_bytes_at_line_rate() {
    for workers in [2, 4, 8] {
        for dtype in [Dtype::I32, Dtype::F32] {
            let s = small(workers, dtype);
            let r = in_network::simulate(&s);
            let bytes = switchml_link_bytes(&s);
            for link in r.uplinks.iter().chain(&r.downlinks) {
                assert_eq!(link.wire_bytes, bytes, "P={workers} {dtype:?}");
            }
            assert_eq!(r.wrong_elements, 0);
            let t = r.completion.expect("finished") as f64;
            assert_within(
                &format!("P={workers} {dtype:?}"),
                t,
                time_bound_ns(&s, bytes),
                0.02,
            );
        }
    }
}

#[test]
fn a_lossless_ring_takes_its_wire_bytes_at_line_rate() {
    for workers in [2, 3, 8] {
        let s = small(workers, Dtype::F32);
        let r = ring::simulate(&s);
        let bytes = ring_link_bytes(&s);
        assert_eq!(r.uplinks[0].wire_bytes, bytes, "P={workers}");
        let t = r.completion.expect("finished") as f64;
        let bound = time_bound_ns(&s, r.uplinks.iter().map(|l| l.wire_bytes).max().unwrap());
        assert_within(&format!("ring P={workers}"), t, bound, 0.02);
    }
}

#[test]
fn in_network_throughput_is_flat_in_the_worker_count_and_the_ring_falls_as_p_over_2p_minus_2() {
    let rate = |workers, ring_too: bool| {
        let s = small(workers, Dtype::I32);
        let sml = in_network::simulate(&s).elements_per_sec().unwrap();
        let ring = ring_too.then(|| ring::simulate(&s).elements_per_sec().unwrap());
        (s, sml, ring)
    };
    let (_, two, _) = rate(2, false);
    for workers in [4, 8, 16] {
        let (s, sml, ring) = rate(workers, true);
        assert!(
            (sml / two - 1.0).abs() < 0.01,
            "P={workers}: {sml} vs {two}"
        );
        let ring = ring.unwrap();
        assert_within(
            &format!("ring P={workers}"),
            ring_elements_per_sec(&s),
            ring,
            0.02,
        );
    }
}

#[test]
fn a_pool_below_the_bandwidth_delay_product_delivers_a_pool_per_round_trip() {
    // 5 µs links: a round trip of ~10.2 µs, about 114 packets in flight to fill the link.
    for window in [8, 32, 64] {
        let s = Scenario {
            propagation: 5000,
            window,
            ..small(4, Dtype::I32)
        };
        let r = in_network::simulate(&s);
        let measured = r.elements_per_sec().unwrap();
        assert_within(
            &format!("window {window}"),
            window_elements_per_sec(&s),
            measured,
            0.02,
        );
    }
}
