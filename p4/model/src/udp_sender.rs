//! `udp_sender.p4` (egress): writes Ethernet, IPv4 and UDP headers for each copy of an
//! answer. A unicast answer goes back to where the packet came from; a multicast replica
//! goes to the worker whose replication id it carries. The switchml bytes are the same in
//! every replica (a multicast Result carries rank `0xFFFF`, protocol.md §4); only the
//! addresses differ. The UDP checksum is sent as zero, which IPv4 allows.

use switchml_core::wire::SWITCH_PORT;

use crate::classifier::WorkerAddr;
use crate::headers::{
    Transport, ETHERNET_LEN, ETHERTYPE_IPV4, IPV4_LEN, IP_PROTO_UDP, TRANSPORT_LEN, UDP_LEN,
};

/// The switch's own addresses, the source of everything it sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SwitchAddr {
    /// MAC address.
    pub mac: [u8; 6],
    /// IPv4 address.
    pub ip: [u8; 4],
}

/// The egress rewriter.
#[derive(Debug, Clone, Copy)]
pub struct UdpSender {
    switch: SwitchAddr,
}

/// Return the IPv4 header checksum of `header` (checksum field zero).
pub fn ipv4_checksum(header: &[u8]) -> u16 {
    let mut sum: u32 = header
        .chunks(2)
        .map(|c| u32::from(u16::from_be_bytes([c[0], c.get(1).copied().unwrap_or(0)])))
        .sum();
    while sum > 0xFFFF {
        sum = (sum & 0xFFFF) + (sum >> 16);
    }
    !(sum as u16)
}

impl UdpSender {
    /// Make the rewriter for a switch at `switch`.
    pub fn new(switch: SwitchAddr) -> Self {
        UdpSender { switch }
    }

    /// Write headers sending a `len`-byte datagram back to the sender of `to`.
    pub fn reflect(&self, to: &Transport, len: usize, out: &mut [u8]) {
        self.write(to.ethernet.src, to.ipv4.src, to.udp.src_port, len, out);
    }

    /// Write headers sending a `len`-byte datagram to worker `w`.
    pub fn replicate(&self, w: &WorkerAddr, len: usize, out: &mut [u8]) {
        self.write(w.mac, w.source.ip, w.source.udp_port, len, out);
    }

    fn write(&self, mac: [u8; 6], ip: [u8; 4], port: u16, len: usize, out: &mut [u8]) {
        let h = &mut out[..TRANSPORT_LEN];
        h[0..6].copy_from_slice(&mac);
        h[6..12].copy_from_slice(&self.switch.mac);
        h[12..14].copy_from_slice(&ETHERTYPE_IPV4.to_be_bytes());
        let ip_len = (IPV4_LEN + UDP_LEN + len) as u16;
        let iph = &mut h[ETHERNET_LEN..ETHERNET_LEN + IPV4_LEN];
        iph[..12].copy_from_slice(&[0x45, 0, 0, 0, 0, 0, 0x40, 0, 64, IP_PROTO_UDP, 0, 0]);
        iph[12..16].copy_from_slice(&self.switch.ip);
        iph[16..20].copy_from_slice(&ip);
        iph[2..4].copy_from_slice(&ip_len.to_be_bytes());
        let sum = ipv4_checksum(iph);
        iph[10..12].copy_from_slice(&sum.to_be_bytes());
        let udp = &mut h[ETHERNET_LEN + IPV4_LEN..];
        udp[0..2].copy_from_slice(&SWITCH_PORT.to_be_bytes());
        udp[2..4].copy_from_slice(&port.to_be_bytes());
        udp[4..6].copy_from_slice(&((UDP_LEN + len) as u16).to_be_bytes());
        udp[6..8].copy_from_slice(&[0, 0]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checksum_of_a_known_header() {
        // The example header of RFC 1071 style checks: a header whose checksum is 0xb861.
        let h = [
            0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11, 0x00, 0x00, 0xc0, 0xa8,
            0x00, 0x01, 0xc0, 0xa8, 0x00, 0xc7,
        ];
        assert_eq!(ipv4_checksum(&h), 0xb861);
    }

    #[test]
    fn replicas_are_addressed_to_the_worker() {
        let s = UdpSender::new(SwitchAddr {
            mac: [2, 0, 0, 0, 0, 1],
            ip: [10, 0, 0, 254],
        });
        let w = WorkerAddr {
            port: 3,
            mac: [2, 0, 0, 0, 0, 9],
            source: crate::classifier::Source {
                ip: [10, 0, 0, 9],
                udp_port: 4000,
            },
        };
        let mut out = [0u8; TRANSPORT_LEN];
        s.replicate(&w, 20, &mut out);
        assert_eq!(&out[0..6], &w.mac);
        assert_eq!(&out[26..30], &[10, 0, 0, 254]);
        assert_eq!(&out[30..34], &[10, 0, 0, 9]);
        assert_eq!(u16::from_be_bytes([out[16], out[17]]), 48);
        assert_eq!(u16::from_be_bytes([out[36], out[37]]), 4000);
        assert_eq!(u16::from_be_bytes([out[38], out[39]]), 28);
        assert_eq!(ipv4_checksum(&out[14..34]), 0);
    }
}
