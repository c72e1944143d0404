//! `parser.p4`: Ethernet → IPv4 → UDP (destination port 0xBEE0) → switchml prefix → the
//! header its type selects, and the values after it.
//!
//! Like a P4 parser it only extracts: it fails when a header runs past the packet
//! (`PacketTooShort`, counted as `Malformed`) and when a frame is not switchml traffic, and
//! leaves the field checks (reserved bytes, `ver`, exact length) to `validator.rs`. Fields
//! are read through `switchml_core::wire` views, so the layout has one source.
//!
//! A *bare* datagram (no Ethernet/IPv4/UDP) enters at [`Parser::parse_datagram`]: that is
//! how the model serves as a `switchml_core::switch::Aggregator`.

use switchml_core::wire::{
    self, abort, data, join, join_reply, leave, probe, status, AbortPacket, DataPacket, JoinPacket,
    JoinReplyPacket, LeavePacket, ProbePacket, StatusPacket, SWITCH_PORT,
};

use crate::headers::{
    AbortHeader, Body, DataHeader, Ethernet, Headers, Ipv4, JoinHeader, JoinReplyHeader,
    LeaveHeader, Prefix, ProbeHeader, StatusHeader, Transport, Udp, ETHERNET_LEN, ETHERTYPE_IPV4,
    IPV4_LEN, IP_PROTO_UDP, TRANSPORT_LEN, UDP_LEN,
};
use crate::headers::{PacketOut, CPU_HEADER_LEN};

/// Why the parser rejected a packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParserError {
    /// Not an IPv4/UDP datagram to the switchml port: not ours to count.
    NotSwitchml,
    /// A header runs past the end of the packet.
    PacketTooShort,
}

/// The parser (stateless).
#[derive(Debug, Clone, Copy, Default)]
pub struct Parser;

fn be16(b: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([b[at], b[at + 1]])
}

fn array<const N: usize>(b: &[u8], at: usize) -> [u8; N] {
    let mut a = [0u8; N];
    a.copy_from_slice(&b[at..at + N]);
    a
}

impl Parser {
    /// Parse an Ethernet frame.
    pub fn parse_frame(frame: &[u8]) -> Result<Headers<'_>, ParserError> {
        if frame.len() < TRANSPORT_LEN || be16(frame, 12) != ETHERTYPE_IPV4 {
            return Err(ParserError::NotSwitchml);
        }
        let ip = &frame[ETHERNET_LEN..];
        let (version_ihl, flags_frag, protocol) = (ip[0], be16(ip, 6), ip[9]);
        if version_ihl != 0x45 || flags_frag & 0x3FFF != 0 || protocol != IP_PROTO_UDP {
            return Err(ParserError::NotSwitchml);
        }
        let udp = &frame[ETHERNET_LEN + IPV4_LEN..];
        if be16(udp, 2) != SWITCH_PORT {
            return Err(ParserError::NotSwitchml);
        }
        let transport = Transport {
            ethernet: Ethernet {
                dst: array(frame, 0),
                src: array(frame, 6),
                ether_type: ETHERTYPE_IPV4,
            },
            ipv4: Ipv4 {
                tos: ip[1],
                total_len: be16(ip, 2),
                ident: be16(ip, 4),
                flags_frag,
                ttl: ip[8],
                protocol,
                src: array(ip, 12),
                dst: array(ip, 16),
            },
            udp: Udp {
                src_port: be16(udp, 0),
                dst_port: SWITCH_PORT,
                length: be16(udp, 4),
            },
        };
        // The UDP length bounds the datagram; Ethernet padding after it is ignored.
        let end = usize::from(transport.udp.length)
            .checked_sub(UDP_LEN)
            .map(|n| TRANSPORT_LEN + n)
            .filter(|&end| end <= frame.len())
            .ok_or(ParserError::PacketTooShort)?;
        let mut headers = Self::parse_datagram(&frame[TRANSPORT_LEN..end])?;
        headers.transport = Some(transport);
        Ok(headers)
    }

    /// Split a frame that came in on the CPU port into the controller's `packet_out`
    /// header and the frame after it (`parse_packet_out`); `None` if it is too short.
    pub fn parse_packet_out(bytes: &[u8]) -> Option<(PacketOut, &[u8])> {
        let header = bytes.get(..CPU_HEADER_LEN)?;
        let header = PacketOut::from_bytes([header[0], header[1]]);
        Some((header, &bytes[CPU_HEADER_LEN..]))
    }

    /// Parse a bare switchml datagram.
    pub fn parse_datagram(datagram: &[u8]) -> Result<Headers<'_>, ParserError> {
        let (msg_type, job, rank) = match wire::peek(datagram) {
            Ok((t, job, rank)) => (u8::from(t), job, rank),
            Err(wire::Error::Version(_)) => (datagram[1], be16(datagram, 2), be16(datagram, 4)),
            Err(_) => return Err(ParserError::PacketTooShort),
        };
        let prefix = Prefix {
            version: datagram[0],
            msg_type,
            job,
            rank,
        };
        let need = |len: usize| {
            if datagram.len() < len {
                Err(ParserError::PacketTooShort)
            } else {
                Ok(len)
            }
        };
        let (body, header_len) = match (prefix.version, msg_type) {
            (wire::VERSION, 0x01) => (Body::Contribution(data_header(datagram)?), data::HEADER_LEN),
            (wire::VERSION, 0x10) => (Body::Join(join_header(datagram)?), need(join::LEN)?),
            (wire::VERSION, 0x12) => (Body::Probe(probe_header(datagram)?), need(probe::LEN)?),
            (wire::VERSION, 0x14) => (Body::Abort(abort_header(datagram)?), need(abort::LEN)?),
            (wire::VERSION, 0x15) => (Body::Status(status_header(datagram)?), need(status::LEN)?),
            (wire::VERSION, 0x17) => (Body::Leave(leave_header(datagram)?), need(leave::LEN)?),
            (wire::VERSION, 0x02) => match data_header(datagram) {
                Ok(d) => (Body::Result(Some(d)), data::HEADER_LEN),
                Err(_) => (Body::Result(None), wire::prefix::LEN),
            },
            (wire::VERSION, 0x11) => match join_reply_header(datagram) {
                Ok(r) => (Body::JoinReply(Some(r)), join_reply::HEADER_LEN),
                Err(_) => (Body::JoinReply(None), wire::prefix::LEN),
            },
            (wire::VERSION, 0x18) => (Body::Cookie, wire::prefix::LEN),
            (wire::VERSION, 0x13 | 0x16) => (Body::SwitchOnly, wire::prefix::LEN),
            (wire::VERSION, _) => (Body::Unknown, wire::prefix::LEN),
            _ => (Body::OtherVersion, wire::prefix::LEN),
        };
        Ok(Headers {
            transport: None,
            prefix,
            body,
            payload: &datagram[header_len..],
            datagram,
        })
    }
}

fn data_header(b: &[u8]) -> Result<DataHeader, ParserError> {
    if b.len() < data::HEADER_LEN {
        return Err(ParserError::PacketTooShort);
    }
    let p = DataPacket::new_unchecked(b);
    Ok(DataHeader {
        slot: p.slot(),
        ver: p.ver(),
        flags: p.flags().0,
        count: p.count(),
        seq: p.seq(),
        exp: p.exp(),
        reserved: u32::from(p.reserved_a()) << 16 | u32::from(p.reserved_b()),
        session: p.session(),
    })
}

fn join_reply_header(b: &[u8]) -> Result<JoinReplyHeader, ParserError> {
    if b.len() < join_reply::HEADER_LEN {
        return Err(ParserError::PacketTooShort);
    }
    let p = JoinReplyPacket::new_unchecked(b);
    Ok(JoinReplyHeader {
        world: p.world(),
        flags: p.flags().0,
        session: p.session(),
        nonce: p.nonce(),
        bitmap_len: p.bitmap_len(),
    })
}

fn join_header(b: &[u8]) -> Result<JoinHeader, ParserError> {
    if b.len() < join::LEN {
        return Err(ParserError::PacketTooShort);
    }
    let p = JoinPacket::new_unchecked(b);
    Ok(JoinHeader {
        world: p.world(),
        slot_lo: p.slot_lo(),
        slot_count: p.slot_count(),
        count: p.count(),
        lanes: p.lanes(),
        nonce: p.nonce(),
        job: p.job_id(),
        rank: p.rank(),
        cookie: p.cookie(),
        tag: p.tag(),
    })
}

fn probe_header(b: &[u8]) -> Result<ProbeHeader, ParserError> {
    if b.len() < probe::LEN {
        return Err(ParserError::PacketTooShort);
    }
    let p = ProbePacket::new_unchecked(b);
    Ok(ProbeHeader {
        slot: p.slot(),
        ver: p.ver(),
        // The flags byte is reserved here: the P4 programs do not offer PROBE_RESULTS.
        reserved: u32::from(p.flags()) << 16 | u32::from(p.reserved_b()),
        seq: p.seq(),
        session: p.session(),
    })
}

fn abort_header(b: &[u8]) -> Result<AbortHeader, ParserError> {
    if b.len() < abort::LEN {
        return Err(ParserError::PacketTooShort);
    }
    let p = AbortPacket::new_unchecked(b);
    Ok(AbortHeader {
        reason: u8::from(p.reason()),
        detail: p.detail(),
        reserved: u32::from(p.reserved_a()) << 16 | u32::from(p.reserved_b()),
        epoch: p.epoch(),
        session: p.session(),
    })
}

fn leave_header(b: &[u8]) -> Result<LeaveHeader, ParserError> {
    if b.len() < leave::LEN {
        return Err(ParserError::PacketTooShort);
    }
    let p = LeavePacket::new_unchecked(b);
    Ok(LeaveHeader {
        reserved: p.reserved(),
        session: p.session(),
    })
}

fn status_header(b: &[u8]) -> Result<StatusHeader, ParserError> {
    if b.len() < status::LEN {
        return Err(ParserError::PacketTooShort);
    }
    let p = StatusPacket::new_unchecked(b);
    Ok(StatusHeader {
        reserved: p.reserved(),
        nonce: p.nonce(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const CONTRIBUTION: [u8; 28] = [
        1, 1, 0, 7, 0, 2, 0, 5, 1, 2, 0, 1, 0, 0, 0, 9, 0x82, 0, 0, 0, 0xA1, 0xB2, 0xC3, 0xD4, 0,
        0, 0, 42,
    ];

    #[test]
    fn a_contribution_parses_into_its_header_and_values() {
        let h = Parser::parse_datagram(&CONTRIBUTION).unwrap();
        assert_eq!((h.prefix.job, h.prefix.rank), (7, 2));
        let Body::Contribution(d) = h.body else {
            panic!("{:?}", h.body)
        };
        assert_eq!((d.slot, d.ver, d.flags, d.count, d.seq), (5, 1, 2, 1, 9));
        assert_eq!(d.session, 0xA1B2_C3D4);
        assert_eq!(h.payload, [0, 0, 0, 42]);
    }

    #[test]
    fn short_headers_fail_and_other_types_stop_at_the_prefix() {
        assert_eq!(
            Parser::parse_datagram(&CONTRIBUTION[..23]).err(),
            Some(ParserError::PacketTooShort)
        );
        assert_eq!(
            Parser::parse_datagram(&[1, 2, 3]).err(),
            Some(ParserError::PacketTooShort)
        );
        // A Result or JoinReply too short for its header is the validator's to refuse.
        let h = Parser::parse_datagram(&[1, 0x02, 0, 7, 0, 0, 9]).unwrap();
        assert_eq!((h.body, h.payload.len()), (Body::Result(None), 1));
        let h = Parser::parse_datagram(&[1, 0x11, 0, 7, 0, 0, 9]).unwrap();
        assert_eq!((h.body, h.payload.len()), (Body::JoinReply(None), 1));
        let mut result = CONTRIBUTION;
        result[1] = 0x02;
        let h = Parser::parse_datagram(&result).unwrap();
        assert!(matches!(h.body, Body::Result(Some(d)) if d.seq == 9));
        let h = Parser::parse_datagram(&[1, 0x13, 0, 7, 0, 0, 9]).unwrap();
        assert_eq!((h.body, h.payload.len()), (Body::SwitchOnly, 1));
        let h = Parser::parse_datagram(&[2, 0x01, 0, 7, 0, 0]).unwrap();
        assert_eq!(h.body, Body::OtherVersion);
        let h = Parser::parse_datagram(&[1, 0x42, 0, 7, 0, 0]).unwrap();
        assert_eq!(h.body, Body::Unknown);
        let h = Parser::parse_datagram(&[1, 0x16, 0, 7, 0, 0]).unwrap();
        assert_eq!(h.body, Body::SwitchOnly);
        assert_eq!(
            Parser::parse_datagram(&[1, 0x15, 0, 7, 0, 0, 0]).err(),
            Some(ParserError::PacketTooShort)
        );
        let mut status = [0u8; 36];
        status[..6].copy_from_slice(&[1, 0x15, 0, 7, 0, 9]);
        let h = Parser::parse_datagram(&status).unwrap();
        assert_eq!(
            h.body,
            Body::Status(StatusHeader {
                reserved: 0,
                nonce: 0
            })
        );
        let leave = [1, 0x17, 0, 7, 0, 2, 0, 0, 1, 2, 3, 4];
        let h = Parser::parse_datagram(&leave).unwrap();
        let session = 0x0102_0304;
        assert_eq!(
            h.body,
            Body::Leave(LeaveHeader {
                reserved: 0,
                session
            })
        );
        assert_eq!(
            Parser::parse_datagram(&leave[..11]).err(),
            Some(ParserError::PacketTooShort)
        );
    }

    fn frame(datagram: &[u8], udp_len: u16, pad: usize) -> Vec<u8> {
        let mut f = vec![0u8; TRANSPORT_LEN];
        f[12..14].copy_from_slice(&ETHERTYPE_IPV4.to_be_bytes());
        f[14] = 0x45;
        f[23] = IP_PROTO_UDP;
        f[36..38].copy_from_slice(&SWITCH_PORT.to_be_bytes());
        f[38..40].copy_from_slice(&udp_len.to_be_bytes());
        f.extend_from_slice(datagram);
        f.resize(f.len() + pad, 0xEE);
        f
    }

    #[test]
    fn frames_are_bounded_by_the_udp_length() {
        let good = frame(&CONTRIBUTION, 36, 6);
        let h = Parser::parse_frame(&good).unwrap();
        assert_eq!(h.datagram, CONTRIBUTION);
        assert!(h.transport.is_some());
        let long = frame(&CONTRIBUTION, 37, 0);
        assert_eq!(
            Parser::parse_frame(&long).err(),
            Some(ParserError::PacketTooShort)
        );
        let mut other_port = good.clone();
        other_port[37] ^= 1;
        assert_eq!(
            Parser::parse_frame(&other_port).err(),
            Some(ParserError::NotSwitchml)
        );
        assert_eq!(
            Parser::parse_frame(&good[..20]).err(),
            Some(ParserError::NotSwitchml)
        );
    }
}
