//! The in-network all-reduce through two levels of switches (protocol.md §7), every switch
//! the scenario's (the core's reference switch, or the P4 model): each child switch aggregates its own ranks and contributes their
//! partial sum to the parent as one member; the parent's Result comes back through the
//! children.
//!
//! ```text
//!  ranks lo₀‥lo₁−1 ⇄ child 0 ─┐
//!  ranks lo₁‥lo₂−1 ⇄ child 1 ─┼─ child ⇄ parent links (their own rate and loss) ─ parent
//!        ⋮               ⋮     │
//!  ranks ‥P−1      ⇄ child C−1┘
//! ```
//!
//! The ranks are dealt to the children in contiguous ranges whose sizes differ by one at
//! most. Every rank is the core's unchanged worker, joined with its global rank and the
//! whole job's world; every switch is fed bytes by the simulator, which only
//! routes what each verdict names: a child's multicast to its ranks, its unicast to the
//! rank that asked, its `Up` to the parent; the parent's multicast to every child, its
//! unicast to the child that asked. As in [`crate::in_network`], hosts and switches are
//! infinitely fast and the links set the pace.

use std::rc::Rc;
use std::time::Instant as WallClock;

use switchml_core::switch::{ControlPlane, JobConfig, ParentLink, Slot, Switch, Tier, Verdict};
use switchml_p4model::pipeline::{Config as ModelConfig, Pipeline};

use crate::clock::Nanos;
use crate::events::EventQueue;
use crate::host::{self, Host, HostEvent};
use crate::in_network::MAX_COUNT;
use crate::link::{wire_bytes, Delivery, Link, LinkConfig};
use crate::report::{ProtocolCounters, RunReport};
use crate::scenario::{Direction, Scenario, SwitchModel};

/// The job's id and key at the children, and the parent's.
const JOB: u16 = 1;
const KEY: u64 = 0x5157_4D4C_0000_0001;
const PARENT_JOB: u16 = 2;
const PARENT_KEY: u64 = 0x5157_4D4C_0000_0002;
/// 64-rank words per seen bitmap: 256 ranks a child, 256 children.
const WORDS: usize = 4;
/// Simulated time after which a run is abandoned as stuck.
const GIVE_UP: Nanos = 600_000_000_000;

type SimSwitch<'a> = Switch<'a, MAX_COUNT, WORDS, 1>;
/// The output buffer every switch here needs (the reference's is the larger).
const OUT_LEN: usize = if SimSwitch::OUT_LEN > switchml_p4model::OUT_LEN {
    SimSwitch::OUT_LEN
} else {
    switchml_p4model::OUT_LEN
};

/// The second level: how many children, and their links to the parent.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Tree {
    /// Child switches; the scenario's ranks are dealt to them (at least one each).
    pub children: u16,
    /// The loss probability of each child ⇄ parent link, both ways.
    pub loss: f64,
    /// The child ⇄ parent links' rate, bits per second (0: the scenario's).
    pub bits_per_sec: u64,
}

enum Event {
    /// A datagram reaches child `child`, from rank `from` or (`None`) from the parent.
    AtChild {
        child: usize,
        from: Option<usize>,
        bytes: Rc<[u8]>,
    },
    /// A datagram from child `child` reaches the parent.
    AtParent { child: usize, bytes: Rc<[u8]> },
    /// Something happens to rank `rank`.
    Host { rank: usize, event: HostEvent },
}

/// A child switch: its ranks and its two links to the parent.
struct Child<G> {
    switch: G,
    ranks: std::ops::Range<usize>,
    up: Link,
    down: Link,
}

struct Run<G> {
    scenario: Scenario,
    now: Nanos,
    queue: EventQueue<Event>,
    parent: G,
    children: Vec<Child<G>>,
    hosts: Vec<Host>,
    out: Vec<u8>,
    tx: Vec<u8>,
}

/// Return the first rank of child `c` of `children` over `world` ranks.
pub fn rank_lo(world: u16, children: u16, c: u16) -> u16 {
    (u32::from(c) * u32::from(world) / u32::from(children)) as u16
}

/// Simulate `scenario`'s all-reduce through `tree`'s two levels and report it. The
/// report's links are the ranks' and then the children's (`uplinks[P + c]`: child `c` to
/// the parent); its switch counters add up every switch's.
pub fn simulate(scenario: &Scenario, tree: &Tree) -> RunReport {
    let world = scenario.workers;
    assert!(
        tree.children >= 1 && tree.children <= world,
        "1..=P children"
    );
    assert!(
        usize::from(scenario.count) <= MAX_COUNT,
        "k above {MAX_COUNT}"
    );
    let slots = usize::from(scenario.window);
    let switches = 1 + usize::from(tree.children);
    match scenario.switch {
        SwitchModel::Reference => {
            let mut pools = vec![vec![Slot::<MAX_COUNT, WORDS>::IDLE; slots]; switches];
            let mut epoch = 0;
            let switches = pools.iter_mut().map(|pool| {
                epoch += 1;
                let mut switch = SimSwitch::new(pool, epoch);
                switch.set_probe_results(scenario.probe_results);
                switch
            });
            simulate_with(scenario, tree, switches)
        }
        SwitchModel::P4Model => {
            let largest = world.div_ceil(tree.children);
            let switches = (1..=switches as u32).map(|epoch| {
                Pipeline::new(ModelConfig {
                    slots,
                    jobs: 1,
                    workers: usize::from(largest.max(tree.children)),
                    epoch,
                    max_count: switchml_p4model::MAX_COUNT,
                    switch: Default::default(),
                })
            });
            simulate_with(scenario, tree, switches)
        }
    }
}

/// The simulation over `switches`: the parent first, then one per child.
fn simulate_with<G: ControlPlane>(
    scenario: &Scenario,
    tree: &Tree,
    mut switches: impl Iterator<Item = G>,
) -> RunReport {
    let wall = WallClock::now();
    let world = scenario.workers;
    let mut parent = switches.next().expect("a parent");
    let config = |id, world, key| JobConfig {
        id,
        world,
        slot_lo: 0,
        slot_count: scenario.window,
        key,
    };
    parent
        .install_tiered_job(config(PARENT_JOB, tree.children, PARENT_KEY), Tier::Parent)
        .expect("the parent's job fits");
    let link = |d: Direction| LinkConfig {
        loss: tree.loss,
        bits_per_sec: match tree.bits_per_sec {
            0 => scenario.bits_per_sec,
            b => b,
        },
        ..scenario.link(0, d)
    };
    let children = switches
        .take(usize::from(tree.children))
        .enumerate()
        .map(|(c, mut switch)| {
            let member = c as u16;
            let lo = rank_lo(world, tree.children, member);
            let hi = rank_lo(world, tree.children, member + 1);
            let tier = Tier::Child(ParentLink {
                world,
                rank_lo: lo,
                job: PARENT_JOB,
                member,
                members: tree.children,
                key: PARENT_KEY,
            });
            switch
                .install_tiered_job(config(JOB, hi - lo, KEY), tier)
                .expect("the child's job fits");
            let seed = scenario.seed.wrapping_mul(0x2_0001) ^ (c as u64) << 20;
            Child {
                switch,
                ranks: usize::from(lo)..usize::from(hi),
                up: Link::new(link(Direction::Up), seed),
                down: Link::new(link(Direction::Down), seed | 1 << 62),
            }
        })
        .collect();
    let hosts = (0..world)
        .map(|r| {
            let links = (
                scenario.link(r, Direction::Up),
                scenario.link(r, Direction::Down),
            );
            Host::new(scenario, (JOB, KEY), r, world, links)
        })
        .collect();
    let mut run = Run {
        scenario: *scenario,
        now: 0,
        queue: EventQueue::default(),
        parent,
        children,
        hosts,
        out: vec![0; OUT_LEN],
        tx: vec![0; scenario.data_payload().max(64)],
    };
    for rank in 0..run.hosts.len() {
        run.service(rank);
    }
    run.drive(|r| r.hosts.iter().all(|h| h.joined || h.failure.is_some()));
    let start = run.now;
    for c in &mut run.children {
        c.up.reset_stats();
        c.down.reset_stats();
    }
    let queue = &mut run.queue;
    host::begin(scenario, start, &mut run.hosts, |at, rank| {
        let event = HostEvent::Start;
        queue.push(at, Event::Host { rank, event });
    });
    run.drive(|r| host::all_done(&r.hosts));
    run.report(start, wall.elapsed().as_secs_f64())
}

impl<G: ControlPlane> Run<G> {
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
                Event::AtChild { child, from, bytes } => self.at_child(child, from, &bytes),
                Event::AtParent { child, bytes } => self.at_parent(child, &bytes),
                Event::Host { rank, event } => {
                    if self.hosts[rank].handle(at, event) {
                        self.service(rank);
                    }
                }
            }
        }
    }

    fn service(&mut self, rank: usize) {
        let child = self.child_of(rank);
        let queue = &mut self.queue;
        let send = |at, bytes| {
            let from = Some(rank);
            queue.push(at, Event::AtChild { child, from, bytes });
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

    fn child_of(&self, rank: usize) -> usize {
        self.children
            .iter()
            .position(|c| c.ranks.contains(&rank))
            .expect("every rank has a child")
    }

    fn at_child(&mut self, c: usize, from: Option<usize>, bytes: &[u8]) {
        let verdict = self.children[c].switch.process(bytes, &mut self.out);
        self.send_from_child(c, from, verdict);
        // A child's run that ended with an Abort tells the parent too (protocol.md §7).
        if let Some(up) = self.children[c].switch.poll_up(&mut self.out) {
            self.send_from_child(c, None, up);
        }
    }

    /// Send what child `c` wrote into `self.out` (`verdict`), answering rank `from`.
    fn send_from_child(&mut self, c: usize, from: Option<usize>, verdict: Verdict) {
        let leaves = self.now + self.scenario.switch_latency;
        let (ranks, len) = match verdict {
            Verdict::Drop(_) | Verdict::Consumed => return,
            Verdict::Up { len, .. } => {
                let child = &mut self.children[c];
                if let Delivery::At(at) = child.up.transmit(leaves, wire_bytes(len)) {
                    let bytes = Rc::from(&self.out[..len]);
                    self.queue.push(at, Event::AtParent { child: c, bytes });
                }
                return;
            }
            Verdict::Multicast { len, .. } => (self.children[c].ranks.clone(), len),
            Verdict::Unicast { len, .. } => match from {
                Some(rank) => (rank..rank + 1, len),
                None => return,
            },
        };
        let answer: Rc<[u8]> = Rc::from(&self.out[..len]);
        for rank in ranks {
            if let Delivery::At(at) = self.hosts[rank].downlink.transmit(leaves, wire_bytes(len)) {
                let bytes = answer.clone();
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

    fn at_parent(&mut self, from: usize, bytes: &[u8]) {
        let verdict = self.parent.process(bytes, &mut self.out);
        let (children, len) = match verdict {
            Verdict::Drop(_) | Verdict::Consumed | Verdict::Up { .. } => return,
            Verdict::Multicast { len, .. } => (0..self.children.len(), len),
            Verdict::Unicast { len, .. } => (from..from + 1, len),
        };
        let leaves = self.now + self.scenario.switch_latency;
        let answer: Rc<[u8]> = Rc::from(&self.out[..len]);
        for c in children {
            if let Delivery::At(at) = self.children[c].down.transmit(leaves, wire_bytes(len)) {
                let bytes = answer.clone();
                let from = None;
                self.queue.push(
                    at,
                    Event::AtChild {
                        child: c,
                        from,
                        bytes,
                    },
                );
            }
        }
    }

    fn report(&self, start: Nanos, wall_secs: f64) -> RunReport {
        let end = self.hosts.iter().filter_map(|h| h.finished).max();
        let finished = self.hosts.iter().all(|h| h.finished.is_some());
        let switches = std::iter::once((&self.parent, PARENT_JOB))
            .chain(self.children.iter().map(|c| (&c.switch, JOB)));
        let mut protocol = ProtocolCounters::default();
        for (s, id) in switches {
            let job = s.job_snapshot(id).expect("one job a switch").counters;
            protocol.switch_retransmit_replies += job.retransmit_replies;
            protocol.switch_duplicates += job.duplicates;
            protocol.switch_stale += job.stale;
            protocol.switch_drops += s.switch_counters().total_drops();
        }
        let parent = self
            .parent
            .job_snapshot(PARENT_JOB)
            .expect("the parent's job");
        protocol.switch_completions = parent.counters.completions;
        for h in &self.hosts {
            protocol.add_worker(h.worker().stats());
        }
        let ranks_then_children = |up: bool| {
            let ranks = self
                .hosts
                .iter()
                .map(|h| if up { &h.uplink } else { &h.downlink });
            let children = self
                .children
                .iter()
                .map(|c| if up { &c.up } else { &c.down });
            ranks.chain(children).map(|l| *l.stats()).collect()
        };
        RunReport {
            algorithm: "switchml-2",
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
            uplinks: ranks_then_children(true),
            downlinks: ranks_then_children(false),
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
