//! UDP datagrams with a source port of our choosing, written by hand on a raw IPv4 socket:
//! port 0 (which no ordinary socket can send from), or the port of another process's socket
//! (an IP-spoofed datagram, as an off-path attacker on the same network could send).
//!
//! The kernel writes the IP header (its source is the route's, 127.0.0.1 towards loopback);
//! the UDP header is ours, with checksum 0 (none, which IPv4 allows). Raw sockets need
//! `CAP_NET_RAW`: without it [`RawUdp::open`] says so and the tests that need it skip.

use std::io;
use std::net::SocketAddrV4;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

/// UDP header length.
const UDP_HEADER: usize = 8;

/// A raw socket that sends UDP datagrams over IPv4.
pub struct RawUdp {
    fd: OwnedFd,
}

impl RawUdp {
    /// Open one; `Ok(None)` when this process may not open raw sockets.
    pub fn open() -> io::Result<Option<RawUdp>> {
        // SAFETY: socket(2) takes no pointers; a non-negative return is a new fd we own.
        let fd = unsafe {
            libc::socket(
                libc::AF_INET,
                libc::SOCK_RAW | libc::SOCK_CLOEXEC,
                libc::IPPROTO_UDP,
            )
        };
        if fd < 0 {
            let err = io::Error::last_os_error();
            return match err.raw_os_error() {
                Some(libc::EPERM | libc::EACCES) => Ok(None),
                _ => Err(err),
            };
        }
        // SAFETY: `fd` was just returned by socket(2) and nothing else owns it.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        Ok(Some(RawUdp { fd }))
    }

    /// Send `payload` to `to` in a datagram whose UDP source port is `from_port`.
    pub fn send(&self, from_port: u16, to: SocketAddrV4, payload: &[u8]) -> io::Result<()> {
        let len = UDP_HEADER + payload.len();
        let udp_len = u16::try_from(len)
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "datagram too long"))?;
        let mut datagram = Vec::with_capacity(len);
        datagram.extend_from_slice(&from_port.to_be_bytes());
        datagram.extend_from_slice(&to.port().to_be_bytes());
        datagram.extend_from_slice(&udp_len.to_be_bytes());
        datagram.extend_from_slice(&0u16.to_be_bytes()); // checksum: none
        datagram.extend_from_slice(payload);
        let addr = libc::sockaddr_in {
            sin_family: libc::AF_INET as libc::sa_family_t,
            // A raw socket takes no port: the UDP header above carries both.
            sin_port: 0,
            sin_addr: libc::in_addr {
                s_addr: u32::from_ne_bytes(to.ip().octets()),
            },
            sin_zero: [0; 8],
        };
        // SAFETY: `fd` is an open socket we own; the buffer pointer and length describe the
        // live `datagram`, and the address points at a live sockaddr_in with its exact size.
        let sent = unsafe {
            libc::sendto(
                self.fd.as_raw_fd(),
                datagram.as_ptr().cast(),
                datagram.len(),
                0,
                (&addr as *const libc::sockaddr_in).cast(),
                size_of::<libc::sockaddr_in>() as libc::socklen_t,
            )
        };
        if sent < 0 {
            return Err(io::Error::last_os_error());
        }
        if sent as usize != len {
            return Err(io::Error::other(format!("sent {sent} of {len} bytes")));
        }
        Ok(())
    }
}
