//! The fused finiteness check and exponent scan (`finite_block_exponents_*`) against the two
//! scans it replaces, on random tensors of the three float types: random lengths (past the
//! 64-element blocks of `check_finite_*`) and chunk sizes, with NaN and ±∞ injected at
//! random places or not at all.

use proptest::prelude::*;
use switchml_tests::checks::quant::{check_fused_scan, Kind};

/// Finite values of every magnitude: zeros, subnormals, up to `f32::MAX`, either sign.
fn finite() -> impl Strategy<Value = f32> {
    prop_oneof![
        Just(0.0f32),
        Just(-0.0f32),
        (0u32..0x0080_0000, any::<bool>()).prop_map(|(m, s)| signed(f32::from_bits(m), s)),
        (0u32..0x7f80_0000, any::<bool>()).prop_map(|(b, s)| signed(f32::from_bits(b), s)),
        -70_000.0f32..70_000.0,
    ]
}

fn signed(x: f32, negative: bool) -> f32 {
    if negative {
        -x
    } else {
        x
    }
}

fn non_finite() -> impl Strategy<Value = f32> {
    prop_oneof![
        Just(f32::NAN),
        Just(-f32::NAN),
        Just(f32::INFINITY),
        Just(f32::NEG_INFINITY),
        (0x7f80_0001u32..=0x7fff_ffff).prop_map(f32::from_bits),
    ]
}

fn kind() -> impl Strategy<Value = Kind> {
    prop_oneof![Just(Kind::F32), Just(Kind::F16), Just(Kind::Bf16)]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn the_fused_scan_is_the_check_and_the_block_exponents(
        kind in kind(),
        tensor in proptest::collection::vec(finite(), 0..1_500),
        count in prop_oneof![0usize..=9, 10usize..=300, Just(256), Just(1024)],
        spoil in proptest::collection::vec((any::<prop::sample::Index>(), non_finite()), 0..3),
    ) {
        let mut tensor = tensor;
        if kind == Kind::F16 {
            // Keep most values finite in f16 (|x| ≤ 65504), mantissas as they are.
            for x in tensor.iter_mut().filter(|x| x.abs() > 65_504.0) {
                *x *= 2f32.powi(-113);
            }
        }
        for (at, bad) in spoil {
            if !tensor.is_empty() {
                let i = at.index(tensor.len());
                tensor[i] = bad;
            }
        }
        check_fused_scan(&tensor, kind, count);
    }
}
