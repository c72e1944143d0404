//! How much a socket has queued toward the network: the congestion signal of the switch
//! daemon (issue 29), which marks Results while it is high.
//!
//! Why the send side (`SIOCOUTQ`): a UDP socket's datagrams stay charged to its send buffer
//! from `sendmmsg` until the device has sent them, so the figure counts the Results waiting
//! in the egress queues (qdiscs) of the links toward the workers — the switch's own output
//! queue, whose depth over the line rate is the queueing delay a Result is about to see. It
//! is one figure for every egress port the socket sends through: one congested downlink
//! among idle ones shows only its own queue, and P equally deep ones show P times one, so a
//! threshold set for one port's queue marks P busy ports at 1/P of that depth each. The
//! receive side says less: `FIONREAD` on a UDP socket gives only the next datagram's length,
//! and a long receive queue means a slow daemon, not a congested link.

use std::io;
use std::os::fd::AsRawFd;

/// Return the bytes of send buffer the socket's datagrams still hold (`SIOCOUTQ`): those
/// written and not yet sent by the device, in the kernel's accounting (each datagram counts
/// with its kernel buffer's overhead, its `truesize`, which is more than its length).
pub fn send_backlog(socket: &impl AsRawFd) -> io::Result<usize> {
    let mut queued: libc::c_int = 0;
    // SAFETY: `socket` is open for the duration of the call (the caller borrows it), and
    // SIOCOUTQ (TIOCOUTQ's number) writes exactly one c_int through the pointer, which
    // points at a live local.
    let rc = unsafe { libc::ioctl(socket.as_raw_fd(), libc::TIOCOUTQ, &mut queued) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(usize::try_from(queued).unwrap_or(0))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::UdpSocket;

    #[test]
    fn a_socket_with_nothing_queued_holds_nothing_and_a_file_is_refused() {
        let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
        assert_eq!(send_backlog(&socket).unwrap(), 0);
        // Loopback delivers at once: nothing stays queued after a send.
        socket
            .send_to(&[0u8; 1024], socket.local_addr().unwrap())
            .unwrap();
        let mut buf = [0u8; 2048];
        socket.recv_from(&mut buf).unwrap();
        assert_eq!(send_backlog(&socket).unwrap(), 0);
        let file = std::fs::File::open("/dev/null").unwrap();
        assert!(send_backlog(&file).is_err());
    }
}
