//! The switches of a local run (`switchml demo`, `switchml bench`): one switch daemon, or
//! two levels of them (docs/protocol.md §7) — a parent and `children` child switches, the
//! ranks dealt to the children in contiguous ranges whose sizes differ by one at most.

use std::net::SocketAddr;

use switchml_switchd::{ChildSpec, DaemonCounters, JobSpec, RunningSwitch, SwitchConfig};

/// The parent's job id in a two-level run.
const PARENT_JOB: u16 = 2;

/// How a local run's switches are set up.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Setup {
    /// Probability of losing each datagram at every switch, each way.
    pub drop_rate: f64,
    /// Shards of each switch (two levels: of the parent and of every child alike).
    pub shards: usize,
    /// Child switches under one parent; 0: one switch, no tree.
    pub children: u16,
}

/// The running switches: the ranks' (one, or the children) and the parent, if any.
pub struct LocalSwitches {
    /// The switch each range of ranks talks to, with the range's first rank.
    serving: Vec<(u16, RunningSwitch)>,
    parent: Option<RunningSwitch>,
}

/// Return the first rank of child `c` of `children` over `world` ranks.
fn rank_lo(world: u16, children: u16, c: u16) -> u16 {
    (u32::from(c) * u32::from(world) / u32::from(children)) as u16
}

impl LocalSwitches {
    /// Start the switches of `job` (`job.world` ranks), on loopback.
    pub fn start(job: JobSpec, setup: Setup, seed: u64) -> Result<LocalSwitches, String> {
        let loopback = SocketAddr::from(([127, 0, 0, 1], 0));
        // Two levels: every switch of the tree has as many shards (protocol.md §7).
        let base = |jobs| SwitchConfig {
            drop_rate: setup.drop_rate,
            seed,
            shards: setup.shards,
            ..SwitchConfig::new(loopback, jobs)
        };
        if setup.children == 0 {
            let sw = RunningSwitch::start(&base(vec![job])).map_err(|e| format!("switch: {e}"))?;
            return Ok(LocalSwitches {
                serving: vec![(0, sw)],
                parent: None,
            });
        }
        let (world, children) = (job.world, setup.children);
        if children > world {
            return Err(format!("{children} child switches for {world} ranks"));
        }
        let parent_key = switchml_switchd::fresh_key();
        let parent_job = JobSpec {
            id: PARENT_JOB,
            world: children,
            key: Some(parent_key),
            ..job
        };
        let parent = RunningSwitch::start(&SwitchConfig {
            parent_jobs: vec![PARENT_JOB],
            ..base(vec![parent_job])
        })
        .map_err(|e| format!("parent switch: {e}"))?;
        let serving = (0..children)
            .map(|member| {
                let lo = rank_lo(world, children, member);
                let hi = rank_lo(world, children, member + 1);
                let spec = ChildSpec {
                    job: job.id,
                    parent: parent.addr(),
                    parent_job: PARENT_JOB,
                    member,
                    members: children,
                    rank_lo: lo,
                    world,
                    parent_key: Some(parent_key),
                };
                let sw = RunningSwitch::start(&SwitchConfig {
                    child_jobs: vec![spec],
                    ..base(vec![JobSpec {
                        world: hi - lo,
                        ..job
                    }])
                })
                .map_err(|e| format!("child switch {member}: {e}"))?;
                Ok((lo, sw))
            })
            .collect::<Result<_, String>>()?;
        Ok(LocalSwitches {
            serving,
            parent: Some(parent),
        })
    }

    /// Return the address rank `rank` joins.
    pub fn addr(&self, rank: u16) -> SocketAddr {
        let i = self.serving.partition_point(|(lo, _)| *lo <= rank);
        self.serving[i.saturating_sub(1)].1.addr()
    }

    /// Stop every switch; return their counters added up.
    pub fn stop(self) -> Result<DaemonCounters, String> {
        let mut total = DaemonCounters::default();
        let all = self.serving.into_iter().map(|(_, s)| s).chain(self.parent);
        for sw in all {
            total.add(&sw.stop().map_err(|e| format!("switch: {e}"))?);
        }
        Ok(total)
    }
}
