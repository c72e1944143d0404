//! Which source addresses a datagram may come from: the daemon answers to the source, so
//! one that no reply can go to is dropped on receive, before the aggregator sees the bytes.
//!
//! A datagram from UDP port 0, an unspecified address (`0.0.0.0`, `::`), a multicast
//! group or the broadcast address cannot be answered (`sendmmsg` refuses port 0 with
//! `EINVAL`), and no real lane has one: such sources are forged, so the datagram is junk.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};

/// Return whether no reply could ever go to `from`: port 0, or an unspecified, multicast or
/// broadcast address (IPv4-mapped IPv6 addresses are judged as the IPv4 address they map).
pub fn is_bad_source(from: &SocketAddr) -> bool {
    if from.port() == 0 {
        return true;
    }
    match from.ip() {
        IpAddr::V4(ip) => is_bad_v4(ip),
        IpAddr::V6(ip) => match ip.to_ipv4_mapped() {
            Some(v4) => is_bad_v4(v4),
            None => ip.is_unspecified() || ip.is_multicast(),
        },
    }
}

fn is_bad_v4(ip: Ipv4Addr) -> bool {
    ip.is_unspecified() || ip.is_multicast() || ip.is_broadcast()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bad(a: &str) -> bool {
        is_bad_source(&a.parse().unwrap())
    }

    #[test]
    fn unanswerable_sources_are_bad() {
        for a in [
            "127.0.0.1:0",
            "[::1]:0",
            "0.0.0.0:48864",
            "[::]:48864",
            "224.0.0.1:48864",
            "239.255.255.250:1900",
            "[ff02::1]:48864",
            "255.255.255.255:67",
            "[::ffff:0.0.0.0]:48864",
            "[::ffff:224.0.0.1]:48864",
            "[::ffff:255.255.255.255]:48864",
            "[::ffff:10.0.0.1]:0",
        ] {
            assert!(bad(a), "{a} should be a bad source");
        }
    }

    #[test]
    fn ordinary_sources_are_good() {
        for a in [
            "127.0.0.1:1",
            "10.1.2.3:65535",
            "192.168.1.255:5000",
            "[::1]:48864",
            "[fe80::1%2]:48864",
            "[2001:db8::1]:9",
            "[::ffff:10.0.0.1]:48864",
        ] {
            assert!(!bad(a), "{a} should be a good source");
        }
    }
}
