//! The switch daemon: a software switch serving real workers over UDP.
//!
//! It is the adapter around an [`Aggregator`] (the core's reference `Switch` today, the P4
//! model later): it receives datagrams in `recvmmsg` batches, checks each source against the
//! address table learned from Joins ([`routing`](crate::routing)), hands the bytes to the
//! aggregator, and carries out the verdict — a unicast goes back to the sender's address, a
//! multicast is emulated by replicating the one output buffer to every destination lane in a
//! `sendmmsg` batch. Optionally it loses datagrams on purpose ([`LossInjector`]). It never
//! decides anything about slots, versions or sums: that is the aggregator's.
//!
//! No datagram can end it: one from a source no reply could go to is dropped on receive
//! ([`is_bad_source`]), one the kernel will not send is skipped, and both are counted and
//! logged at a limited rate ([`daemon_log`](crate::daemon_log)). Only a socket that is
//! itself unusable ([`is_fatal`]) stops the daemon.

use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;
use std::str::FromStr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use switchml_core::switch::{Aggregator, Verdict};
use switchml_core::wire::{
    self, DataPacket, JoinFlags, JoinPacket, JoinReplyPacket, JoinRepr, MessageType,
};

use crate::batch::{is_fatal, RecvBatch, SendBatch};
use crate::daemon_log::DaemonLog;
use crate::loss::LossInjector;
use crate::routing::{Admission, JobRoute};
use crate::socket::{size_buffer, wait_readable, Buffer};
use crate::source::is_bad_source;
use crate::traffic::{reason_index, DaemonCounters, JobTraffic};

/// Datagrams per `recvmmsg`.
pub const RECV_BATCH: usize = 64;
/// Datagrams per `sendmmsg`.
const SEND_ENTRIES: usize = 256;
/// Socket buffer the daemon asks for, each way.
const SOCKET_BUFFER: usize = 8 << 20;

/// A job to set up at start: `ID:WORLD[:SLOTS]` on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JobSpec {
    /// The job id.
    pub id: u16,
    /// The number of ranks.
    pub world: u16,
    /// The number of slots (every rank's `lanes × window` must fit).
    pub slots: u16,
}

/// Slots a job gets when `--job` does not say.
pub const DEFAULT_JOB_SLOTS: u16 = 256;

impl FromStr for JobSpec {
    type Err = String;

    fn from_str(s: &str) -> Result<JobSpec, String> {
        let fields: Vec<&str> = s.split(':').collect();
        let num = |i: usize, what: &str| -> Result<u16, String> {
            fields[i]
                .trim()
                .parse()
                .map_err(|_| format!("job {s:?}: {what} {:?} is not a number", fields[i]))
        };
        match fields.len() {
            2 | 3 => Ok(JobSpec {
                id: num(0, "id")?,
                world: num(1, "world size")?,
                slots: if fields.len() == 3 {
                    num(2, "slot count")?
                } else {
                    DEFAULT_JOB_SLOTS
                },
            }),
            _ => Err(format!("job {s:?}: expected ID:WORLD[:SLOTS]")),
        }
    }
}

/// The daemon around aggregator `A`.
pub struct Daemon<A> {
    socket: UdpSocket,
    aggregator: A,
    routes: Vec<JobRoute>,
    counters: DaemonCounters,
    loss: Option<LossInjector>,
    recv: RecvBatch,
    send: SendBatch,
    log: DaemonLog,
}

impl<A: Aggregator> Daemon<A> {
    /// Serve `jobs` (already added to `aggregator`) on `socket`. `out_len` is the largest
    /// message the aggregator writes (`Switch::OUT_LEN`); `loss` is `(rate, seed)`.
    pub fn new(
        socket: UdpSocket,
        aggregator: A,
        jobs: &[JobSpec],
        out_len: usize,
        loss: Option<(f64, u64)>,
    ) -> io::Result<Daemon<A>> {
        socket.set_nonblocking(true)?;
        let addr = socket.local_addr()?;
        let ids: Vec<u16> = jobs.iter().map(|j| j.id).collect();
        log::info!("switch daemon on {addr}: jobs {ids:?}");
        let buffers = [
            (Buffer::Receive, "receive", "rmem_max"),
            (Buffer::Send, "send", "wmem_max"),
        ];
        for (which, what, max) in buffers {
            // Linux reports twice what it grants, the other half being its bookkeeping.
            let granted = size_buffer(&socket, which, SOCKET_BUFFER)? / 2;
            if granted < SOCKET_BUFFER {
                log::info!(
                    "socket {what} buffer: {granted} bytes of {SOCKET_BUFFER} asked for \
                     (net.core.{max} caps it); bursts may overflow it"
                );
            }
        }
        let routes = jobs
            .iter()
            .map(|j| JobRoute::new(j.id, j.world, j.slots))
            .collect();
        let counters = DaemonCounters {
            jobs: jobs
                .iter()
                .map(|j| JobTraffic {
                    job: j.id,
                    ..JobTraffic::default()
                })
                .collect(),
            ..DaemonCounters::default()
        };
        Ok(Daemon {
            socket,
            aggregator,
            routes,
            counters,
            loss: loss.filter(|(r, _)| *r > 0.0).map(|(r, s)| {
                log::info!("losing {:.2}% of datagrams each way (seed {s})", r * 100.0);
                LossInjector::new(r, s)
            }),
            // One byte more than the largest valid message, so that longer ones show as cut.
            recv: RecvBatch::new(RECV_BATCH, out_len + 1),
            send: SendBatch::new(RECV_BATCH, out_len, SEND_ENTRIES),
            log: DaemonLog::new(),
        })
    }

    /// Return the address the daemon listens on.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.socket.local_addr()
    }

    /// Return the counters.
    pub fn counters(&self) -> &DaemonCounters {
        &self.counters
    }

    /// Return the aggregator (for its own counters).
    pub fn aggregator(&self) -> &A {
        &self.aggregator
    }

    /// Return the address table of job `id`.
    pub fn route(&self, id: u16) -> Option<&JobRoute> {
        self.routes.iter().find(|r| r.id == id)
    }

    /// Serve until `stop` is set; it is checked at least every 100 ms.
    pub fn run(&mut self, stop: &AtomicBool) -> io::Result<()> {
        while !stop.load(Ordering::Relaxed) {
            self.step(Duration::from_millis(100))?;
        }
        Ok(())
    }

    /// Handle one batch of datagrams, waiting at most `timeout` for the first; return how
    /// many were received.
    pub fn step(&mut self, timeout: Duration) -> io::Result<usize> {
        let fd = self.socket.as_raw_fd();
        let mut n = self.receive()?;
        if n == 0 && wait_readable(fd, None, timeout)?.socket {
            n = self.receive()?;
        }
        let failures = self.counters.send_failures;
        for i in 0..n {
            if !self.drop_bad_source(i) {
                self.handle(i)?;
            }
        }
        self.flush()?;
        self.send.clear();
        let failed = self.counters.send_failures - failures;
        self.log.send_failed(failed, self.send.take_failure());
        Ok(n)
    }

    /// Receive a batch. An error that is not the socket's own ([`is_fatal`]) is counted,
    /// logged, and reads as nothing received.
    fn receive(&mut self) -> io::Result<usize> {
        match self.recv.recv(self.socket.as_raw_fd()) {
            Err(e) if !is_fatal(&e) => {
                self.counters.recv_errors += 1;
                self.log.recv_failed(&e);
                Ok(0)
            }
            r => r,
        }
    }

    /// Drop received datagram `i` if it has no IP source or one no reply could go to;
    /// return whether it was dropped. The aggregator never sees it.
    fn drop_bad_source(&mut self, i: usize) -> bool {
        let Some(from) = self.recv.get(i).map(|d| d.from) else {
            return false;
        };
        if from.is_some_and(|a| !is_bad_source(&a)) {
            return false;
        }
        self.counters.received += 1;
        self.counters.bad_source += 1;
        self.log.bad_source(from);
        true
    }

    fn flush(&mut self) -> io::Result<()> {
        flush(&mut self.send, &self.socket, &mut self.counters)
    }

    /// Admit, process and route received datagram `i`.
    fn handle(&mut self, i: usize) -> io::Result<()> {
        let Daemon {
            socket,
            aggregator,
            routes,
            counters,
            loss,
            recv,
            send,
            ..
        } = self;
        let Some(d) = recv.get(i) else {
            return Ok(());
        };
        counters.received += 1;
        if loss.as_mut().is_some_and(LossInjector::lose) {
            counters.injected_losses += 1;
            return Ok(());
        }
        if d.truncated {
            counters.oversized += 1;
            return Ok(());
        }
        let Some(from) = d.from else { return Ok(()) };
        let bytes = d.bytes;
        let peeked = wire::peek(bytes).ok();
        let job = peeked.and_then(|(_, id, _)| routes.iter().position(|r| r.id == id));
        if let (Some((kind, _, rank)), Some(j)) = (peeked, job) {
            counters.jobs[j].received += 1;
            if is_spoofed(&routes[j], kind, rank, bytes, &from) {
                counters.jobs[j].spoofed += 1;
                return Ok(());
            }
        }
        if send.buffer().is_none() {
            flush(send, socket, counters)?;
            send.clear();
        } else {
            send.unuse_last();
        }
        let Some((b, out)) = send.buffer() else {
            return Ok(());
        };
        let verdict = aggregator.process(bytes, out);
        match job {
            Some(j) => counters.jobs[j].count(&verdict),
            None => {
                if let Verdict::Drop(r) = verdict {
                    counters.unattributed[reason_index(r)] += 1;
                }
            }
        }
        let len = match verdict {
            Verdict::Drop(_) | Verdict::Consumed => {
                send.unuse_last();
                return Ok(());
            }
            Verdict::Unicast { len, .. } | Verdict::Multicast { len, .. } => len,
        };
        let out = send.get(b, len);
        let kind = wire::peek(out).map(|(k, _, _)| k).ok();
        // A JoinReply answers a Join the switch accepted: learn the lane's address.
        if let (Some(j), Some(MessageType::JoinReply)) = (job, kind) {
            let complete = JoinReplyPacket::new_unchecked(out)
                .flags()
                .contains(JoinFlags::COMPLETE);
            if let Ok(join) = JoinRepr::parse(&JoinPacket::new_unchecked(bytes)) {
                routes[j].learn(join.rank, join.slot_lo, join.slot_count, from);
            }
            if complete {
                routes[j].lock();
            }
        }
        let result_slot =
            (kind == Some(MessageType::Result)).then(|| DataPacket::new_unchecked(out).slot());
        let mut output = Output {
            send,
            socket,
            loss,
            counters,
        };
        match (verdict, job) {
            (Verdict::Unicast { .. }, _) => output.push(job, b, len, &from),
            (Verdict::Multicast { .. }, Some(j)) => {
                output.replicate(&routes[j], j, result_slot, b, len)
            }
            _ => Ok(()),
        }
    }
}

/// The sending half of the daemon, borrowed apart from the address table.
struct Output<'a> {
    send: &'a mut SendBatch,
    socket: &'a UdpSocket,
    loss: &'a mut Option<LossInjector>,
    counters: &'a mut DaemonCounters,
}

impl Output<'_> {
    /// Emulate a multicast: a Result (`result_slot`) to each rank's lane owning its slot,
    /// anything else to every lane of the job.
    fn replicate(
        &mut self,
        route: &JobRoute,
        j: usize,
        result_slot: Option<u16>,
        b: usize,
        len: usize,
    ) -> io::Result<()> {
        match result_slot {
            Some(slot) => {
                let mut reached = 0u64;
                for to in route.result_destinations(slot) {
                    self.push(Some(j), b, len, to)?;
                    reached += 1;
                }
                self.counters.jobs[j].unroutable += u64::from(route.world).saturating_sub(reached);
            }
            None => {
                for lane in route.lanes() {
                    self.push(Some(j), b, len, &lane.addr)?;
                }
            }
        }
        Ok(())
    }

    /// Queue one copy of buffer `b` to `to`, through the loss injector.
    fn push(
        &mut self,
        job: Option<usize>,
        b: usize,
        len: usize,
        to: &SocketAddr,
    ) -> io::Result<()> {
        if self.loss.as_mut().is_some_and(LossInjector::lose) {
            self.counters.injected_losses += 1;
            return Ok(());
        }
        if self.send.is_full() {
            flush(self.send, self.socket, self.counters)?;
        }
        self.send.push(b, len, Some(to));
        if let Some(j) = job {
            self.counters.jobs[j].sent += 1;
        }
        Ok(())
    }
}

/// Send what is queued, counting what went and what did not.
fn flush(
    send: &mut SendBatch,
    socket: &UdpSocket,
    counters: &mut DaemonCounters,
) -> io::Result<()> {
    let done = send.flush(socket.as_raw_fd())?;
    counters.sent += done.sent as u64;
    counters.send_failures += done.failed as u64;
    Ok(())
}

/// Return whether `bytes` from `from` claims a lane that is registered elsewhere.
fn is_spoofed(
    route: &JobRoute,
    kind: MessageType,
    rank: u16,
    bytes: &[u8],
    from: &SocketAddr,
) -> bool {
    match kind {
        MessageType::Contribution => {
            let packet = DataPacket::new_unchecked(bytes);
            if packet.check_len().is_err() || !route.covers(rank, packet.slot()) {
                return false; // the aggregator drops it with the precise reason
            }
            route.owner(rank, packet.slot()) != Some(from)
        }
        MessageType::Join => match JoinRepr::parse(&JoinPacket::new_unchecked(bytes)) {
            Ok(j) => route.admit_join(j.rank, j.slot_lo, j.slot_count, from) == Admission::Spoofed,
            Err(_) => false,
        },
        // An Abort is passed on to the whole job: only a rank's own lane may send one.
        MessageType::Abort => rank < route.world && !route.is_lane_of(rank, from),
        _ => false,
    }
}
