//! The congestion window (protocol.md §6.3) on the deterministic simulator, through a
//! network that drops, duplicates and reorders, with a switch that marks every use or none:
//! every lane's window stays within `[min_window, window]` at every step, no lane stalls
//! with its window at the minimum, and every rank gets the exact sum, tensor after tensor.

use std::cell::Cell;

use proptest::prelude::*;
use proptest::test_runner::{FileFailurePersistence, TestCaseError};
use switchml_core::quant::Op;
use switchml_core::switch::DEFAULT_DEAD_AFTER;
use switchml_core::worker::{Config, CongestionControl, CongestionParams, TensorId};
use switchml_tests::harness::{self, i32_values, lossy, SimSwitch};
use switchml_tests::sim::{lane_configs, Buf, Network, Rng, Sim};

const STEPS: usize = 3_000_000;

/// `world` ranks of one lane of `window` slots, each with the controller at
/// `min_window`, on a switch that marks every use it counts if `marking`.
fn sim(
    (world, window, count): (u16, u16, u16),
    min_window: u16,
    marking: bool,
    net: Network,
    seed: u64,
) -> Sim<SimSwitch> {
    let mut switch = harness::switch_with_job(world, window, 1);
    switch.set_congested(marking);
    let template = Config {
        congestion: CongestionControl::On(CongestionParams {
            min_window,
            ..CongestionParams::DEFAULT
        }),
        ..harness::sim_config(world, window, count)
    };
    Sim::new(switch, lane_configs(template, 1), net, seed).with_dead_after(Some(DEFAULT_DEAD_AFTER))
}

/// All-reduce `inputs` (rank `r`'s on lane `r`), checking every lane's window at every
/// step; return each rank's result and the smallest window any lane had.
fn all_reduce(
    sim: &mut Sim<SimSwitch>,
    inputs: &[Vec<i32>],
    bounds: (u16, u16),
) -> Result<(Vec<Vec<i32>>, u16), TestCaseError> {
    let mut id = TensorId(0);
    for (r, x) in inputs.iter().enumerate() {
        id = sim.submit(r, Buf::I32(x.clone()), Op::Sum);
    }
    let outside = Cell::new(None);
    let smallest = Cell::new(u16::MAX);
    let steps = sim.drive(STEPS, |s| {
        for n in &s.nodes {
            let w = n.worker.congestion_window();
            smallest.set(smallest.get().min(w));
            if !(bounds.0..=bounds.1).contains(&w) {
                outside.set(Some(w));
            }
        }
        outside.get().is_some() || s.finished(id)
    });
    prop_assert_eq!(outside.get(), None, "a window outside {:?}", bounds);
    prop_assert!(steps.is_ok(), "stalled: {:?}", steps);
    let mut out = Vec::new();
    for r in 0..inputs.len() {
        let (buf, result) = sim.take_result(r, id).expect("rank finished");
        prop_assert_eq!(result, Ok(()), "rank {}", r);
        let Buf::I32(got) = buf else {
            panic!("type changed")
        };
        out.push(got);
    }
    Ok((out, smallest.get()))
}

fn exact(inputs: &[Vec<i32>]) -> Vec<i32> {
    (0..inputs[0].len())
        .map(|i| inputs.iter().map(|x| x[i]).fold(0i32, i32::wrapping_add))
        .collect()
}

fn config(cases: u32) -> ProptestConfig {
    ProptestConfig {
        cases,
        failure_persistence: Some(Box::new(FileFailurePersistence::Direct(
            "tests/proptest-regressions/sim_congestion.txt",
        ))),
        ..ProptestConfig::default()
    }
}

proptest! {
    #![proptest_config(config(120))]

    /// Any job shape, loss up to 10%, duplicates up to 5%, reordering, the switch marking
    /// or not: windows within their bounds, exact sums for two tensors in a row.
    #[test]
    fn windows_stay_in_bounds_and_sums_stay_exact(
        seed in any::<u64>(), world in 1u16..=5, window in 1u16..=8,
        min_window in 1u16..=8, count in prop::sample::select(vec![1u16, 7, 64]),
        len in 1usize..800, drop in 0.0..0.10f64, dup in 0.0..0.05f64, marking in any::<bool>(),
    ) {
        let mut rng = Rng::new(seed ^ 0xCC);
        let mut s = sim((world, window, count), min_window, marking, lossy(drop, dup), seed);
        let bounds = (min_window.min(window), window);
        for _ in 0..2 {
            let inputs: Vec<Vec<i32>> = (0..world).map(|_| i32_values(&mut rng, len, world)).collect();
            let (got, _) = all_reduce(&mut s, &inputs, bounds)?;
            let want = exact(&inputs);
            for (r, y) in got.iter().enumerate() {
                prop_assert_eq!(y, &want, "rank {}", r);
            }
        }
    }

    /// A switch that marks every use drives every window to one slot; the lanes still
    /// finish, with exact sums, under loss, duplication and reordering.
    #[test]
    fn lanes_at_a_window_of_one_slot_never_stall(
        seed in any::<u64>(), world in 2u16..=4, window in 2u16..=8,
        drop in 0.0..0.10f64, dup in 0.0..0.05f64,
    ) {
        let mut rng = Rng::new(seed ^ 0x1);
        let mut s = sim((world, window, 4), 1, true, lossy(drop, dup), seed);
        // Enough chunks for the window to halve down to one slot and stay there.
        let inputs: Vec<Vec<i32>> = (0..world).map(|_| i32_values(&mut rng, 4 * 400, world)).collect();
        let (got, smallest) = all_reduce(&mut s, &inputs, (1, window))?;
        prop_assert_eq!(smallest, 1, "the window reached its minimum");
        let want = exact(&inputs);
        for (r, y) in got.iter().enumerate() {
            prop_assert_eq!(y, &want, "rank {}", r);
        }
    }
}
