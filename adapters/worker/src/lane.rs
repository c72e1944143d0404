//! A lane: one I/O thread, one UDP socket, one core [`Worker`] driving a range of the job's
//! slots (protocol.md §6).
//!
//! The loop only moves bytes and time between the socket and the state machine: submit the
//! parts the application queued, drain `poll_transmit` into one `sendmmsg`, hand finished
//! parts back, take one `recvmmsg` batch into `handle_packet`, and sleep in `poll(2)` until
//! a datagram, a command (the [`Wake`] eventfd) or the worker's next timer. Every protocol
//! decision — what to send, when to resend, when to give up — is the worker's.

use std::collections::VecDeque;
use std::net::{SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;
use std::sync::mpsc::{Receiver, Sender, TryRecvError};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use switchml_core::quant::Op;
use switchml_core::worker::{
    Config, Event, Stats, SubmitErrorKind, TensorError, Worker, WorkerError,
};

use switchml_udp::batch::{RecvBatch, SendBatch};
use switchml_udp::clock::{to_std, Clock};
use switchml_udp::socket::Wake;
use switchml_udp::Offload;
use switchml_xdp::Io;

use crate::backoffs::LaneBackoffs;
use crate::error::Error;
use crate::lane_log::LaneLog;
use crate::part::Part;

/// The most slots one lane drives.
pub const MAX_WINDOW: usize = 1024;
/// The most tensors one lane's worker holds at once; more wait in the lane's backlog.
pub const QUEUE: usize = 16;
/// Datagrams per `recvmmsg`/`sendmmsg`.
pub const BATCH: usize = 64;
/// Receive buffers per `recvmmsg` with GRO, each of up to 64 datagrams coalesced.
const GRO_BATCH: usize = 16;
/// Batches read after the first before timers are looked at (bounded, so that a flood
/// cannot keep a lane from ever resending).
const DRAIN_ROUNDS: usize = 16;
/// The longest sleep without a timer, so that a lane notices a closed command channel.
const IDLE_WAIT: Duration = Duration::from_millis(100);

/// The worker state machine a lane drives.
pub type LaneWorker = Worker<Part, MAX_WINDOW, QUEUE>;

/// What the application asks a lane to do.
pub(crate) enum Command {
    /// All-reduce this part.
    Submit(Part, Op),
}

/// What a lane tells the application about the stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Report {
    /// Every rank joined.
    Joined { lane: usize, epoch: u32 },
    /// The stream failed.
    Failed {
        lane: usize,
        error: Box<WorkerError>,
    },
}

/// State a lane shares with the application.
#[derive(Debug, Default)]
pub(crate) struct Shared {
    pub(crate) stats: Stats,
    pub(crate) failure: Option<WorkerError>,
    /// The worker's round-trip estimate and the timeout a fresh use starts with.
    pub(crate) timing: Timing,
    /// What went as AF_XDP frames (`CommConfig::io`).
    pub(crate) xdp: switchml_xdp::XdpCounters,
}

/// What a lane's worker has measured of its round trips.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Timing {
    /// The smoothed round trip of a slot use (send to result), once one was measured.
    pub srtt: Option<Duration>,
    /// The retransmission timeout a fresh use starts with now.
    pub rto: Duration,
}

/// Everything a lane thread owns.
pub(crate) struct Lane {
    pub(crate) index: usize,
    pub(crate) socket: UdpSocket,
    /// The socket alone, or an AF_XDP path beside it (`CommConfig::io`).
    pub(crate) io: Io,
    /// The switch's address: its first shard's (protocol.md §1.1).
    pub(crate) switch: SocketAddr,
    pub(crate) worker: Box<LaneWorker>,
    pub(crate) commands: Receiver<Command>,
    pub(crate) wake: Arc<Wake>,
    pub(crate) reports: Sender<Report>,
    pub(crate) shared: Arc<Mutex<Shared>>,
    /// How long to let datagrams gather after a wake-up ([`CommConfig::coalesce`]).
    ///
    /// [`CommConfig::coalesce`]: crate::CommConfig::coalesce
    pub(crate) coalesce: Duration,
    /// What the lane logs, rate-limited.
    pub(crate) log: LaneLog,
    /// The congestion backoffs this lane passes to the rank's other lanes and takes from
    /// them (protocol.md §6.3).
    pub(crate) backoffs: LaneBackoffs,
}

impl Lane {
    /// Make a lane's worker from its core configuration.
    pub(crate) fn worker(config: Config) -> Result<Box<LaneWorker>, Error> {
        LaneWorker::new(config).map(Box::new).map_err(|e| {
            Error::Config(format!(
                "lane slots {}+{}: {e}",
                config.slot_lo, config.window
            ))
        })
    }

    /// Run until the command channel closes.
    pub(crate) fn run(mut self) {
        let clock = Clock::start();
        let config = *self.worker.config();
        let fd = self.socket.as_raw_fd();
        // Replies are at most a Result; control messages are shorter than any Result buffer
        // of 256 bytes or more.
        let size = config.max_datagram().max(256);
        let offload = Offload::enable(fd);
        log::debug!("lane {}: UDP offload {offload:?}", self.index);
        // The AF_XDP path copies frames into the batch one per buffer: BATCH buffers, still
        // GRO buffers if the socket has GRO on (a coalesced datagram would be cut otherwise).
        let mut recv = match (offload.gro, self.io.is_xdp()) {
            (gro, true) => RecvBatch::with_gro(BATCH, size, gro),
            (true, false) => RecvBatch::with_gro(GRO_BATCH, size, true),
            (false, false) => RecvBatch::new(BATCH, size),
        };
        let mut send = SendBatch::new(BATCH, size, BATCH);
        send.set_gso(offload.gso);
        let mut backlog: VecDeque<(Part, Op)> = VecDeque::new();
        loop {
            loop {
                match self.commands.try_recv() {
                    Ok(Command::Submit(part, op)) => backlog.push_back((part, op)),
                    Err(TryRecvError::Empty) => break,
                    Err(TryRecvError::Disconnected) => {
                        // The communicator is gone. Work still in flight would leave the
                        // peers waiting out their stall detection; tell the job instead.
                        // A part still in the backlog is work the peers wait for as much
                        // as one in flight: a lane that had not yet taken it when the
                        // communicator went must not leave as if done.
                        let idle = self.worker.is_idle() && backlog.is_empty();
                        if !idle {
                            self.worker.abort();
                            self.transmit(&mut send, clock.now());
                            self.deliver_events();
                        } else {
                            // Done: say so, so that the switch ends the run once every
                            // rank has left and the job can run again (protocol.md §4.1).
                            // The worker sends it only from the first lane of its shard.
                            self.worker.leave();
                            self.transmit(&mut send, clock.now());
                        }
                        self.log.closing(self.worker.stats(), idle);
                        for (mut part, _) in backlog.drain(..) {
                            part.set_outcome(Err(Error::LaneGone { lane: self.index }));
                        }
                        return;
                    }
                }
            }
            self.submit_backlog(&mut backlog, clock.now());
            // Read the clock again: the first round's timers must start from when it goes
            // out. (Submitting used to scan the whole part for NaN/Inf, tens of ms for
            // 256 MiB, and a time from before that expired every timer of the round.)
            let mut refused = self.transmit(&mut send, clock.now());
            self.deliver_events();
            let mut got = self.receive(&mut recv, fd);
            refused += usize::from(recv.refused());
            if got == 0 {
                let timeout = self
                    .worker
                    .poll_timeout()
                    .map_or(IDLE_WAIT, |t| clock.until(clock.now(), t).min(IDLE_WAIT));
                let ready = self
                    .io
                    .wait(fd, Some(&self.wake), timeout)
                    .unwrap_or_default();
                if ready.woken {
                    self.wake.clear();
                }
                if ready.socket {
                    self.gather(&clock);
                    got = self.receive(&mut recv, fd);
                    refused += usize::from(recv.refused());
                }
            }
            let now = clock.now();
            for _ in 0..refused {
                // ICMP port unreachable: the worker decides what it means (while joining,
                // nothing listens at the switch's address).
                self.worker.handle_unreachable(now);
            }
            self.handle_batch(&recv, got, now);
            // Read everything that has arrived before any timer may fire: a lane that was
            // off the CPU finds many results waiting, and timers checked after reading only
            // the first batch would resend uses whose results sit in the socket buffer.
            let mut rounds = 0;
            while got > 0 && rounds < DRAIN_ROUNDS {
                got = self.receive(&mut recv, fd);
                if recv.refused() {
                    self.worker.handle_unreachable(now);
                }
                self.handle_batch(&recv, got, now);
                rounds += 1;
            }
            // Before the next send: a redirect must move the socket first.
            self.deliver_events();
            if self.worker.poll_timeout().is_some_and(|t| t <= now) {
                self.worker.handle_timeout(now);
            }
            self.share_backoffs(now);
            let rto = self.worker.current_rto();
            self.log.tick(now, self.worker.stats(), rto);
            self.publish();
        }
    }

    /// Tell the rank's other lanes of this lane's congestion backoffs, and follow theirs:
    /// the lanes share the rank's path, so they back off as one flow (protocol.md §6.3).
    fn share_backoffs(&mut self, now: switchml_core::time::Instant) {
        if self.backoffs.exchange(self.worker.backoffs_to_share()) {
            self.worker.handle_lane_backoff(now);
        }
    }

    /// Share the worker's counters and round-trip estimate with the application.
    fn publish(&self) {
        if let Ok(mut shared) = self.shared.lock() {
            shared.stats = *self.worker.stats();
            shared.xdp = self.io.counters();
            shared.timing = Timing {
                srtt: self.worker.smoothed_rtt().map(to_std),
                rto: to_std(self.worker.current_rto()),
            };
        }
    }

    /// Hand the first `got` datagrams of `recv` to the worker.
    fn handle_batch(&mut self, recv: &RecvBatch, got: usize, now: switchml_core::time::Instant) {
        for i in 0..got {
            if let Some(d) = recv.get(i) {
                if !d.truncated {
                    self.log.packet(false, d.bytes);
                    self.worker.handle_packet(now, d.bytes);
                }
            }
        }
    }

    /// Read one batch; a failure is logged and reads as nothing received.
    fn receive(&mut self, recv: &mut RecvBatch, fd: std::os::fd::RawFd) -> usize {
        self.io.recv(fd, recv).unwrap_or_else(|e| {
            self.log.recv_failed(&e);
            0
        })
    }

    /// Send one batch; return how many datagrams were refused (ICMP port unreachable). The
    /// others that failed are logged: the worker resends them, as it resends any loss.
    fn flush(&mut self, send: &mut SendBatch, fd: std::os::fd::RawFd) -> usize {
        match self.io.flush(fd, send) {
            Ok(f) => {
                self.log
                    .send_failed(f.failed - f.refused, send.take_failure());
                f.refused
            }
            Err(e) => {
                self.log.send_error(&e);
                0
            }
        }
    }

    /// Let more datagrams arrive before reading, so that one wake-up serves a batch: sleep
    /// for the coalescing time, or until the worker's next timer if that comes first.
    fn gather(&self, clock: &Clock) {
        if self.coalesce.is_zero() {
            return;
        }
        let now = clock.now();
        let nap = self
            .worker
            .poll_timeout()
            .map_or(self.coalesce, |t| clock.until(now, t).min(self.coalesce));
        if !nap.is_zero() {
            std::thread::sleep(nap);
        }
    }

    /// Hand queued parts to the worker while it has room.
    fn submit_backlog(
        &mut self,
        backlog: &mut VecDeque<(Part, Op)>,
        now: switchml_core::time::Instant,
    ) {
        while let Some((part, op)) = backlog.pop_front() {
            // The communicator checked the whole tensor for NaN/Inf before splitting it, in
            // the pass that filled each part's exponent cache (`part::scan`).
            match self.worker.submit_scanned(now, part, op) {
                Ok(_) => {}
                Err(e) if e.kind == SubmitErrorKind::QueueFull => {
                    backlog.push_front((e.buf, op));
                    return;
                }
                Err(e) => {
                    let mut part = e.buf;
                    let failure = self.worker.failure().copied();
                    let error = match (e.kind, failure) {
                        (SubmitErrorKind::Failed, Some(error)) => self.stream_error(error),
                        (SubmitErrorKind::NonFinite(e), _) => Error::NonFinite {
                            index: part.offset + e.index,
                        },
                        (kind, _) => Error::Refused {
                            lane: self.index,
                            kind,
                        },
                    };
                    part.set_outcome(Err(error));
                }
            }
        }
    }

    /// Send everything the worker has to send, a batch per syscall; return how many
    /// datagrams were refused (ICMP port unreachable).
    fn transmit(&mut self, send: &mut SendBatch, now: switchml_core::time::Instant) -> usize {
        let fd = self.socket.as_raw_fd();
        let mut refused = 0;
        loop {
            let Some((i, buf)) = send.buffer() else {
                refused += self.flush(send, fd);
                send.clear();
                continue;
            };
            match self.worker.poll_transmit(now, buf) {
                Some(len) => {
                    self.log.packet(true, buf.get(..len).unwrap_or(&[]));
                    send.push(i, len, None);
                }
                None => {
                    send.unuse_last();
                    break;
                }
            }
        }
        if !send.is_empty() {
            // Losses here (a full buffer, an ICMP refusal) are the worker's to retransmit.
            refused += self.flush(send, fd);
        }
        send.clear();
        refused
    }

    /// Hand finished parts back and report joins and failures.
    fn deliver_events(&mut self) {
        // Counters first: whoever sees its tensor done sees every datagram it took.
        self.publish();
        while let Some(event) = self.worker.poll_event() {
            match event {
                Event::Redirected { shard, shards } => self.move_to_shard(shard, shards),
                Event::Joined { epoch } => {
                    self.log.joined(epoch, self.worker.config());
                    let _ = self.reports.send(Report::Joined {
                        lane: self.index,
                        epoch,
                    });
                }
                Event::Failed(error) => {
                    if let Ok(mut shared) = self.shared.lock() {
                        shared.failure = Some(error);
                    }
                    let _ = self.reports.send(Report::Failed {
                        lane: self.index,
                        error: Box::new(error),
                    });
                }
                Event::Done {
                    mut buf, result, ..
                } => {
                    let outcome = match result {
                        Ok(()) => Ok(()),
                        Err(TensorError::Overflow { index, element }) => Err(Error::Overflow {
                            index: buf.offset + index,
                            element,
                        }),
                        Err(TensorError::Aborted) => Err(match self.worker.failure() {
                            Some(error) => self.stream_error(*error),
                            None => Error::LaneGone { lane: self.index },
                        }),
                    };
                    buf.set_outcome(outcome);
                }
            }
        }
    }

    /// Send to shard `shard` of the switch from now on (protocol.md §1.1). If the socket
    /// cannot move, the lane's Join goes unanswered and the worker's join timeout says so.
    fn move_to_shard(&mut self, shard: u16, shards: u16) {
        let port = switchml_core::shard::shard_port(self.switch.port(), shard);
        let Some(port) = port else {
            log::warn!(
                "lane {}: shard {shard} of {shards} has no port above {}",
                self.index,
                self.switch
            );
            return;
        };
        let mut to = self.switch;
        to.set_port(port);
        match self.socket.connect(to) {
            Ok(()) => {
                self.io.peer_moved(to);
                log::info!(
                    "lane {}: the switch has {shards} shards; joining shard {shard} at {to}",
                    self.index
                )
            }
            Err(e) => log::warn!("lane {}: connect to shard {shard} at {to}: {e}", self.index),
        }
    }

    fn stream_error(&self, error: WorkerError) -> Error {
        Error::Worker {
            rank: self.worker.config().rank,
            lane: self.index,
            error: Box::new(error),
        }
    }
}
