//! The worker: a sans-IO state machine that all-reduces tensors through the switch.
//!
//! In the style of quinn-proto: the caller feeds it inputs with [`Worker::handle_packet`]
//! and [`Worker::handle_timeout`], and drains outputs with [`Worker::poll_transmit`],
//! [`Worker::poll_timeout`] and [`Worker::poll_event`]. It reads no clock: every call takes
//! `now`, which must never go backwards. A driving loop looks like:
//!
//! ```text
//! loop {
//!     while let Some(len) = worker.poll_transmit(now, &mut buf) { send(&buf[..len]) }
//!     while let Some(event) = worker.poll_event() { ... }
//!     wait for a datagram or until worker.poll_timeout();
//!     worker.handle_packet(now, &datagram) or worker.handle_timeout(now);
//! }
//! ```
//!
//! One `Worker` drives one *lane*: a contiguous range of the job's slots (protocol.md §6).
//! A host with several I/O threads splits its tensors and its slots between several
//! workers of the same rank. Tensors are [`Tensor`]s the worker owns while it works on them
//! and hands back in [`Event::Done`]; the all-reduce happens in place.
//!
//! Per slot the worker runs SwitchML's loop: send a chunk, wait for the slot's result,
//! send the next chunk on the same slot with the version flipped. A use found late (later
//! uses completed first, or its timer expired, with exponential backoff) is asked about
//! with a Probe, and resent only if the switch lacks this rank's Contribution or the rank
//! lacks the Result (protocol.md §6.1, `recovery.rs`); after `retries` timeouts of one use
//! it probes the switch: if the switch holds this rank's Contribution and waits for
//! others', the lane keeps waiting up to [`Config::timeout`] (a busy peer is alive; the
//! switch names a dead one itself, §4.3), and otherwise fails with an error that names the
//! slot and the ranks that never contributed. A lane with nothing to send keeps alive with
//! a Probe every [`Config::keep_alive`].

mod age_heap;
mod congestion;
mod control;
mod event;
mod lanes;
mod non_finite_policy;
mod packet_size;
mod recovery;
mod rtt;
mod send_window;
mod slot_state;
mod slots;
mod tensors;
mod timeout_policy;
mod timer;

pub use congestion::{CongestionControl, CongestionParams};
pub use event::{
    Event, StallReport, Stats, SubmitError, SubmitErrorKind, TensorError, TensorId, WorkerError,
};
pub use lanes::{LaneLayout, LayoutError};
pub use non_finite_policy::NonFinitePolicy;
pub use packet_size::{count_for_mtu, MAX_DEFAULT_COUNT};
pub use timeout_policy::{max_rto_for, HOST_RTO, MAX_RTO_PER_RTO};

use crate::quant::{ElementType, Op, Tensor};
use crate::ranks::{WorldSet, MAX_WORLD};
use crate::time::{Duration, Instant};
use crate::wire::{self, Message};
use congestion::CongestionWindow;
use rtt::RttEstimator;
use slot_state::{SlotState, Work};
use tensors::{Entry, Queue, Vouched};
use timer::{SlotTimers, Timer, TimerTable};

/// How a worker lane is set up. Every rank of a job uses the same values except `rank`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Config {
    /// The job id.
    pub job: u16,
    /// This worker's rank.
    pub rank: u16,
    /// Number of ranks.
    pub world: u16,
    /// First job-relative slot of this lane.
    pub slot_lo: u16,
    /// Number of slots this lane drives (the window `s`).
    pub window: u16,
    /// Values per chunk (`k`).
    pub count: u16,
    /// The rank's number of lanes `L` (this lane is lane `slot_lo / window` of them). The
    /// switch agrees it at Join with `window` and `count` (protocol.md §4.1, §6).
    pub lanes: u16,
    /// Smallest retransmission timeout: the first one, and the floor under the timeout
    /// measured from round trips (`srtt + 4·rttvar`, RFC 6298).
    pub rto: Duration,
    /// Largest retransmission timeout (the measured timeout and its doubling stop here).
    pub max_rto: Duration,
    /// Timeouts of one use (each a Probe or a resend) before the worker probes for the
    /// stall report: it gives up when that Probe goes unanswered (the switch is gone), or
    /// when the report shows anything but a peer the switch still waits for (§6).
    pub retries: u16,
    /// How long a use may wait for a peer that the switch still hears (a rank busy
    /// elsewhere, alive): the user's collective timeout. A dead peer is named by the
    /// switch within its dead interval instead (protocol.md §4.3, §6).
    pub timeout: Duration,
    /// The most time the lane lets pass without sending anything while it is in a run:
    /// then it sends a Probe, so that the switch hears it is alive (protocol.md §4.3).
    pub keep_alive: Duration,
    /// Interval between Joins while joining.
    pub join_interval: Duration,
    /// How long to wait for every rank to join.
    pub join_timeout: Duration,
    /// The job's credential (protocol.md §4.1), given to every rank out of band.
    pub key: u64,
    /// This worker process's incarnation: non-zero, random (from the OS, once per process
    /// or communicator), the same for every lane of the rank. A rank that comes back with a
    /// new nonce is a new process to the switch.
    pub nonce: u32,
    /// What a submitted float tensor holding a NaN or ±∞ does: travel flagged, like
    /// Gloo's (the default), or be refused before anything is sent.
    pub non_finite: NonFinitePolicy,
    /// Whether the lane adapts how many of its slots are in flight to congestion
    /// (protocol.md §6.3), or keeps them all in flight as SwitchML does.
    pub congestion: CongestionControl,
}

impl Config {
    /// A configuration with defaults: one lane of 64 slots from 0, k = 256, 5 ms first timeout doubling
    /// to 200 ms, 30 resends (about 5 s without an answer from the switch), a 30 minute
    /// wait for a busy peer (torch's default collective timeout), a keep-alive every 250
    /// ms, joins every 100 ms for 30 s, key 0 and nonce 1 (set both: the key to the job's,
    /// the nonce to a random one), non-finite values propagated.
    pub const fn new(job: u16, rank: u16, world: u16) -> Config {
        Config {
            job,
            rank,
            world,
            slot_lo: 0,
            window: 64,
            count: 256,
            lanes: 1,
            rto: Duration::from_millis(5),
            max_rto: Duration::from_millis(200),
            retries: 30,
            timeout: DEFAULT_TIMEOUT,
            keep_alive: DEFAULT_KEEP_ALIVE,
            join_interval: Duration::from_millis(100),
            join_timeout: Duration::from_secs(30),
            key: 0,
            nonce: 1,
            non_finite: NonFinitePolicy::Propagate,
            congestion: DEFAULT_CONGESTION,
        }
    }

    /// The configuration of [`Config::new`] with a host library's first timeout,
    /// [`HOST_RTO`] (20 ms): its lanes share the host's cores.
    pub const fn for_host(job: u16, rank: u16, world: u16) -> Config {
        let mut c = Config::new(job, rank, world);
        c.rto = HOST_RTO;
        c
    }

    /// Return the largest datagram this lane sends (the transmit buffer size it needs).
    pub const fn max_datagram(&self) -> usize {
        // A Contribution, or a Join (44 bytes) where chunks are smaller than it.
        let data = wire::data::HEADER_LEN + 4 * self.count as usize;
        if data > wire::join::LEN {
            data
        } else {
            wire::join::LEN
        }
    }
}

/// Why a configuration was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum ConfigError {
    /// `world` is 0 or above [`MAX_WORLD`].
    World,
    /// `rank` is not below `world`.
    Rank,
    /// `window` is 0, above the worker's `SLOTS`, or runs past slot 65535.
    Window,
    /// `count` is 0 or above what a datagram carries.
    Count,
    /// `lanes` is 0, or this lane (`slot_lo / window`) is not one of them.
    Lanes,
    /// A timeout is zero.
    Timeout,
    /// The nonce is zero.
    Nonce,
}

impl core::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(match self {
            ConfigError::World => "world size must be 1..=1024",
            ConfigError::Rank => "rank must be below the world size",
            ConfigError::Window => "window must be 1..=SLOTS and fit in the slot numbering",
            ConfigError::Count => "count must be 1..=16370",
            ConfigError::Lanes => "lanes must be at least 1 and above the lane's index",
            ConfigError::Timeout => "timeouts must be non-zero",
            ConfigError::Nonce => "the nonce must be non-zero",
        })
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Joining,
    Running,
    /// Done with the run: a Leave is sent, nothing more.
    Left,
    Failed,
}

/// A stalled slot being probed.
#[derive(Debug, Clone, Copy)]
struct Probe {
    slot: u16,
    seq: u32,
    sent: u8,
    due: bool,
}

/// The default [`Config::congestion`] (protocol.md §6.3).
pub const DEFAULT_CONGESTION: CongestionControl = CongestionControl::Off;

/// The default [`Config::timeout`]: 30 minutes, torch.distributed's default.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30 * 60);

/// The default [`Config::keep_alive`] (protocol.md §4.3): a sixth of the switch's default
/// dead interval, so that a few lost keep-alives never look like a dead rank.
pub const DEFAULT_KEEP_ALIVE: Duration = Duration::from_millis(250);

/// Probes sent before the switch counts as not answering.
const PROBE_ATTEMPTS: u8 = 3;

/// Refusals (ICMP port unreachable) while joining, with no datagram from the switch in
/// between, before the worker gives up: one Join per join interval, so a switch that is
/// still starting up gets about two intervals.
pub const UNREACHABLE_JOINS: u8 = 3;

/// The worker state machine for one lane. `SLOTS`: the most slots a lane may drive;
/// `QUEUE`: the most tensors queued at once.
pub struct Worker<B, const SLOTS: usize, const QUEUE: usize> {
    config: Config,
    phase: Phase,
    started: Option<Instant>,
    epoch: Option<u32>,
    /// The session of the run joined (from the JoinReply); 0 before.
    session: u32,
    /// A Leave to send.
    leave_pending: bool,
    /// The switch's number of shards, as it announced it (1 until it does, §1.1).
    shards: u16,
    /// The switch answers a Probe with `RESULT` set with the Result (§6.1).
    probe_results: bool,
    /// The switch's cookie for this lane's address (§4.2), 0 before one came.
    cookie: u64,
    /// Joins a Cookie made go out at once since the last timed one: past two, the next
    /// waits for the resend timer, so forged Cookies cannot make a lane send a Join each.
    cookie_resends: u8,
    /// The Join now due was made due by a Cookie.
    join_due_to_cookie: bool,
    /// The shard to move to, not yet told to the adapter.
    redirect_event: Option<u16>,
    /// Ranks joined at the last JoinReply; whether any came.
    joined: Option<WorldSet>,
    join_due: bool,
    /// A keep-alive Probe is due: the lane sent nothing for its keep-alive interval.
    keep_alive_due: bool,
    /// Refusals reported while joining since the last datagram from the switch.
    refusals: u8,
    slots: [SlotState; SLOTS],
    send_queue: heapless::Deque<u16, SLOTS>,
    slot_timers: SlotTimers<SLOTS>,
    timers: TimerTable,
    probe: Option<Probe>,
    /// Send order of the next use sent for the first time (for `find_gaps`).
    next_order: u64,
    /// No use in flight has a watch mark below this (for `find_gaps`).
    oldest_watch: u64,
    rtt: RttEstimator,
    /// How many slots may have a first send outstanding (§6.3).
    cwnd: CongestionWindow,
    /// Slots whose current use has been sent and has no Result yet.
    in_flight: u16,
    /// With the window on: the held slots, and every slot with a use, by age (§6.3).
    held_by_age: age_heap::AgeHeap<SLOTS>,
    active_by_age: age_heap::AgeHeap<SLOTS>,
    tensors: Queue<B, QUEUE>,
    joined_event: bool,
    failure: Option<WorkerError>,
    failed_event: bool,
    /// An Abort to send: the rank we waited for, or `0xFFFF`.
    abort_pending: Option<u16>,
    stats: Stats,
}

impl<B: Tensor, const SLOTS: usize, const QUEUE: usize> Worker<B, SLOTS, QUEUE> {
    /// Make a worker lane. It starts joining at the first `poll_transmit`.
    pub fn new(config: Config) -> Result<Self, ConfigError> {
        if config.world == 0 || usize::from(config.world) > MAX_WORLD {
            return Err(ConfigError::World);
        }
        if config.rank >= config.world {
            return Err(ConfigError::Rank);
        }
        if config.window == 0
            || usize::from(config.window) > SLOTS
            || u32::from(config.slot_lo) + u32::from(config.window) > 0x1_0000
        {
            return Err(ConfigError::Window);
        }
        if config.count == 0 || config.count > wire::data::MAX_COUNT {
            return Err(ConfigError::Count);
        }
        if config.slot_lo / config.window >= config.lanes {
            return Err(ConfigError::Lanes);
        }
        if [
            config.rto,
            config.max_rto,
            config.join_interval,
            config.join_timeout,
            config.timeout,
            config.keep_alive,
        ]
        .contains(&Duration::ZERO)
        {
            return Err(ConfigError::Timeout);
        }
        if config.nonce == 0 {
            return Err(ConfigError::Nonce);
        }
        Ok(Worker {
            config,
            phase: Phase::Joining,
            started: None,
            epoch: None,
            session: 0,
            leave_pending: false,
            shards: 1,
            probe_results: false,
            cookie: 0,
            cookie_resends: 0,
            join_due_to_cookie: false,
            redirect_event: None,
            joined: None,
            join_due: true,
            keep_alive_due: false,
            refusals: 0,
            slots: [SlotState::new(config.rto); SLOTS],
            send_queue: heapless::Deque::new(),
            slot_timers: SlotTimers::new(),
            timers: TimerTable::default(),
            probe: None,
            next_order: 0,
            oldest_watch: 0,
            rtt: RttEstimator::default(),
            cwnd: CongestionWindow::new(config.congestion, config.window, config.lanes),
            in_flight: 0,
            held_by_age: age_heap::AgeHeap::new(),
            active_by_age: age_heap::AgeHeap::new(),
            tensors: Queue::new(),
            joined_event: false,
            failure: None,
            failed_event: false,
            abort_pending: None,
            stats: Stats {
                cwnd: u64::from(config.window),
                ..Stats::default()
            },
        })
    }

    /// Return the configuration.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// Return the counters.
    pub fn stats(&self) -> &Stats {
        &self.stats
    }

    /// Return the congestion window: how many of the lane's slots may have a first send
    /// outstanding now (§6.3; the lane's `window` when the controller is off).
    pub fn congestion_window(&self) -> u16 {
        self.cwnd.window()
    }

    /// Return the smoothed round trip of a slot use (send to result), once measured.
    pub fn smoothed_rtt(&self) -> Option<Duration> {
        self.rtt.srtt()
    }

    /// Return the retransmission timeout a fresh use starts with now.
    pub fn current_rto(&self) -> Duration {
        self.rtt.rto(self.config.rto, self.config.max_rto)
    }

    /// Give up: the application is closing or cancelling. Every queued tensor comes back as
    /// `Done` with an error, and the job is told (Abort `WorkerFailed`), so peers fail at
    /// once instead of timing out.
    pub fn abort(&mut self) {
        self.fail(WorkerError::Cancelled);
    }

    /// End this rank's part in the run: once nothing is queued or in flight, send a Leave
    /// (at the next `poll_transmit`) so that the switch can end the run when every rank
    /// has left (protocol.md §4.1). Call it on every lane: only the first lane of each
    /// shard sends one (lane `l < shards`, §6), the others just stop, since a shard's run
    /// ends with its last rank's Leave and a later one would be a `BadSession` drop. Does
    /// nothing unless the stream is running and idle.
    pub fn leave(&mut self) {
        if self.phase == Phase::Running && self.is_idle() {
            self.phase = Phase::Left;
            self.leave_pending = self.lane() < self.shards;
            self.timers = TimerTable::default();
            self.slot_timers = SlotTimers::new();
        }
    }

    /// Return this lane's index among the rank's lanes (`slot_lo / window`, §6).
    pub fn lane(&self) -> u16 {
        self.config.slot_lo / self.config.window
    }

    /// Return the switch's number of shards as it announced it (1 until it does, §1.1).
    pub fn shards(&self) -> u16 {
        self.shards
    }

    /// Return whether every rank has joined and the stream is live.
    pub fn is_running(&self) -> bool {
        self.phase == Phase::Running
    }

    /// Return the error the stream failed with, if it has.
    pub fn failure(&self) -> Option<&WorkerError> {
        self.failure.as_ref()
    }

    /// Return whether no tensor is queued or in flight.
    pub fn is_idle(&self) -> bool {
        self.tensors.is_empty()
    }

    /// Queue a tensor for all-reduce in place. With [`NonFinitePolicy::Refuse`], non-finite
    /// inputs are refused here, before anything is sent; that takes one pass over the
    /// tensor, done after the cheaper refusals (so a full queue costs no scan); with
    /// [`NonFinitePolicy::Propagate`] they are sent flagged (protocol.md §5.4). A float
    /// tensor with an exponent cache ([`Tensor::elements_and_exponents`]) gets its chunks'
    /// block exponents in one pass (unless it holds a NaN or ∞), and no chunk is scanned
    /// again; without one, each chunk's exponent is scanned as the chunk is sent (a second
    /// read of the tensor).
    pub fn submit(&mut self, _now: Instant, buf: B, op: Op) -> Result<TensorId, SubmitError<B>> {
        self.queue_tensor(buf, op, Vouched::Nothing)
    }

    /// Queue a tensor whose elements the caller has already found finite
    /// ([`Elements::check_finite`](crate::quant::Elements::check_finite)), without
    /// scanning it again: a host that splits one tensor between several lanes checks it
    /// once, whole, before any lane sends anything. A NaN or infinity submitted here anyway
    /// travels flagged as with [`NonFinitePolicy::Propagate`], whatever the policy. Each chunk's exponent
    /// is scanned as the chunk is sent; an exponent cache is not used (the caller who
    /// filled it submits with [`submit_scanned`](Self::submit_scanned)).
    pub fn submit_finite(
        &mut self,
        _now: Instant,
        buf: B,
        op: Op,
    ) -> Result<TensorId, SubmitError<B>> {
        self.queue_tensor(buf, op, Vouched::Finite)
    }

    /// Queue a tensor whose elements the caller has found finite and whose exponent cache
    /// it has filled, in the same pass
    /// ([`Elements::finite_block_exponents`](crate::quant::Elements::finite_block_exponents)
    /// with this lane's `count`): the host that checks a tensor whole before splitting it
    /// between lanes reads it once for both. The worker sends the cached bytes as they are;
    /// wrong ones do not panic, but spoil the sums of their chunks at every rank. Without a
    /// cache with a byte for every chunk, as [`submit_finite`](Self::submit_finite).
    pub fn submit_scanned(
        &mut self,
        _now: Instant,
        buf: B,
        op: Op,
    ) -> Result<TensorId, SubmitError<B>> {
        self.queue_tensor(buf, op, Vouched::Scanned)
    }

    fn queue_tensor(
        &mut self,
        mut buf: B,
        op: Op,
        vouched: Vouched,
    ) -> Result<TensorId, SubmitError<B>> {
        let refuse = |kind, buf| Err(SubmitError { kind, buf });
        if self.failure.is_some() {
            return refuse(SubmitErrorKind::Failed, buf);
        }
        let elements = buf.elements();
        let (len, element) = (elements.len(), elements.element_type());
        if element == ElementType::I32 && op == Op::Average {
            return refuse(SubmitErrorKind::AverageOfIntegers, buf);
        }
        let Ok(chunks) = u32::try_from(len.div_ceil(usize::from(self.config.count))) else {
            return refuse(SubmitErrorKind::TooLarge, buf);
        };
        if !self.tensors.has_room() {
            return refuse(SubmitErrorKind::QueueFull, buf);
        }
        let policy = self.config.non_finite;
        let count = self.config.count;
        let cached = match tensors::scan_exponents(&mut buf, chunks, count, vouched, policy) {
            Ok(cached) => cached,
            Err(e) => return refuse(SubmitErrorKind::NonFinite(e), buf),
        };
        let id = TensorId(self.tensors.next_id);
        let window = u32::from(self.config.window);
        let rotation = self.tensors.next_rotation;
        self.tensors.next_rotation = ((u32::from(rotation) + chunks % window) % window) as u16;
        self.tensors.next_id += 1;
        self.tensors.insert(Entry {
            id,
            buf,
            len,
            element,
            op,
            chunks,
            rotation,
            remaining: chunks,
            overflow: None,
            cached,
            // A cache filled means a scan that found every element finite; so does a
            // refusing policy's check. `Vouched::Finite` is the caller's word only: its
            // chunks are still looked at, as `submit_finite` promises.
            finite: cached || (vouched == Vouched::Nothing && policy == NonFinitePolicy::Refuse),
        });
        for i in 0..usize::from(self.config.window) {
            if let Work::Idle { next } = self.slots[i].work {
                if next <= id.0 {
                    self.start_next(i, next);
                }
            }
        }
        Ok(id)
    }

    /// Feed one datagram received from the switch.
    pub fn handle_packet(&mut self, now: Instant, bytes: &[u8]) {
        // Whatever it is, something listens at the switch's address.
        self.refusals = 0;
        self.stats.datagrams_received += 1;
        let Ok(msg) = Message::parse(bytes) else {
            self.stats.ignored += 1;
            return;
        };
        match msg {
            Message::Data(repr, payload)
                if repr.kind == wire::DataKind::Result
                    && self.is_for_me(repr.job, repr.rank)
                    && repr.session == self.session =>
            {
                self.on_result(now, &repr, payload)
            }
            Message::JoinReply(r) if self.is_for_me(r.job, r.rank) => self.on_join_reply(now, &r),
            // A ProbeReply names the Probe's session: only one of this lane's run counts, so
            // no one who cannot read the run forges a switch restart with it (§4.2).
            Message::ProbeReply(r)
                if self.is_for_me(r.job, r.rank) && r.session != 0 && r.session == self.session =>
            {
                self.on_probe_reply(now, &r)
            }
            Message::Cookie(c) if self.is_for_me(c.job, c.rank) => self.on_cookie(&c),
            Message::Abort(a) if a.job == self.config.job && self.admits_abort(a.session) => {
                self.on_abort(&a)
            }
            _ => self.stats.ignored += 1,
        }
    }

    /// An Abort counts if it names this lane's run, or, while joining, this process's nonce
    /// (a refusal of its own Join): never one that names nothing, which anyone could forge
    /// into an answer to this lane (protocol.md §4.1).
    fn admits_abort(&self, session: u32) -> bool {
        (session != 0 && session == self.session)
            || (self.phase == Phase::Joining && session == self.config.nonce)
    }

    fn is_for_me(&self, job: u16, rank: u16) -> bool {
        job == self.config.job && (rank == self.config.rank || rank == wire::RANK_ALL)
    }

    /// Tell the worker that the network refused a datagram it sent to the switch: an ICMP
    /// port unreachable, which a connected UDP socket reports as `ECONNREFUSED`. Call it
    /// once per refusal.
    ///
    /// While joining, after [`UNREACHABLE_JOINS`] refusals with no datagram from the
    /// switch in between, the worker fails with [`WorkerError::PortUnreachable`] at once
    /// instead of waiting out its join timeout. Once running it changes nothing: a switch
    /// that restarts is briefly unreachable, and the retransmissions and the stall
    /// detection decide as they would without it.
    pub fn handle_unreachable(&mut self, now: Instant) {
        if self.phase != Phase::Joining {
            return;
        }
        self.refusals = self.refusals.saturating_add(1);
        if self.refusals >= UNREACHABLE_JOINS {
            let waited = now - self.started.unwrap_or(now);
            self.fail(WorkerError::PortUnreachable { waited });
        }
    }

    /// Tell the worker that `now` has come; call it at or after `poll_timeout()`.
    pub fn handle_timeout(&mut self, now: Instant) {
        if matches!(self.phase, Phase::Failed | Phase::Left) {
            return;
        }
        if self.timers.expire(Timer::JoinDeadline, now) {
            let waited = now - self.started.unwrap_or(now);
            let err = match self.joined {
                Some(joined) => WorkerError::JoinTimeout {
                    missing: joined.complement_within(self.config.world),
                    waited,
                },
                None => WorkerError::SwitchUnreachable { waited },
            };
            self.fail(err);
            return;
        }
        if self.timers.expire(Timer::JoinResend, now) {
            self.join_due = true;
        }
        if self.timers.expire(Timer::KeepAlive, now) {
            self.keep_alive_due = self.phase == Phase::Running;
        }
        if self.timers.expire(Timer::Probe, now) {
            if let Some(p) = self.probe.as_mut() {
                if p.sent >= PROBE_ATTEMPTS {
                    let (slot, seq) = (self.config.slot_lo + p.slot, p.seq);
                    self.fail(WorkerError::Stalled {
                        slot,
                        seq,
                        report: StallReport::NoAnswer,
                    });
                    return;
                }
                p.due = true;
            }
        }
        self.expire_slots(now);
    }

    /// Write the next datagram to send into `buf` and return its length. `buf` must hold
    /// [`Config::max_datagram`] bytes.
    #[must_use]
    pub fn poll_transmit(&mut self, now: Instant, buf: &mut [u8]) -> Option<usize> {
        let len = self.next_transmit(now, buf);
        if len.is_some() {
            self.stats.datagrams_sent += 1;
            if self.phase == Phase::Running {
                // Anything sent shows the switch this rank is alive (§4.3).
                self.keep_alive_due = false;
                self.timers
                    .set(Timer::KeepAlive, now + self.config.keep_alive);
            }
        }
        len
    }

    fn next_transmit(&mut self, now: Instant, buf: &mut [u8]) -> Option<usize> {
        if self.started.is_none() {
            self.started = Some(now);
            self.timers
                .set(Timer::JoinDeadline, now + self.config.join_timeout);
        }
        if let Some(waiting_for) = self.abort_pending.take() {
            return self.emit_abort(waiting_for, buf);
        }
        if self.leave_pending {
            self.leave_pending = false;
            return self.emit_leave(buf);
        }
        match self.phase {
            Phase::Failed | Phase::Left => None,
            Phase::Joining => self.join_due.then(|| self.emit_join(now, buf)).flatten(),
            Phase::Running => {
                if self.probe.is_some_and(|p| p.due) {
                    return self.emit_probe(now, buf);
                }
                let len = self.emit_next_contribution(now, buf);
                if len.is_none() && self.keep_alive_due {
                    return self.emit_keep_alive(buf);
                }
                len
            }
        }
    }

    /// Return when `handle_timeout` should next be called (it may find nothing due).
    #[must_use]
    pub fn poll_timeout(&self) -> Option<Instant> {
        if matches!(self.phase, Phase::Failed | Phase::Left) {
            return None;
        }
        let slots = self.slot_timers.next_timeout();
        match (self.timers.next_timeout(), slots) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Return the next event.
    #[must_use]
    pub fn poll_event(&mut self) -> Option<Event<B>> {
        if let Some(shard) = self.redirect_event.take() {
            return Some(Event::Redirected {
                shard,
                shards: self.shards,
            });
        }
        if self.joined_event {
            self.joined_event = false;
            return self.epoch.map(|epoch| Event::Joined { epoch });
        }
        if self.failed_event {
            self.failed_event = false;
            return self.failure.map(Event::Failed);
        }
        let e = self.tensors.take_oldest(|e| e.remaining == 0).or_else(|| {
            if self.phase == Phase::Failed {
                self.tensors.take_oldest(|_| true)
            } else {
                None
            }
        })?;
        let result = if e.remaining == 0 {
            self.stats.tensors += 1;
            e.result()
        } else {
            Err(TensorError::Aborted)
        };
        Some(Event::Done {
            id: e.id,
            buf: e.buf,
            result,
        })
    }

    /// End the stream with `err`: stop every timer, drop every pending send, and tell the
    /// job when the failure is ours to report.
    fn fail(&mut self, err: WorkerError) {
        if self.phase == Phase::Failed {
            return;
        }
        crate::trace::warning!(
            "job {} rank {} lane of slots {}..{}: {}",
            self.config.job,
            self.config.rank,
            self.config.slot_lo,
            u32::from(self.config.slot_lo) + u32::from(self.config.window),
            err
        );
        self.phase = Phase::Failed;
        self.failure = Some(err);
        self.failed_event = true;
        self.send_queue.clear();
        self.probe = None;
        self.timers = TimerTable::default();
        self.slot_timers = SlotTimers::new();
        self.abort_pending = match err {
            WorkerError::Stalled { report, .. } => Some(match report {
                StallReport::Probed { missing, .. } => missing.iter().next().unwrap_or(0xFFFF),
                StallReport::NoAnswer => 0xFFFF,
            }),
            WorkerError::JoinTimeout { missing, .. } => {
                Some(missing.iter().next().unwrap_or(0xFFFF))
            }
            WorkerError::BufferTooSmall { .. } | WorkerError::Cancelled => Some(0xFFFF),
            WorkerError::SwitchUnreachable { .. }
            | WorkerError::PortUnreachable { .. }
            | WorkerError::Refused { .. }
            | WorkerError::PeerAborted { .. }
            | WorkerError::ParentFailed { .. }
            | WorkerError::SwitchRestarted { .. } => None,
        };
    }
}

#[cfg(test)]
mod admission_tests;
#[cfg(test)]
mod cache_tests;
#[cfg(test)]
mod congestion_tests;
#[cfg(test)]
mod liveness_tests;
#[cfg(test)]
mod non_finite_tests;
#[cfg(test)]
mod one_switch_tests;
#[cfg(test)]
mod overflow_tests;
#[cfg(test)]
mod recovery_tests;
#[cfg(test)]
mod spec_tests;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod unreachable_tests;
