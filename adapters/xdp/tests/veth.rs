//! The AF_XDP path over a veth between two network namespaces (root only; skipped with a
//! reason otherwise): datagrams steered into the AF_XDP socket arrive whole with their
//! source, frames it sends reach an ordinary socket (whose kernel checks the IPv4 and UDP
//! checksums), and an interface without native XDP is refused with a reason.

use std::net::{SocketAddr, UdpSocket};
use std::time::{Duration, Instant};

use switchml_udp::batch::{RecvBatch, SendBatch};
use switchml_xdp::netns::Net;
use switchml_xdp::{Attached, XdpPath};

#[test]
fn datagrams_cross_the_af_xdp_path_both_ways() {
    let Some((net, prefix)) = Net::for_test("AF_XDP over veths", "v", &["a", "b"], 231, 1) else {
        return;
    };
    let (a_ns, b_ns) = (net.namespace("a"), net.namespace("b"));
    let b_addr: SocketAddr = (Net::address(231, 1), 40_001).into();
    // B: an ordinary socket, in its own thread's namespace.
    let b = std::thread::spawn(move || {
        Net::enter(&b_ns).unwrap();
        UdpSocket::bind(b_addr).unwrap()
    })
    .join()
    .unwrap();
    b.set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    Net::enter(&a_ns).unwrap();
    let a_addr: SocketAddr = (Net::address(231, 0), 40_000).into();
    let a = UdpSocket::bind(("0.0.0.0", 40_000)).unwrap();
    a.set_nonblocking(true).unwrap();
    let iface = Attached::attach(&prefix).expect("veth has native XDP");
    let mut path = XdpPath::open(&iface, 0, &a).expect("AF_XDP socket");
    let mut recv = RecvBatch::new(64, 2048);
    let mut send = SendBatch::new(64, 2048, 64);
    let fd = std::os::fd::AsRawFd::as_raw_fd(&a);
    // B to A: until 64 datagrams arrive (ARP first goes through the kernel, untouched).
    let mut got = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut next = 0u32;
    while got.len() < 64 && Instant::now() < deadline {
        if next < 64 {
            b.send_to(&next.to_le_bytes().repeat(100), a_addr).unwrap();
            next += 1;
        }
        path.wait(fd, -1, Duration::from_millis(10)).unwrap();
        let n = path.recv(fd, &mut recv).unwrap();
        for i in 0..n {
            let d = recv.get(i).unwrap();
            assert_eq!(d.from, Some(b_addr));
            assert_eq!(d.bytes.len(), 400);
            got.push(u32::from_le_bytes(d.bytes[..4].try_into().unwrap()));
        }
    }
    got.sort_unstable();
    assert_eq!(got, (0..64).collect::<Vec<_>>(), "every datagram, once");
    assert!(
        path.counters().received > 0,
        "frames came through the AF_XDP socket"
    );
    // A to B, as frames (A learned B's MAC from its frames): B's kernel takes them only if
    // both checksums are right.
    for k in 0..32u32 {
        let (i, buf) = send.buffer().unwrap();
        buf[..4].copy_from_slice(&k.to_le_bytes());
        send.push(i, 1000, Some(&b_addr));
    }
    let done = path.flush(fd, &mut send).unwrap();
    send.clear();
    assert_eq!(done.sent, 32);
    assert_eq!(path.counters().sent, 32, "all as frames");
    let mut seen = Vec::new();
    let mut buf = [0u8; 2048];
    while let Ok((n, from)) = b.recv_from(&mut buf) {
        assert_eq!((n, from), (1000, a_addr));
        seen.push(u32::from_le_bytes(buf[..4].try_into().unwrap()));
    }
    seen.sort_unstable();
    assert_eq!(seen, (0..32).collect::<Vec<_>>());
    drop(path);
    drop(iface);
}

#[test]
fn an_interface_without_native_xdp_is_refused_with_a_reason() {
    let Some((net, _)) = Net::for_test("XDP refusals", "r", &["a"], 232, 1) else {
        return;
    };
    Net::enter(&net.namespace("a")).unwrap();
    let lo = Attached::attach("lo").expect_err("lo is no Ethernet interface");
    assert!(lo.to_string().contains("interface lo"), "{lo}");
    // A bridge is Ethernet, but has no native XDP hook.
    net.add_no_xdp("a", "xd-dum").unwrap();
    let dummy = Attached::attach("xd-dum").expect_err("a bridge has no native XDP");
    assert!(dummy.to_string().contains("attach XDP"), "{dummy}");
    let none = Attached::attach("xd-none").expect_err("no such interface");
    assert!(none.to_string().contains("no such interface"), "{none}");
}
