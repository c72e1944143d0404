//! A hostile source: one Status message sent from UDP source port 0 (written by hand on a
//! raw socket) used to make the switch answer to port 0, `sendmmsg` failed with `EINVAL`
//! and the daemon ended, taking every job with it. Now the datagram is dropped on receive
//! and counted as a bad source, and the switch goes on serving a real all-reduce.
//!
//! Raw sockets need `CAP_NET_RAW`; without it the test says so and passes.

mod common;

use std::io;
use std::net::{SocketAddr, SocketAddrV4};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::time::{Duration, Instant};

use common::*;
use switchml_core::wire::{status, StatusPacket, StatusRepr};
use switchml_udp::Op;

/// UDP header length.
const UDP_HEADER: usize = 8;

/// Send `payload` to `to` in a UDP datagram whose source port is 0 and whose checksum is 0
/// (none, which IPv4 allows), built by hand on a raw socket. Return `Ok(false)` when this
/// process may not open raw sockets.
fn send_from_port_zero(to: SocketAddrV4, payload: &[u8]) -> io::Result<bool> {
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
            Some(libc::EPERM | libc::EACCES) => Ok(false),
            _ => Err(err),
        };
    }
    // SAFETY: `fd` was just returned by socket(2) and nothing else owns it.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    let len = UDP_HEADER + payload.len();
    let mut datagram = Vec::with_capacity(len);
    datagram.extend_from_slice(&0u16.to_be_bytes()); // source port
    datagram.extend_from_slice(&to.port().to_be_bytes()); // destination port
    datagram.extend_from_slice(&u16::try_from(len).unwrap().to_be_bytes()); // length
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
            fd.as_raw_fd(),
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
    assert_eq!(sent as usize, len, "the raw datagram went out whole");
    Ok(true)
}

#[test]
fn a_status_from_port_zero_is_dropped_and_the_switch_serves_on() {
    let world = 2;
    let sw = switch(world, 32, 0.0, 0);
    let SocketAddr::V4(to) = sw.addr() else {
        panic!("the test switch listens on 127.0.0.1");
    };
    let mut payload = [0u8; status::LEN];
    StatusRepr { job: JOB, rank: 0 }.emit(&mut StatusPacket::new_unchecked(&mut payload[..]));
    if !send_from_port_zero(to, &payload).expect("raw send") {
        println!("skipped: raw sockets need CAP_NET_RAW (socket(2) said EPERM)");
        return;
    }
    // The counters are published after a whole step (receive, handle, send), so once the
    // datagram shows as received, the switch has done all it will do with it.
    let deadline = Instant::now() + Duration::from_secs(10);
    while sw.counters().received == 0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(sw.counters().received, 1, "the switch saw the datagram");
    assert!(
        sw.is_running(),
        "one datagram from port 0 stopped the switch"
    );

    let outcomes = per_rank(
        world,
        |r| config(r, world, sw.addr()),
        |comm| {
            let mut x = ints(comm.rank(), world, 3000, 7);
            comm.allreduce(&mut x, Op::Sum).map(|()| x)
        },
    );
    let (a, b) = (ints(0, world, 3000, 7), ints(1, world, 3000, 7));
    let expect: Vec<i32> = a.iter().zip(&b).map(|(x, y)| x.wrapping_add(*y)).collect();
    for (rank, o) in outcomes.into_iter().enumerate() {
        let got = o
            .and_then(|r| r)
            .unwrap_or_else(|e| panic!("rank {rank}: {e}"));
        assert!(got == expect, "rank {rank}: wrong sum");
    }
    let c = sw.stop().expect("the switch ends without an error");
    assert_eq!(
        c.bad_source, 1,
        "the datagram from port 0 counts as a bad source"
    );
    assert_eq!(c.send_failures, 0, "nothing was answered to port 0");
    // Every other datagram was the job's: the Status never reached the job's accounting.
    let job = c.job(JOB).unwrap();
    assert_eq!(
        c.received,
        job.received + 1,
        "the Status was handled: {c:?}"
    );
}
