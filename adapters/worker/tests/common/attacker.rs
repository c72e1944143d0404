//! An off-path attacker (protocol.md §4.1, threat model): it can send the switch anything from
//! many loopback addresses and ports — 127.0.0.1 to 127.0.0.5 are all loopback on Linux — and,
//! where the test may open raw sockets, from UDP port 0 or from another socket's port; it has
//! no key and no session. Every datagram it sends is tallied with its [`fate`], and the
//! answers that come back to it are read and tallied too.
//!
//! [`Attacker::run`] is bounded in datagrams and in time, and paced by what waits in the
//! switch's socket buffer (`/proc/net/udp`), so that the buffer never overflows: a datagram
//! the kernel dropped there would be accounted for nowhere.

use std::io;
use std::net::{IpAddr, Ipv4Addr, SocketAddr, SocketAddrV4, UdpSocket};
use std::time::{Duration, Instant};

use super::fate::{fate, Tally, Target};
use super::forge::Forger;
use super::proc_udp::{rmem_max, socket_at};
use super::raw_udp::RawUdp;

/// Where a datagram comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Via {
    /// The attacker's `i`-th ordinary socket.
    Socket(usize),
    /// UDP source port 0 (raw socket).
    PortZero,
    /// Another socket's port on 127.0.0.1 (raw socket): an IP-spoofed datagram.
    Spoofed(u16),
}

/// How much to send: at most `packets` datagrams and at most `time`.
#[derive(Debug, Clone, Copy)]
pub struct Budget {
    /// The most datagrams.
    pub packets: u64,
    /// The longest time.
    pub time: Duration,
}

impl Budget {
    /// The budget `SWITCHML_HOSTILE_PACKETS` and `SWITCHML_HOSTILE_SECONDS` ask for, else
    /// the smoke-sized default given.
    pub fn from_env(packets: u64, time: Duration) -> Budget {
        let var = |name: &str| std::env::var(name).ok().and_then(|v| v.trim().parse().ok());
        Budget {
            packets: var("SWITCHML_HOSTILE_PACKETS").unwrap_or(packets),
            time: var("SWITCHML_HOSTILE_SECONDS").map_or(time, Duration::from_secs),
        }
    }
}

/// What the daemon asks for its receive buffer (Linux grants at most `rmem_max`).
const SWITCH_BUFFER: u64 = 8 << 20;
/// Datagrams sent between two looks at the switch's socket buffer.
const BURST: u64 = 16;

/// The attacker.
pub struct Attacker {
    to: SocketAddrV4,
    targets: Vec<Target>,
    sockets: Vec<UdpSocket>,
    raw: Option<RawUdp>,
    /// Bytes that may wait in the switch's socket buffer before the attacker waits.
    backlog: u64,
    /// What it forges.
    pub forger: Forger,
    /// What it sent and what came back.
    pub tally: Tally,
}

impl Attacker {
    /// An attacker of the switch at `to` (on 127.0.0.1) serving `targets`.
    pub fn new(to: SocketAddr, targets: &[Target], forger: Forger) -> Attacker {
        let SocketAddr::V4(to) = to else {
            panic!("the test switch listens on IPv4 loopback")
        };
        let mut sockets = Vec::new();
        for host in [1, 1, 2, 3, 4, 5] {
            let ip = IpAddr::V4(Ipv4Addr::new(127, 0, 0, host));
            let Ok(s) = UdpSocket::bind((ip, 0)) else {
                continue;
            };
            s.set_nonblocking(true).unwrap();
            // Answers come back while it sends; room for a burst of them.
            let _ = receive_buffer(&s, 4 << 20);
            sockets.push(s);
        }
        assert!(!sockets.is_empty(), "no loopback socket could be bound");
        Attacker {
            to,
            targets: targets.to_vec(),
            sockets,
            raw: RawUdp::open().expect("raw socket"),
            // A sixteenth of what the kernel lets the buffer hold (twice what it grants): the
            // ranks' own traffic and a burst of the largest forgeries fit beside it.
            backlog: rmem_max().unwrap_or(212_992).min(SWITCH_BUFFER) / 8,
            forger,
            tally: Tally::default(),
        }
    }

    /// Return whether it may send from port 0 and spoof other sockets' ports.
    pub fn has_raw(&self) -> bool {
        self.raw.is_some()
    }

    /// Send `bytes` from `via` and tally it; return whether it went (a datagram the
    /// kernel refused to send is not counted).
    pub fn send(&mut self, bytes: &[u8], via: Via) -> bool {
        let sent = match via {
            Via::Socket(i) => self.send_on(i % self.sockets.len(), bytes),
            Via::PortZero => self.raw_send(0, bytes),
            Via::Spoofed(port) => self.raw_send(port, bytes),
        };
        if sent.is_ok() {
            let f = fate(bytes, via == Via::PortZero, &self.targets);
            self.tally.record(f, matches!(via, Via::Socket(_)));
        }
        sent.is_ok()
    }

    fn raw_send(&self, port: u16, bytes: &[u8]) -> io::Result<()> {
        match &self.raw {
            Some(raw) => raw.send(port, self.to, bytes),
            None => Err(io::Error::from(io::ErrorKind::PermissionDenied)),
        }
    }

    fn send_on(&mut self, i: usize, bytes: &[u8]) -> io::Result<()> {
        for _ in 0..1000 {
            match self.sockets[i].send_to(bytes, self.to) {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    self.read_answers();
                    std::thread::sleep(Duration::from_micros(100));
                }
                r => return r.map(|_| ()),
            }
        }
        Err(io::Error::from(io::ErrorKind::WouldBlock))
    }

    /// Send `bytes` from a socket (or port 0, one time in sixteen where allowed) drawn
    /// from the forger's randomness.
    pub fn send_anywhere(&mut self, bytes: &[u8]) -> bool {
        let r = self.forger.rng.next();
        let via = if self.has_raw() && r % 16 == 0 {
            Via::PortZero
        } else {
            Via::Socket((r >> 8) as usize % self.sockets.len())
        };
        self.send(bytes, via)
    }

    /// Read whatever answers have come back.
    pub fn read_answers(&mut self) {
        let mut buf = [0u8; 2048];
        for s in &self.sockets {
            while let Ok(n) = s.recv(&mut buf) {
                self.tally.answer(&buf[..n]);
            }
        }
    }

    /// Wait (at most `limit`) until every answer owed to it has come back, or may have been
    /// held back by the daemon's per-source limits: `limited` reads a bound on those (the
    /// daemon's `replies_limited` plus `throttled`, whose datagrams were never answered).
    /// A bound may end the wait early: read again once the switch has settled.
    pub fn collect_with(&mut self, limit: Duration, limited: impl Fn() -> u64) {
        let deadline = Instant::now() + limit;
        loop {
            self.read_answers();
            if self.tally.answered() + limited() >= self.tally.owed || Instant::now() >= deadline {
                return;
            }
            std::thread::sleep(Duration::from_millis(2));
        }
    }

    /// [`Attacker::collect_with`] the switch at `sw`.
    pub fn collect(&mut self, limit: Duration, sw: &switchml_switchd::RunningSwitch) {
        self.collect_with(limit, || {
            let c = sw.counters();
            c.replies_limited + c.throttled
        });
    }

    /// Wait (at most 10 s: a busy machine may keep the daemon off the CPU a while) while the
    /// switch's socket buffer holds more than its share.
    pub fn pace(&mut self) {
        let deadline = Instant::now() + Duration::from_secs(10);
        while socket_at(self.to).is_some_and(|s| s.queued > self.backlog)
            && Instant::now() < deadline
        {
            self.read_answers();
            std::thread::sleep(Duration::from_micros(200));
        }
    }

    /// Throw forgeries of every kind until `budget` is spent, pacing (see
    /// [`Attacker::pace`]); then collect the answers from `sw`. Return how long it ran.
    pub fn run(&mut self, budget: Budget, sw: &switchml_switchd::RunningSwitch) -> Duration {
        let start = Instant::now();
        let mut burst = 0;
        while self.tally.sent < budget.packets && start.elapsed() < budget.time {
            let bytes = self.forger.any();
            self.send_anywhere(&bytes);
            burst += 1;
            if burst % BURST == 0 {
                self.read_answers();
                self.pace();
            }
        }
        let ran = start.elapsed();
        self.collect(Duration::from_secs(30), sw);
        ran
    }
}

/// Ask for a receive buffer of `bytes` on `socket` (the kernel may grant less).
fn receive_buffer(socket: &UdpSocket, bytes: libc::c_int) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    // SAFETY: the fd is open for the call (owned by `socket`); the value points at a live
    // c_int whose exact size is passed.
    let rc = unsafe {
        libc::setsockopt(
            socket.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_RCVBUF,
            (&bytes as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}
