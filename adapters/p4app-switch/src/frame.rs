//! Ethernet, IPv4 and UDP around the dialect's header, through smoltcp's `wire` views.
//!
//! The original client leaves the IPv4 checksum 0 and the UDP checksum a pseudo-header sum
//! (NIC offload that a software NIC does not do), so neither is checked here. Replies carry
//! a valid IPv4 checksum and a UDP checksum of 0 ("none"), as the original program's do.

use std::net::Ipv4Addr;

use smoltcp::phy::ChecksumCapabilities;
use smoltcp::wire::{
    ArpOperation, ArpPacket, ArpRepr, EthernetAddress, EthernetFrame, EthernetProtocol,
    EthernetRepr, IpProtocol, Ipv4Packet, Ipv4Repr, UdpPacket,
};

/// Ethernet (14), IPv4 without options (20) and UDP (8): where the dialect's header starts
/// in a reply.
pub const REPLY_HEADERS_LEN: usize = 14 + 20 + 8;

/// The UDP destination ports the original P4 parser takes (0xBEE0–0xBEEF).
pub const SWITCH_PORTS: core::ops::RangeInclusive<u16> = 0xBEE0..=0xBEEF;

/// A worker's addresses: how the switch knows a rank and where it sends to it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Peer {
    /// The worker's MAC.
    pub mac: [u8; 6],
    /// The worker's IPv4 address.
    pub ip: Ipv4Addr,
}

/// What one received frame is.
#[derive(Debug, PartialEq, Eq)]
pub enum Frame<'a> {
    /// A dialect request: from `peer` and its UDP `src_port`, to `dst_port`; `payload` is
    /// the UDP payload (the dialect's header and values).
    Request {
        /// The sender.
        peer: Peer,
        /// The UDP source port.
        src_port: u16,
        /// The UDP destination port (one of [`SWITCH_PORTS`]).
        dst_port: u16,
        /// The UDP payload.
        payload: &'a [u8],
    },
    /// An ARP request for the switch's IP from `peer`.
    ArpRequest {
        /// Who asks.
        peer: Peer,
    },
    /// UDP to the switch's IP on a port the program does not serve.
    WrongPort,
    /// A frame to the switch that cannot be parsed (short, bad lengths, fragments).
    Malformed,
    /// Anything else (another host's traffic, another protocol, ARP for another IP):
    /// not for the dialect switch.
    Other,
}

/// Classify `bytes`, a frame received on the switch's interface with MAC `mac`, for the
/// switch at `ip`. Never panics.
pub fn classify(bytes: &[u8], mac: [u8; 6], ip: Ipv4Addr) -> Frame<'_> {
    let Ok(eth) = EthernetFrame::new_checked(bytes) else {
        return Frame::Malformed;
    };
    let to_us = eth.dst_addr() == EthernetAddress(mac);
    let src = eth.src_addr().0;
    // The views' payloads borrow the view; slice the caller's bytes to keep their lifetime.
    let payload = bytes
        .get(EthernetFrame::<&[u8]>::header_len()..)
        .unwrap_or(&[]);
    match eth.ethertype() {
        EthernetProtocol::Arp if to_us || eth.dst_addr().is_broadcast() => {
            classify_arp(payload, ip)
        }
        EthernetProtocol::Ipv4 if to_us => classify_ipv4(payload, src, ip),
        _ => Frame::Other,
    }
}

fn classify_arp(bytes: &[u8], ip: Ipv4Addr) -> Frame<'_> {
    let Ok(arp) = ArpPacket::new_checked(bytes) else {
        return Frame::Malformed;
    };
    match ArpRepr::parse(&arp) {
        Ok(ArpRepr::EthernetIpv4 {
            operation: ArpOperation::Request,
            source_hardware_addr,
            source_protocol_addr,
            target_protocol_addr,
            ..
        }) if target_protocol_addr == ip => Frame::ArpRequest {
            peer: Peer {
                mac: source_hardware_addr.0,
                ip: source_protocol_addr,
            },
        },
        Ok(_) => Frame::Other,
        Err(_) => Frame::Malformed,
    }
}

fn classify_ipv4(bytes: &[u8], mac: [u8; 6], ip: Ipv4Addr) -> Frame<'_> {
    let Ok(ipv4) = Ipv4Packet::new_checked(bytes) else {
        return Frame::Malformed;
    };
    if ipv4.version() != 4 {
        return Frame::Malformed;
    }
    if ipv4.dst_addr() != ip || ipv4.next_header() != IpProtocol::Udp {
        return Frame::Other;
    }
    if ipv4.more_frags() || ipv4.frag_offset() != 0 {
        return Frame::Malformed;
    }
    // `new_checked` bounded both lengths by the buffer.
    let (start, end) = (
        usize::from(ipv4.header_len()),
        usize::from(ipv4.total_len()),
    );
    let Some(udp_bytes) = bytes.get(start..end) else {
        return Frame::Malformed;
    };
    let Ok(udp) = UdpPacket::new_checked(udp_bytes) else {
        return Frame::Malformed;
    };
    if !SWITCH_PORTS.contains(&udp.dst_port()) {
        return Frame::WrongPort;
    }
    let Some(payload) = udp_bytes.get(8..usize::from(udp.len())) else {
        return Frame::Malformed;
    };
    Frame::Request {
        peer: Peer {
            mac,
            ip: ipv4.src_addr(),
        },
        src_port: udp.src_port(),
        dst_port: udp.dst_port(),
        payload,
    }
}

/// Write into `out` the ARP reply that tells `peer` the switch (`mac`, `ip`) and return
/// its length (42 bytes; `out` must hold them).
pub fn arp_reply(out: &mut [u8], mac: [u8; 6], ip: Ipv4Addr, peer: Peer) -> Option<usize> {
    let arp = ArpRepr::EthernetIpv4 {
        operation: ArpOperation::Reply,
        source_hardware_addr: EthernetAddress(mac),
        source_protocol_addr: ip,
        target_hardware_addr: EthernetAddress(peer.mac),
        target_protocol_addr: peer.ip,
    };
    let eth = EthernetRepr {
        src_addr: EthernetAddress(mac),
        dst_addr: EthernetAddress(peer.mac),
        ethertype: EthernetProtocol::Arp,
    };
    let len = eth.buffer_len() + arp.buffer_len();
    let out = out.get_mut(..len)?;
    let mut frame = EthernetFrame::new_unchecked(&mut *out);
    eth.emit(&mut frame);
    arp.emit(&mut ArpPacket::new_unchecked(frame.payload_mut()));
    Some(len)
}

/// Write the Ethernet, IPv4 and UDP headers of a reply of `payload_len` bytes from the
/// switch (`mac`, `ip`, UDP port `src_port`) to `peer`'s UDP port `dst_port` into the first
/// [`REPLY_HEADERS_LEN`] bytes of `out`: TTL 64, id 0, no flags, a valid IPv4 checksum,
/// UDP checksum 0, as the original program's replies. Returns the frame length, or `None` if `out` is too short.
pub fn write_reply_headers(
    out: &mut [u8],
    (mac, ip, src_port): ([u8; 6], Ipv4Addr, u16),
    (peer, dst_port): (Peer, u16),
    payload_len: usize,
) -> Option<usize> {
    let len = REPLY_HEADERS_LEN + payload_len;
    let udp_len = u16::try_from(8 + payload_len).ok()?;
    let out = out.get_mut(..len)?;
    let eth = EthernetRepr {
        src_addr: EthernetAddress(mac),
        dst_addr: EthernetAddress(peer.mac),
        ethertype: EthernetProtocol::Ipv4,
    };
    let ipv4 = Ipv4Repr {
        src_addr: ip,
        dst_addr: peer.ip,
        next_header: IpProtocol::Udp,
        payload_len: usize::from(udp_len),
        hop_limit: 64,
    };
    let mut frame = EthernetFrame::new_unchecked(&mut *out);
    eth.emit(&mut frame);
    let mut packet = Ipv4Packet::new_unchecked(frame.payload_mut());
    ipv4.emit(&mut packet, &ChecksumCapabilities::ignored());
    // The original's replies do not set DF (smoltcp's emit does); the checksum follows.
    packet.set_dont_frag(false);
    packet.fill_checksum();
    let mut udp = UdpPacket::new_unchecked(packet.payload_mut());
    udp.set_src_port(src_port);
    udp.set_dst_port(dst_port);
    udp.set_len(udp_len);
    udp.set_checksum(0);
    Some(len)
}

#[cfg(test)]
#[path = "frame_tests.rs"]
mod tests;
