//! The retransmission-timeout defaults and the rule that ties `max_rto` to `rto`
//! (protocol.md §6.2), stated once for every adapter.
//!
//! The reference worker ([`Config::new`](super::Config::new)) starts at a 5 ms first
//! timeout, right for a lane that has a core to itself. A host library's lanes share the
//! host's cores with switch shards and the application, so they start at [`HOST_RTO`]
//! ([`Config::for_host`](super::Config::for_host)); and a first timeout raised without
//! raising `max_rto` keeps room to back off ([`max_rto_for`]).

use crate::time::Duration;

/// The host library's first retransmission timeout, the floor under the measured one: 20 ms.
/// Lanes, switch shards and the application share the host's cores, and a lane whose peers
/// wait for a core sees round trips stretch by milliseconds; below that floor it resends on
/// a lossless network. Measured on a 16-core host, loopback, 64 MiB, P = 8 and 16 with 8
/// shards × 8 lanes: 12,000–118,000 resends a run at 5 ms, none at 20 ms, the same time
/// (docs/benchmarks.md). Lower it where losses are real and hosts idle.
pub const HOST_RTO: Duration = Duration::from_millis(20);

/// How many first timeouts an unset `max_rto` leaves room for, at least: 40, so a lane
/// doubles a raised `rto` five times before it stops growing.
pub const MAX_RTO_PER_RTO: u64 = 40;

/// Return the `max_rto` for a first timeout `rto` when no one set `max_rto`: the larger of
/// `default` and [`MAX_RTO_PER_RTO`] × `rto` (saturating).
pub const fn max_rto_for(rto: Duration, default: Duration) -> Duration {
    let scaled = rto.total_micros().saturating_mul(MAX_RTO_PER_RTO);
    if scaled > default.total_micros() {
        Duration::from_micros(scaled)
    } else {
        default
    }
}

#[cfg(test)]
mod tests {
    use super::super::Config;
    use super::*;

    #[test]
    fn an_unset_max_rto_is_the_larger_of_the_default_and_40_rto() {
        let ms = Duration::from_millis;
        // The host default: 40 × 20 ms = 800 ms, above the 200 ms default.
        assert_eq!(max_rto_for(HOST_RTO, ms(200)), ms(800));
        // The reference worker's 5 ms: 200 ms either way.
        assert_eq!(max_rto_for(ms(5), ms(200)), ms(200));
        assert_eq!(max_rto_for(ms(1), ms(200)), ms(200));
        assert_eq!(max_rto_for(ms(6), ms(200)), ms(240));
        let huge = Duration::from_micros(u64::MAX / 2);
        assert_eq!(max_rto_for(huge, ms(200)), Duration::from_micros(u64::MAX));
    }

    #[test]
    fn the_host_config_differs_from_the_reference_only_in_its_first_timeout() {
        let (reference, host) = (Config::new(7, 1, 4), Config::for_host(7, 1, 4));
        assert_eq!(
            (reference.rto, host.rto),
            (Duration::from_millis(5), HOST_RTO)
        );
        assert_eq!(
            Config {
                rto: reference.rto,
                ..host
            },
            reference
        );
        // protocol.md §6.2: both start from a 200 ms max_rto.
        assert_eq!(host.max_rto, Duration::from_millis(200));
    }
}
