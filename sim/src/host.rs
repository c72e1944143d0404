//! One simulated rank: the core's worker lane, its two links, and the application that keeps
//! it fed with buckets. A topology (the star of `in_network`, the two levels of
//! [`crate::tiered`]) owns the hosts and the switches and routes what [`Host::service`]
//! transmits.

use std::rc::Rc;

use switchml_core::quant::Op;
use switchml_core::time::Duration;
use switchml_core::wire::Flags;
use switchml_core::worker::{Config, CongestionControl, Event as WorkerEvent, Worker};

use crate::bucket::Bucket;
use crate::clock::{from_core, to_core, Nanos};
use crate::link::{wire_bytes, Delivery, Link, LinkConfig};
use crate::scenario::Scenario;

/// The most slots a simulated worker drives (its slot table's size).
pub const MAX_WINDOW: usize = 4096;
/// Tensors a worker may hold queued.
const QUEUE: usize = 4;
/// Buckets each rank keeps submitted.
const BUCKETS_IN_FLIGHT: usize = 2;

type SimWorker = Worker<Bucket, MAX_WINDOW, QUEUE>;

/// What happens to a rank, as a topology's event queue holds it.
pub(crate) enum HostEvent {
    /// A datagram reaches the rank.
    Datagram(Rc<[u8]>),
    /// The rank's timer, if still armed for this time.
    Timer,
    /// The rank submits its tensor (late, for a straggler).
    Start,
}

/// One rank: its worker lane, its two links and how far its application got.
pub(crate) struct Host {
    rank: u16,
    world: u16,
    worker: Box<SimWorker>,
    /// Rank → switch.
    pub(crate) uplink: Link,
    /// Switch → rank.
    pub(crate) downlink: Link,
    /// The time its timer event is scheduled for, if one is.
    armed: Option<Nanos>,
    pub(crate) joined: bool,
    started: bool,
    submitted: usize,
    reduced: usize,
    pub(crate) finished: Option<Nanos>,
    pub(crate) failure: Option<String>,
    /// Result elements that differed from the exact sum.
    pub(crate) wrong_elements: u64,
}

impl Host {
    /// Rank `rank` of `world` in job `job` (key `key`), on `up` and `down` links.
    pub(crate) fn new(
        s: &Scenario,
        (job, key): (u16, u64),
        rank: u16,
        world: u16,
        (up, down): (LinkConfig, LinkConfig),
    ) -> Host {
        let stagger = u64::from(rank) * s.rto_stagger_us;
        let config = Config {
            window: s.window,
            count: s.count,
            rto: Duration::from_micros(s.rto_us + stagger),
            max_rto: Duration::from_micros(s.max_rto_us + stagger),
            retries: u16::MAX,
            join_interval: Duration::from_millis(1),
            join_timeout: Duration::from_secs(10),
            key,
            nonce: 0x1000_0001 + u32::from(rank),
            congestion: if s.congestion {
                CongestionControl::DEFAULT_ON
            } else {
                CongestionControl::Off
            },
            ..Config::new(job, rank, world)
        };
        let seed = s.seed.wrapping_mul(0x1_0001) ^ (u64::from(rank) << 1);
        Host {
            rank,
            world,
            worker: boxed_worker(config),
            uplink: Link::new(up, seed),
            downlink: Link::new(down, seed | 1 << 63),
            armed: None,
            joined: false,
            started: false,
            submitted: 0,
            reduced: 0,
            finished: None,
            failure: None,
            wrong_elements: 0,
        }
    }

    /// Handle `event`, due at `at`; return whether the rank is to be serviced
    /// ([`Host::service`]) now.
    pub(crate) fn handle(&mut self, at: Nanos, event: HostEvent) -> bool {
        match event {
            HostEvent::Datagram(bytes) => {
                self.receive(at, &bytes);
                true
            }
            HostEvent::Timer => self.timer(at),
            HostEvent::Start => {
                self.started = true;
                true
            }
        }
    }

    /// Return the worker (its counters).
    pub(crate) fn worker(&self) -> &SimWorker {
        &self.worker
    }

    /// Hand the worker a datagram that arrived at `now`.
    fn receive(&mut self, now: Nanos, bytes: &[u8]) {
        self.worker.handle_packet(to_core(now), bytes);
    }

    /// The timer event of `at` fired: run the worker's timeout if it is still due.
    fn timer(&mut self, at: Nanos) -> bool {
        if self.armed != Some(at) {
            return false;
        }
        self.armed = None;
        let now = to_core(at);
        if self.worker.poll_timeout().is_some_and(|t| t <= now) {
            self.worker.handle_timeout(now);
        }
        true
    }

    /// Let the worker transmit (each datagram that survives the uplink goes to `send` with
    /// its arrival time), take its events, keep its buckets coming; return the time of a
    /// timer event to schedule, if one is newly needed.
    pub(crate) fn service(
        &mut self,
        now_ns: Nanos,
        s: &Scenario,
        tx: &mut [u8],
        mut send: impl FnMut(Nanos, Rc<[u8]>),
    ) -> Option<Nanos> {
        let now = to_core(now_ns);
        loop {
            while let Some(len) = self.worker.poll_transmit(now, tx) {
                if let Delivery::At(at) = self.uplink.transmit(now_ns, wire_bytes(len)) {
                    if self.uplink.last_marked() {
                        mark(&mut tx[..len]);
                    }
                    send(at, Rc::from(&tx[..len]));
                }
            }
            let mut submitted = false;
            while let Some(event) = self.worker.poll_event() {
                submitted |= self.on_event(now_ns, s, event);
            }
            submitted |= self.submit_more(now_ns, s, None);
            if !submitted {
                break;
            }
        }
        let Some(deadline) = self.worker.poll_timeout() else {
            self.armed = None;
            return None;
        };
        // A deadline already due was just handled; if the worker still names it, look
        // again a microsecond later rather than spin.
        let mut at = from_core(deadline).max(now_ns);
        if deadline <= now && self.armed.is_none() {
            at = from_core(now) + 1000;
        }
        if self.armed.is_none_or(|armed| at < armed) {
            self.armed = Some(at);
            return Some(at);
        }
        None
    }

    /// Handle one worker event; return whether a bucket was submitted.
    fn on_event(&mut self, now: Nanos, s: &Scenario, event: WorkerEvent<Bucket>) -> bool {
        let rank = self.rank;
        match event {
            WorkerEvent::Joined { .. } => {
                self.joined = true;
                false
            }
            WorkerEvent::Done { buf, result, .. } => {
                if let Err(e) = result {
                    self.failure.get_or_insert(format!("rank {rank}: {e:?}"));
                }
                self.wrong_elements += buf.wrong_elements(usize::from(self.world));
                self.reduced += buf.len();
                if self.reduced >= s.elements {
                    self.finished = Some(now);
                }
                self.submit_more(now, s, Some(buf))
            }
            WorkerEvent::Failed(e) => {
                self.failure.get_or_insert(format!("rank {rank}: {e}"));
                false
            }
            WorkerEvent::Redirected { shard, shards } => {
                self.failure.get_or_insert(format!(
                    "rank {rank}: sent to shard {shard} of {shards} by a one-shard switch"
                ));
                false
            }
        }
    }

    /// Submit the next bucket if the rank has started and fewer than two are in flight,
    /// reusing `spare`'s memory; return whether one was.
    fn submit_more(&mut self, now: Nanos, s: &Scenario, spare: Option<Bucket>) -> bool {
        let in_flight = self.submitted - self.reduced;
        let next = s.bucket_elements.min(s.elements - self.submitted);
        if !self.started || next == 0 || in_flight >= BUCKETS_IN_FLIGHT * s.bucket_elements {
            return false;
        }
        let bucket = Bucket::filled(s.dtype, usize::from(self.rank), next, spare);
        match self.worker.submit(to_core(now), bucket, Op::Sum) {
            Ok(_) => {
                self.submitted += next;
                true
            }
            Err(e) => {
                let rank = self.rank;
                self.failure
                    .get_or_insert(format!("rank {rank}: {}", e.kind));
                false
            }
        }
    }
}

/// Set `CONGESTED` on a data message that a queue marked, as an ECN queue sets CE (the
/// switch ORs a Contribution's mark into its Result; a Result's reaches its rank).
pub(crate) fn mark(datagram: &mut [u8]) {
    if matches!(datagram.get(1), Some(0x01 | 0x02)) {
        if let Some(flags) = datagram.get_mut(9) {
            *flags |= Flags::CONGESTED.0;
        }
    }
}

/// Begin the all-reduce at `start`, every rank joined: zero every host's link counters
/// (what the joins sent is not the all-reduce's) and call `schedule(at, rank)` for each
/// rank's first submission (rank 0 is the scenario's straggler).
pub(crate) fn begin(
    s: &Scenario,
    start: Nanos,
    hosts: &mut [Host],
    mut schedule: impl FnMut(Nanos, usize),
) {
    for (rank, h) in hosts.iter_mut().enumerate() {
        h.uplink.reset_stats();
        h.downlink.reset_stats();
        schedule(start + if rank == 0 { s.straggler.delay } else { 0 }, rank);
    }
}

/// Whether every rank finished or failed.
pub(crate) fn all_done(hosts: &[Host]) -> bool {
    hosts
        .iter()
        .all(|h| h.finished.is_some() || h.failure.is_some())
}

/// A worker of `MAX_WINDOW` slots is about half a megabyte (the core allocates nothing), and
/// an unoptimized build copies it a few times on its way into its box: more than a test
/// thread's 2 MiB of stack holds with room to spare. So it is built on a thread of its own
/// with a stack made for it.
fn boxed_worker(config: Config) -> Box<SimWorker> {
    std::thread::scope(|s| {
        std::thread::Builder::new()
            .name("sim-worker-build".into())
            .stack_size(32 << 20)
            .spawn_scoped(s, move || {
                Box::new(Worker::new(config).expect("a valid lane config"))
            })
            .expect("a thread to build a worker on")
            .join()
            .unwrap_or_else(|e| std::panic::resume_unwind(e))
    })
}
