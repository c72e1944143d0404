//! The in-network all-reduce: the core's worker state machines and a switch — the core's
//! reference switch or the Rust model of the P4 pipeline (`p4/model`), served by the
//! core's [`Endpoint`] as the UDP daemon serves either — on a star of modelled links.
//!
//! ```text
//!  worker 0 ──uplink──▶ ┌────────┐ ──downlink──▶ worker 0
//!  worker 1 ──uplink──▶ │ switch │ ──downlink──▶ worker 1      (a Result is copied onto
//!     ⋮                 │Endpoint│      ⋮                        the downlink of every rank)
//!  worker P−1 ─uplink─▶ └────────┘ ──downlink──▶ worker P−1
//! ```
//!
//! The simulator is only the adapter: it hands each worker its datagrams and timeouts at the
//! simulated time and puts what the worker transmits on its uplink; it hands the switch
//! what arrives and copies each answer onto the downlinks the endpoint names. Every
//! protocol decision (windows, versions, retransmissions, aggregation, multicast) is the
//! core's. Hosts are infinitely fast: a worker's answer leaves at the instant its input
//! arrived, so the network alone sets the pace.

use std::rc::Rc;
use std::time::Instant as WallClock;

use switchml_core::switch::{ControlPlane, Endpoint, JobConfig, Route, Slot, Switch, Transmit};
use switchml_core::time::Duration;
use switchml_p4model::pipeline::{Config as ModelConfig, Pipeline};

use crate::clock::{to_core, Nanos};
use crate::events::EventQueue;
use crate::host::{self, Host, HostEvent};
use crate::link::{wire_bytes, Delivery, LinkStats};
use crate::reno::{Reno, RenoEvent};
use crate::report::{ProtocolCounters, RunReport};
use crate::scenario::{Direction, Scenario, SwitchModel};

/// The largest `k` the simulated switch accepts (the reference switch's maximum).
pub const MAX_COUNT: usize = 1024;
/// The most slots a simulated worker drives: the host's.
pub use crate::host::MAX_WINDOW;
/// The job's id and key.
const JOB: u16 = 1;
const KEY: u64 = 0x5157_4D4C_0000_0001;
/// Simulated time after which a run is abandoned as stuck.
const GIVE_UP: Nanos = 600_000_000_000;

/// The switch's front as the UDP daemon has it: addresses are rank numbers here.
type SimEndpoint<G> = Endpoint<usize, Vec<Route<usize>>, G, 1>;

enum Event {
    /// A datagram from rank `from` reaches the switch.
    AtSwitch { from: usize, bytes: Rc<[u8]> },
    /// Something happens to rank `rank`.
    Host { rank: usize, event: HostEvent },
    /// The competing flow starts.
    FlowStart,
    /// Something happens to the competing flow.
    Flow(RenoEvent),
}

/// What a run on a shared uplink reports beside [`RunReport`]: rank 0's uplink over time,
/// the job's bytes and the competing flow's.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SharedReport {
    /// The bins' width.
    pub bin: Nanos,
    /// Wire bytes of the job that crossed rank 0's uplink, per bin from the start.
    pub job_bytes: Vec<u64>,
    /// Wire bytes of the competing flow that crossed it, per bin.
    pub flow_bytes: Vec<u64>,
    /// The flow's segments lost.
    pub flow_lost: u64,
    /// The flow's window's halvings.
    pub flow_decreases: u64,
    /// Rank 0's uplink's counters (both kinds of traffic).
    pub uplink0: LinkStats,
}

impl SharedReport {
    /// Add `bytes` arriving at `at` (from the run's `start`) to `series`.
    fn add(series: &mut Vec<u64>, bin: Nanos, start: Nanos, at: Nanos, bytes: u64) {
        let Some(i) = at.checked_sub(start).map(|d| (d / bin.max(1)) as usize) else {
            return;
        };
        if series.len() <= i {
            series.resize(i + 1, 0);
        }
        series[i] += bytes;
    }

    /// Return the job's and the flow's shares of rank 0's uplink's capacity over
    /// `duration`, and Jain's fairness index of the two.
    pub fn shares(&self, bits_per_sec: u64, duration: Nanos) -> (f64, f64, f64) {
        let capacity = bits_per_sec as f64 / 8.0 * duration as f64 * 1e-9;
        let job = self.job_bytes.iter().sum::<u64>() as f64 / capacity;
        let flow = self.flow_bytes.iter().sum::<u64>() as f64 / capacity;
        let jain = (job + flow).powi(2) / (2.0 * (job * job + flow * flow)).max(f64::MIN_POSITIVE);
        (job, flow, jain)
    }
}

/// A run of the in-network all-reduce through switch `G`.
struct Run<G> {
    scenario: Scenario,
    now: Nanos,
    queue: EventQueue<Event>,
    endpoint: SimEndpoint<G>,
    hosts: Vec<Host>,
    out: Vec<u8>,
    tx: Vec<u8>,
    /// When the all-reduce began (every rank joined).
    start: Nanos,
    flow: Option<Reno>,
    shared: SharedReport,
}

/// Simulate `scenario`'s all-reduce through the switch it names and report it.
pub fn simulate(scenario: &Scenario) -> RunReport {
    simulate_shared(scenario).0
}

/// Simulate `scenario` as [`simulate`] does, and report rank 0's uplink over time.
pub fn simulate_shared(scenario: &Scenario) -> (RunReport, SharedReport) {
    assert!(
        usize::from(scenario.count) <= MAX_COUNT,
        "k above {MAX_COUNT}"
    );
    assert!(
        usize::from(scenario.window) <= MAX_WINDOW,
        "window above {MAX_WINDOW}"
    );
    let slots = usize::from(scenario.window);
    match scenario.switch {
        SwitchModel::Reference => {
            let mut pool = vec![Slot::<MAX_COUNT, 4>::IDLE; slots];
            let mut switch = Switch::<'_, MAX_COUNT, 4, 1>::new(&mut pool, 1);
            switch.set_probe_results(scenario.probe_results);
            simulate_with(scenario, switch)
        }
        SwitchModel::P4Model => {
            let model = Pipeline::new(ModelConfig {
                slots,
                jobs: 1,
                workers: usize::from(scenario.workers),
                epoch: 1,
                max_count: switchml_p4model::MAX_COUNT,
                switch: Default::default(),
            });
            simulate_with(scenario, model)
        }
    }
}

fn simulate_with<G: ControlPlane>(scenario: &Scenario, switch: G) -> (RunReport, SharedReport) {
    let wall = WallClock::now();
    let mut run = Run::new(scenario, switch);
    run.join();
    let start = run.now;
    run.start = start;
    let queue = &mut run.queue;
    host::begin(scenario, start, &mut run.hosts, |at, rank| {
        let event = HostEvent::Start;
        queue.push(at, Event::Host { rank, event });
    });
    if scenario.competing_flow {
        run.flow = Some(Reno::new(scenario.propagation * 2));
        run.queue.push(start, Event::FlowStart);
    }
    run.drive(|r| host::all_done(&r.hosts));
    let report = run.report(start, wall.elapsed().as_secs_f64());
    let mut shared = std::mem::take(&mut run.shared);
    if let Some(f) = &run.flow {
        shared.flow_lost = f.lost;
        shared.flow_decreases = f.decreases;
    }
    shared.uplink0 = *run.hosts[0].uplink.stats();
    (report, shared)
}

impl<G: ControlPlane> Run<G> {
    fn new(scenario: &Scenario, switch: G) -> Run<G> {
        let world = scenario.workers;
        let mut endpoint = Endpoint::new(switch, Duration::from_secs(3600));
        let job = JobConfig {
            id: JOB,
            world,
            slot_lo: 0,
            slot_count: scenario.window,
            key: KEY,
        };
        endpoint
            .add_job(job, vec![None; usize::from(world)])
            .expect("the job fits the switch");
        let hosts = (0..world)
            .map(|rank| {
                let links = (
                    scenario.link(rank, Direction::Up),
                    scenario.link(rank, Direction::Down),
                );
                Host::new(scenario, (JOB, KEY), rank, world, links)
            })
            .collect();
        Run {
            scenario: *scenario,
            now: 0,
            queue: EventQueue::default(),
            endpoint,
            hosts,
            out: vec![0; SimEndpoint::<G>::OUT_LEN],
            tx: vec![0; scenario.data_payload().max(64)],
            start: Nanos::MAX,
            flow: None,
            shared: SharedReport {
                bin: scenario.series_bin,
                ..SharedReport::default()
            },
        }
    }

    /// Run the joins until every rank has joined.
    fn join(&mut self) {
        for rank in 0..self.hosts.len() {
            self.service(rank);
        }
        self.drive(|r| r.hosts.iter().all(|h| h.joined || h.failure.is_some()));
    }

    /// Handle events until `done` holds, the queue runs dry or time runs out.
    fn drive(&mut self, done: impl Fn(&Self) -> bool) {
        while !done(self) {
            let Some((at, event)) = self.queue.pop() else {
                break;
            };
            if at > GIVE_UP {
                break;
            }
            self.now = at;
            match event {
                Event::AtSwitch { from, bytes } => self.at_switch(from, &bytes),
                Event::Host { rank, event } => {
                    if self.hosts[rank].handle(at, event) {
                        self.service(rank);
                    }
                }
                Event::FlowStart => self.flow_send(),
                Event::Flow(e) => {
                    if let Some(f) = self.flow.as_mut() {
                        f.handle(at, e);
                    }
                    self.flow_send();
                }
            }
        }
    }

    fn at_switch(&mut self, from: usize, bytes: &[u8]) {
        let transmit = self
            .endpoint
            .handle(to_core(self.now), from, bytes, &mut self.out);
        let len = match transmit {
            Transmit::Nothing => return,
            Transmit::Reply { len } | Transmit::Lanes { len, .. } => len,
        };
        let answer: Rc<[u8]> = Rc::from(&self.out[..len]);
        let to: Vec<usize> = self
            .endpoint
            .destinations(&transmit, &from)
            .copied()
            .collect();
        let leaves = self.now + self.scenario.switch_latency;
        for rank in to {
            if let Delivery::At(at) = self.hosts[rank].downlink.transmit(leaves, wire_bytes(len)) {
                let bytes = if self.hosts[rank].downlink.last_marked() {
                    let mut marked = answer.to_vec();
                    host::mark(&mut marked);
                    Rc::from(marked)
                } else {
                    answer.clone()
                };
                self.queue.push(
                    at,
                    Event::Host {
                        rank,
                        event: HostEvent::Datagram(bytes),
                    },
                );
            }
        }
    }

    /// Let the competing flow send what its window allows on rank 0's uplink.
    fn flow_send(&mut self) {
        let Some(flow) = self.flow.as_mut() else {
            return;
        };
        let (queue, shared, start) = (&mut self.queue, &mut self.shared, self.start);
        flow.send(
            self.now,
            &mut self.hosts[0].uplink,
            |at, e| queue.push(at, Event::Flow(e)),
            |at, bytes| SharedReport::add(&mut shared.flow_bytes, shared.bin, start, at, bytes),
        );
    }

    /// Let rank `rank` transmit, take its events, keep its buckets coming, re-arm its timer.
    fn service(&mut self, rank: usize) {
        let (queue, shared, start) = (&mut self.queue, &mut self.shared, self.start);
        let send = |at, bytes: Rc<[u8]>| {
            if rank == 0 {
                let wire = wire_bytes(bytes.len());
                SharedReport::add(&mut shared.job_bytes, shared.bin, start, at, wire);
            }
            queue.push(at, Event::AtSwitch { from: rank, bytes })
        };
        let host = &mut self.hosts[rank];
        if let Some(at) = host.service(self.now, &self.scenario, &mut self.tx, send) {
            self.queue.push(
                at,
                Event::Host {
                    rank,
                    event: HostEvent::Timer,
                },
            );
        }
    }

    fn report(&self, start: Nanos, wall_secs: f64) -> RunReport {
        let end = self.hosts.iter().filter_map(|h| h.finished).max();
        let finished = self.hosts.iter().all(|h| h.finished.is_some());
        let switch = self.endpoint.switch();
        let job = switch.job_snapshot(JOB).expect("the job").counters;
        let mut protocol = ProtocolCounters {
            switch_completions: job.completions,
            switch_retransmit_replies: job.retransmit_replies,
            switch_duplicates: job.duplicates,
            switch_stale: job.stale,
            switch_drops: switch.switch_counters().total_drops(),
            ..ProtocolCounters::default()
        };
        for h in &self.hosts {
            protocol.add_worker(h.worker().stats());
        }
        RunReport {
            algorithm: "switchml",
            completion: if finished {
                end.map(|t| t - start)
            } else {
                None
            },
            finish_times: self
                .hosts
                .iter()
                .map(|h| h.finished.map(|t| t - start))
                .collect(),
            elements: self.scenario.elements,
            uplinks: self.hosts.iter().map(|h| *h.uplink.stats()).collect(),
            downlinks: self.hosts.iter().map(|h| *h.downlink.stats()).collect(),
            protocol: Some(protocol),
            failures: self
                .hosts
                .iter()
                .filter_map(|h| h.failure.clone())
                .collect(),
            wrong_elements: self.hosts.iter().map(|h| h.wrong_elements).sum(),
            events: self.queue.handled(),
            wall_secs,
        }
    }
}
