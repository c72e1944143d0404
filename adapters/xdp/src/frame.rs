//! Ethernet II + IPv4 + UDP framing of a datagram, both ways. A frame written here carries
//! a valid IPv4 header checksum and a valid UDP checksum (RFC 768, over the pseudo-header),
//! Don't Fragment set and no IP options; a frame read here must be IPv4 without options,
//! not a fragment, and UDP whose lengths agree with the frame. Its checksums are not
//! checked: a NIC has dropped a frame whose Ethernet FCS failed, and on a veth a frame
//! from a local socket carries only the pseudo-header's partial sum (the kernel's own UDP
//! receive skips the check there too).

use std::net::{Ipv4Addr, SocketAddrV4};

/// Ethernet + IPv4 + UDP header bytes before the payload.
pub const HEADERS: usize = 14 + 20 + 8;

/// A MAC address.
pub type Mac = [u8; 6];

/// The addresses of a received UDP/IPv4 frame, and where its payload lies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UdpFrame {
    /// The sender's MAC (the last hop's).
    pub src_mac: Mac,
    /// Source address and port.
    pub src: SocketAddrV4,
    /// Destination address and port.
    pub dst: SocketAddrV4,
    /// Payload length (the payload starts at [`HEADERS`]).
    pub len: usize,
}

fn be16(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_be_bytes([*b.get(at)?, *b.get(at + 1)?]))
}

fn ip(b: &[u8], at: usize) -> Option<Ipv4Addr> {
    let o: [u8; 4] = b.get(at..at + 4)?.try_into().ok()?;
    Some(Ipv4Addr::from(o))
}

/// Parse a frame; `None` if it is not a whole IPv4/UDP datagram as described above.
pub fn parse(frame: &[u8]) -> Option<UdpFrame> {
    if frame.len() < HEADERS || be16(frame, 12)? != 0x0800 || frame[14] != 0x45 {
        return None;
    }
    let total = usize::from(be16(frame, 16)?);
    let fragment = be16(frame, 20)? & 0x3fff != 0;
    if fragment || frame[23] != 17 || total < 28 || 14 + total > frame.len() {
        return None;
    }
    let udp_len = usize::from(be16(frame, 38)?);
    if udp_len < 8 || udp_len > total - 20 {
        return None;
    }
    let mut src_mac = [0; 6];
    src_mac.copy_from_slice(&frame[6..12]);
    Some(UdpFrame {
        src_mac,
        src: SocketAddrV4::new(ip(frame, 26)?, be16(frame, 34)?),
        dst: SocketAddrV4::new(ip(frame, 30)?, be16(frame, 36)?),
        len: udp_len - 8,
    })
}

/// One's-complement sum of `bytes` as big-endian 16-bit words, added to `sum` (not yet
/// folded). Four bytes at a time: a 32-bit word is congruent to the sum of its two halves
/// modulo 0xffff, which is all the folded result depends on.
fn add_words(sum: u32, bytes: &[u8]) -> u32 {
    let mut acc = u64::from(sum);
    let mut quads = bytes.chunks_exact(4);
    for q in &mut quads {
        acc += u64::from(u32::from_be_bytes([q[0], q[1], q[2], q[3]]));
    }
    let mut rest = quads.remainder().chunks_exact(2);
    for w in &mut rest {
        acc += u64::from(u16::from_be_bytes([w[0], w[1]]));
    }
    if let [last] = rest.remainder() {
        acc += u64::from(*last) << 8;
    }
    // Fold to 32 bits (twice covers the carry of the first fold).
    acc = (acc & 0xffff_ffff) + (acc >> 32);
    acc = (acc & 0xffff_ffff) + (acc >> 32);
    acc as u32
}

fn fold(sum: u32) -> u16 {
    let mut sum = u64::from(sum);
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// The addresses a frame goes out with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Route {
    /// Our MAC.
    pub src_mac: Mac,
    /// The next hop's MAC.
    pub dst_mac: Mac,
    /// Our address and port.
    pub src: SocketAddrV4,
    /// The peer's.
    pub dst: SocketAddrV4,
}

/// Write the headers for a `len`-byte payload already at `frame[HEADERS..]`; return the
/// frame's length, or `None` if the buffer is too short or the payload too long for UDP.
pub fn emit(frame: &mut [u8], route: &Route, len: usize) -> Option<usize> {
    let total = HEADERS.checked_add(len)?;
    let ip_len = u16::try_from(20 + 8 + len).ok()?;
    if frame.len() < total {
        return None;
    }
    frame[0..6].copy_from_slice(&route.dst_mac);
    frame[6..12].copy_from_slice(&route.src_mac);
    frame[12..14].copy_from_slice(&0x0800u16.to_be_bytes());
    let ip = &mut frame[14..34];
    ip[0] = 0x45;
    ip[1] = 0;
    ip[2..4].copy_from_slice(&ip_len.to_be_bytes());
    ip[4..6].copy_from_slice(&[0, 0]); // no fragments (DF), so no identification
    ip[6..8].copy_from_slice(&0x4000u16.to_be_bytes());
    ip[8] = 64;
    ip[9] = 17;
    ip[10..12].copy_from_slice(&[0, 0]);
    ip[12..16].copy_from_slice(&route.src.ip().octets());
    ip[16..20].copy_from_slice(&route.dst.ip().octets());
    let ip_sum = fold(add_words(0, ip));
    ip[10..12].copy_from_slice(&ip_sum.to_be_bytes());
    let udp_len = ip_len - 20;
    let udp = &mut frame[34..42];
    udp[0..2].copy_from_slice(&route.src.port().to_be_bytes());
    udp[2..4].copy_from_slice(&route.dst.port().to_be_bytes());
    udp[4..6].copy_from_slice(&udp_len.to_be_bytes());
    udp[6..8].copy_from_slice(&[0, 0]);
    let pseudo = add_words(
        add_words(u32::from(udp_len) + 17, &route.src.ip().octets()),
        &route.dst.ip().octets(),
    );
    let sum = match fold(add_words(pseudo, &frame[34..total])) {
        0 => 0xffff, // a computed zero is sent as all ones (RFC 768)
        s => s,
    };
    frame[40..42].copy_from_slice(&sum.to_be_bytes());
    Some(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn route() -> Route {
        Route {
            src_mac: [2, 0, 0, 0, 0, 1],
            dst_mac: [2, 0, 0, 0, 0, 2],
            src: "10.0.0.1:48864".parse().unwrap(),
            dst: "10.0.0.2:40000".parse().unwrap(),
        }
    }

    #[test]
    fn a_written_frame_parses_back_with_valid_checksums() {
        let mut f = [0u8; 64];
        f[HEADERS..HEADERS + 5].copy_from_slice(b"hello");
        let n = emit(&mut f, &route(), 5).unwrap();
        assert_eq!(n, HEADERS + 5);
        let p = parse(&f[..n]).unwrap();
        assert_eq!(p.src, route().src);
        assert_eq!(p.dst, route().dst);
        assert_eq!(p.src_mac, route().src_mac);
        assert_eq!(p.len, 5);
        // A header with its checksum in sums to all ones: folds to zero.
        assert_eq!(fold(add_words(0, &f[14..34])), 0);
        let pseudo = add_words(add_words(13 + 17, &f[26..30]), &f[30..34]);
        assert_eq!(fold(add_words(pseudo, &f[34..n])), 0);
    }

    #[test]
    fn known_bytes_of_an_ipv4_header_checksum() {
        // The classic example (Wikipedia, "IPv4 header checksum"): 0xb861.
        let h = [
            0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11, 0, 0, 0xc0, 0xa8, 0x00,
            0x01, 0xc0, 0xa8, 0x00, 0xc7,
        ];
        assert_eq!(fold(add_words(0, &h)), 0xb861);
    }

    #[test]
    fn the_four_byte_sum_equals_the_two_byte_sum() {
        let bytes: Vec<u8> = (0..1031u32).map(|i| (i * 7919 % 251) as u8).collect();
        for len in [0, 1, 2, 3, 5, 6, 7, 1030, 1031] {
            let slow = bytes[..len].chunks(2).fold(0u64, |s, w| {
                s + u64::from(u16::from_be_bytes([w[0], *w.get(1).unwrap_or(&0)]))
            });
            let mut slow_folded = slow;
            while slow_folded > 0xffff {
                slow_folded = (slow_folded & 0xffff) + (slow_folded >> 16);
            }
            assert_eq!(
                fold(add_words(0, &bytes[..len])),
                !(slow_folded as u16),
                "{len}"
            );
        }
    }

    #[test]
    fn impossible_frames_are_refused() {
        let mut f = [0u8; 64];
        let n = emit(&mut f, &route(), 5).unwrap();
        assert!(parse(&f[..n - 1]).is_none(), "shorter than its IP length");
        let mut g = f;
        g[20] = 0x20; // more fragments
        assert!(parse(&g[..n]).is_none());
        let mut g = f;
        g[23] = 6; // TCP
        assert!(parse(&g[..n]).is_none());
        let mut g = f;
        g[38..40].copy_from_slice(&100u16.to_be_bytes()); // UDP longer than IP
        assert!(parse(&g[..n]).is_none());
        assert!(emit(&mut [0u8; 10], &route(), 5).is_none());
        assert!(parse(&[0u8; 3]).is_none());
    }
}
