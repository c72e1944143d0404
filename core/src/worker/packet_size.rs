//! How many values a packet carries when nobody said: the largest power of two whose
//! Contribution fits the path's MTU (protocol.md §6). Every rank of a run must send the
//! same `count` (its first Join sets it, §4.1), and ranks that learn the same MTU pick the
//! same one; a rank whose path is narrower is refused `ChunkMismatch` like any other shape
//! difference, with the run's value, rather than sending datagrams its path fragments or
//! drops.

use crate::wire::data::HEADER_LEN;

/// The most values a packet carries by default: the software switch's slot size, and
/// 4 KiB of payload, past which a larger packet brings no more throughput on loopback.
pub const MAX_DEFAULT_COUNT: u16 = 1024;

/// Return the `count` for a path of `mtu` bytes (IP header included) under
/// `ip_udp_headers` bytes of IP and UDP headers: the largest power of two `k ≤ max` with
/// `ip_udp_headers + 24 + 4·k ≤ mtu` (1,500 → 256; 9,000 or loopback → 1,024 with `max`
/// 1,024); 1 if not even that fits; at most `max` (its own value if it is no power of two).
pub fn count_for_mtu(mtu: usize, ip_udp_headers: usize, max: u16) -> u16 {
    let room = mtu.saturating_sub(ip_udp_headers + HEADER_LEN) / 4;
    let fits = u16::try_from(room).unwrap_or(u16::MAX).min(max).max(1);
    // The largest power of two not above `fits`, unless `fits` is `max` itself.
    if fits == max {
        return max;
    }
    1 << (15 - fits.leading_zeros())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn common_paths_get_the_expected_count() {
        for (mtu, count) in [
            (1500, 256),
            (9000, 1024),
            (65_535, 1024),
            (1280, 256),
            (576, 128),
        ] {
            assert_eq!(
                count_for_mtu(mtu, 28, MAX_DEFAULT_COUNT),
                count,
                "MTU {mtu}"
            );
        }
        assert_eq!(count_for_mtu(1500, 48, MAX_DEFAULT_COUNT), 256);
        assert_eq!(count_for_mtu(0, 28, MAX_DEFAULT_COUNT), 1);
        assert_eq!(count_for_mtu(65_535, 28, 300), 300);
    }

    #[test]
    fn the_chosen_count_always_fits_and_no_larger_power_of_two_would() {
        for mtu in (0..70_000).step_by(7) {
            let k = count_for_mtu(mtu, 28, MAX_DEFAULT_COUNT);
            assert!((1..=MAX_DEFAULT_COUNT).contains(&k));
            if k > 1 {
                assert!(
                    28 + HEADER_LEN + 4 * usize::from(k) <= mtu,
                    "MTU {mtu}: {k}"
                );
            }
            if k < MAX_DEFAULT_COUNT {
                assert!(
                    28 + HEADER_LEN + 8 * usize::from(k) > mtu,
                    "MTU {mtu}: {k} too small"
                );
            }
        }
    }
}
