//! Loopback datagram throughput of the batched I/O paths (issue 17): `N` datagrams of
//! 1,076 bytes (one Contribution of 256 int32) from one socket to another, sender and
//! receiver on two threads, the sender at most `WINDOW` datagrams ahead of the receiver so
//! that the receive buffer does not overflow. Reported per path: datagrams/s delivered and
//! the CPU each side spent per datagram (`RUSAGE_THREAD`, user + system).
//!
//! Paths: `batch` (today's `sendmmsg`/`recvmmsg`, one datagram per entry), `batch+gso`
//! (the same with `UDP_SEGMENT` runs and `UDP_GRO` buffers), `quinn-udp` (its `try_send`
//! with a GSO `Transmit` of up to 60 datagrams and its `recv` with GRO buffers) and
//! `quinn-udp 1/send` (one datagram per `try_send`, as quinn-udp sends without GSO).
//!
//! `cargo bench -p switchml-udp --bench udp_io` (env `UDP_IO_N`, `UDP_IO_ROUNDS`).

use std::io::IoSliceMut;
use std::net::{SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use switchml_udp::batch::{RecvBatch, SendBatch};
use switchml_udp::socket::{size_buffer, wait_readable, wait_writable, Buffer};
use switchml_udp::Offload;

const SIZE: usize = 1076;
const WINDOW: usize = 2048;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Path {
    Batch,
    BatchGso,
    Quinn,
    QuinnSingle,
}

impl Path {
    fn name(self) -> &'static str {
        match self {
            Path::Batch => "batch (sendmmsg/recvmmsg)",
            Path::BatchGso => "batch + GSO/GRO",
            Path::Quinn => "quinn-udp GSO/GRO",
            Path::QuinnSingle => "quinn-udp 1 datagram/send",
        }
    }
}

struct Outcome {
    delivered: usize,
    seconds: f64,
    send_cpu: f64,
    recv_cpu: f64,
}

fn thread_cpu() -> f64 {
    // SAFETY: getrusage writes one rusage into the live, zeroed struct we pass.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut ru) };
    let t = |tv: libc::timeval| tv.tv_sec as f64 + tv.tv_usec as f64 * 1e-6;
    t(ru.ru_utime) + t(ru.ru_stime)
}

fn wait_for_window(sent: usize, received: &AtomicUsize) {
    while sent >= received.load(Ordering::Relaxed) + WINDOW {
        std::thread::sleep(Duration::from_micros(20));
    }
}

fn sender(
    path: Path,
    socket: UdpSocket,
    to: SocketAddr,
    n: usize,
    received: Arc<AtomicUsize>,
) -> f64 {
    let cpu = thread_cpu();
    let fd = socket.as_raw_fd();
    let mut sent = 0;
    match path {
        Path::Batch | Path::BatchGso => {
            let mut send = SendBatch::new(64, SIZE, 64);
            send.set_gso(path == Path::BatchGso && Offload::enable(fd).gso);
            while sent < n {
                wait_for_window(sent, &received);
                let k = 64.min(n - sent);
                for j in 0..k {
                    let (i, buf) = send.buffer().expect("a buffer");
                    buf[..8].copy_from_slice(&((sent + j) as u64).to_le_bytes());
                    send.push(i, SIZE, Some(&to));
                }
                let f = send.flush(fd).expect("flush");
                sent += f.sent + f.failed;
                send.clear();
            }
        }
        Path::Quinn | Path::QuinnSingle => {
            let state = quinn_udp::UdpSocketState::new((&socket).into()).expect("quinn state");
            let segments = match path {
                Path::Quinn => state.max_gso_segments().min(65_000 / SIZE),
                _ => 1,
            };
            let buf = vec![7u8; segments * SIZE];
            while sent < n {
                wait_for_window(sent, &received);
                let k = segments.min(n - sent);
                let t = quinn_udp::Transmit {
                    destination: to,
                    ecn: None,
                    contents: &buf[..k * SIZE],
                    segment_size: (k > 1).then_some(SIZE),
                    src_ip: None,
                };
                match state.try_send((&socket).into(), &t) {
                    Ok(()) => sent += k,
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                        let _ = wait_writable(fd, Duration::from_millis(20));
                    }
                    Err(e) => panic!("send: {e}"),
                }
            }
        }
    }
    thread_cpu() - cpu
}

fn receiver(
    path: Path,
    socket: UdpSocket,
    n: usize,
    received: Arc<AtomicUsize>,
    done: Arc<AtomicBool>,
) -> (usize, Instant, f64) {
    let cpu = thread_cpu();
    let fd = socket.as_raw_fd();
    let mut count = 0;
    let mut last = Instant::now();
    let mut idle_since: Option<Instant> = None;
    let step = |got: usize, count: &mut usize, last: &mut Instant| {
        if got > 0 {
            *count += got;
            *last = Instant::now();
            received.store(*count, Ordering::Relaxed);
        }
    };
    let quinn = matches!(path, Path::Quinn | Path::QuinnSingle)
        .then(|| quinn_udp::UdpSocketState::new((&socket).into()).expect("quinn state"));
    let gro = match path {
        Path::Batch => false,
        Path::BatchGso => Offload::enable(fd).gro,
        _ => quinn.as_ref().is_some_and(|q| q.gro_segments() > 1),
    };
    let mut batch = RecvBatch::with_gro(if gro { 16 } else { 64 }, SIZE, gro);
    // quinn-udp's receive buffers: room for a GRO run of 64 datagrams each.
    let qn = quinn_udp::BATCH_SIZE.max(1);
    let mut qbufs = vec![vec![0u8; 65_536]; qn];
    let mut slices: Vec<IoSliceMut> = qbufs.iter_mut().map(|b| IoSliceMut::new(b)).collect();
    let mut meta = vec![quinn_udp::RecvMeta::default(); qn];
    while count < n {
        if done.load(Ordering::Relaxed) {
            let since = *idle_since.get_or_insert_with(Instant::now);
            if since.elapsed() > Duration::from_millis(300) {
                break;
            }
        }
        let _ = wait_readable(fd, None, Duration::from_millis(50));
        let got = match &quinn {
            None => {
                let k = batch.recv(fd).expect("recv");
                for i in 0..k {
                    std::hint::black_box(batch.get(i).map(|d| d.bytes.len()));
                }
                k
            }
            Some(q) => match q.recv((&socket).into(), &mut slices, &mut meta) {
                Ok(m) => meta[..m]
                    .iter()
                    .map(|r| {
                        if r.stride == 0 {
                            1
                        } else {
                            r.len.div_ceil(r.stride)
                        }
                    })
                    .sum(),
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => 0,
                Err(e) => panic!("recv: {e}"),
            },
        };
        step(got, &mut count, &mut last);
    }
    (count, last, thread_cpu() - cpu)
}

fn run(path: Path, n: usize) -> Outcome {
    let rx = UdpSocket::bind("127.0.0.1:0").unwrap();
    let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
    rx.set_nonblocking(true).unwrap();
    tx.set_nonblocking(true).unwrap();
    let _ = size_buffer(&rx, Buffer::Receive, 8 << 20);
    let _ = size_buffer(&tx, Buffer::Send, 8 << 20);
    let to = rx.local_addr().unwrap();
    let received = Arc::new(AtomicUsize::new(0));
    let done = Arc::new(AtomicBool::new(false));
    let start = Instant::now();
    let r = {
        let (received, done) = (received.clone(), done.clone());
        std::thread::spawn(move || receiver(path, rx, n, received, done))
    };
    let send_cpu = sender(path, tx, to, n, received);
    done.store(true, Ordering::Relaxed);
    let (delivered, last, recv_cpu) = r.join().unwrap();
    Outcome {
        delivered,
        seconds: (last - start).as_secs_f64(),
        send_cpu,
        recv_cpu,
    }
}

fn main() {
    let env = |k: &str, d: usize| {
        std::env::var(k)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(d)
    };
    let n = env("UDP_IO_N", 200_000);
    let rounds = env("UDP_IO_ROUNDS", 3);
    let paths = [Path::Batch, Path::BatchGso, Path::Quinn, Path::QuinnSingle];
    let mut results: Vec<Vec<Outcome>> = paths.iter().map(|_| Vec::new()).collect();
    // Alternate the paths, round by round, so that a noisy neighbour hits them alike.
    for _ in 0..rounds {
        for (k, &p) in paths.iter().enumerate() {
            results[k].push(run(p, n));
        }
    }
    println!("{n} datagrams of {SIZE} bytes over loopback, {rounds} rounds, medians");
    println!(
        "| path | datagrams/s | delivered | sender CPU ns/datagram | receiver CPU ns/datagram |"
    );
    println!("|---|---:|---:|---:|---:|");
    for (k, &p) in paths.iter().enumerate() {
        let med = |f: &dyn Fn(&Outcome) -> f64| {
            let mut v: Vec<f64> = results[k].iter().map(f).collect();
            v.sort_by(|a, b| a.total_cmp(b));
            v[v.len() / 2]
        };
        let rate = med(&|o| o.delivered as f64 / o.seconds);
        let delivered = med(&|o| o.delivered as f64 / n as f64);
        let scpu = med(&|o| o.send_cpu / n as f64 * 1e9);
        let rcpu = med(&|o| o.recv_cpu / o.delivered.max(1) as f64 * 1e9);
        println!(
            "| {} | {:.0} | {:.1}% | {:.0} | {:.0} |",
            p.name(),
            rate,
            delivered * 100.0,
            scpu,
            rcpu
        );
    }
}
