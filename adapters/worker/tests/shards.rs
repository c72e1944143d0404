//! A sharded software switch (protocol.md §1.1) serving real workers on loopback: every
//! lane starts at the switch's address and finds its shard by itself; results are exact
//! with loss; the shards' counters add up; admin requests reach every shard; a rank leaves
//! every shard. On both pipelines.

mod common;

use std::time::Duration;

use common::*;
use switchml_switchd::{admin_request, RunningSwitch, SwitchConfig};
use switchml_worker::{CommConfig, Op};

/// A switch of `shards` shards on `pipeline` serving job [`JOB`], losing `drop_rate`.
fn sharded(pipeline: SwitchPipeline, shards: usize, world: u16, drop_rate: f64) -> RunningSwitch {
    RunningSwitch::start(&SwitchConfig {
        drop_rate,
        seed: 5,
        pipeline,
        shards,
        ..SwitchConfig::new("127.0.0.1:0".parse().unwrap(), vec![job_spec(world, 64)])
    })
    .expect("switch starts")
}

/// Rank `rank` with `lanes` lanes of 16 slots.
fn lanes_config(rank: u16, world: u16, lanes: u16, sw: &RunningSwitch) -> CommConfig {
    config(rank, world, sw.addr())
        .into_builder()
        .lanes(lanes)
        .build()
}

fn exact_with_loss(pipeline: SwitchPipeline) {
    let (world, len) = (3u16, 20_000usize);
    for (shards, lanes, drop_rate) in [(2usize, 2u16, 0.0), (3, 4, 0.01)] {
        let sw = sharded(pipeline, shards, world, drop_rate);
        let outcomes = per_rank(
            world,
            |r| lanes_config(r, world, lanes, &sw),
            |comm| {
                let mut x = ints(comm.rank(), world, len, 9);
                comm.allreduce(&mut x, Op::Sum).map(|()| x)
            },
        );
        let want = int_sum(world, len, 9);
        for (rank, o) in outcomes.into_iter().enumerate() {
            let got = o
                .unwrap_or_else(|e| panic!("{shards} shards: rank {rank} connects: {e}"))
                .unwrap_or_else(|e| panic!("{shards} shards: rank {rank}: {e}"));
            assert!(got == want, "{shards} shards: rank {rank}: wrong sum");
        }
        let total = settle(&sw);
        let per_shard = sw.shard_counters();
        assert_eq!(per_shard.len(), shards);
        // Every lane not on shard 0 was sent there once (more only if an answer was lost).
        let moved = u64::from(world) * u64::from(lanes - lanes.div_ceil(shards as u16));
        assert!(total.redirected >= moved, "{} < {moved}", total.redirected);
        if drop_rate == 0.0 {
            assert_eq!(total.redirected, moved);
        }
        for (s, c) in per_shard.iter().enumerate() {
            let job = c.job(JOB).expect("every shard holds the job");
            assert_eq!(job.switch.runs, 1, "shard {s}: one run, its own");
            assert!(job.switch.completions > 0, "shard {s} aggregated nothing");
            if s > 0 {
                assert_eq!(c.redirected, 0, "shard {s}");
            }
        }
        let sum =
            |f: fn(&switchml_switchd::DaemonCounters) -> u64| per_shard.iter().map(f).sum::<u64>();
        assert_eq!(total.received, sum(|c| c.received));
        assert_eq!(total.sent, sum(|c| c.sent));
        assert_eq!(
            total.job(JOB).map(|j| j.switch.completions),
            Some(sum(|c| c.job(JOB).map_or(0, |j| j.switch.completions)))
        );
        // Every rank left every shard: each shard's run ended, and no Leave came late.
        for (s, c) in per_shard.iter().enumerate() {
            let late = c
                .switch
                .drops(switchml_core::switch::DropReason::BadSession);
            assert_eq!(late, 0, "shard {s}: a Leave after its run ended");
        }
    }
}

fn admin_requests_reach_every_shard(pipeline: SwitchPipeline) {
    let dir = std::env::temp_dir().join(format!("switchml-shards-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("admin-{pipeline}.sock"));
    let sw = RunningSwitch::start(&SwitchConfig {
        pipeline,
        shards: 3,
        admin: Some(path.clone()),
        spare_slots: 64,
        ..SwitchConfig::new("127.0.0.1:0".parse().unwrap(), vec![])
    })
    .expect("switch starts");
    let t = Duration::from_secs(5);
    let added = admin_request(&path, &format!("add {JOB}:2:64:{KEY:x}"), t).expect("added");
    assert!(added.contains("slots 0..64"), "{added}");
    let outcomes = per_rank(
        2,
        |r| lanes_config(r, 2, 3, &sw),
        |comm| {
            let mut x = ints(comm.rank(), 2, 5000, 4);
            comm.allreduce(&mut x, Op::Sum).map(|()| x)
        },
    );
    let want = int_sum(2, 5000, 4);
    for o in outcomes {
        assert!(o.expect("connects").expect("reduces") == want);
    }
    let listed = admin_request(&path, "list", t).expect("listed");
    assert!(listed.contains(&format!("job {JOB}: 2 ranks")), "{listed}");
    admin_request(&path, &format!("remove {JOB}"), t).expect("removed");
    let again = admin_request(&path, &format!("remove {JOB}"), t);
    assert!(again.is_err(), "{again:?}");
    let c = settle(&sw);
    assert!(sw.shard_counters().iter().all(|c| c.jobs.is_empty()));
    assert!(c.jobs.is_empty(), "removed from every shard");
}

on_both_pipelines!(exact_with_loss, admin_requests_reach_every_shard);
