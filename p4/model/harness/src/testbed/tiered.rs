//! Tiered beds (protocol.md §7, issue 31): a parent switch and two child switches, run
//! together in the model, then cut into one bed per switch for the BMv2 replay, which
//! loads one switch at a time. A switch's answers depend only on the frames it gets, in
//! order, so replaying each switch's own frames checks it exactly as it ran in the tree.
//!
//! ```text
//!                       parent 10.0.1.254, job 40 (2 members, key PARENT_KEY)
//!                       port 0 ─ child 0       port 1 ─ child 1
//!   child i  10.0.2.(i+1), job 7 (2 ranks of 4, rank_lo 2i, member i), parent on port 3
//!            ranks 2i, 2i+1 at hosts 0 and 1 (ports 0, 1)
//! ```
//!
//! The traffic: every rank Joins, and ranks 0 and 3 Join again (a child's complete run
//! goes up with a resent Join; the parent's second completes both); a use of 20 values (two blocks: a child's Contribution up and the
//! parent's Result down each take two passes) from every rank, then rank 3's resend
//! (answered by child 1 from the parent's Result it relays); a Probe and a Status from
//! rank 2; then ranks 0-2 start a use of 3 values and rank 1 Aborts: child 0 ends its run,
//! tells its ranks and sends its Abort up (the clone), the parent ends its run and tells
//! both children, and child 1 ends its own and tells ranks 2 and 3 (`ParentFailed`).

use std::collections::VecDeque;

use switchml_core::switch::{JobConfig, ParentLink};
use switchml_core::wire::SWITCH_PORT;

use super::datagrams::{abort, contribution, join, probe, status, values};
use super::{frame_between, host, outputs, Bed, BedJob, FramedStep};
use switchml_p4model::classifier::{Source, WorkerAddr};
use switchml_p4model::controller::CONTROL_OUT_LEN;
use switchml_p4model::pipeline::{Config, Pipeline, Verdict, FRAME_OUT_LEN};
use switchml_p4model::tier_selector::{LinkEntry, TierEntry};
use switchml_p4model::udp_sender::SwitchAddr;
use switchml_p4model::MAX_COUNT;

/// The whole job's ranks, and the ranks of each child.
const RANKS: u16 = 4;
const PER_CHILD: u16 = 2;
const CHILDREN: u16 = 2;
/// The children's job and key (what the ranks Join with).
const JOB: u16 = 7;
const KEY: u64 = 0x0123_4567_89AB_CDEF;
/// The parent's job and key (what the children Join with).
const PARENT_JOB: u16 = 40;
const PARENT_KEY: u64 = 0x9A7E;
/// The switch port of a child the parent hangs off.
const UP_PORT: u16 = 3;
const SLOTS: u16 = 8;
const POOL: usize = 16;
const EPOCH: u32 = 0x71E2_0001;

/// The parent switch's address.
const PARENT: SwitchAddr = SwitchAddr {
    mac: [2, 0, 0, 0, 1, 0xFE],
    ip: [10, 0, 1, 254],
};

/// Child `i`'s address.
fn child(i: u16) -> SwitchAddr {
    SwitchAddr {
        mac: [2, 0, 0, 0, 2, i as u8 + 1],
        ip: [10, 0, 2, i as u8 + 1],
    }
}

/// Switch `to` as the other level sees it: a worker lane at `port`.
fn lane(to: SwitchAddr, port: u16) -> WorkerAddr {
    WorkerAddr {
        port,
        mac: to.mac,
        source: Source {
            ip: to.ip,
            udp_port: SWITCH_PORT,
        },
    }
}

fn config(switch: SwitchAddr) -> Config {
    Config {
        slots: POOL,
        jobs: 1,
        workers: 4,
        epoch: EPOCH,
        max_count: MAX_COUNT,
        switch,
    }
}

fn job(id: u16, world: u16, key: u64) -> JobConfig {
    JobConfig {
        id,
        world,
        slot_lo: 0,
        slot_count: SLOTS,
        key,
    }
}

/// The parent's bed: its job's members are the children, child `i` on port `i`.
pub fn parent_bed() -> Bed {
    Bed {
        config: config(PARENT),
        jobs: vec![BedJob {
            config: job(PARENT_JOB, CHILDREN, PARENT_KEY),
            tier: TierEntry::Parent,
            workers: (0..CHILDREN).map(|i| (i, lane(child(i), i))).collect(),
        }],
    }
}

/// Child `i`'s bed: member `i` of the parent's job, ranks `2i`, `2i + 1` at hosts 0, 1.
pub fn child_bed(i: u16) -> Bed {
    let rank_lo = PER_CHILD * i;
    let link = ParentLink {
        world: RANKS,
        rank_lo,
        job: PARENT_JOB,
        member: i,
        members: CHILDREN,
        key: PARENT_KEY,
    };
    Bed {
        config: config(child(i)),
        jobs: vec![BedJob {
            config: job(JOB, PER_CHILD, KEY),
            tier: TierEntry::Child(LinkEntry {
                link,
                parent: lane(PARENT, UP_PORT),
            }),
            workers: (0..PER_CHILD).map(|j| (rank_lo + j, host(j))).collect(),
        }],
    }
}

/// One switch of the tree as the replay sees it: its bed and what it got and sent.
#[derive(Debug, Clone)]
pub struct TieredBed {
    /// `tiered_parent`, `tiered_child0`, `tiered_child1`.
    pub name: String,
    /// Its tables.
    pub bed: Bed,
    /// Every frame it got, in order, with what it sent for it.
    pub steps: Vec<FramedStep>,
}

/// The tree: the switches (0 the parent, 1 + i child i) and what each got and sent.
struct Tree {
    switches: Vec<Pipeline>,
    steps: Vec<Vec<FramedStep>>,
}

impl Tree {
    /// Where a frame switch `from` sends on `port` arrives: (switch, port), or `None` for
    /// a host.
    fn link(from: usize, port: u16) -> Option<(usize, u16)> {
        match from {
            0 if port < CHILDREN => Some((1 + usize::from(port), UP_PORT)),
            0 => None,
            child if port == UP_PORT => Some((0, child as u16 - 1)),
            _ => None,
        }
    }

    /// Send `datagram` from global rank `rank`'s host to its child switch, and every frame
    /// it sets off between the switches, until the tree is quiet.
    fn send(&mut self, name: &str, rank: u16, datagram: &[u8]) {
        let i = rank / PER_CHILD;
        let from = host(rank % PER_CHILD);
        let first = (
            1 + usize::from(i),
            from.port,
            frame_between(&from, &child(i), datagram),
        );
        let mut queue = VecDeque::from([first]);
        let mut hop = 0;
        while let Some((sw, port, frame)) = queue.pop_front() {
            let p = &mut self.switches[sw];
            let mut out = outputs(p, port, &frame);
            // A child whose run ended owes its parent an Abort: the clone (v1model) or
            // mirror (TNA) of the same pass, to the parent's port.
            let mut clone = vec![0u8; FRAME_OUT_LEN];
            if let Some(Verdict::Up { port, len, .. }) = p.poll_up_frame(&mut clone) {
                out.push((port, clone[..len].to_vec()));
            }
            for (port, f) in &out {
                if let Some((to, at)) = Tree::link(sw, *port) {
                    queue.push_back((to, at, f.clone()));
                }
            }
            // What the switch sends its controller: the controller's frame back on the CPU
            // port is the switch's next input (protocol.md §4.2).
            let cpu = p.cpu_port();
            if let Some((_, punted)) = out.iter().find(|(to, _)| *to == cpu) {
                let mut back = vec![0u8; CONTROL_OUT_LEN];
                if let Ok(len) = p.control_frame(punted, &mut back) {
                    queue.push_front((sw, cpu, back[..len].to_vec()));
                }
            }
            let step = format!("{name}/{hop}");
            self.steps[sw].push(FramedStep {
                name: step,
                port,
                frame,
                out,
            });
            hop += 1;
        }
    }
}

/// The nonce of global rank `r`'s process; each child's first Join (ranks 0 and 2) opens
/// its run with it.
const fn nonce(r: u16) -> u32 {
    0x3333_0000 + r as u32 + 1
}

/// The session of rank `r`'s child's run.
const fn session(r: u16) -> u32 {
    nonce(r - r % PER_CHILD)
}

/// Run the traffic of the module's doc through the tree; return each switch's bed.
pub fn beds() -> Vec<TieredBed> {
    let mut beds = vec![parent_bed()];
    beds.extend((0..CHILDREN).map(child_bed));
    let mut tree = Tree {
        switches: beds.iter().map(Bed::pipeline).collect(),
        steps: vec![Vec::new(); beds.len()],
    };
    let c = |r: u16, slot: u16, k: usize| contribution(JOB, r, slot, session(r), &values(r, k));
    let join = |r: u16| (r, join(JOB, r, RANKS, (SLOTS, 32), nonce(r), KEY));
    // Every rank Joins; a child's complete run goes up with the next Join a rank resends
    // (still waiting for COMPLETE), here rank 0's and rank 3's.
    let mut traffic: Vec<(u16, Vec<u8>)> = [0, 1, 2, 3, 0, 3].map(join).to_vec();
    traffic.extend([0, 2, 1, 3, 3].map(|r| (r, c(r, 0, 20))));
    traffic.push((2, probe(JOB, 2, 0, session(2))));
    traffic.push((2, status(JOB, 2, KEY)));
    traffic.extend([0, 2, 1].map(|r| (r, c(r, 1, 3))));
    traffic.push((1, abort(JOB, 1, session(1))));
    for (n, (rank, datagram)) in traffic.iter().enumerate() {
        tree.send(&format!("{n:02}-rank{rank}"), *rank, datagram);
    }
    let names = ["tiered_parent", "tiered_child0", "tiered_child1"];
    beds.into_iter()
        .zip(tree.steps)
        .zip(names)
        .map(|((bed, steps), name)| TieredBed {
            name: name.into(),
            bed,
            steps,
        })
        .collect()
}
