//! Two levels of switch daemons on loopback (protocol.md §7): a parent whose job's ranks
//! are child switches, and children that each serve a contiguous range of the job's ranks.
//!
//! ```text
//!   ranks 0‥n−1   ⇄ child 0 ─┐
//!   ranks n‥2n−1  ⇄ child 1 ─┴─ parent (job 9: 2 members)
//! ```
//!
//! Every rank is an unchanged communicator joined with its global rank and the whole
//! job's world; every sum must be exact (int32) or identical in every rank's bits (f32).

mod common;

use std::net::{SocketAddr, UdpSocket};
use std::sync::Barrier;
use std::time::{Duration, Instant};

use common::*;
use switchml_switchd::{ChildSpec, JobSpec, RunningSwitch, SwitchConfig};
use switchml_worker::{Communicator, Op};

const PARENT_JOB: u16 = 9;
const PARENT_KEY: u64 = 0x9A7E_2700_0000_0009;
/// Slots every job spans: the workers' 2 lanes × 16.
const SLOTS: u16 = 32;

fn loopback() -> SocketAddr {
    "127.0.0.1:0".parse().unwrap()
}

/// How a switch of the tree runs: the datagrams it loses, its shards, its pipeline and,
/// for a child, the key it joins its parent with.
#[derive(Clone, Copy)]
struct Run {
    drop_rate: f64,
    shards: usize,
    pipeline: SwitchPipeline,
    parent_key: u64,
}

const PLAIN: Run = Run {
    drop_rate: 0.0,
    shards: 1,
    pipeline: SwitchPipeline::Reference,
    parent_key: PARENT_KEY,
};

/// A parent serving `children` members.
fn parent(children: u16, run: Run) -> RunningSwitch {
    let job = JobSpec {
        id: PARENT_JOB,
        world: children,
        slots: SLOTS,
        key: Some(PARENT_KEY),
    };
    RunningSwitch::start(&SwitchConfig {
        drop_rate: run.drop_rate,
        seed: 77,
        shards: run.shards,
        pipeline: run.pipeline,
        parent_jobs: vec![PARENT_JOB],
        ..SwitchConfig::new(loopback(), vec![job])
    })
    .expect("the parent starts")
}

/// Child `member` of `members`, serving `per_child` ranks of `world`, its parent at `up`.
fn child(up: SocketAddr, member: u16, members: u16, per_child: u16, run: Run) -> RunningSwitch {
    let spec = ChildSpec {
        job: JOB,
        parent: up,
        parent_job: PARENT_JOB,
        member,
        members,
        rank_lo: member * per_child,
        world: members * per_child,
        parent_key: Some(run.parent_key),
    };
    RunningSwitch::start(&SwitchConfig {
        drop_rate: run.drop_rate,
        seed: 100 + u64::from(member),
        shards: run.shards,
        pipeline: run.pipeline,
        child_jobs: vec![spec],
        ..SwitchConfig::new(loopback(), vec![job_spec(per_child, SLOTS)])
    })
    .expect("a child starts")
}

/// A tree of `members` children of `per_child` ranks each, and its switches' counters.
struct Tree {
    parent: RunningSwitch,
    children: Vec<RunningSwitch>,
    per_child: u16,
}

impl Tree {
    /// The tree, the parent losing `loss.0` of its datagrams and child 0 `loss.1`.
    fn new(members: u16, per_child: u16, loss: (f64, f64)) -> Tree {
        Tree::sharded(members, per_child, loss, 1)
    }

    /// [`Tree::new`], every switch of `shards` shards.
    fn sharded(members: u16, per_child: u16, loss: (f64, f64), shards: usize) -> Tree {
        let reference = SwitchPipeline::Reference;
        Tree::built(members, per_child, loss, shards, (reference, reference))
    }

    /// The tree with its parent on `pipelines.0` and its children on `pipelines.1`.
    fn on(
        members: u16,
        per_child: u16,
        loss: (f64, f64),
        pipelines: (SwitchPipeline, SwitchPipeline),
    ) -> Tree {
        Tree::built(members, per_child, loss, 1, pipelines)
    }

    fn built(
        members: u16,
        per_child: u16,
        loss: (f64, f64),
        shards: usize,
        pipelines: (SwitchPipeline, SwitchPipeline),
    ) -> Tree {
        let level = |drop_rate, pipeline| Run {
            drop_rate,
            shards,
            pipeline,
            ..PLAIN
        };
        let parent = parent(members, level(loss.0, pipelines.0));
        let children = (0..members)
            .map(|m| {
                let rate = if m == 0 { loss.1 } else { 0.0 };
                child(
                    parent.addr(),
                    m,
                    members,
                    per_child,
                    level(rate, pipelines.1),
                )
            })
            .collect();
        Tree {
            parent,
            children,
            per_child,
        }
    }

    fn world(&self) -> u16 {
        self.children.len() as u16 * self.per_child
    }

    /// Rank `rank`'s configuration: its child's address, the whole job's world.
    fn config(&self, rank: u16) -> switchml_worker::CommConfig {
        let at = self.children[usize::from(rank / self.per_child)].addr();
        config(rank, self.world(), at)
    }
}

/// Return `sw`'s counters once they satisfy `done` ([`counters_when`]: a fixed sleep raced
/// a busy machine).
fn published(
    sw: &RunningSwitch,
    done: impl Fn(&switchml_switchd::DaemonCounters) -> bool,
) -> switchml_switchd::DaemonCounters {
    counters_when(sw, done)
}

/// Every rank all-reduces an int32 and an f32 tensor through `tree`; check the sums.
fn all_reduce(tree: &Tree, len: usize) {
    let world = tree.world();
    let outcomes = per_rank(
        world,
        |r| tree.config(r),
        |comm| {
            let r = comm.rank();
            let mut a = ints(r, world, len, 1);
            comm.allreduce(&mut a, Op::Sum).map_err(|e| e.to_string())?;
            let mut b = floats(r, len, 2);
            comm.allreduce(&mut b, Op::Sum).map_err(|e| e.to_string())?;
            Ok::<_, String>((a, b))
        },
    );
    let exact = int_sum(world, len, 1);
    let inputs: Vec<Vec<f32>> = (0..world).map(|r| floats(r, len, 2)).collect();
    let reference = f64_sum(&inputs);
    let max_abs = inputs
        .iter()
        .flatten()
        .fold(0f64, |m, x| m.max(f64::from(x.abs())));
    let mut first: Option<Vec<u32>> = None;
    for (rank, outcome) in outcomes.into_iter().enumerate() {
        let (a, b) = outcome
            .unwrap_or_else(|e| panic!("rank {rank} could not connect: {e}"))
            .unwrap_or_else(|e| panic!("rank {rank} failed: {e}"));
        assert!(a == exact, "rank {rank}: the int32 sum is not exact");
        for (i, (y, x)) in b.iter().zip(&reference).enumerate() {
            let err = (f64::from(*y) - x).abs();
            assert!(
                err <= sum_bound(world, max_abs, *x),
                "rank {rank} element {i}: {y} vs {x}"
            );
        }
        let bits: Vec<u32> = b.iter().map(|x| x.to_bits()).collect();
        match &first {
            None => first = Some(bits),
            Some(f) => assert!(*f == bits, "rank {rank}: f32 bits differ from rank 0's"),
        }
    }
    // Every sum went through the parent: it completed uses, each child sent up.
    let p = published(&tree.parent, |p| {
        p.job(PARENT_JOB).is_some_and(|j| j.switch.completions > 0)
    });
    let completions = p.job(PARENT_JOB).unwrap().switch.completions;
    assert!(completions > 0, "the parent completed nothing");
    for (m, c) in tree.children.iter().enumerate() {
        let c = published(c, |c| {
            c.job(JOB)
                .is_some_and(|j| j.upward >= completions && j.from_parent > 0)
        });
        let job = c.job(JOB).unwrap();
        assert!(
            job.upward >= completions,
            "child {m} sent up {}",
            job.upward
        );
        assert!(
            job.from_parent > 0,
            "child {m} heard nothing from its parent"
        );
    }
}

#[test]
fn two_children_of_two_ranks_sum_exactly() {
    let tree = Tree::new(2, 2, (0.0, 0.0));
    all_reduce(&tree, 3000);
}

#[test]
fn four_children_of_four_ranks_sum_exactly() {
    let tree = Tree::new(4, 4, (0.0, 0.0));
    all_reduce(&tree, 2000);
}

#[test]
fn sums_stay_exact_with_loss_at_a_child_and_at_the_parent() {
    let tree = Tree::new(2, 3, (0.02, 0.02));
    all_reduce(&tree, 3000);
    let lost = |s: &RunningSwitch| s.counters().injected_losses;
    assert!(lost(&tree.parent) > 0, "the parent lost nothing");
    assert!(lost(&tree.children[0]) > 0, "child 0 lost nothing");
}

#[test]
fn the_p4_model_serves_both_levels_with_loss() {
    let model = SwitchPipeline::P4Model;
    let tree = Tree::on(2, 3, (0.02, 0.02), (model, model));
    all_reduce(&tree, 3000);
}

#[test]
fn model_children_under_a_reference_parent_and_the_reverse_sum_exactly() {
    let (model, reference) = (SwitchPipeline::P4Model, SwitchPipeline::Reference);
    all_reduce(&Tree::on(2, 2, (0.0, 0.0), (reference, model)), 2000);
    all_reduce(&Tree::on(2, 2, (0.0, 0.0), (model, reference)), 2000);
}

#[test]
fn a_child_whose_parent_is_silent_fails_its_ranks_in_bounded_time() {
    // A socket that takes datagrams and never answers: no ICMP, just silence.
    let silent = UdpSocket::bind(loopback()).unwrap();
    let sw = child(silent.local_addr().unwrap(), 0, 2, 2, PLAIN);
    let started = Instant::now();
    let outcomes = per_rank(
        2,
        |r| {
            config(r, 4, sw.addr())
                .into_builder()
                .join_timeout(Duration::from_secs(2))
                .build()
        },
        |_| (),
    );
    // Only a hang guard, far above the 2 s join timeout that bounds it (a busy machine
    // stretches that, but not thirtyfold).
    assert!(started.elapsed() < Duration::from_secs(60), "it hung");
    for (rank, o) in outcomes.into_iter().enumerate() {
        // A join timeout, or the Abort of the rank that timed out first.
        let e = o.expect_err("no rank may join without the parent");
        eprintln!("rank {rank}: {e}");
    }
    let c = sw.stop().unwrap();
    let job = c.job(JOB).unwrap();
    assert!(job.upward > 0, "the child never asked its parent");
    assert_eq!(job.from_parent, 0);
    let mut buf = [0u8; 64];
    silent.set_nonblocking(true).unwrap();
    assert!(silent.recv(&mut buf).is_ok(), "the Join to the parent");
}

#[test]
fn a_parent_that_refuses_a_child_fails_its_ranks_naming_it_at_once() {
    // Child 1 states the wrong key for the parent's job: the parent refuses its Join, and
    // child 1's ranks fail naming it, not at their 10 s join timeout.
    let parent = parent(2, PLAIN);
    let _child0 = child(parent.addr(), 0, 2, 2, PLAIN);
    let wrong_key = Run {
        parent_key: PARENT_KEY ^ 1,
        ..PLAIN
    };
    let child1 = child(parent.addr(), 1, 2, 2, wrong_key);
    let outcomes = per_rank(2, |r| config(2 + r, 4, child1.addr()), |_| ());
    // At once, not at the timeout: a timed-out rank's error names no child switch, so the
    // text proves it (an elapsed-time bound would be the scheduler's to break).
    for (rank, o) in outcomes.into_iter().enumerate() {
        let e = o
            .expect_err("no rank may join through a refused child")
            .to_string();
        let named = "parent switch ended the run: child switch 1";
        assert!(e.contains(named), "rank {}: {e}", rank + 2);
    }
}

#[test]
fn sharded_children_under_a_parent_of_as_many_shards_sum_exactly() {
    // Two shards at every switch, two lanes a rank: lane l goes to shard l of its child,
    // which goes up to shard l of the parent; each shard pair is a tree of its own.
    let tree = Tree::sharded(2, 2, (0.0, 0.0), 2);
    all_reduce(&tree, 3000);
    for sw in [&tree.parent, &tree.children[0], &tree.children[1]] {
        assert_eq!(sw.shards(), 2);
        let per_shard = sw.shard_counters();
        assert!(per_shard.iter().all(|c| c.received > 0), "a shard idled");
    }
}

#[test]
fn a_parent_job_needs_a_job() {
    let orphan = RunningSwitch::start(&SwitchConfig {
        parent_jobs: vec![5],
        ..SwitchConfig::new(loopback(), vec![job_spec(2, SLOTS)])
    });
    let e = orphan
        .err()
        .expect("a parent job that is no job")
        .to_string();
    assert!(e.contains("job 5"), "{e}");
}

/// Rank 0 (child 0) drops its communicator with an all-reduce in flight: its Abort goes to
/// child 0's ranks and up, and the parent's passes down to child 1's ranks. They fail
/// naming child 0 at once, not after their budget of 400 timeouts (over 15 s). Sharded,
/// each of rank 0's lanes tells its own shard, and each shard pair passes it on.
fn a_rank_that_gives_up_under_one_child_fails_the_ranks_under_the_other(shards: usize) {
    let tree = Tree::sharded(2, 2, (0.0, 0.0), shards);
    let world = tree.world();
    let gone = Barrier::new(usize::from(world));
    let config = |r| tree.config(r).into_builder().retries(400).build();
    let outcomes: Vec<(Duration, String)> = std::thread::scope(|s| {
        let ranks: Vec<_> = (0..world)
            .map(|r| {
                let (gone, config) = (&gone, &config);
                s.spawn(move || {
                    let comm = Communicator::connect(&config(r)).unwrap();
                    let mut x = ints(r, world, 1_000, 3);
                    comm.allreduce(&mut x, Op::Sum).unwrap();
                    if r == 0 {
                        // The others start this one only once rank 0 has gone.
                        let pending = comm.allreduce_async(ints(r, world, 100_000, 4), Op::Sum);
                        std::thread::sleep(Duration::from_millis(50));
                        drop(comm);
                        gone.wait();
                        let e = pending.wait().expect_err("rank 0 gave up");
                        return (Duration::ZERO, e.to_string());
                    }
                    gone.wait();
                    let started = Instant::now();
                    let mut y = ints(r, world, 100_000, 4);
                    let e = comm
                        .allreduce(&mut y, Op::Sum)
                        .expect_err("no sum without rank 0");
                    (started.elapsed(), e.to_string())
                })
            })
            .collect();
        ranks.into_iter().map(|h| h.join().unwrap()).collect()
    });
    for (rank, (took, text)) in outcomes.iter().enumerate().skip(1) {
        // Told, not timed out: with 400 retries the stall detection would name no one
        // for over 15 s and say something else; the text is the proof, not the time.
        eprintln!("rank {rank} failed after {took:?}: {text}");
        let named = if rank < 2 {
            "rank 0 gave up"
        } else {
            "parent switch ended the run: child switch 0"
        };
        assert!(text.contains(named), "rank {rank}: {text}");
    }
    let p = published(&tree.parent, |p| {
        p.job(PARENT_JOB)
            .is_some_and(|j| j.switch.aborts >= shards as u64)
    });
    assert_eq!(p.job(PARENT_JOB).unwrap().switch.aborts, shards as u64);
}

#[test]
fn a_rank_that_gives_up_under_one_child_fails_the_ranks_under_the_other_at_once() {
    a_rank_that_gives_up_under_one_child_fails_the_ranks_under_the_other(1);
}

#[test]
fn a_rank_that_gives_up_fails_the_other_childs_ranks_through_every_shard() {
    a_rank_that_gives_up_under_one_child_fails_the_ranks_under_the_other(2);
}
