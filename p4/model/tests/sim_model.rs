//! The deterministic simulator with the model as its switch: the properties of
//! `tests/tests/sim_props.rs` hold, and — stronger — a seeded run on the model is the very
//! same run as on the reference switch: same switch counters, same results at every rank.

use proptest::prelude::*;
use switchml_core::quant::Op;
use switchml_core::switch::{Aggregator, JobConfig};
use switchml_core::worker::TensorId;
use switchml_p4model::Pipeline;
use switchml_tests::harness::{
    self, f32_values, i32_values, lossy, reference_f32, sim_config, JOB, KEY,
};
use switchml_tests::sim::{lane_configs, Buf, Network, Rng, Sim};

const STEPS: usize = 2_000_000;

/// A simulation of `world` ranks × `lanes` lanes with the model as the switch.
fn model_sim(
    world: u16,
    lanes: u16,
    window: u16,
    count: u16,
    net: Network,
    seed: u64,
) -> Sim<Pipeline> {
    let job = JobConfig {
        id: JOB,
        world,
        slot_lo: 0,
        slot_count: window * lanes,
        key: KEY,
    };
    let model =
        Pipeline::with_rank_ports(usize::from(window * lanes), &[job], 1).expect("job fits");
    Sim::new(
        model,
        lane_configs(sim_config(world, window, count), lanes),
        net,
        seed,
    )
}

fn counts() -> impl Strategy<Value = u16> {
    prop::sample::select(vec![1u16, 5, 64, 200, 256])
}

/// Submit one f32 tensor per rank, drive to the end, return every rank's result.
fn run_f32<S: Aggregator>(sim: &mut Sim<S>, inputs: &[Vec<f32>]) -> Vec<Buf> {
    run(sim, inputs.iter().map(|x| Buf::F32(x.clone())).collect())
}

/// Every rank's result of one tensor per rank.
fn run<S: Aggregator>(sim: &mut Sim<S>, inputs: Vec<Buf>) -> Vec<Buf> {
    sim.all_reduce(inputs, Op::Sum, STEPS)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// int32 results are the exact sum at every rank.
    #[test]
    fn int32_results_are_exact_sums(
        seed in any::<u64>(), world in 1u16..=5, window in 1u16..=8, count in counts(),
        len in 0usize..900, drop in 0.0..0.10f64, dup in 0.0..0.05f64,
    ) {
        let mut rng = Rng::new(seed);
        let mut sim = model_sim(world, 1, window, count, lossy(drop, dup), seed);
        let inputs: Vec<Vec<i32>> = (0..world).map(|_| i32_values(&mut rng, len, world)).collect();
        let expect = Buf::I32((0..len).map(|i| inputs.iter().map(|x| x[i]).sum()).collect());
        let got = run(&mut sim, inputs.into_iter().map(Buf::I32).collect());
        for (r, buf) in got.iter().enumerate() {
            prop_assert_eq!(buf, &expect, "rank {}", r);
        }
        prop_assert_eq!(sim.switch.faults(), 0);
    }

    /// f32 results equal the host-side quantized reference bit for bit.
    #[test]
    fn f32_results_match_the_reference_bit_for_bit(
        seed in any::<u64>(), world in 1u16..=6, window in 1u16..=8, count in counts(),
        len in 0usize..900, drop in 0.0..0.10f64, dup in 0.0..0.05f64,
    ) {
        let mut rng = Rng::new(seed ^ 0xF32);
        let mut sim = model_sim(world, 1, window, count, lossy(drop, dup), seed);
        let inputs: Vec<Vec<f32>> = (0..world).map(|_| f32_values(&mut rng, len)).collect();
        let expect = Buf::F32(reference_f32(&inputs, usize::from(count), Op::Sum));
        for (r, got) in run_f32(&mut sim, &inputs).into_iter().enumerate() {
            prop_assert_eq!(&got, &expect, "rank {}", r);
        }
    }

    /// Two lanes per rank, each on its own slot range and half of the tensor.
    #[test]
    fn lanes_split_slots_and_tensors(
        seed in any::<u64>(), world in 2u16..=4, window in 1u16..=4, count in counts(),
        len in 0usize..600, drop in 0.0..0.08f64,
    ) {
        let lanes = 2u16;
        let mut rng = Rng::new(seed ^ 0x1a4e);
        let mut sim = model_sim(world, lanes, window, count, lossy(drop, 0.01), seed);
        let half = len / 2;
        let inputs: Vec<Vec<f32>> = (0..world).map(|_| f32_values(&mut rng, len)).collect();
        let mut id = TensorId(0);
        let mut expect = Vec::new();
        for lane in 0..usize::from(lanes) {
            let (lo, hi) = if lane == 0 { (0, half) } else { (half, len) };
            let parts: Vec<Vec<f32>> = inputs.iter().map(|x| x[lo..hi].to_vec()).collect();
            expect.push(reference_f32(&parts, usize::from(count), Op::Sum));
            for (r, part) in parts.into_iter().enumerate() {
                id = sim.submit(r * usize::from(lanes) + lane, Buf::F32(part), Op::Sum);
            }
        }
        sim.drive(STEPS, |s| s.finished(id)).unwrap();
        for node in 0..sim.nodes.len() {
            let (buf, result) = sim.take_result(node, id).expect("lane finished");
            prop_assert_eq!(result, Ok(()));
            prop_assert_eq!(buf, Buf::F32(expect[node % usize::from(lanes)].clone()));
        }
    }

    /// The same seed gives the same run on the model as on the reference switch: the
    /// network draws the same numbers only if every switch answer was the same.
    #[test]
    fn a_seeded_run_on_the_model_is_the_run_on_the_reference(
        seed in any::<u64>(), world in 1u16..=5, window in 1u16..=6, count in counts(),
        len in 0usize..700, drop in 0.0..0.10f64, dup in 0.0..0.08f64,
    ) {
        let mut rng = Rng::new(seed);
        let inputs: Vec<Vec<f32>> = (0..world).map(|_| f32_values(&mut rng, len)).collect();
        let mut on_model = model_sim(world, 1, window, count, lossy(drop, dup), seed);
        let mut on_reference = harness::sim(world, 1, window, count, lossy(drop, dup), seed);
        let a = run_f32(&mut on_model, &inputs);
        let b = run_f32(&mut on_reference, &inputs);
        prop_assert_eq!(a, b);
        prop_assert_eq!(on_model.now, on_reference.now);
        prop_assert_eq!(on_model.stats.sent, on_reference.stats.sent);
        prop_assert_eq!(&on_model.switch.counters(), on_reference.switch.counters());
        let (m, r) = (on_model.switch.job(JOB).unwrap(), on_reference.switch.job(JOB).unwrap());
        prop_assert_eq!(&m.counters, r.counters());
    }
}
