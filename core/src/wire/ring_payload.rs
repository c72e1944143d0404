//! The payloads of the fallback ring's set-up frames (docs/fallback.md, the frame kinds):
//! a Hello's ring port, and rank 0's Table of every rank's ring address. (A Status frame
//! carries a [`crate::fallback::Record`]; the reductions' payloads are element data.)
//!
//! ```text
//! Hello:  0-1: the sender's ring port (u16, little-endian)
//! Table:  one 18-byte entry per rank, rank order:
//!         0-15: IPv6 address (IPv4 as ::ffff:a.b.c.d, network order) | 16-17: port (LE)
//! ```

use core::net::{IpAddr, Ipv6Addr, SocketAddr};

use super::ring_frame::HELLO_LEN;

/// The length of one Table entry.
pub const TABLE_ENTRY_LEN: usize = 18;

/// Write a Hello's payload.
pub const fn emit_hello(port: u16) -> [u8; HELLO_LEN] {
    port.to_le_bytes()
}

/// Read a Hello's payload.
pub const fn parse_hello(payload: &[u8; HELLO_LEN]) -> u16 {
    u16::from_le_bytes(*payload)
}

/// Return the length of the Table of `world` ranks.
pub const fn table_len(world: u16) -> usize {
    world as usize * TABLE_ENTRY_LEN
}

/// Write one rank's Table entry.
pub fn emit_table_entry(addr: SocketAddr) -> [u8; TABLE_ENTRY_LEN] {
    let ip = match addr.ip() {
        IpAddr::V4(v4) => v4.to_ipv6_mapped(),
        IpAddr::V6(v6) => v6,
    };
    let mut e = [0u8; TABLE_ENTRY_LEN];
    e[..16].copy_from_slice(&ip.octets());
    e[16..].copy_from_slice(&addr.port().to_le_bytes());
    e
}

/// Read a Table's entries, in rank order (an IPv4-mapped address reads as IPv4; bytes
/// after the last whole entry are not one).
pub fn parse_table(payload: &[u8]) -> impl Iterator<Item = SocketAddr> + '_ {
    payload.chunks_exact(TABLE_ENTRY_LEN).map(|e| {
        let mut octets = [0u8; 16];
        octets.copy_from_slice(&e[..16]);
        let v6 = Ipv6Addr::from(octets);
        let ip = v6.to_ipv4_mapped().map_or(IpAddr::V6(v6), IpAddr::V4);
        SocketAddr::new(ip, u16::from_le_bytes([e[16], e[17]]))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use core::net::Ipv4Addr;
    use proptest::prelude::*;

    // 127.0.0.1:5000, then [::1]:7.
    const TABLE: [u8; 36] = [
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF, 127, 0, 0, 1, 0x88, 0x13, // v4-mapped
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 7, 0, // ::1
    ];

    fn addrs() -> [SocketAddr; 2] {
        [
            SocketAddr::new(Ipv4Addr::LOCALHOST.into(), 5000),
            SocketAddr::new(Ipv6Addr::LOCALHOST.into(), 7),
        ]
    }

    #[test]
    fn decode_known_bytes() {
        assert!(parse_table(&TABLE).eq(addrs()));
        assert_eq!(parse_hello(&[0x88, 0x13]), 5000);
    }

    #[test]
    fn encode_to_known_bytes() {
        let [a, b] = addrs();
        assert_eq!(emit_table_entry(a), TABLE[..18]);
        assert_eq!(emit_table_entry(b), TABLE[18..]);
        assert_eq!(emit_hello(5000), [0x88, 0x13]);
        assert_eq!(table_len(2), TABLE.len());
    }

    #[test]
    fn reject_impossible_lengths() {
        // A partial entry is not one.
        assert_eq!(parse_table(&TABLE[..35]).count(), 1);
        assert_eq!(parse_table(&[]).count(), 0);
    }

    proptest! {
        #[test]
        fn entries_round_trip(octets: [u8; 16], port: u16) {
            let v6 = Ipv6Addr::from(octets);
            let ip = v6.to_ipv4_mapped().map_or(IpAddr::V6(v6), IpAddr::V4);
            let addr = SocketAddr::new(ip, port);
            prop_assert!(parse_table(&emit_table_entry(addr)).eq([addr]));
        }
    }
}
