//! A deterministic network simulator: N worker lanes, one switch, and a seeded network that
//! drops, duplicates, delays and therefore reorders datagrams. Time jumps to the earliest
//! deadline of any node; nothing here reads a clock, so a seed replays exactly.
//!
//! ```text
//!   rank 0 lane 0 ─┐                       ┌─ (multicast: each rank's lane owning the slot)
//!   rank 0 lane 1 ─┤   lossy, jittery   ┌──┴───┐
//!   rank 1 lane 0 ─┼──── datagrams ────▶│switch│── unicast: back to the sending lane
//!   rank 1 lane 1 ─┘                    └──────┘
//! ```
//!
//! The sim plays the adapter's part: it remembers which lane sent what and routes the
//! switch's multicasts (Results to the lane of each rank that owns the slot; JoinReplies
//! and Aborts to every lane).
//!
//! Every rank is a process with its own nonce (protocol.md §4.1): [`Sim::new`] gives each
//! rank a distinct non-zero nonce drawn from the seed, the same for all its lanes, and
//! [`Sim::restart_rank`] replaces a rank's lanes by a new process with a fresh one. Datagrams
//! can also come from a host outside the job ([`Sim::inject_from_outside`]): the switch's
//! answers to those go back to that host, not to a lane.

use std::cmp::Reverse;
use std::collections::{BTreeSet, BinaryHeap};

use switchml_core::quant::{Elements, Op, Tensor};
use switchml_core::splitmix::SplitMix64;
use switchml_core::switch::{Aggregator, ControlPlane, Verdict, QUIET_SWEEPS};
use switchml_core::time::{Duration, Instant};
use switchml_core::wire::{self, Message, MessageType};
use switchml_core::worker::{Config, Event, TensorId, Worker};

/// The most slots one simulated lane may drive.
pub const SLOTS: usize = 64;
/// The most tensors one simulated lane may queue.
pub const QUEUE: usize = 8;

/// A tensor owned by a simulated worker.
#[derive(Debug, Clone, PartialEq)]
pub enum Buf {
    /// f32 values.
    F32(Vec<f32>),
    /// int32 values.
    I32(Vec<i32>),
    /// f16 values.
    F16(Vec<half::f16>),
    /// bf16 values.
    Bf16(Vec<half::bf16>),
}

impl Tensor for Buf {
    fn elements(&mut self) -> Elements<'_> {
        match self {
            Buf::F32(v) => Elements::F32(v),
            Buf::I32(v) => Elements::I32(v),
            Buf::F16(v) => Elements::F16(v),
            Buf::Bf16(v) => Elements::Bf16(v),
        }
    }
}

/// The simulated worker type.
pub type SimWorker = Worker<Buf, SLOTS, QUEUE>;

/// How the network misbehaves. Every datagram, either way, independently.
#[derive(Debug, Clone, Copy)]
pub struct Network {
    /// Probability of loss.
    pub drop: f64,
    /// Probability of an extra copy (with its own delay).
    pub duplicate: f64,
    /// Shortest one-way delay.
    pub delay_min: Duration,
    /// Longest one-way delay; the spread reorders.
    pub delay_max: Duration,
}

impl Network {
    /// A perfect network with a fixed 50 µs one-way delay.
    pub const PERFECT: Network = Network {
        drop: 0.0,
        duplicate: 0.0,
        delay_min: Duration::from_micros(50),
        delay_max: Duration::from_micros(50),
    };
}

/// A seeded stream (the core's SplitMix64) with the draws the simulator needs.
#[derive(Debug, Clone)]
pub struct Rng(SplitMix64);

impl Rng {
    /// Seed it.
    pub fn new(seed: u64) -> Rng {
        Rng(SplitMix64::new(seed))
    }

    /// Next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0.next_u64()
    }

    /// A uniform float in [0, 1).
    pub fn unit(&mut self) -> f64 {
        self.0.unit()
    }

    /// A uniform integer in [lo, hi].
    pub fn between(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.next_u64() % (hi - lo + 1)
    }
}

/// A datagram in flight: arrival time, a tie-breaking sequence number, where, what.
type InFlight = Reverse<(Instant, u64, Dest, Vec<u8>)>;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Dest {
    Switch { from: Source },
    Lane(usize),
}

/// Who sent a datagram to the switch: a lane, a host outside the job under a lane's
/// address, or one under its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Source {
    Lane(usize),
    Spoofed(usize),
    Outside,
}

/// One lane of one rank.
pub struct Node {
    /// The rank.
    pub rank: u16,
    /// The state machine.
    pub worker: SimWorker,
    /// Whether it is alive (a dead node neither sends nor receives).
    pub alive: bool,
    /// Events it produced, in order.
    pub events: Vec<Event<Buf>>,
}

/// Counters of the simulated network.
#[derive(Debug, Clone, Copy, Default)]
pub struct NetStats {
    /// Datagrams sent.
    pub sent: u64,
    /// Datagrams lost.
    pub dropped: u64,
    /// Extra copies made.
    pub duplicated: u64,
    /// Injected datagrams ([`Sim::inject`], [`Sim::inject_from_outside`]) that reached the
    /// switch.
    pub injected_delivered: u64,
    /// Unicast answers of the switch that went to a host outside the job.
    pub to_outside: u64,
}

/// The simulation.
pub struct Sim<S> {
    /// The current time.
    pub now: Instant,
    /// The switch.
    pub switch: S,
    /// Every lane of every rank.
    pub nodes: Vec<Node>,
    /// The network's behaviour.
    pub net: Network,
    /// Network counters.
    pub stats: NetStats,
    rng: Rng,
    /// Draws the ranks' nonces; a stream apart from `rng`, so that restarts do not change
    /// the network's choices.
    nonces: Rng,
    /// Every nonce given out so far.
    used_nonces: BTreeSet<u32>,
    queue: BinaryHeap<InFlight>,
    order: u64,
    buf: Vec<u8>,
    out: Vec<u8>,
    sweeper: Option<Sweeper<S>>,
}

/// The switch's liveness sweeps (protocol.md §4.3), as the endpoint times them.
struct Sweeper<S> {
    every: Duration,
    next: Instant,
    jobs: Vec<u16>,
    sweep: fn(&mut S, u16, &mut [u8]) -> Option<Verdict>,
}

/// Why `drive` stopped without reaching its goal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SimError {
    /// Nothing is scheduled and the goal is not reached.
    Quiescent,
    /// The step bound was hit.
    StepLimit,
}

impl<S: Aggregator> Sim<S> {
    /// Build a sim: one node per lane config in `configs`. Each rank gets a distinct
    /// non-zero nonce drawn from `seed`, the same for every lane of the rank; the configs'
    /// own nonces are replaced.
    pub fn new(switch: S, configs: Vec<Config>, net: Network, seed: u64) -> Self {
        let max = configs.iter().map(|c| c.max_datagram()).max().unwrap_or(0);
        let mut sim = Sim {
            now: Instant::ZERO,
            switch,
            nodes: Vec::new(),
            net,
            stats: NetStats::default(),
            rng: Rng::new(seed),
            nonces: Rng::new(seed ^ 0x6E6F_6E63_6573),
            used_nonces: BTreeSet::new(),
            queue: BinaryHeap::new(),
            order: 0,
            buf: vec![0; max.max(2048)],
            out: vec![0; 1 << 17],
            sweeper: None,
        };
        let mut ranks: Vec<(u16, u32)> = Vec::new();
        for c in configs {
            let nonce = match ranks.iter().find(|(r, _)| *r == c.rank) {
                Some(&(_, nonce)) => nonce,
                None => {
                    let nonce = sim.fresh_nonce();
                    ranks.push((c.rank, nonce));
                    nonce
                }
            };
            sim.nodes.push(Node::start(Config { nonce, ..c }));
        }
        sim
    }

    /// Draw a non-zero nonce no process of this sim has had.
    fn fresh_nonce(&mut self) -> u32 {
        loop {
            let nonce = self.nonces.next_u64() as u32;
            if nonce != 0 && self.used_nonces.insert(nonce) {
                return nonce;
            }
        }
    }

    /// Return the nonce of the process running `node`.
    pub fn nonce(&self, node: usize) -> u32 {
        self.nodes[node].worker.config().nonce
    }

    /// Restart `rank` as a new process: every lane of it gets a fresh worker with the same
    /// config but a new nonce, alive, with no events. Datagrams in flight to its lanes
    /// reach the new workers (the new process took over the old one's address). Return
    /// the new nonce.
    pub fn restart_rank(&mut self, rank: u16) -> u32 {
        let nonce = self.fresh_nonce();
        for node in self.nodes.iter_mut().filter(|n| n.rank == rank) {
            let config = Config {
                nonce,
                ..*node.worker.config()
            };
            *node = Node::start(config);
        }
        nonce
    }

    fn schedule(&mut self, dest: Dest, bytes: &[u8]) {
        self.stats.sent += 1;
        if self.rng.unit() < self.net.drop {
            self.stats.dropped += 1;
            return;
        }
        let copies = if self.rng.unit() < self.net.duplicate {
            self.stats.duplicated += 1;
            2
        } else {
            1
        };
        for _ in 0..copies {
            let (lo, hi) = (
                self.net.delay_min.total_micros(),
                self.net
                    .delay_max
                    .total_micros()
                    .max(self.net.delay_min.total_micros()),
            );
            let at = self.now + Duration::from_micros(self.rng.between(lo, hi));
            self.order += 1;
            self.queue
                .push(Reverse((at, self.order, dest, bytes.to_vec())));
        }
    }

    /// Let every live node transmit what it has and record its events.
    fn flush(&mut self) {
        for i in 0..self.nodes.len() {
            if !self.nodes[i].alive {
                continue;
            }
            while let Some(len) = self.nodes[i].worker.poll_transmit(self.now, &mut self.buf) {
                let bytes = self.buf[..len].to_vec();
                let from = Source::Lane(i);
                self.schedule(Dest::Switch { from }, &bytes);
            }
            while let Some(e) = self.nodes[i].worker.poll_event() {
                self.nodes[i].events.push(e);
            }
        }
    }

    /// The lanes a switch output goes to.
    fn route(&mut self, verdict: Verdict, from: Source, bytes: &[u8]) -> Vec<usize> {
        match verdict {
            Verdict::Unicast { .. } => match from {
                Source::Lane(i) | Source::Spoofed(i) => vec![i],
                Source::Outside => {
                    self.stats.to_outside += 1;
                    Vec::new()
                }
            },
            Verdict::Multicast { .. } => {
                let slot = match wire::peek(bytes) {
                    Ok((MessageType::Result, _, _)) => match Message::parse(bytes) {
                        Ok(Message::Data(r, _)) => Some(r.slot),
                        _ => None,
                    },
                    _ => None,
                };
                (0..self.nodes.len())
                    .filter(|&i| match slot {
                        Some(s) => {
                            let c = self.nodes[i].worker.config();
                            s >= c.slot_lo && s - c.slot_lo < c.window
                        }
                        None => true,
                    })
                    .collect()
            }
            Verdict::Drop(_) | Verdict::Consumed | Verdict::Up { .. } => Vec::new(),
        }
    }

    fn deliver(&mut self, dest: Dest, bytes: Vec<u8>) {
        match dest {
            Dest::Switch { from } => {
                match from {
                    Source::Lane(i) if !self.nodes[i].alive => return,
                    Source::Lane(_) => {}
                    Source::Spoofed(_) | Source::Outside => self.stats.injected_delivered += 1,
                }
                let verdict = self.switch.process(&bytes, &mut self.out);
                let len = match verdict {
                    Verdict::Multicast { len, .. } | Verdict::Unicast { len, .. } => len,
                    _ => 0,
                };
                let reply = self.out[..len].to_vec();
                for to in self.route(verdict, from, &reply) {
                    self.schedule(Dest::Lane(to), &reply);
                }
            }
            Dest::Lane(i) => {
                if self.nodes[i].alive {
                    self.nodes[i].worker.handle_packet(self.now, &bytes);
                }
            }
        }
    }

    /// Send a datagram from outside (junk, spoofed packets) to the switch as if lane `from`
    /// sent it: its source address is that lane's, so unicast answers go to the lane.
    pub fn inject(&mut self, from: usize, bytes: &[u8]) {
        let from = Source::Spoofed(from);
        self.schedule(Dest::Switch { from }, bytes);
    }

    /// Send a datagram to the switch from a host outside the job, under its own address:
    /// unicast answers go back to that host (counted in [`NetStats::to_outside`]);
    /// multicasts reach the job's lanes as usual.
    pub fn inject_from_outside(&mut self, bytes: &[u8]) {
        let from = Source::Outside;
        self.schedule(Dest::Switch { from }, bytes);
    }

    /// Advance to the next deadline and handle everything due then. Return false if nothing
    /// is scheduled at all.
    pub fn step(&mut self) -> bool {
        self.flush();
        let next_packet = self.queue.peek().map(|Reverse((t, ..))| *t);
        let next_timer = self
            .nodes
            .iter()
            .filter(|n| n.alive)
            .filter_map(|n| n.worker.poll_timeout())
            .min();
        let Some(next) = [next_packet, next_timer].into_iter().flatten().min() else {
            return false;
        };
        // Sweeps only while something else is scheduled: they never keep a sim going.
        let next = match self.sweeper.as_ref().map(|s| s.next) {
            Some(sweep) if sweep <= next => {
                self.now = self.now.max(sweep);
                self.sweep();
                return true;
            }
            _ => next,
        };
        self.now = self.now.max(next);
        while self
            .queue
            .peek()
            .is_some_and(|Reverse((t, ..))| *t <= self.now)
        {
            let Some(Reverse((_, _, dest, bytes))) = self.queue.pop() else {
                break;
            };
            self.deliver(dest, bytes);
        }
        for n in self.nodes.iter_mut().filter(|n| n.alive) {
            if n.worker.poll_timeout().is_some_and(|t| t <= self.now) {
                n.worker.handle_timeout(self.now);
            }
        }
        self.flush();
        true
    }

    /// Make the switch's liveness sweep of every job and multicast the Aborts it writes.
    fn sweep(&mut self) {
        let Some(sw) = self.sweeper.as_mut() else {
            return;
        };
        sw.next = self.now + sw.every;
        let (jobs, sweep) = (sw.jobs.clone(), sw.sweep);
        for job in jobs {
            let Some(verdict) = sweep(&mut self.switch, job, &mut self.out) else {
                continue;
            };
            let Verdict::Multicast { len, .. } = verdict else {
                continue;
            };
            let abort = self.out[..len].to_vec();
            for to in self.route(verdict, Source::Outside, &abort) {
                self.schedule(Dest::Lane(to), &abort);
            }
        }
    }

    /// Step until `done` holds, at most `max_steps` times.
    pub fn drive(
        &mut self,
        max_steps: usize,
        done: impl Fn(&Self) -> bool,
    ) -> Result<(), SimError> {
        for _ in 0..max_steps {
            if done(self) {
                return Ok(());
            }
            if !self.step() {
                return if done(self) {
                    Ok(())
                } else {
                    Err(SimError::Quiescent)
                };
            }
        }
        if done(self) {
            Ok(())
        } else {
            Err(SimError::StepLimit)
        }
    }

    /// Submit `buf` on lane `node`.
    pub fn submit(&mut self, node: usize, buf: Buf, op: Op) -> TensorId {
        let now = self.now;
        match self.nodes[node].worker.submit(now, buf, op) {
            Ok(id) => id,
            Err(e) => panic!("submit refused: {}", e.kind),
        }
    }

    /// Return whether every live node has finished tensor `id` or failed.
    pub fn finished(&self, id: TensorId) -> bool {
        self.nodes.iter().filter(|n| n.alive).all(|n| {
            n.events.iter().any(|e| match e {
                Event::Done { id: d, .. } => *d == id,
                Event::Failed(_) => true,
                _ => false,
            })
        })
    }

    /// Submit one tensor per node (`inputs[r]` on node `r`), drive until every node has
    /// finished it (at most `max_steps` steps), and return every node's result; panics,
    /// naming the node, if the drive stalls or a node's tensor failed.
    pub fn all_reduce(&mut self, inputs: Vec<Buf>, op: Op, max_steps: usize) -> Vec<Buf> {
        let nodes = inputs.len();
        let mut id = TensorId(0);
        for (r, x) in inputs.into_iter().enumerate() {
            id = self.submit(r, x, op);
        }
        if let Err(e) = self.drive(max_steps, |s| s.finished(id)) {
            panic!("the all-reduce did not finish: {e:?}");
        }
        (0..nodes)
            .map(|r| match self.take_result(r, id) {
                Some((buf, Ok(()))) => buf,
                Some((_, Err(e))) => panic!("node {r}: {e:?}"),
                None => panic!("node {r} has no result"),
            })
            .collect()
    }

    /// Take the result of tensor `id` from node `node`.
    pub fn take_result(
        &mut self,
        node: usize,
        id: TensorId,
    ) -> Option<(Buf, Result<(), switchml_core::worker::TensorError>)> {
        let events = &mut self.nodes[node].events;
        let pos = events
            .iter()
            .position(|e| matches!(e, Event::Done { id: d, .. } if *d == id))?;
        match events.remove(pos) {
            Event::Done { buf, result, .. } => Some((buf, result)),
            _ => None,
        }
    }
}

impl<S: ControlPlane> Sim<S> {
    /// Let the switch end a run whose rank has been silent for `dead_after` (protocol.md
    /// §4.3): sweep every job every `dead_after / QUIET_SWEEPS`, as the endpoint does;
    /// `None`: never (the default).
    #[must_use]
    pub fn with_dead_after(mut self, dead_after: Option<Duration>) -> Self {
        self.sweeper = dead_after.map(|d| {
            let every = Duration::from_micros(d.total_micros() / u64::from(QUIET_SWEEPS));
            Sweeper {
                every,
                next: self.now + every,
                jobs: self.switch.job_ids().collect(),
                sweep: <S as ControlPlane>::sweep,
            }
        });
        self
    }
}

impl Node {
    /// A live node running a fresh worker with `config`.
    fn start(config: Config) -> Node {
        Node {
            rank: config.rank,
            worker: Worker::new(config).expect("valid lane config"),
            alive: true,
            events: Vec::new(),
        }
    }
}

/// Lane configs for `world` ranks with `lanes` lanes each, splitting `slots` job slots.
pub fn lane_configs(template: Config, lanes: u16) -> Vec<Config> {
    let per_lane = template.window;
    let mut out = Vec::new();
    for rank in 0..template.world {
        for lane in 0..lanes {
            out.push(Config {
                rank,
                slot_lo: lane * per_lane,
                lanes,
                ..template
            });
        }
    }
    out
}
