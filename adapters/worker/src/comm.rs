//! The communicator: what an application (a training loop, the `switchml` CLI) calls.
//!
//! [`Communicator::connect`] opens one socket and starts one lane thread per lane, and
//! returns once every lane has joined the job at the switch (or with the error that names
//! who did not; at once, with [`Error::SwitchUnreachable`], if nothing listens at the
//! switch's address). [`Communicator::allreduce`] splits a tensor into one contiguous part
//! per lane and blocks until every part is reduced in place;
//! [`Communicator::allreduce_async`] takes ownership of a vector and returns a [`Pending`]
//! handle, so several tensors can be in flight. Every rank must submit the same tensors
//! (lengths, types) in the same order.
//!
//! With a fallback address ([`CommConfig::fallback`]), `connect` first meets the other
//! ranks there, a switch that cannot serve the job is not an error, and a tensor whose
//! switch path fails is finished over the host ring, as is every later one
//! (`crate::fallback`, docs/fallback.md).

use std::marker::PhantomData;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, UdpSocket};
use std::sync::atomic::AtomicU64;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use switchml_core::quant::Op;
use switchml_core::wire::AbortReason;
use switchml_core::worker::{Stats, WorkerError, MAX_DEFAULT_COUNT};

use crate::config::{CommConfig, Dialect, COUNT_FROM_PATH};
use crate::error::{Error, ShapeSetting};
use crate::fallback::{falls_back, Fallback, FallbackStats};
use crate::lane::{Command, Lane, Report, Shared, Timing, BATCH};
use crate::lane_log::LaneLog;
use crate::part::{scan, split, Element, ExponentPool, Submission};
use switchml_udp::socket::{size_buffer, Buffer, Wake};

/// A worker's connection to a job at the switch.
pub struct Communicator {
    config: CommConfig,
    lanes: Vec<LaneHandle>,
    epoch: u32,
    /// The parts' exponent caches, reused.
    exponents: Arc<ExponentPool>,
    /// The host ring to fall back to, if configured (`crate::fallback`).
    fallback: Option<Arc<Fallback>>,
    /// The p4app dialect's link, in place of the lanes (`crate::dialect`).
    #[cfg(feature = "p4app")]
    dialect: Option<crate::dialect::DialectLink>,
}

struct LaneHandle {
    commands: Option<Sender<Command>>,
    wake: Arc<Wake>,
    shared: Arc<Mutex<Shared>>,
    thread: Option<JoinHandle<()>>,
}

/// An all-reduce in flight; [`Pending::wait`] returns the reduced vector.
#[must_use = "an all-reduce's result is only known after wait()"]
pub struct Pending<T> {
    pub(crate) submission: Arc<Submission>,
    /// The fallback that answers for this tensor if the switch fails, and its number.
    pub(crate) ticket: Option<(Arc<Fallback>, u64)>,
    pub(crate) _element: PhantomData<T>,
}

/// The switch's largest count, if `joined` is its refusal of a larger one.
fn count_too_large(joined: &Result<u32, Error>) -> Option<u16> {
    match joined {
        Err(Error::Worker { error, .. }) => match **error {
            WorkerError::Refused {
                reason: AbortReason::CountTooLarge,
                detail,
            } => Some(detail).filter(|&m| m > 0),
            _ => None,
        },
        _ => None,
    }
}

/// How long `connect` waits beyond the join timeout for lanes that report nothing.
const JOIN_GRACE: Duration = Duration::from_secs(2);

impl Communicator {
    /// Start the lanes and join the job; return when every lane has joined.
    pub fn connect(config: &CommConfig) -> Result<Communicator, Error> {
        // A count from the path is a power of two up to the switch's largest, which
        // `validate` already admits (it checks a count of 0 as the count it falls back to).
        config.validate()?;
        let sized = config.sized_for_path(MAX_DEFAULT_COUNT);
        if config.dialect == Dialect::P4app {
            return Self::connect_p4app(&sized);
        }
        let fallback = Fallback::open(config)?;
        let (mut comm, mut joined) = Self::start_lanes(sized, fallback.clone())?;
        // A count chosen from the path may exceed what the switch takes (a P4 switch's
        // 256): every rank is refused alike before any run gathers, and tries once more
        // with the switch's largest, before any refusal counts as the switch's failure.
        if let (COUNT_FROM_PATH, Some(max)) = (config.count, count_too_large(&joined)) {
            drop(comm);
            (comm, joined) = Self::start_lanes(config.sized_for_path(max), fallback)?;
        }
        match (joined, &comm.fallback) {
            (Ok(epoch), _) => comm.epoch = epoch,
            (Err(e), Some(f)) if falls_back(&e) => f.switch_failed(&e),
            (Err(e), _) => return Err(e),
        }
        Ok(comm)
    }

    /// Start `config`'s lanes and wait for them to join; the communicator and how the
    /// joins went.
    fn start_lanes(
        config: CommConfig,
        fallback: Option<Arc<Fallback>>,
    ) -> Result<(Communicator, Result<u32, Error>), Error> {
        let (reports_tx, reports) = mpsc::channel();
        let mut lanes = Vec::with_capacity(usize::from(config.lanes));
        // This communicator's incarnation: a new process to the switch (protocol.md §4.1).
        let nonce = fresh_nonce();
        let xdp = crate::lane_io::attach(&config.io);
        let backoffs = Arc::new(AtomicU64::new(0));
        for lane in 0..config.lanes {
            lanes.push(start_lane(
                &config,
                lane,
                nonce,
                reports_tx.clone(),
                xdp.as_ref(),
                &backoffs,
            )?);
        }
        drop(reports_tx);
        let comm = Communicator {
            config,
            lanes,
            epoch: 0,
            exponents: Arc::default(),
            fallback,
            #[cfg(feature = "p4app")]
            dialect: None,
        };
        let joined = comm.await_joins(&reports);
        Ok((comm, joined))
    }

    /// Join through the original controller at `config.switch` (the p4app dialect).
    #[cfg(feature = "p4app")]
    fn connect_p4app(config: &CommConfig) -> Result<Communicator, Error> {
        Ok(Communicator {
            config: config.clone(),
            lanes: Vec::new(),
            epoch: 0,
            exponents: Arc::default(),
            fallback: None,
            dialect: Some(crate::dialect::DialectLink::join(config)?),
        })
    }

    #[cfg(not(feature = "p4app"))]
    fn connect_p4app(_: &CommConfig) -> Result<Communicator, Error> {
        Err(Error::Config(
            "dialect p4app: this build lacks switchml-worker's `p4app` feature".into(),
        ))
    }

    /// [`Communicator::connect`] with [`CommConfig::from_env`].
    pub fn from_env() -> Result<Communicator, Error> {
        Self::connect(&CommConfig::from_env()?)
    }

    fn await_joins(&self, reports: &Receiver<Report>) -> Result<u32, Error> {
        let deadline = Instant::now() + self.config.join_timeout + JOIN_GRACE;
        let mut joined = vec![false; self.lanes.len()];
        let mut epoch = 0;
        while joined.iter().any(|j| !j) {
            let left = deadline.saturating_duration_since(Instant::now());
            match reports.recv_timeout(left) {
                Ok(Report::Joined { lane, epoch: e }) => {
                    joined[lane] = true;
                    epoch = e;
                }
                Ok(Report::Failed { error, .. })
                    if matches!(*error, WorkerError::PortUnreachable { .. }) =>
                {
                    return Err(Error::SwitchUnreachable {
                        addr: self.config.switch,
                    })
                }
                Ok(Report::Failed { lane, error }) => return Err(self.join_failed(lane, error)),
                Err(RecvTimeoutError::Timeout) => {
                    let lane = joined.iter().position(|j| !j).unwrap_or(0);
                    return Err(Error::Timeout {
                        what: format!("lane {lane} to join job {}", self.config.job),
                        after: self.config.join_timeout + JOIN_GRACE,
                    });
                }
                Err(RecvTimeoutError::Disconnected) => {
                    let lane = joined.iter().position(|j| !j).unwrap_or(0);
                    return Err(Error::LaneGone { lane });
                }
            }
        }
        Ok(epoch)
    }

    /// The error for lane `lane`'s failure to join: a refusal of this rank's lane shape
    /// names the setting to change and the job's value (protocol.md §4.1).
    fn join_failed(&self, lane: usize, error: Box<WorkerError>) -> Error {
        let rank = self.config.rank;
        if let WorkerError::Refused { reason, detail } = *error {
            if let Some(setting) = ShapeSetting::of(reason) {
                let ours = match setting {
                    ShapeSetting::Lanes => self.config.lanes,
                    ShapeSetting::Window => self.config.window,
                    ShapeSetting::Count => self.config.count,
                };
                return Error::Shape {
                    rank,
                    setting,
                    agreed: detail,
                    ours,
                };
            }
        }
        Error::Worker { rank, lane, error }
    }

    /// Return the configuration.
    pub fn config(&self) -> &CommConfig {
        &self.config
    }

    /// Return this worker's rank.
    pub fn rank(&self) -> u16 {
        self.config.rank
    }

    /// Return the number of ranks.
    pub fn world_size(&self) -> u16 {
        self.config.world
    }

    /// Return the number of ranks.
    #[deprecated(since = "0.2.0", note = "use `world_size`")]
    pub fn world(&self) -> u16 {
        self.world_size()
    }

    /// Leave the job and stop the lanes, waiting for their threads; a lane whose thread
    /// panicked is [`Error::LaneGone`]. Dropping a communicator does the same but cannot
    /// say how it went.
    pub fn close(mut self) -> Result<(), Error> {
        self.stop_lanes()
    }

    /// Tell every lane to stop (each leaves the job), then wait for their threads.
    fn stop_lanes(&mut self) -> Result<(), Error> {
        for lane in &mut self.lanes {
            lane.commands = None;
            lane.wake.signal();
        }
        let mut outcome = Ok(());
        for (i, lane) in self.lanes.iter_mut().enumerate() {
            if let Some(t) = lane.thread.take() {
                if t.join().is_err() && outcome.is_ok() {
                    outcome = Err(Error::LaneGone { lane: i });
                }
            }
        }
        outcome
    }

    /// Return the switch's epoch at join time.
    pub fn epoch(&self) -> u32 {
        self.epoch
    }

    /// Return the counters of every lane, added up.
    pub fn stats(&self) -> Stats {
        let mut total = Stats::default();
        for lane in &self.lanes {
            let s = lane.shared.lock().map(|s| s.stats).unwrap_or_default();
            total.add(&s);
        }
        total
    }

    /// Return the datagrams the lanes received and sent as AF_XDP frames (`CommConfig::io`;
    /// all zero on the socket path).
    pub fn xdp_counters(&self) -> switchml_xdp::XdpCounters {
        let mut total = switchml_xdp::XdpCounters::default();
        for lane in &self.lanes {
            let x = lane.shared.lock().map(|s| s.xdp).unwrap_or_default();
            total.received += x.received;
            total.sent += x.sent;
        }
        total
    }

    /// Return what the fallback to the host ring has done (all zero without one).
    pub fn fallback_stats(&self) -> FallbackStats {
        self.fallback
            .as_ref()
            .map(|f| f.stats())
            .unwrap_or_default()
    }

    /// Return each lane's round-trip estimate and current retransmission timeout.
    pub fn timing(&self) -> Vec<Timing> {
        self.lanes
            .iter()
            .map(|lane| lane.shared.lock().map(|s| s.timing).unwrap_or_default())
            .collect()
    }

    /// Return the first lane failure, if the stream has failed.
    pub fn failure(&self) -> Option<Error> {
        self.lanes.iter().enumerate().find_map(|(lane, h)| {
            let error = h.shared.lock().ok()?.failure?;
            Some(Error::Worker {
                rank: self.config.rank,
                lane,
                error: Box::new(error),
            })
        })
    }

    /// All-reduce `data` in place across the job; block until done.
    ///
    /// The wait ends when every lane has finished its part or failed; a lane fails on its
    /// own after its retry budget without progress, naming the slot and the missing ranks.
    ///
    /// A tensor holding a NaN or an infinity is all-reduced like any other by default: every
    /// rank gets non-finite values over the chunks that held one (protocol.md §5.4). With
    /// [`CommConfig::non_finite`] set to refuse (`SWITCHML_NON_FINITE=error`), it is refused
    /// whole, before any lane sends
    /// anything ([`Error::NonFinite`] names the first such element): `data` is untouched
    /// and this rank's stream is as if the call had not been made, so its next all-reduce
    /// works. The peers see nothing of it: they wait for this rank's contribution to the
    /// tensor they submitted, and take this rank's *next* submission as that contribution.
    /// After this error, submit a replacement of the same shape (the tensor with the bad
    /// elements zeroed, say) or have every rank skip the tensor; the caller's contract is
    /// that every rank submits the same tensors in the same order.
    pub fn allreduce<T: Element>(&self, data: &mut [T], op: Op) -> Result<(), Error> {
        #[cfg(feature = "p4app")]
        if let Some(d) = &self.dialect {
            return d.allreduce(data, op);
        }
        let layout = self.config.layout();
        let exponents = scan(data, layout, &self.exponents, self.config.non_finite)?;
        match &self.fallback {
            Some(f) => f.allreduce(data, op, |data| self.switch_allreduce(data, op, exponents)),
            None => self.switch_allreduce(data, op, exponents),
        }
    }

    /// The switch path of [`Communicator::allreduce`]: `exponents` are the parts' block
    /// exponents from the one scan that also found `data` finite.
    fn switch_allreduce<T: Element>(
        &self,
        data: &mut [T],
        op: Op,
        exponents: Vec<Vec<u8>>,
    ) -> Result<(), Error> {
        let layout = self.config.layout();
        let submission = Submission::new(self.lanes.len(), None);
        // SAFETY: `data` is borrowed mutably for this whole call, and the call does not
        // return before `wait(None)` has seen every part dropped.
        let parts = unsafe { split(data, layout, &submission, exponents, &self.exponents) };
        self.dispatch(parts, op);
        submission
            .wait(None)
            .unwrap_or(Err(Error::LaneGone { lane: 0 }))
    }

    /// Start an all-reduce of `data`; the vector comes back from [`Pending::wait`]. A
    /// tensor with a NaN or an infinity is refused as by [`Communicator::allreduce`]: the
    /// handle is finished at once, with [`Error::NonFinite`].
    pub fn allreduce_async<T: Element>(&self, mut data: Vec<T>, op: Op) -> Pending<T> {
        #[cfg(feature = "p4app")]
        if let Some(d) = &self.dialect {
            // The dialect's link reduces on the caller's thread: the handle is finished.
            let outcome = d.allreduce(&mut data, op);
            let owner: Option<Box<dyn std::any::Any + Send>> = Some(Box::new(data));
            return Pending {
                submission: match outcome {
                    Ok(()) => Submission::new(0, owner),
                    Err(e) => Submission::refused(e, owner),
                },
                ticket: None,
                _element: PhantomData,
            };
        }
        let layout = self.config.layout();
        let exponents = match scan(&mut data, layout, &self.exponents, self.config.non_finite) {
            Ok(exponents) => exponents,
            Err(e) => {
                return Pending {
                    submission: Submission::refused(e, Some(Box::new(data))),
                    ticket: None,
                    _element: PhantomData,
                }
            }
        };
        match &self.fallback {
            Some(f) => {
                let (submission, n) = f.allreduce_async(data, op, |data| {
                    self.switch_allreduce_async(data, op, exponents).submission
                });
                Pending {
                    submission,
                    ticket: n.map(|n| (Arc::clone(f), n)),
                    _element: PhantomData,
                }
            }
            None => self.switch_allreduce_async(data, op, exponents),
        }
    }

    /// The switch path of [`Communicator::allreduce_async`], as `switch_allreduce`.
    fn switch_allreduce_async<T: Element>(
        &self,
        mut data: Vec<T>,
        op: Op,
        exponents: Vec<Vec<u8>>,
    ) -> Pending<T> {
        let layout = self.config.layout();
        let lanes = self.lanes.len();
        // The vector's heap buffer does not move when the Vec is moved into the box below.
        let ptr_data: *mut [T] = data.as_mut_slice();
        let submission = Submission::new(lanes, Some(Box::new(data)));
        // SAFETY: the submission owns the vector until every part is back (and forever if
        // the handle is leaked), and nothing else touches it meanwhile.
        let parts = unsafe {
            split(
                &mut *ptr_data,
                layout,
                &submission,
                exponents,
                &self.exponents,
            )
        };
        self.dispatch(parts, op);
        Pending {
            submission,
            ticket: None,
            _element: PhantomData,
        }
    }

    fn dispatch(&self, parts: Vec<crate::part::Part>, op: Op) {
        for (lane, (part, handle)) in parts.into_iter().zip(&self.lanes).enumerate() {
            let sent = match &handle.commands {
                Some(tx) => tx.send(Command::Submit(part, op)).map_err(|e| e.0),
                None => Err(Command::Submit(part, op)),
            };
            match sent {
                Ok(()) => handle.wake.signal(),
                Err(Command::Submit(mut part, _)) => {
                    part.set_outcome(Err(Error::LaneGone { lane }))
                }
            }
        }
    }
}

impl Drop for Communicator {
    fn drop(&mut self) {
        // `close` reports how the lanes ended; a drop has no one to tell.
        let _ = self.stop_lanes();
    }
}

impl<T: Element> Pending<T> {
    /// Return whether the all-reduce has finished (successfully or not).
    pub fn is_finished(&self) -> bool {
        self.submission.is_done()
    }

    /// Return whether the all-reduce has finished (successfully or not).
    #[deprecated(since = "0.2.0", note = "use `is_finished`")]
    pub fn test(&self) -> bool {
        self.is_finished()
    }

    /// Wait for the result. Bounded by the lanes' own failure detection (see
    /// [`Communicator::allreduce`]).
    pub fn wait(self) -> Result<Vec<T>, Error> {
        let outcome = self
            .submission
            .wait(None)
            .unwrap_or(Err(Error::LaneGone { lane: 0 }));
        self.finish(outcome)
    }

    /// Wait at most `timeout`; on timeout the handle comes back.
    pub fn wait_timeout(self, timeout: Duration) -> Result<Result<Vec<T>, Error>, Pending<T>> {
        match self.submission.wait(Some(timeout)) {
            None => Err(self),
            Some(outcome) => Ok(self.finish(outcome)),
        }
    }

    /// The result, from the fallback if the switch path failed.
    fn finish(&self, outcome: Result<(), Error>) -> Result<Vec<T>, Error> {
        match &self.ticket {
            Some((fallback, n)) => fallback.finish_async(*n, outcome, self.take()),
            None => outcome.and_then(|()| self.take()),
        }
    }

    fn take(&self) -> Result<Vec<T>, Error> {
        self.submission
            .take_owner()
            .and_then(|b| b.downcast::<Vec<T>>().ok())
            .map(|b| *b)
            .ok_or_else(|| Error::Config("the tensor was already taken".into()))
    }
}

/// A random non-zero nonce: the OS-seeded random value the switch side uses for keys.
fn fresh_nonce() -> u32 {
    let n = switchml_udp::fresh::fresh_key();
    ((n >> 32) as u32 ^ n as u32).max(1)
}

/// Open lane `lane`'s socket (connected to the switch, buffers sized for its window) and
/// start its thread.
fn start_lane(
    config: &CommConfig,
    lane: u16,
    nonce: u32,
    reports: Sender<Report>,
    xdp: Option<&Arc<switchml_xdp::Attached>>,
    backoffs: &Arc<AtomicU64>,
) -> Result<LaneHandle, Error> {
    let local: IpAddr = match config.switch {
        SocketAddr::V4(_) => Ipv4Addr::UNSPECIFIED.into(),
        SocketAddr::V6(_) => Ipv6Addr::UNSPECIFIED.into(),
    };
    let socket =
        UdpSocket::bind((local, 0)).map_err(|e| Error::io(format!("lane {lane}: bind"), &e))?;
    socket.connect(config.switch).map_err(|e| {
        Error::io(
            format!("lane {lane}: connect to the switch at {}", config.switch),
            &e,
        )
    })?;
    socket
        .set_nonblocking(true)
        .map_err(|e| Error::io(format!("lane {lane}: set non-blocking"), &e))?;
    let core = config.lane(lane, nonce);
    let window_bytes = (usize::from(core.window) + BATCH) * core.max_datagram() * 2;
    for which in [Buffer::Receive, Buffer::Send] {
        size_buffer(&socket, which, window_bytes)
            .map_err(|e| Error::io(format!("lane {lane}: size the socket buffer"), &e))?;
    }
    let worker = Lane::worker(core)?;
    let io = switchml_xdp::Io::open(xdp, u32::from(lane), &socket, &format!("lane {lane}"));
    let (tx, commands) = mpsc::channel();
    let wake = Arc::new(Wake::new().map_err(|e| Error::io("eventfd", &e))?);
    let shared = Arc::new(Mutex::new(Shared::default()));
    let state = Lane {
        index: usize::from(lane),
        socket,
        io,
        switch: config.switch,
        worker,
        commands,
        wake: Arc::clone(&wake),
        reports,
        shared: Arc::clone(&shared),
        coalesce: config.coalesce,
        log: LaneLog::new(&core, usize::from(lane)),
        backoffs: crate::backoffs::LaneBackoffs::new(backoffs),
    };
    let thread = std::thread::Builder::new()
        .name(format!("switchml-r{}-lane{lane}", config.rank))
        .spawn(move || state.run())
        .map_err(|e| Error::io("spawn a lane thread", &e))?;
    Ok(LaneHandle {
        commands: Some(tx),
        wake,
        shared,
        thread: Some(thread),
    })
}
