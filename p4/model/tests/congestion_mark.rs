//! `CONGESTED` (protocol.md §6.3) through the model: with the workers' congestion window on
//! and the switch marking every use it counts (`ControlPlane::set_congested`) or only
//! passing the workers' own marks on, a seeded run on the model is the very same run as on
//! the reference switch — same results, same windows, same counters, same time — so the
//! model ORs and sets the mark as the reference does. (That mark is the software daemon's,
//! `--mark-backlog`; the P4 programs' own, from queue depth, is `queue_depth_mark.rs`'s.)

use proptest::prelude::*;
use switchml_core::quant::Op;
use switchml_core::switch::{Aggregator, ControlPlane, JobConfig};
use switchml_core::worker::{Config, CongestionControl};
use switchml_p4model::Pipeline;
use switchml_tests::harness::{self, f32_values, lossy, sim_config, JOB, KEY};
use switchml_tests::sim::{lane_configs, Buf, Rng, Sim};

const STEPS: usize = 2_000_000;

fn lanes_on(world: u16, window: u16, count: u16) -> Vec<Config> {
    let c = Config {
        congestion: CongestionControl::DEFAULT_ON,
        ..sim_config(world, window, count)
    };
    lane_configs(c, 1)
}

/// Every rank's result of one f32 tensor per rank.
fn run<S: Aggregator>(sim: &mut Sim<S>, inputs: &[Vec<f32>]) -> Vec<Buf> {
    let bufs = inputs.iter().map(|x| Buf::F32(x.clone())).collect();
    sim.all_reduce(bufs, Op::Sum, STEPS)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 32, ..ProptestConfig::default() })]

    #[test]
    fn a_marked_run_on_the_model_is_the_run_on_the_reference(
        seed in any::<u64>(), world in 1u16..=4, window in 1u16..=6,
        count in prop::sample::select(vec![1u16, 5, 64]), len in 0usize..700,
        drop in 0.0..0.10f64, dup in 0.0..0.05f64, marking in any::<bool>(),
    ) {
        let mut rng = Rng::new(seed);
        let inputs: Vec<Vec<f32>> = (0..world).map(|_| f32_values(&mut rng, len)).collect();
        let job = JobConfig { id: JOB, world, slot_lo: 0, slot_count: window, key: KEY };
        let mut model = Pipeline::with_rank_ports(usize::from(window), &[job], 1).expect("job fits");
        ControlPlane::set_congested(&mut model, marking);
        let net = lossy(drop, dup);
        let mut on_model = Sim::new(model, lanes_on(world, window, count), net, seed);
        let mut switch = harness::switch_with_job(world, window, 1);
        switch.set_congested(marking);
        let mut on_reference = Sim::new(switch, lanes_on(world, window, count), net, seed);
        let a = run(&mut on_model, &inputs);
        let b = run(&mut on_reference, &inputs);
        prop_assert_eq!(a, b);
        prop_assert_eq!(on_model.now, on_reference.now);
        for (m, r) in on_model.nodes.iter().zip(&on_reference.nodes) {
            prop_assert_eq!(m.worker.congestion_window(), r.worker.congestion_window());
            prop_assert_eq!(m.worker.stats(), r.worker.stats());
        }
        if marking && len > 0 {
            prop_assert!(on_model.nodes.iter().all(|n| n.worker.stats().cwnd_mark_decreases > 0));
        }
        prop_assert_eq!(&on_model.switch.counters(), on_reference.switch.counters());
    }
}
