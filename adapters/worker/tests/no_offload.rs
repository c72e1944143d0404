//! The fallback path: with `SWITCHML_NO_GSO=1` neither the lanes nor the switch use UDP
//! segmentation offload (one datagram per `sendmmsg`/`recvmmsg` entry, as on a kernel
//! without it), and an all-reduce still comes out exact. This file is its own test process,
//! so the variable reaches every socket it opens and no other test.

mod common;

use common::*;
use switchml_worker::{Error, Op};

on_both_pipelines!(an_allreduce_without_segmentation_offload_is_exact);

fn an_allreduce_without_segmentation_offload_is_exact(pipeline: SwitchPipeline) {
    // Both pipelines' tests call this first, before any socket or thread of theirs exists;
    // the second waits until the first has set it.
    static NO_GSO: std::sync::Once = std::sync::Once::new();
    NO_GSO.call_once(|| std::env::set_var("SWITCHML_NO_GSO", "1"));
    let world = 2;
    let sw = switch(pipeline, world, 32, 0.0, 0);
    let addr = sw.addr();
    let outcomes = per_rank(
        world,
        |r| config(r, world, addr),
        |comm| {
            let mut x: Vec<f32> = (0..100_000).map(|i| (i % 1000) as f32).collect();
            comm.allreduce(&mut x, Op::Sum)?;
            Ok::<_, Error>(x)
        },
    );
    for o in outcomes {
        let x = o.expect("rank connects").expect("all-reduces");
        for (i, v) in x.iter().enumerate() {
            assert_eq!(*v, 2.0 * (i % 1000) as f32, "{pipeline}: element {i}");
        }
    }
}
