//! Property tests of the whole §5 pipeline as a job runs it: `n` workers take the block
//! exponent, the switch takes the maximum, every worker quantizes, the switch adds with
//! wrapping int32 arithmetic, every worker dequantizes.

extern crate std;

use std::vec;
use std::vec::Vec;

use half::{bf16, f16};
use proptest::prelude::*;

use super::scale::sum_bits;
use super::*;

/// Run one block through the pipeline; return `(exp_max, summed int32 payload)`.
fn aggregate(blocks: &[Vec<f32>]) -> (u8, Vec<u8>) {
    let n = blocks.len() as u16;
    let len = blocks.first().map_or(0, Vec::len);
    let exp_max = blocks
        .iter()
        .map(|b| block_exponent_f32(b))
        .max()
        .unwrap_or(NO_EXPONENT);
    let scale = Scale::new(n, exp_max);
    let mut sum = vec![0i32; len];
    let mut payload = vec![0u8; 4 * len];
    for b in blocks {
        scale.quantize_f32(b, &mut payload);
        for (s, q) in sum.iter_mut().zip(payload.chunks_exact(4)) {
            *s = s.wrapping_add(i32::from_be_bytes([q[0], q[1], q[2], q[3]]));
        }
    }
    encode_i32(&sum, &mut payload);
    (exp_max, payload)
}

/// The exact sum of element `i` over all blocks, in f64 (exact up to `n · 2⁻⁵³` relative,
/// far inside the tolerance's slack).
fn exact_sum(blocks: &[Vec<f32>], i: usize) -> f64 {
    blocks.iter().map(|b| f64::from(b[i])).sum()
}

/// One value: zeros, subnormals and normals whose exponent field lies in `lo..=hi`, some of
/// them with the largest mantissas.
fn value(lo: u32, hi: u32) -> impl Strategy<Value = f32> {
    let signed = |bits: u32, neg: bool| f32::from_bits(bits | (u32::from(neg) << 31));
    prop_oneof![
        1 => Just(0.0f32),
        1 => Just(-0.0f32),
        1 => (1u32..0x0080_0000, any::<bool>()).prop_map(move |(m, s)| signed(m, s)),
        5 => (lo..=hi, 0u32..0x0080_0000, any::<bool>())
            .prop_map(move |(e, m, s)| signed(e << 23 | m, s)),
        // Just below a power of two: where x · c comes closest to L + 1.
        1 => (lo..=hi, 0x007f_ff00u32..0x0080_0000, any::<bool>())
            .prop_map(move |(e, m, s)| signed(e << 23 | m, s)),
    ]
}

/// `n` blocks of `len` values drawn from `seed` like [`value`] draws them.
fn seeded_blocks(n: usize, len: usize, lo: u32, hi: u32, seed: u64) -> Vec<Vec<f32>> {
    let mut state = seed | 1;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state >> 32) as u32
    };
    let mut one = || {
        let sign = next() << 31;
        let field = lo + next() % (hi - lo + 1);
        let bits = match next() % 9 {
            0 => 0,
            1 => 1 + next() % 0x007f_ffff,
            2 => field << 23 | (0x007f_ff00 + next() % 0x100),
            _ => field << 23 | next() >> 9,
        };
        f32::from_bits(bits | sign)
    };
    (0..n).map(|_| (0..len).map(|_| one()).collect()).collect()
}

/// `n` blocks of `len` values each, with magnitudes within `spread` binades of a random top
/// exponent field at most `max_field`.
fn blocks(max_n: usize, max_len: usize, max_field: u32) -> impl Strategy<Value = Vec<Vec<f32>>> {
    (1..=max_n, 1..=max_len, 1..=max_field, 0u32..=40).prop_flat_map(
        move |(n, len, top, spread)| {
            let lo = top.saturating_sub(spread).max(1);
            proptest::collection::vec(proptest::collection::vec(value(lo, top), len), n)
        },
    )
}

/// Check every output of `op` against the exact result, with the bound of protocol.md §5.2:
/// within `n` quantization units (`n · 2^(e_max + p − 31)` for the sum, `/ n` for the
/// average) plus the rounding to f32 (`ρ = 2⁻²⁴` relative, `3 · 2⁻²⁴` for the average over
/// a world that is not a power of two), plus `2⁻¹⁴⁹` for a subnormal result. The slack of
/// `2⁻²⁰` relative covers the binary64 reference sum.
fn check_error_bound(blocks: &[Vec<f32>], op: Op) -> Result<(), TestCaseError> {
    let n = blocks.len();
    let (exp_max, payload) = aggregate(blocks);
    let len = payload.len() / 4;
    let mut y = vec![f32::NAN; len];
    Unscale::new(n as u16, exp_max, op).dequantize_f32(&payload, &mut y);
    let divisor = match op {
        Op::Sum => 1.0,
        Op::Average => n as f64,
    };
    let Some(e) = exponent_value(exp_max) else {
        prop_assert!(y.iter().all(|v| v.to_bits() == 0), "{:?}", y);
        return Ok(());
    };
    let (units, rho) = bound(n, e, op);
    for (i, &got) in y.iter().enumerate() {
        let exact = exact_sum(blocks, i) / divisor;
        let slack = 1.0 + 2f64.powi(-20);
        let tol = (units + rho * (exact.abs() + units)) * slack + 2f64.powi(-149);
        let err = (f64::from(got) - exact).abs();
        prop_assert!(
            err <= tol,
            "element {}: got {:e}, exact {:e}, error {:e} > {:e} (n={}, e={})",
            i,
            got,
            exact,
            err,
            tol,
            n,
            e
        );
    }
    Ok(())
}

/// The documented bound for `n` workers and exponent `e`: the quantization error in
/// absolute terms and the relative error of the rounding to f32.
fn bound(n: usize, e: i32, op: Op) -> (f64, f64) {
    let p = sum_bits(n as u16);
    let units = n as f64 * 2f64.powi(e + p - 31);
    match op {
        Op::Sum => (units, 2f64.powi(-24)),
        Op::Average if n.is_power_of_two() => (units / n as f64, 2f64.powi(-24)),
        Op::Average => (units / n as f64, 3.0 * 2f64.powi(-24)),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn sum_is_within_the_error_bound(b in blocks(64, 24, 240)) {
        check_error_bound(&b, Op::Sum)?;
    }

    #[test]
    fn average_is_within_the_error_bound(b in blocks(64, 24, 254)) {
        check_error_bound(&b, Op::Average)?;
    }

    #[test]
    fn sum_never_overflows(
        n in 1usize..=1024,
        len in 1usize..=6,
        top in 1u32..=254,
        spread in 0u32..=40,
        seed in any::<u64>(),
    ) {
        // Up to 1024 workers: drawn from a seed, as proptest value trees that size are slow.
        let b = seeded_blocks(n, len, top.saturating_sub(spread).max(1), top, seed);
        let exp_max = b.iter().map(|x| block_exponent_f32(x)).max().unwrap_or(0);
        let scale = Scale::new(n as u16, exp_max);
        let limit = if exp_max == NO_EXPONENT { 0 } else { (1i64 << (31 - sum_bits(n as u16))) - 1 };
        prop_assert_eq!(i64::from(scale.limit()), limit);
        let mut payload = vec![0u8; 4 * len];
        let mut total = vec![0i64; len];
        for block in &b {
            scale.quantize_f32(block, &mut payload);
            for (t, q) in total.iter_mut().zip(payload.chunks_exact(4)) {
                let q = i64::from(i32::from_be_bytes([q[0], q[1], q[2], q[3]]));
                prop_assert!(q.abs() <= limit, "|{}| > L = {}", q, limit);
                *t += q;
            }
        }
        for t in total {
            prop_assert!(i64::from(i32::MIN) <= t && t <= i64::from(i32::MAX));
        }
    }

    #[test]
    fn f16_goes_through_f32(b in blocks(16, 24, 142), op in op()) {
        check_half(&b, op, f16::from_f32, f16::to_f32, f16::to_bits)?;
    }

    #[test]
    fn bf16_goes_through_f32(b in blocks(16, 24, 254), op in op()) {
        check_half(&b, op, bf16::from_f32, bf16::to_f32, bf16::to_bits)?;
    }
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![Just(Op::Sum), Just(Op::Average)]
}

/// Run f16 (bf16) blocks through [`Elements`] and check every step against the f32 pipeline
/// on the same values widened to f32: the same exponent, the same payload, and the f32
/// result rounded to nearest even.
fn check_half<T: Copy + Default>(
    b: &[Vec<f32>],
    op: Op,
    narrow: fn(f32) -> T,
    widen: fn(T) -> f32,
    bits: fn(T) -> u16,
) -> Result<(), TestCaseError>
where
    [T]: Tensor,
{
    let n = b.len() as u16;
    let mut halves: Vec<Vec<T>> = b
        .iter()
        .map(|x| x.iter().map(|&v| narrow(v)).collect())
        .collect();
    let widened: Vec<Vec<f32>> = halves
        .iter()
        .map(|x| x.iter().map(|&v| widen(v)).collect())
        .collect();
    // Values beyond the type's range became ±∞; a worker rejects such a tensor.
    if widened.iter().any(|x| check_finite_f32(x).is_err()) {
        return Ok(());
    }
    let len = widened[0].len();
    let (want_exp, want_payload) = aggregate(&widened);
    let exp_max = halves
        .iter_mut()
        .map(|h| h.as_mut_slice().elements().block_exponent(0..len))
        .max()
        .unwrap_or(NO_EXPONENT);
    prop_assert_eq!(exp_max, want_exp);

    let mut sum = vec![0i32; len];
    let mut payload = vec![0u8; 4 * len];
    for h in &mut halves {
        h.as_mut_slice()
            .elements()
            .encode(0..len, n, exp_max, &mut payload);
        for (s, q) in sum.iter_mut().zip(payload.chunks_exact(4)) {
            *s = s.wrapping_add(i32::from_be_bytes([q[0], q[1], q[2], q[3]]));
        }
    }
    encode_i32(&sum, &mut payload);
    prop_assert_eq!(&payload, &want_payload);

    let mut want = vec![0.0f32; len];
    Unscale::new(n, exp_max, op).dequantize_f32(&payload, &mut want);
    let mut out = vec![T::default(); len];
    out.as_mut_slice()
        .elements()
        .decode(0..len, n, exp_max, op, &payload);
    let got: Vec<u16> = out.iter().map(|&v| bits(v)).collect();
    let rounded: Vec<u16> = want.iter().map(|&v| bits(narrow(v))).collect();
    prop_assert_eq!(got, rounded);
    Ok(())
}

#[test]
fn largest_values_fill_but_never_exceed_int32() {
    for n in [1u16, 2, 3, 7, 255, 1000, 1024, u16::MAX] {
        for top in [f32::MAX, 2.0 - f32::EPSILON, f32::from_bits(0x007f_ffff)] {
            for sign in [1.0f32, -1.0] {
                let x = sign * top;
                let scale = Scale::new(n, exponent_of(x));
                let q = i64::from(scale.quantize_value(x));
                assert!(q.abs() <= i64::from(scale.limit()));
                let total = q * i64::from(n);
                assert!(
                    total.abs() <= i64::from(i32::MAX),
                    "n={n} x={x:e} total={total}"
                );
                // The range is used: within 2^(7-p) of L, less a subnormal's last bit.
                assert!(
                    q.abs() >= i64::from(scale.limit()) - 127,
                    "n={n} x={x:e} q={q}"
                );
            }
        }
    }
}

#[test]
fn all_zero_blocks_give_positive_zeros() {
    let blocks = vec![vec![0.0f32, -0.0, 0.0], vec![-0.0; 3], vec![0.0; 3]];
    let (exp_max, payload) = aggregate(&blocks);
    assert_eq!(exp_max, NO_EXPONENT);
    assert_eq!(payload, [0u8; 12]);
    for op in [Op::Sum, Op::Average] {
        let mut y = [f32::NAN; 3];
        Unscale::new(3, exp_max, op).dequantize_f32(&payload, &mut y);
        assert!(y.iter().all(|v| v.to_bits() == 0), "{y:?}");
    }
}

#[test]
fn subnormal_only_blocks_sum_closely() {
    let tiny = |bits: u32| f32::from_bits(bits);
    let blocks = vec![
        vec![tiny(1), tiny(0x0040_0000), -tiny(0x007f_ffff), 0.0],
        vec![tiny(3), tiny(0x0040_0000), -tiny(1), -0.0],
        vec![
            tiny(0x0012_3456),
            -tiny(0x0040_0000),
            tiny(0x0000_0100),
            0.0,
        ],
    ];
    let (exp_max, payload) = aggregate(&blocks);
    assert_eq!(exp_max, 1);
    let mut y = [f32::NAN; 4];
    Unscale::new(3, exp_max, Op::Sum).dequantize_f32(&payload, &mut y);
    for (i, &got) in y.iter().enumerate() {
        let exact = exact_sum(&blocks, i);
        // Three units of 2^(-126 + 2 - 31) each are far below one subnormal step (2^-149).
        assert!(
            (f64::from(got) - exact).abs() <= 2f64.powi(-149),
            "{i}: {got:e} vs {exact:e}"
        );
    }
    assert_eq!(y[3].to_bits(), 0);
}

/// `n` blocks of `len` values where rank `big` holds values with exponent fields up to
/// `top` and every other rank only values 30 to 60 binades below: the chunk's `e_max`, and
/// so the bound of every element, comes from one rank.
fn one_rank_dominates() -> impl Strategy<Value = Vec<Vec<f32>>> {
    (2usize..=16, 1usize..=16, 61u32..=240).prop_flat_map(|(n, len, top)| {
        (0..n).prop_flat_map(move |big| {
            let rank = move |r: usize| {
                let (lo, hi) = if r == big {
                    (top - 2, top)
                } else {
                    (top - 60, top - 30)
                };
                proptest::collection::vec(value(lo, hi), len)
            };
            (0..n).map(rank).collect::<Vec<_>>()
        })
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// protocol.md §5.2, "Error bound": the absolute part of the bound is relative to
    /// `2^e_max`, the chunk's largest magnitude over every rank, not to the element nor to
    /// the rank's own block; the relative part to the result.
    #[test]
    fn the_bound_is_relative_to_the_chunk_maximum_over_every_rank(
        b in one_rank_dominates(),
        op in op(),
    ) {
        check_error_bound(&b, op)?;
    }
}

/// The bound is not relative to the element: a value far below the chunk's largest keeps
/// only the chunk's absolute precision (`n · 2^(e_max + p − 31)`), here 2 · 2⁻²⁹.
#[test]
fn a_small_value_beside_a_large_one_keeps_only_absolute_precision() {
    let blocks = vec![vec![1.0f32, 1e-9], vec![0.0, 1e-9]];
    let (exp_max, payload) = aggregate(&blocks);
    assert_eq!(exponent_value(exp_max), Some(1), "1.0 < 2^1");
    let mut y = [f32::NAN; 2];
    Unscale::new(2, exp_max, Op::Sum).dequantize_f32(&payload, &mut y);
    assert_eq!(y[0], 1.0);
    let (exact, err) = (2e-9f64, (f64::from(y[1]) - 2e-9f64).abs());
    let unit = 2f64.powi(1 + 1 - 31);
    assert!(err <= 2.0 * unit, "{err:e}");
    assert!(
        err > 2f64.powi(-24) * exact,
        "{err:e}: within f32 precision of the element itself"
    );
}
