//! The path MTU towards a peer, as the kernel knows it: `IP_MTU` (`IPV6_MTU`) on a UDP
//! socket connected to the peer. The kernel answers from the route (the interface's MTU:
//! 65,536 on loopback, 1,500 on an ordinary Ethernet, 9,000 with jumbo frames) lowered by
//! any path MTU it has learned since; nothing is sent.

use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;

/// The IPv4 and UDP headers in front of every datagram, and IPv6's and UDP's.
pub fn ip_udp_headers(to: &SocketAddr) -> usize {
    match to {
        SocketAddr::V4(_) => 20 + 8,
        SocketAddr::V6(_) => 40 + 8,
    }
}

/// Return the MTU of the path to `to` (IP header included), from a socket connected to it.
pub fn path_mtu(to: SocketAddr) -> io::Result<usize> {
    let any: SocketAddr = match to {
        SocketAddr::V4(_) => ([0, 0, 0, 0], 0).into(),
        SocketAddr::V6(_) => (std::net::Ipv6Addr::UNSPECIFIED, 0).into(),
    };
    let socket = UdpSocket::bind(any)?;
    socket.connect(to)?;
    let (level, name) = match to {
        SocketAddr::V4(_) => (libc::IPPROTO_IP, libc::IP_MTU),
        SocketAddr::V6(_) => (libc::IPPROTO_IPV6, libc::IPV6_MTU),
    };
    let mut mtu: libc::c_int = 0;
    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: the descriptor is a socket this function owns and keeps open across the
    // call; `mtu` is a c_int the kernel writes at most `len` (its size) bytes into, and
    // `len` is a valid socklen_t it may update.
    let rc = unsafe {
        libc::getsockopt(
            socket.as_raw_fd(),
            level,
            name,
            (&mut mtu as *mut libc::c_int).cast(),
            &mut len,
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    usize::try_from(mtu).map_err(|_| io::Error::other(format!("the kernel reported MTU {mtu}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_has_the_loopback_interfaces_mtu() {
        let mtu = path_mtu("127.0.0.1:9".parse().unwrap()).unwrap();
        let lo: usize = std::fs::read_to_string("/sys/class/net/lo/mtu")
            .map_or(mtu, |s| s.trim().parse().unwrap());
        // An IP datagram is at most 65,535 bytes: the kernel reports no more.
        assert_eq!(mtu, lo.min(65_535));
        assert!(mtu >= 1280, "{mtu}");
    }

    #[test]
    fn headers_are_ip_and_udp() {
        assert_eq!(ip_udp_headers(&"127.0.0.1:1".parse().unwrap()), 28);
        assert_eq!(ip_udp_headers(&"[::1]:1".parse().unwrap()), 48);
    }
}
