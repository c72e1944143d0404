//! Closed-form bounds, from bytes on the wire, for the figures and the tests.

use switchml_core::wire;

use crate::clock::Nanos;
use crate::link::wire_bytes;
use crate::scenario::{Dtype, Scenario};

/// Return the bytes on the wire one worker's uplink (and, alike, its downlink) carries in
/// an in-network all-reduce: every chunk's Contribution, the last chunk of each bucket
/// shorter; for f32, one header-only priming use per slot a bucket touches
/// (protocol.md §5.3). Resends excluded.
pub fn switchml_link_bytes(s: &Scenario) -> u64 {
    let k = usize::from(s.count);
    let data = |values: usize| wire_bytes(wire::data::HEADER_LEN + 4 * values);
    let mut bytes = 0;
    let mut left = s.elements;
    while left > 0 {
        let bucket = left.min(s.bucket_elements);
        let chunks = bucket.div_ceil(k);
        bytes += (chunks as u64 - 1) * data(k) + data(bucket - (chunks - 1) * k);
        if s.dtype == Dtype::F32 {
            bytes += chunks.min(usize::from(s.window)) as u64 * data(0);
        }
        left -= bucket;
    }
    bytes
}

/// Return the bytes on the wire rank 0's uplink carries in a ring all-reduce: `2(P−1)`
/// chunks of about `1/P` of the tensor, in packets of `k` values.
pub fn ring_link_bytes(s: &Scenario) -> u64 {
    let p = usize::from(s.workers);
    let k = usize::from(s.count);
    let size = s.elements.div_ceil(p);
    let chunk_bytes = |len: usize| -> u64 {
        let full = len / k;
        let rest = len % k;
        full as u64 * wire_bytes(wire::data::HEADER_LEN + 4 * k)
            + if rest > 0 {
                wire_bytes(wire::data::HEADER_LEN + 4 * rest)
            } else {
                0
            }
    };
    let lens: Vec<usize> = (0..p)
        .map(|c| s.elements.saturating_sub(c * size).min(size))
        .collect();
    let total: u64 = lens.iter().map(|&l| chunk_bytes(l)).sum();
    // Rank 0 sends chunks 0, P−1, …, 2 in the reduce-scatter and 1, 0, …, 3 in the
    // all-gather: every chunk but chunk 1, then every chunk but chunk 2 (mod P).
    2 * total - chunk_bytes(lens[1 % p]) - chunk_bytes(lens[2 % p])
}

/// Return the time `bytes` take at `s`'s line rate, in nanoseconds.
pub fn serialisation_ns(s: &Scenario, bytes: u64) -> f64 {
    bytes as f64 * 8.0 * 1e9 / s.bits_per_sec as f64
}

/// Return the aggregated elements per second a link carries at line rate in packets of
/// `k` values (the in-network all-reduce's ceiling, whatever `P`).
pub fn line_rate_elements_per_sec(s: &Scenario) -> f64 {
    let packet = wire_bytes(s.data_payload());
    s.bits_per_sec as f64 / (8.0 * packet as f64) * f64::from(s.count)
}

/// Return the ring's ceiling: line rate over the `2(P−1)/P` times the tensor it sends.
pub fn ring_elements_per_sec(s: &Scenario) -> f64 {
    let p = f64::from(s.workers);
    line_rate_elements_per_sec(s) * p / (2.0 * (p - 1.0))
}

/// Return an unloaded slot's round trip: a full packet serialised on the uplink, the
/// propagation, the switch, the Result serialised on the downlink, the propagation.
pub fn slot_round_trip(s: &Scenario) -> Nanos {
    let packet = wire_bytes(s.data_payload());
    2 * (serialisation_ns(s, packet).ceil() as Nanos + s.propagation) + s.switch_latency
}

/// Return the in-network ceiling for a pool of `s.window` slots: each slot carries `k`
/// elements per round trip, up to line rate (the bandwidth-delay product in slots is
/// where the two meet).
pub fn window_elements_per_sec(s: &Scenario) -> f64 {
    let per_round_trip =
        f64::from(s.window) * f64::from(s.count) / (slot_round_trip(s) as f64 * 1e-9);
    per_round_trip.min(line_rate_elements_per_sec(s))
}

/// Return the bandwidth-delay product in slots: the smallest pool that fills the link.
pub fn bdp_slots(s: &Scenario) -> f64 {
    let packet = wire_bytes(s.data_payload());
    slot_round_trip(s) as f64 / serialisation_ns(s, packet)
}

/// Return what follows the last byte an uplink sends before the all-reduce can end: the
/// propagation to the switch, the switch, a full packet serialised on the downlink, the
/// propagation to the rank.
pub fn last_packet_trip_ns(s: &Scenario) -> f64 {
    let packet = wire_bytes(s.data_payload());
    (2 * s.propagation + s.switch_latency) as f64 + serialisation_ns(s, packet)
}

/// Return the least time an uplink carrying `bytes` lets an all-reduce take: the bytes at
/// line rate, then the last packet's trip.
pub fn time_bound_ns(s: &Scenario, bytes: u64) -> f64 {
    serialisation_ns(s, bytes) + last_packet_trip_ns(s)
}
