//! Non-finite values on the deterministic simulator (protocol.md §5.4): NaN and ±∞ at
//! random positions of random ranks, through a network that drops and duplicates. Every
//! rank must get the same bits; `isfinite` must be false exactly over the chunks where some
//! rank had a NaN or ∞, each such chunk holding the value IEEE addition gives for the kinds
//! there; every other chunk must be the finite reference result, bit for bit; and the next
//! tensor must sum normally.

use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;
use switchml_core::quant::{NonFiniteKinds, Op};
use switchml_tests::harness::{self, f32_values, lossy, reference_f32, SimSwitch};
use switchml_tests::sim::{Buf, Rng, Sim};

const STEPS: usize = 2_000_000;
const SPECIALS: [f32; 3] = [f32::INFINITY, f32::NEG_INFINITY, f32::NAN];

/// Submit `inputs` (rank `r`'s on lane `r`) and return every rank's result.
fn all_reduce(sim: &mut Sim<SimSwitch>, inputs: &[Vec<f32>], op: Op) -> Vec<Vec<f32>> {
    let bufs = inputs.iter().map(|x| Buf::F32(x.clone())).collect();
    sim.all_reduce(bufs, op, STEPS)
        .into_iter()
        .map(|buf| match buf {
            Buf::F32(got) => got,
            _ => panic!("type changed"),
        })
        .collect()
}

/// What every rank must hold: per chunk of `count`, the IEEE value for the kinds any rank
/// had there, or the finite reference result.
fn expected(inputs: &[Vec<f32>], count: usize, op: Op) -> Vec<f32> {
    let clean: Vec<Vec<f32>> = inputs
        .iter()
        .map(|x| {
            x.iter()
                .map(|&v| if v.is_finite() { v } else { 0.0 })
                .collect()
        })
        .collect();
    let mut want = reference_f32(&clean, count, op);
    for (j, chunk) in want.chunks_mut(count).enumerate() {
        let range = j * count..j * count + chunk.len();
        let kinds = inputs.iter().fold(NonFiniteKinds::NONE, |k, x| {
            k.union(NonFiniteKinds::of_f32(&x[range.clone()]))
        });
        if let Some(v) = kinds.sum_f32() {
            chunk.fill(v);
        }
    }
    want
}

fn config(cases: u32) -> ProptestConfig {
    ProptestConfig {
        cases,
        failure_persistence: Some(Box::new(FileFailurePersistence::Direct(
            "tests/proptest-regressions/sim_non_finite.txt",
        ))),
        ..ProptestConfig::default()
    }
}

proptest! {
    #![proptest_config(config(300))]

    #[test]
    fn every_rank_gets_the_same_non_finite_chunks_and_the_rest_exactly(
        seed in any::<u64>(), world in 1u16..=6, window in 1u16..=8,
        count in prop::sample::select(vec![1u16, 5, 64]), len in 1usize..600,
        drop in 0.0..0.10f64, dup in 0.0..0.05f64, specials in 1usize..6, average in any::<bool>(),
    ) {
        let op = if average { Op::Average } else { Op::Sum };
        let mut rng = Rng::new(seed ^ 0x1AF);
        let mut sim = harness::sim(world, 1, window, count, lossy(drop, dup), seed);
        let mut inputs: Vec<Vec<f32>> = (0..world).map(|_| f32_values(&mut rng, len)).collect();
        for _ in 0..specials {
            let r = rng.between(0, u64::from(world) - 1) as usize;
            let i = rng.between(0, len as u64 - 1) as usize;
            inputs[r][i] = SPECIALS[rng.between(0, 2) as usize];
        }
        let want = expected(&inputs, usize::from(count), op);
        let got = all_reduce(&mut sim, &inputs, op);
        for (r, y) in got.iter().enumerate() {
            for i in 0..len {
                prop_assert_eq!(y[i].to_bits(), want[i].to_bits(), "rank {} element {}", r, i);
            }
            // isfinite is false exactly over the chunks where some rank had a NaN or ∞.
            for (j, chunk) in y.chunks(usize::from(count)).enumerate() {
                let k = usize::from(count);
                let any = inputs.iter().any(|x| x[j * k..j * k + chunk.len()].iter().any(|v| !v.is_finite()));
                prop_assert!(chunk.iter().all(|v| v.is_finite() != any), "rank {} chunk {}", r, j);
            }
        }
        // The next tensor, all finite, is the reference result again.
        let next: Vec<Vec<f32>> = (0..world).map(|_| f32_values(&mut rng, len)).collect();
        let want = reference_f32(&next, usize::from(count), op);
        for y in all_reduce(&mut sim, &next, op) {
            prop_assert_eq!(y.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
                want.iter().map(|v| v.to_bits()).collect::<Vec<_>>());
        }
    }
}
