//! The namespaces, workers and checks of the dialect switch's end-to-end tests (root
//! only): `P` workers, each in a namespace of its own behind a macvlan on one veth into the
//! switch's namespace, drive the core's `P4appWorker` (through `UdpDialectWorker`, which
//! fails a job after a minute) over kernel UDP sockets (valid checksums) against
//! `RunningP4appSwitch` on raw frames, after the gRPC calls in the original client's order.
//!
//! ```text
//!  ns W1: mv1 10.77.0.1 ─┐
//!  ns W2: mv2 10.77.0.2 ─┼─ macvlan on h0 (ns hub) ══ veth ══ s0 (ns switch)
//!  ns X:  mv99 10.77.0.99┘   (the intruder)             the switch: 10.77.0.254
//!                                                       gRPC: 10.77.0.253:50099
//! ```
//!
//! Every namespace is named `{prefix}{pid}{tag}-…` (the caller's prefix); the interfaces are
//! made inside them. Skipped, with a message, when not root or when `ip netns` fails.

#![allow(dead_code)]

use std::fs::File;
use std::net::{Ipv4Addr, SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;
use std::process::Command;
use std::time::Duration;

use switchml_core::p4app::{P4appSize, P4appTensor};
use switchml_p4app_switch::raw::RawSocket;
use switchml_p4app_switch::{
    DialectSetup, P4appSwitchConfig, Peer, RunningP4appSwitch, Stats, UdpDialectWorker,
};
use switchml_xdp::xsk::Xsk;

pub const SWITCH_IP: Ipv4Addr = Ipv4Addr::new(10, 77, 0, 254);
pub const CONTROL_IP: Ipv4Addr = Ipv4Addr::new(10, 77, 0, 253);
pub const INTRUDER: u8 = 99;

pub fn peer(i: u8) -> Peer {
    Peer {
        mac: [2, 0, 0, 0, 0, i],
        ip: Ipv4Addr::new(10, 77, 0, i),
    }
}

/// The namespaces of one test; deleted on drop, even when the test fails.
pub struct Topology {
    names: Vec<String>,
}

impl Drop for Topology {
    fn drop(&mut self) {
        for n in &self.names {
            let _ = Command::new("ip").args(["netns", "del", n]).status();
        }
    }
}

impl Topology {
    pub fn ns(&self, what: &str) -> String {
        self.names
            .iter()
            .find(|n| n.ends_with(&format!("-{what}")))
            .cloned()
            .unwrap_or_default()
    }
}

pub fn run(args: &[&str]) -> bool {
    Command::new(args[0])
        .args(&args[1..])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// How the switch's side is built and run.
#[derive(Debug, Clone, Copy)]
pub struct SwitchSide {
    /// The namespaces' prefix (each test file has its own).
    pub prefix: &'static str,
    /// Receive and transmit queues of the veth s0-h0.
    pub queues: u8,
    /// Frames through AF_XDP (`P4appSwitchConfig::xdp`).
    pub xdp: bool,
    /// Serve on a bridge `{prefix}br` with s0 its port (a bridge has no native XDP hook)
    /// instead of on s0 itself.
    pub bridge: bool,
    /// A queue of s0 that another AF_XDP socket holds from before the switch starts to
    /// after it stops, so that the switch cannot bind it.
    pub busy_queue: Option<u32>,
}

/// The switch on s0's AF_PACKET socket, one queue.
pub const PACKET: SwitchSide = SwitchSide {
    prefix: "p4a",
    queues: 1,
    xdp: false,
    bridge: false,
    busy_queue: None,
};

impl SwitchSide {
    /// The interface the switch serves.
    pub fn iface(&self) -> String {
        match self.bridge {
            true => format!("{}br", self.prefix),
            false => "s0".into(),
        }
    }
}

/// Build the drawing above for `workers` workers, with `loss` percent of the workers'
/// dialect frames dropped each way by nftables; `None` (and a message) if not possible.
pub fn topology(side: SwitchSide, tag: &str, workers: u8, loss: u32) -> Option<Topology> {
    // SAFETY: geteuid has no preconditions and cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("skipped: the namespace test needs root");
        return None;
    }
    let base = format!("{}{}{tag}", side.prefix, std::process::id() % 100_000);
    let mut names = vec![format!("{base}-switch"), format!("{base}-hub")];
    names.extend(
        (1..=workers)
            .chain([INTRUDER])
            .map(|i| format!("{base}-w{i}")),
    );
    let mut t = Topology { names: Vec::new() };
    for n in &names {
        if !run(&["ip", "netns", "add", n]) {
            eprintln!("skipped: `ip netns add` failed");
            return None;
        }
        t.names.push(n.clone());
        run(&[
            "ip",
            "netns",
            "exec",
            n,
            "sysctl",
            "-qw",
            "net.ipv6.conf.all.disable_ipv6=1",
        ]);
        run(&["ip", "-n", n, "link", "set", "lo", "up"]);
    }
    let (sw, hub) = (t.ns("switch"), t.ns("hub"));
    let q = side.queues.max(1).to_string();
    let ok = run(&[
        "ip",
        "link",
        "add",
        "s0",
        "netns",
        &sw,
        "numtxqueues",
        &q,
        "numrxqueues",
        &q,
        "type",
        "veth",
        "peer",
        "name",
        "h0",
        "netns",
        &hub,
        "numtxqueues",
        &q,
        "numrxqueues",
        &q,
    ]) && (!side.bridge || bridge(&sw, &side.iface()))
        && run(&[
            "ip",
            "-n",
            &sw,
            "addr",
            "add",
            &format!("{CONTROL_IP}/24"),
            "dev",
            &side.iface(),
        ])
        && run(&["ip", "-n", &sw, "link", "set", "s0", "up"])
        && run(&["ip", "-n", &hub, "link", "set", "h0", "up"]);
    if !ok {
        eprintln!("skipped: could not make the veth pair");
        return None;
    }
    for i in (1..=workers).chain([INTRUDER]) {
        let (ns, dev, p) = (t.ns(&format!("w{i}")), format!("mv{i}"), peer(i));
        let mac = p.mac.map(|b| format!("{b:02x}")).join(":");
        let ok = run(&[
            "ip", "-n", &hub, "link", "add", &dev, "link", "h0", "type", "macvlan", "mode",
            "bridge",
        ]) && run(&["ip", "-n", &hub, "link", "set", &dev, "netns", &ns])
            && run(&["ip", "-n", &ns, "link", "set", &dev, "address", &mac])
            && run(&[
                "ip",
                "-n",
                &ns,
                "addr",
                "add",
                &format!("{}/24", p.ip),
                "dev",
                &dev,
            ])
            && run(&["ip", "-n", &ns, "link", "set", &dev, "up"]);
        if !ok {
            eprintln!("skipped: could not make the macvlan of worker {i}");
            return None;
        }
        if loss > 0 && i != INTRUDER {
            let rules = format!(
                "table inet loss {{ chain out {{ type filter hook output priority 0; udp dport 48864 numgen random mod 100 < {loss} drop; }}; \
                 chain in {{ type filter hook input priority 0; udp sport 48864 numgen random mod 100 < {loss} drop; }}; }}"
            );
            if !run(&["ip", "netns", "exec", &ns, "nft", &rules]) {
                eprintln!("skipped: nftables is not available");
                return None;
            }
        }
    }
    Some(t)
}

/// Make bridge `name` in namespace `ns`, with s0 its port.
fn bridge(ns: &str, name: &str) -> bool {
    run(&["ip", "-n", ns, "link", "add", name, "type", "bridge"])
        && run(&["ip", "-n", ns, "link", "set", "s0", "master", name])
        && run(&["ip", "-n", ns, "link", "set", name, "up"])
}

/// Run `f` on a thread inside namespace `ns`.
pub fn in_ns<T: Send + 'static>(
    ns: &str,
    f: impl FnOnce() -> T + Send + 'static,
) -> std::thread::JoinHandle<T> {
    let path = format!("/run/netns/{ns}");
    std::thread::spawn(move || {
        let file = File::open(&path).expect("namespace file");
        // SAFETY: setns moves only this thread into the namespace the open descriptor
        // names; the descriptor stays open across the call.
        let rc = unsafe { libc::setns(file.as_raw_fd(), libc::CLONE_NEWNET) };
        assert_eq!(rc, 0, "setns: {}", std::io::Error::last_os_error());
        f()
    })
}

/// Run `f(rank)` for ranks `0..p`, each on a thread in its worker's namespace; return the
/// results in rank order.
pub fn on_workers<T: Send + 'static>(
    t: &Topology,
    p: u8,
    f: impl Fn(u8) -> T + Send + Clone + 'static,
) -> Vec<T> {
    let handles: Vec<_> = (0..p)
        .map(|r| {
            let f = f.clone();
            in_ns(&t.ns(&format!("w{}", r + 1)), move || f(r))
        })
        .collect();
    handles
        .into_iter()
        .map(|h| h.join().expect("worker"))
        .collect()
}

#[derive(Clone, Copy, Debug)]
pub enum Kind {
    I32,
    F32,
}

/// Worker `rank`'s input for job `job`: deterministic, signed, varied in magnitude.
pub fn input(rank: usize, job: usize, n: usize) -> (Vec<i32>, Vec<f32>) {
    let ints = (0..n)
        .map(|j| ((rank * 7919 + job * 104_729 + j * 31) % 200_001) as i32 - 100_000)
        .collect();
    let floats = (0..n)
        .map(|j| {
            let x = ((rank * 13 + job * 17 + j * 7) % 1000) as f32 - 500.0;
            x * (1.0 + (j % 5) as f32) / 64.0
        })
        .collect();
    (ints, floats)
}

/// Worker `rank` of `workers`: join through the control plane (its MAC found from its
/// interface), then run `jobs` jobs.
pub fn worker(
    rank: u8,
    workers: u8,
    size: P4appSize,
    jobs: &[(Kind, usize)],
    junk: bool,
) -> Vec<(Vec<i32>, Vec<f32>)> {
    let control = SocketAddr::from((CONTROL_IP, switchml_p4app_switch::CONTROL_PORT));
    let mut setup = DialectSetup::new(control, u16::from(rank), u16::from(workers));
    setup.size = size;
    setup.session_id = 7;
    let mut w = UdpDialectWorker::join(&setup).expect("join");
    assert_eq!(w.me(), peer(rank + 1));
    assert_eq!(w.switch().ip, SWITCH_IP);
    if junk {
        // From a registered (MAC, IP): a wrong length and a size the program drops.
        let s = UdpSocket::bind((w.me().ip, 4001)).unwrap();
        s.send_to(&[0x11; 100], (SWITCH_IP, 48864)).unwrap();
        let mut bad = vec![0u8; 266];
        bad[0] = 0x10; // size code 0
        s.send_to(&bad, (SWITCH_IP, 48864)).unwrap();
    }
    let mut out = Vec::new();
    for (j, &(kind, n)) in jobs.iter().enumerate() {
        let (mut ints, mut floats) = input(usize::from(rank), j, n);
        let tensor = match kind {
            Kind::I32 => P4appTensor::I32(&mut ints),
            Kind::F32 => P4appTensor::F32(&mut floats),
        };
        w.allreduce(tensor)
            .unwrap_or_else(|e| panic!("rank {rank}: job {j}: {e}"));
        out.push((ints, floats));
    }
    out
}

/// Send what no worker would: an unknown sender, a wrong port, frames that do not parse.
pub fn intrude(switch_mac: [u8; 6]) {
    let me = peer(INTRUDER);
    let s = UdpSocket::bind((me.ip, 4000)).unwrap();
    let mut good = vec![0u8; 266];
    good[0] = 0x11;
    s.send_to(&good, (SWITCH_IP, 48864)).unwrap();
    s.send_to(&good, (SWITCH_IP, 5000)).unwrap();
    let raw = RawSocket::open(&format!("mv{INTRUDER}"), Duration::from_millis(10)).unwrap();
    let mut frame = [0u8; 60];
    frame[..6].copy_from_slice(&switch_mac);
    frame[6..12].copy_from_slice(&me.mac);
    frame[12..14].copy_from_slice(&[0x08, 0x00]);
    frame[14] = 0x4f; // IHL 15: an IPv4 header longer than the frame
    raw.send(&frame).unwrap();
    frame[14] = 0x65; // version 6 in an IPv4 frame
    raw.send(&frame).unwrap();
}

pub fn check(p: usize, jobs: &[(Kind, usize)], results: &[Vec<(Vec<i32>, Vec<f32>)>]) {
    for (j, &(kind, n)) in jobs.iter().enumerate() {
        let inputs: Vec<_> = (0..p).map(|r| input(r, j, n)).collect();
        for (rank, res) in results.iter().enumerate() {
            let (ints, floats) = &res[j];
            match kind {
                Kind::I32 => {
                    for (i, got) in ints.iter().enumerate() {
                        let want = inputs.iter().fold(0i32, |a, x| a.wrapping_add(x.0[i]));
                        assert_eq!(*got, want, "job {j} rank {rank} element {i}");
                    }
                }
                Kind::F32 => {
                    let maxabs = inputs
                        .iter()
                        .flat_map(|x| x.1.iter())
                        .fold(0f64, |a, v| a.max(f64::from(v.abs())));
                    for (i, got) in floats.iter().enumerate() {
                        let want: f64 = inputs.iter().map(|x| f64::from(x.1[i])).sum();
                        // Per value: half a step of the scale plus the f32 product's rounding
                        // (64 steps); the sum of P; then the f32 of the result.
                        let step = (p * p) as f64 * 2.0 * maxabs / f64::from(i32::MAX);
                        let bound = 65.0 * step + want.abs() * 1e-6;
                        let err = (f64::from(*got) - want).abs();
                        assert!(
                            err <= bound,
                            "job {j} rank {rank} element {i}: {got} vs {want}"
                        );
                    }
                }
            }
        }
    }
}

/// Run three jobs (int32, float32, int32) of `p` workers of `size` with `loss` percent
/// lost (junk from the intruder and rank 0 when there is no loss) against the switch on
/// `side`; check the sums and the counters every side shares; return the switch's counters
/// and its AF_XDP sockets. `None` if skipped.
pub fn scenario(
    side: SwitchSide,
    tag: &str,
    p: u8,
    size: P4appSize,
    loss: u32,
) -> Option<(Stats, usize)> {
    let t = topology(side, tag, p, loss)?;
    let n = size.elements();
    let jobs = [
        (Kind::I32, n * 24 + 5),
        (Kind::F32, n * 24 + 3),
        (Kind::I32, n * 3),
    ];
    let junk = loss == 0;
    let (sw, _holder) = in_ns(&t.ns("switch"), move || {
        let holder = side.busy_queue.map(|q| {
            // SAFETY: a NUL-terminated name that outlives the call.
            let index = unsafe { libc::if_nametoindex(c"s0".as_ptr()) };
            Xsk::open(index, q).expect("an AF_XDP socket holds the queue")
        });
        let mut config = P4appSwitchConfig::new(&side.iface(), SWITCH_IP);
        config.slots = 1024;
        config.xdp = side.xdp;
        RunningP4appSwitch::start(&config).map(|sw| (sw, holder))
    })
    .join()
    .unwrap()
    .expect("start the switch");
    let (mac, queues) = (sw.mac(), sw.xdp_queues());
    if junk {
        in_ns(&t.ns(&format!("w{INTRUDER}")), move || intrude(mac))
            .join()
            .unwrap();
    }
    let results = on_workers(&t, p, move |r| worker(r, p, size, &jobs, junk && r == 0));
    let stats = sw.stop();
    eprintln!("{tag}: {stats:?}");
    check(usize::from(p), &jobs, &results);
    assert_eq!(
        (stats.workers, stats.registered),
        (u16::from(p), u16::from(p))
    );
    assert!(stats.switch.multicast > 0);
    if junk {
        assert_eq!(stats.frames.unknown_sender, 1, "{stats:?}");
        assert_eq!(stats.frames.wrong_port, 1, "{stats:?}");
        // Whether a bridge hands IPv4 frames whose header does not parse to its own sockets
        // depends on br_netfilter (bridge-nf-call-iptables drops them): not asserted there.
        if !side.bridge {
            assert_eq!(stats.frames.malformed, 2, "{stats:?}");
        }
        assert_eq!(
            (stats.switch.malformed, stats.switch.size),
            (1, 1),
            "{stats:?}"
        );
        assert!(stats.frames.arp_replies >= 1, "{stats:?}");
    }
    assert_eq!(
        stats.frames.unregistered + stats.frames.send_errors,
        0,
        "{stats:?}"
    );
    Some((stats, queues))
}
