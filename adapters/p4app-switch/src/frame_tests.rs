use super::*;

const MAC: [u8; 6] = [2, 0, 0, 0, 0, 0xfe];
const IP: Ipv4Addr = Ipv4Addr::new(10, 77, 0, 254);
const W1: Peer = Peer {
    mac: [2, 0, 0, 0, 0, 1],
    ip: Ipv4Addr::new(10, 77, 0, 1),
};

/// A request as the original client sends it: IPv4 checksum 0, UDP checksum a
/// pseudo-header sum (here just wrong), 64 values.
fn client_frame() -> Vec<u8> {
    let mut f = vec![0u8; 308];
    let len = write_reply_headers(
        &mut f,
        (W1.mac, W1.ip, 4000),
        (Peer { mac: MAC, ip: IP }, 48864),
        266,
    )
    .unwrap();
    assert_eq!(len, 308);
    f[24..26].copy_from_slice(&[0, 0]); // IPv4 checksum left to an absent offload
    f[40..42].copy_from_slice(&[0x12, 0x34]); // UDP checksum wrong
    f[42] = 0x11;
    f
}

#[test]
fn a_client_request_parses_despite_its_checksums() {
    let f = client_frame();
    match classify(&f, MAC, IP) {
        Frame::Request {
            peer,
            src_port,
            dst_port,
            payload,
        } => {
            assert_eq!(
                (peer, src_port, dst_port, payload.len()),
                (W1, 4000, 48864, 266)
            );
            assert_eq!(payload[0], 0x11);
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn replies_have_a_valid_ipv4_checksum_and_no_udp_checksum() {
    let mut f = vec![0u8; 308];
    write_reply_headers(&mut f, (MAC, IP, 48864), (W1, 4000), 266).unwrap();
    let eth = EthernetFrame::new_checked(&f[..]).unwrap();
    assert_eq!(eth.dst_addr().0, W1.mac);
    let ip = Ipv4Packet::new_checked(eth.payload()).unwrap();
    assert!(ip.verify_checksum());
    assert_eq!((ip.hop_limit(), ip.ident(), ip.total_len()), (64, 0, 294));
    assert_eq!(&f[34..42], &[0xbe, 0xe0, 0x0f, 0xa0, 0x01, 0x12, 0, 0]);
}

#[test]
fn other_ports_other_hosts_and_truncations_are_told_apart() {
    let f = client_frame();
    let mut port = f.clone();
    port[36..38].copy_from_slice(&5000u16.to_be_bytes());
    assert_eq!(classify(&port, MAC, IP), Frame::WrongPort);
    let mut other_ip = f.clone();
    other_ip[33] = 253;
    assert_eq!(classify(&other_ip, MAC, IP), Frame::Other);
    let mut other_mac = f.clone();
    other_mac[5] = 0x77;
    assert_eq!(classify(&other_mac, MAC, IP), Frame::Other);
    for cut in [0, 10, 14, 33, 41] {
        assert_eq!(
            classify(&f[..cut], MAC, IP),
            Frame::Malformed,
            "cut at {cut}"
        );
    }
    // The IPv4 total length says more than the frame holds.
    assert_eq!(classify(&f[..200], MAC, IP), Frame::Malformed);
    let mut frag = f.clone();
    frag[20] |= 0x20;
    assert_eq!(classify(&frag, MAC, IP), Frame::Malformed);
}

#[test]
fn arp_requests_for_our_ip_are_answered_and_others_ignored() {
    let ask = |target: Ipv4Addr| {
        let arp = ArpRepr::EthernetIpv4 {
            operation: ArpOperation::Request,
            source_hardware_addr: EthernetAddress(W1.mac),
            source_protocol_addr: W1.ip,
            target_hardware_addr: EthernetAddress([0; 6]),
            target_protocol_addr: target,
        };
        let mut f = vec![0u8; 42];
        let mut eth = EthernetFrame::new_unchecked(&mut f[..]);
        EthernetRepr {
            src_addr: EthernetAddress(W1.mac),
            dst_addr: EthernetAddress::BROADCAST,
            ethertype: EthernetProtocol::Arp,
        }
        .emit(&mut eth);
        arp.emit(&mut ArpPacket::new_unchecked(eth.payload_mut()));
        f
    };
    assert_eq!(classify(&ask(IP), MAC, IP), Frame::ArpRequest { peer: W1 });
    assert_eq!(
        classify(&ask(Ipv4Addr::new(10, 77, 0, 9)), MAC, IP),
        Frame::Other
    );
    let mut out = [0u8; 64];
    let len = arp_reply(&mut out, MAC, IP, W1).unwrap();
    let reply = EthernetFrame::new_checked(&out[..len]).unwrap();
    let arp = ArpRepr::parse(&ArpPacket::new_checked(reply.payload()).unwrap()).unwrap();
    assert!(
        matches!(arp, ArpRepr::EthernetIpv4 { operation: ArpOperation::Reply, source_protocol_addr, target_hardware_addr, .. } if source_protocol_addr == IP && target_hardware_addr.0 == W1.mac)
    );
}
