//! The switch's biggest send cost is replicating each Result to the P lanes that wait for
//! it (issue 17). This measures, on loopback, one sender replicating `N` results of 1,076
//! bytes to `P` receiver sockets:
//!
//! - `unicast`: P `sendmmsg` entries per result, one datagram each (the daemon before);
//! - `unicast + GSO`: the same entries grouped per destination into `UDP_SEGMENT` runs,
//!   received with `UDP_GRO` (the daemon now);
//! - `multicast`: one datagram per result to a group every receiver joined
//!   (`IP_MULTICAST_IF` 127.0.0.1, `IP_MULTICAST_LOOP`), the kernel making the copies.
//!
//! Reported: results/s (every receiver having all of them), the sender's CPU per result and
//! the receivers' CPU per datagram. `cargo bench -p switchml-udp --bench replication`
//! (env `REPL_N`, `REPL_P`, `REPL_ROUNDS`).

use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4, UdpSocket};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use switchml_udp::batch::{RecvBatch, SendBatch};
use switchml_udp::sockaddr;
use switchml_udp::socket::{size_buffer, wait_readable, Buffer};
use switchml_udp::Offload;

const SIZE: usize = 1076;
const WINDOW: usize = 1024;
const GROUP: Ipv4Addr = Ipv4Addr::new(239, 17, 0, 1);

#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Unicast,
    UnicastGso,
    Multicast,
}

impl Mode {
    fn name(self) -> &'static str {
        match self {
            Mode::Unicast => "unicast, sendmmsg",
            Mode::UnicastGso => "unicast, sendmmsg + GSO/GRO",
            Mode::Multicast => "IP multicast, sendmmsg",
        }
    }
}

fn thread_cpu() -> f64 {
    // SAFETY: getrusage writes one rusage into the live, zeroed struct we pass.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut ru) };
    let t = |tv: libc::timeval| tv.tv_sec as f64 + tv.tv_usec as f64 * 1e-6;
    t(ru.ru_utime) + t(ru.ru_stime)
}

fn set_opt<T>(fd: i32, level: i32, name: i32, value: &T) -> std::io::Result<()> {
    // SAFETY: `value` is a live T and its exact size is passed.
    let rc = unsafe {
        libc::setsockopt(
            fd,
            level,
            name,
            (value as *const T).cast(),
            size_of::<T>() as libc::socklen_t,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// Bind `p` receivers: own ports (unicast) or one group port each joined (multicast).
fn receivers(mode: Mode, p: usize) -> std::io::Result<(Vec<UdpSocket>, Vec<SocketAddr>)> {
    let mut socks = Vec::new();
    let mut addrs = Vec::new();
    if mode != Mode::Multicast {
        for _ in 0..p {
            let s = UdpSocket::bind("127.0.0.1:0")?;
            addrs.push(s.local_addr()?);
            socks.push(s);
        }
        return Ok((socks, addrs));
    }
    let port = UdpSocket::bind("127.0.0.1:0")?.local_addr()?.port();
    for _ in 0..p {
        // SAFETY: socket() takes no pointers; a non-negative return is a new fd we own.
        let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM, 0) };
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: `fd` was just returned by socket() and nothing else owns it.
        let s = unsafe { <UdpSocket as std::os::fd::FromRawFd>::from_raw_fd(fd) };
        set_opt(fd, libc::SOL_SOCKET, libc::SO_REUSEADDR, &1i32)?;
        let mut st: libc::sockaddr_storage =
            // SAFETY: all-zero is a valid sockaddr_storage.
            unsafe { std::mem::zeroed() };
        let len = sockaddr::to_storage(&SocketAddr::V4(SocketAddrV4::new(GROUP, port)), &mut st);
        // SAFETY: `st` holds a sockaddr_in of `len` bytes.
        if unsafe { libc::bind(fd, (&st as *const libc::sockaddr_storage).cast(), len) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        let mreq = libc::ip_mreq {
            imr_multiaddr: libc::in_addr {
                s_addr: u32::from_ne_bytes(GROUP.octets()),
            },
            imr_interface: libc::in_addr {
                s_addr: u32::from_ne_bytes([127, 0, 0, 1]),
            },
        };
        set_opt(fd, libc::IPPROTO_IP, libc::IP_ADD_MEMBERSHIP, &mreq)?;
        socks.push(s);
    }
    addrs.push(SocketAddr::V4(SocketAddrV4::new(GROUP, port)));
    Ok((socks, addrs))
}

struct Outcome {
    results_per_s: f64,
    send_cpu_per_result: f64,
    recv_cpu_per_datagram: f64,
    delivered: f64,
}

fn run(mode: Mode, n: usize, p: usize) -> std::io::Result<Outcome> {
    let (socks, dests) = receivers(mode, p)?;
    let tx = UdpSocket::bind("127.0.0.1:0")?;
    tx.set_nonblocking(true)?;
    let _ = size_buffer(&tx, Buffer::Send, 8 << 20);
    let fd = tx.as_raw_fd();
    if mode == Mode::Multicast {
        let ifaddr = libc::in_addr {
            s_addr: u32::from_ne_bytes([127, 0, 0, 1]),
        };
        set_opt(fd, libc::IPPROTO_IP, libc::IP_MULTICAST_IF, &ifaddr)?;
        set_opt(fd, libc::IPPROTO_IP, libc::IP_MULTICAST_LOOP, &1i32)?;
    }
    let counts: Arc<Vec<AtomicUsize>> = Arc::new((0..p).map(|_| AtomicUsize::new(0)).collect());
    let done = Arc::new(AtomicBool::new(false));
    let start = Instant::now();
    let mut threads = Vec::new();
    for (k, s) in socks.into_iter().enumerate() {
        s.set_nonblocking(true)?;
        let _ = size_buffer(&s, Buffer::Receive, 8 << 20);
        let (counts, done) = (counts.clone(), done.clone());
        threads.push(std::thread::spawn(move || {
            let cpu = thread_cpu();
            let rfd = s.as_raw_fd();
            let gro = mode == Mode::UnicastGso && Offload::enable(rfd).gro;
            let mut recv = RecvBatch::with_gro(if gro { 16 } else { 64 }, SIZE, gro);
            let mut count = 0;
            let mut last = Instant::now();
            let mut idle: Option<Instant> = None;
            while count < n {
                if done.load(Ordering::Relaxed)
                    && idle.get_or_insert_with(Instant::now).elapsed() > Duration::from_millis(300)
                {
                    break;
                }
                let _ = wait_readable(rfd, None, Duration::from_millis(50));
                let got = recv.recv(rfd).unwrap_or(0);
                if got > 0 {
                    count += got;
                    last = Instant::now();
                    counts[k].store(count, Ordering::Relaxed);
                }
            }
            (count, last, thread_cpu() - cpu)
        }));
    }
    let cpu = thread_cpu();
    let mut send = SendBatch::new(64, SIZE, 256);
    send.set_gso(mode == Mode::UnicastGso && Offload::enable(fd).gso);
    let mut sent = 0;
    while sent < n {
        while sent
            >= counts
                .iter()
                .map(|c| c.load(Ordering::Relaxed))
                .min()
                .unwrap_or(0)
                + WINDOW
        {
            std::thread::sleep(Duration::from_micros(20));
        }
        let k = 64.min(n - sent);
        for j in 0..k {
            let (i, buf) = send.buffer().expect("a buffer");
            buf[..8].copy_from_slice(&((sent + j) as u64).to_le_bytes());
            for d in &dests {
                send.push(i, SIZE, Some(d));
            }
        }
        send.flush(fd)?;
        send.clear();
        sent += k;
    }
    let send_cpu = thread_cpu() - cpu;
    done.store(true, Ordering::Relaxed);
    let mut delivered = 0;
    let mut end = start;
    let mut recv_cpu = 0.0;
    for t in threads {
        let (c, last, cpu) = t.join().expect("receiver");
        delivered += c;
        end = end.max(last);
        recv_cpu += cpu;
    }
    Ok(Outcome {
        results_per_s: n as f64 / (end - start).as_secs_f64(),
        send_cpu_per_result: send_cpu / n as f64 * 1e9,
        recv_cpu_per_datagram: recv_cpu / delivered.max(1) as f64 * 1e9,
        delivered: delivered as f64 / (n * p) as f64,
    })
}

fn main() {
    let env = |k: &str, d: usize| {
        std::env::var(k)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(d)
    };
    let n = env("REPL_N", 100_000);
    let p = env("REPL_P", 4);
    let rounds = env("REPL_ROUNDS", 3);
    let modes = [Mode::Unicast, Mode::UnicastGso, Mode::Multicast];
    let mut results: Vec<Vec<Outcome>> = modes.iter().map(|_| Vec::new()).collect();
    let mut errors: Vec<Option<String>> = modes.iter().map(|_| None).collect();
    for _ in 0..rounds {
        for (k, &m) in modes.iter().enumerate() {
            match run(m, n, p) {
                Ok(o) => results[k].push(o),
                Err(e) => errors[k] = Some(e.to_string()),
            }
        }
    }
    println!("{n} results of {SIZE} bytes replicated to {p} receivers over loopback, {rounds} rounds, medians");
    println!(
        "| replication | results/s | delivered | sender CPU ns/result | receiver CPU ns/datagram |"
    );
    println!("|---|---:|---:|---:|---:|");
    for (k, &m) in modes.iter().enumerate() {
        if results[k].is_empty() {
            println!(
                "| {} | failed: {} | | | |",
                m.name(),
                errors[k].as_deref().unwrap_or("?")
            );
            continue;
        }
        let med = |f: &dyn Fn(&Outcome) -> f64| {
            let mut v: Vec<f64> = results[k].iter().map(f).collect();
            v.sort_by(|a, b| a.total_cmp(b));
            v[v.len() / 2]
        };
        println!(
            "| {} | {:.0} | {:.1}% | {:.0} | {:.0} |",
            m.name(),
            med(&|o| o.results_per_s),
            med(&|o| o.delivered) * 100.0,
            med(&|o| o.send_cpu_per_result),
            med(&|o| o.recv_cpu_per_datagram)
        );
    }
}
