//! Property tests on the deterministic simulator: N workers, the reference switch and a
//! seeded network with loss up to 10%, duplication and reordering. Together these run well
//! over 1,000 seeded cases in the normal test run.

use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;
use switchml_core::quant::Op;
use switchml_core::worker::TensorId;
use switchml_tests::harness::{self, f32_values, i32_values, lossy, reference_f32};
use switchml_tests::sim::{Buf, Rng};

const STEPS: usize = 2_000_000;

fn counts() -> impl Strategy<Value = u16> {
    prop::sample::select(vec![1u16, 5, 64, 256])
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 350,
        failure_persistence: Some(Box::new(FileFailurePersistence::Direct(
            "tests/proptest-regressions/sim_props.txt",
        ))),
        ..ProptestConfig::default()
    })]

    /// int32 results are the exact sum at every rank, for consecutive tensors.
    #[test]
    fn int32_results_are_exact_sums(
        seed in any::<u64>(), world in 1u16..=6, window in 1u16..=12, count in counts(),
        len in 0usize..1200, drop in 0.0..0.10f64, dup in 0.0..0.05f64, tensors in 1usize..=3,
    ) {
        let mut rng = Rng::new(seed);
        let mut sim = harness::sim(world, 1, window, count, lossy(drop, dup), seed);
        for _ in 0..tensors {
            let inputs: Vec<Vec<i32>> = (0..world).map(|_| i32_values(&mut rng, len, world)).collect();
            let expect: Vec<i32> = (0..len)
                .map(|i| inputs.iter().map(|x| i64::from(x[i])).sum::<i64>() as i32)
                .collect();
            let mut id = TensorId(0);
            for (r, x) in inputs.iter().enumerate() {
                id = sim.submit(r, Buf::I32(x.clone()), Op::Sum);
            }
            sim.drive(STEPS, |s| s.finished(id)).unwrap();
            for r in 0..usize::from(world) {
                let (buf, result) = sim.take_result(r, id).expect("rank finished");
                prop_assert_eq!(result, Ok(()));
                prop_assert_eq!(&buf, &Buf::I32(expect.clone()), "rank {}", r);
            }
        }
        prop_assert_eq!(sim.switch.counters().drops(switchml_core::switch::DropReason::Malformed), 0);
    }

    /// f32 results equal the host-side quantized reference bit for bit, and are within the
    /// documented bound of the f64 sum.
    #[test]
    fn f32_results_match_the_reference_bit_for_bit(
        seed in any::<u64>(), world in 1u16..=8, window in 1u16..=12, count in counts(),
        len in 0usize..1200, drop in 0.0..0.10f64, dup in 0.0..0.05f64, average in any::<bool>(),
    ) {
        let op = if average { Op::Average } else { Op::Sum };
        let mut rng = Rng::new(seed ^ 0xF32);
        let mut sim = harness::sim(world, 1, window, count, lossy(drop, dup), seed);
        let inputs: Vec<Vec<f32>> = (0..world).map(|_| f32_values(&mut rng, len)).collect();
        let expect = reference_f32(&inputs, usize::from(count), op);
        let mut id = TensorId(0);
        for (r, x) in inputs.iter().enumerate() {
            id = sim.submit(r, Buf::F32(x.clone()), op);
        }
        sim.drive(STEPS, |s| s.finished(id)).unwrap();
        for r in 0..usize::from(world) {
            let (buf, result) = sim.take_result(r, id).expect("rank finished");
            prop_assert_eq!(result, Ok(()));
            let Buf::F32(got) = buf else { panic!("type changed") };
            for i in 0..len {
                prop_assert_eq!(got[i].to_bits(), expect[i].to_bits(), "rank {} element {}", r, i);
                let exact: f64 = inputs.iter().map(|x| f64::from(x[i])).sum::<f64>()
                    / if average { f64::from(world) } else { 1.0 };
                let bound = harness::error_bound(&inputs, usize::from(count), i, exact, op);
                prop_assert!((f64::from(got[i]) - exact).abs() <= bound,
                    "element {}: got {} exact {} bound {}", i, got[i], exact, bound);
            }
        }
    }

    /// Several tensors queued at once, of different types and sizes, each come back right:
    /// the slot/version sequence continues across tensors and no result is mistaken for
    /// another tensor's.
    #[test]
    fn queued_tensors_of_mixed_types_keep_their_identity(
        seed in any::<u64>(), world in 2u16..=5, window in 1u16..=8, count in counts(),
        lens in prop::collection::vec(0usize..700, 2..=5), drop in 0.0..0.10f64, dup in 0.0..0.05f64,
    ) {
        let mut rng = Rng::new(seed.rotate_left(7));
        let mut sim = harness::sim(world, 1, window, count, lossy(drop, dup), seed);
        let mut expected = Vec::new();
        for (t, &len) in lens.iter().enumerate() {
            let mut id = TensorId(0);
            if t % 2 == 0 {
                let inputs: Vec<Vec<f32>> = (0..world).map(|_| f32_values(&mut rng, len)).collect();
                let expect = Buf::F32(reference_f32(&inputs, usize::from(count), Op::Sum));
                for (r, x) in inputs.into_iter().enumerate() {
                    id = sim.submit(r, Buf::F32(x), Op::Sum);
                }
                expected.push((id, expect));
            } else {
                let inputs: Vec<Vec<i32>> = (0..world).map(|_| i32_values(&mut rng, len, world)).collect();
                let expect = Buf::I32((0..len).map(|i| inputs.iter().map(|x| x[i]).sum()).collect());
                for (r, x) in inputs.into_iter().enumerate() {
                    id = sim.submit(r, Buf::I32(x), Op::Sum);
                }
                expected.push((id, expect));
            }
        }
        let last = expected.last().map(|e| e.0).unwrap();
        sim.drive(STEPS, |s| expected.iter().all(|(id, _)| s.finished(*id)) && s.finished(last)).unwrap();
        for r in 0..usize::from(world) {
            for (id, expect) in &expected {
                let (buf, result) = sim.take_result(r, *id).expect("rank finished");
                prop_assert_eq!(result, Ok(()));
                prop_assert_eq!(&buf, expect, "rank {} tensor {:?}", r, id);
            }
        }
    }

    /// Two lanes per rank, each driving its own slot range and its half of the tensor.
    #[test]
    fn lanes_split_slots_and_tensors(
        seed in any::<u64>(), world in 2u16..=4, window in 1u16..=6, count in counts(),
        len in 0usize..900, drop in 0.0..0.08f64,
    ) {
        let lanes = 2u16;
        let mut rng = Rng::new(seed ^ 0x1a4e);
        let mut sim = harness::sim(world, lanes, window, count, lossy(drop, 0.01), seed);
        let half = len / 2;
        let inputs: Vec<Vec<f32>> = (0..world).map(|_| f32_values(&mut rng, len)).collect();
        let mut id = TensorId(0);
        let mut expect = Vec::new();
        for lane in 0..usize::from(lanes) {
            let (lo, hi) = if lane == 0 { (0, half) } else { (half, len) };
            let parts: Vec<Vec<f32>> = inputs.iter().map(|x| x[lo..hi].to_vec()).collect();
            expect.push(reference_f32(&parts, usize::from(count), Op::Sum));
            for (r, part) in parts.iter().enumerate() {
                id = sim.submit(r * usize::from(lanes) + lane, Buf::F32(part.clone()), Op::Sum);
            }
        }
        sim.drive(STEPS, |s| s.finished(id)).unwrap();
        for node in 0..sim.nodes.len() {
            let lane = node % usize::from(lanes);
            let (buf, result) = sim.take_result(node, id).expect("lane finished");
            prop_assert_eq!(result, Ok(()));
            prop_assert_eq!(buf, Buf::F32(expect[lane].clone()));
        }
    }
}
