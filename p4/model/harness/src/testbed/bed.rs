//! One switch of a replay bed ([`Bed`]): what its control plane installs, loaded into the
//! model ([`Bed::pipeline`]) and written as `simple_switch_CLI` commands for the v1model
//! program ([`Bed::commands`]) from the same description.

use std::fmt::Write as _;

use switchml_core::switch::JobConfig;

use super::host;
use switchml_p4model::classifier::WorkerAddr;
use switchml_p4model::pipeline::{Config, Pipeline};
use switchml_p4model::tier_selector::TierEntry;

/// One switch of a replay bed as its control plane sets it up: the model's [`Config`]
/// and its jobs, each at its tier with its worker lanes. [`Bed::pipeline`] loads it into
/// the model and [`Bed::commands`] into the v1model program, both from this one
/// description, so the two cannot be set up differently.
#[derive(Debug, Clone)]
pub struct Bed {
    /// Pool, table sizes, epoch, `max_count`, the switch's addresses.
    pub config: Config,
    /// The jobs, in job table order (entry 0, 1, ...).
    pub jobs: Vec<BedJob>,
}

/// A job of a [`Bed`].
#[derive(Debug, Clone)]
pub struct BedJob {
    /// The job table entry; a child's `world` is its own ranks' number.
    pub config: JobConfig,
    /// Its `parent_link` entry (protocol.md §7).
    pub tier: TierEntry,
    /// Its worker lanes: the rank each states (a child's: global) and its address.
    pub workers: Vec<(u16, WorkerAddr)>,
}

impl BedJob {
    /// A flat job with every rank at its host.
    pub fn at_hosts(config: JobConfig) -> Self {
        BedJob {
            config,
            tier: TierEntry::Flat,
            workers: (0..config.world).map(|r| (r, host(r))).collect(),
        }
    }
}

impl Bed {
    /// The model set up as this bed.
    pub fn pipeline(&self) -> Pipeline {
        let mut p = Pipeline::new(self.config);
        for job in &self.jobs {
            p.add_tiered_job(job.config, job.tier).ok();
            for &(rank, addr) in &job.workers {
                p.add_worker(job.config.id, rank, addr).ok();
            }
        }
        p
    }

    /// The `simple_switch_CLI` commands that load this bed into `p4/v1model/switchml.p4`:
    /// per job its entry (table entries 0, 1, ..., multicast groups 1, 2, ...), its tier's
    /// entries, its worker lanes; the lane alignments of the pool; the switch's addresses,
    /// epoch and `max_count`. Commands only: the CLI has no comment syntax (a `#` line draws
    /// `*** Unknown syntax`, which the replay counts as a refusal).
    pub fn commands(&self) -> String {
        let mut s = String::new();
        let mut node = 0;
        let mut rid = 1u16;
        for (index, job) in self.jobs.iter().enumerate() {
            let (c, group) = (job.config, index + 1);
            let _ = writeln!(
                s,
                "table_add job_table set_job {} => {} {} {} {group} {index} 0x{:016x}",
                c.id,
                c.world,
                c.slot_lo,
                c.slot_count,
                switchml_p4model::join_handler::full_mask(c.world),
            );
            tier_commands(&mut s, c.id, index, &job.tier);
            let _ = writeln!(s, "mc_mgrp_create {group}");
            let rank_lo = job.tier.rank_lo();
            for &(rank, h) in &job.workers {
                let member = rank.wrapping_sub(rank_lo);
                let _ = writeln!(
                    s,
                    "table_add worker_table set_worker {} {} {} => {rank} {member} 0x{:016x}",
                    c.id,
                    ip(h.source.ip),
                    h.source.udp_port,
                    1u64.checked_shl(u32::from(member)).unwrap_or(0)
                );
                let _ = writeln!(
                    s,
                    "table_add replica_table set_replica {rid} => {} {} {}",
                    mac(h.mac),
                    ip(h.source.ip),
                    h.source.udp_port
                );
                let _ = writeln!(s, "mc_node_create {rid} {}", h.port);
                let _ = writeln!(s, "mc_node_associate {group} {node}");
                node += 1;
                rid += 1;
            }
        }
        for (slot_count, slot_lo, lane) in lane_alignments(self.config.slots) {
            let _ = writeln!(
                s,
                "table_add lane_alignment lane_aligned {slot_count} {slot_lo} => {lane}"
            );
        }
        let c = &self.config;
        let _ = writeln!(
            s,
            "table_set_default switch_config set_switch_config {} {} {} {}",
            mac(c.switch.mac),
            ip(c.switch.ip),
            c.epoch,
            c.max_count
        );
        s
    }
}

/// The clone session of job table entry `index`'s Abort up (v1model `UP_CLONE_BASE`).
const UP_CLONE_BASE: usize = 1024;

/// The `parent_link` and `child_job` entries of job `id` at table entry `index`, and the
/// clone session that takes a child's Abort up to its parent's port (tier_selector.p4,
/// protocol.md §7); nothing for a flat job (the default action).
fn tier_commands(s: &mut String, id: u16, index: usize, tier: &TierEntry) {
    match tier {
        TierEntry::Flat => {}
        TierEntry::Parent => {
            let _ = writeln!(s, "table_add parent_link set_parent {id} =>");
        }
        TierEntry::Child(e) => {
            let (l, to) = (&e.link, &e.parent);
            let _ = writeln!(
                s,
                "table_add parent_link set_child {id} => {} {} {} {} {} {} {} {} {}",
                l.world,
                l.rank_lo,
                l.job,
                l.member,
                l.members,
                mac(to.mac),
                ip(to.source.ip),
                to.source.udp_port,
                to.port
            );
            let _ = writeln!(s, "table_add child_job set_child_job {} => {id}", l.job);
            let _ = writeln!(s, "mirroring_add {} {}", UP_CLONE_BASE + index, to.port);
        }
    }
}

/// The entries of `join_handler.p4`'s `lane_alignment` for a pool of `slots` slots: every
/// lane (slot_count c, slot_lo k*c) that fits the pool, with its index k, as
/// `(slot_count, slot_lo, k)`. The model computes `slot_lo % slot_count` and
/// `slot_lo / slot_count` (`join_handler.rs`); the programs cannot (no divider on Tofino,
/// no runtime `%` in p4c's BMv2 back end), so the control plane precomputes them. A Join
/// whose lane runs past the pool runs past its job's slots too, so no other pair is needed.
pub fn lane_alignments(slots: usize) -> impl Iterator<Item = (u16, u16, u16)> {
    let slots = u16::try_from(slots).unwrap_or(u16::MAX);
    (1..=slots).flat_map(move |c| (0..slots / c).map(move |k| (c, k * c, k)))
}

fn mac(m: [u8; 6]) -> String {
    m.map(|b| format!("{b:02x}")).join(":")
}

fn ip(a: [u8; 4]) -> String {
    a.map(|b| b.to_string()).join(".")
}
