//! Floats to int32: the worker's side of protocol.md §5.2.
//!
//! With `p = max(1, ⌈log₂ n⌉)` and `k = 31 − p − e_max`,
//! `q = clamp(roundTiesEven(x · 2^k), −L, L)`, `L = 2^(31−p) − 1`. Scaling by a power of two
//! is exact, so every implementation gets the same `q` from any arithmetic that rounds
//! `x · 2^k` once, to an integer. [`Scale::quantize_value`] spells this out in binary64,
//! where every step is exact, and is the reference; the slice paths compute the same bits
//! in f32 with multiplications, additions, selects and integer operations only, so that
//! they vectorize at the baseline of every target (SSE2, NEON) and, through
//! `switchml_dispatch`, eight lanes wide with AVX2.

use half::{bf16, f16};
use switchml_dispatch::dispatch;

use super::exponent::{exponent_value, F32_ABS, F32_INF};

/// `1.5 · 2³¹`: for `|v| < 2³⁰`, `v + ROUND_HIGH` lies in `[2³¹, 2³²)`, whose spacing is
/// 2⁸, so the sum rounds `v` to a multiple of 256 (ties to even) and its bit pattern minus
/// that of `ROUND_HIGH` is `v / 256` so rounded.
const ROUND_HIGH: f32 = 3_221_225_472.0;

/// `1.5 · 2²³`: the same for `|d| < 2²²` and a spacing of 1.
const ROUND_LOW: f32 = 12_582_912.0;

/// What the two magic additions leave in the bit patterns besides `q`.
const ROUND_BITS: u32 = (ROUND_HIGH.to_bits() << 8).wrapping_add(ROUND_LOW.to_bits());

/// Return `p = max(1, ⌈log₂ n⌉)` for `n ≥ 1`: the bits the `n`-way sum needs above one
/// worker's values.
pub(crate) fn sum_bits(n: u16) -> i32 {
    let p = u16::BITS - n.saturating_sub(1).leading_zeros();
    p.max(1) as i32
}

/// Return `2^k` as an f32, for `k` in the normal range `−126..=127` (clamped to it).
pub(crate) fn pow2(k: i32) -> f32 {
    let biased = k.clamp(-126, 127) + 127;
    f32::from_bits(biased.unsigned_abs() << 23)
}

/// Return `2^k` exactly as an f64 (`k` in `−1022..=1023`, clamped to it).
pub(crate) fn pow2_f64(k: i32) -> f64 {
    let biased = k.clamp(-1022, 1023) + 1023;
    f64::from_bits(u64::from(biased.unsigned_abs()) << 52)
}

/// `2⁵²`: adding and subtracting it rounds an f64 below it in magnitude to an integer.
const TWO_52: f64 = 4_503_599_627_370_496.0;

/// `roundTiesEven` for f64 without libm: exact under the default rounding mode.
fn round_ties_even(y: f64) -> f64 {
    const SIGN: u64 = 1 << 63;
    let a = f64::from_bits(y.to_bits() & !SIGN);
    // At or above 2^52 (and for NaN and ∞) y is already integral.
    let r = if a < TWO_52 { (a + TWO_52) - TWO_52 } else { a };
    f64::from_bits(r.to_bits() | (y.to_bits() & SIGN))
}

/// Quantization for one block: built from the world size `n` and the switch's max exponent.
#[derive(Debug, Clone, Copy)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Scale {
    /// `k`, the power of two applied (meaningless when `hi` is 0).
    k: i32,
    /// `2^min(k, 127)`: `2^k` as two f32 factors, both exact (`k` reaches 156).
    a: f32,
    /// `2^(k − min(k, 127))`, 1 unless the block is tiny.
    b: f32,
    /// The clamp, `L` rounded down to an f32; 0 when there is no exponent.
    hi: f32,
    /// `L`, or 0 when there is no exponent.
    limit: i32,
}

impl Scale {
    /// Make the scale for `world` workers (0 is treated as 1) and the max exponent byte
    /// `exp_max` (`0`: every value quantizes to 0).
    pub fn new(world: u16, exp_max: u8) -> Scale {
        let p = sum_bits(world.max(1));
        match exponent_value(exp_max) {
            Some(e) => {
                let k = 31 - p - e;
                let limit = (1i32 << (31 - p)) - 1;
                Scale {
                    k,
                    a: pow2(k.min(127)),
                    b: pow2(k - k.min(127)),
                    // For p < 7 L has more than 24 bits; the largest f32 below it is
                    // 2^(31−p) − 2^(7−p), and no in-range x · 2^k exceeds that.
                    hi: limit as f32 - if p < 7 { (1 << (7 - p)) as f32 } else { 0.0 },
                    limit,
                }
            }
            None => Scale {
                k: 0,
                a: 0.0,
                b: 0.0,
                hi: 0.0,
                limit: 0,
            },
        }
    }

    /// Return `L = 2^(31−p) − 1`, a bound on `|q|` (0 when there is no exponent).
    pub fn limit(&self) -> i32 {
        self.limit
    }

    /// Return q for one value (the scalar reference every vector path matches bit for bit).
    ///
    /// Computed in binary64, where `x · 2^k` is exact. A NaN or ±∞ gives 0: it travels as
    /// a flag, not a value (protocol.md §5.4). Callers pass `|x| < 2^e_max`; for the record,
    /// larger finite values give ±`L` rounded down to an f32 (`L` itself for `p ≥ 7`).
    pub fn quantize_value(&self, x: f32) -> i32 {
        if self.limit == 0 || x.to_bits() & F32_ABS >= F32_INF {
            return 0;
        }
        let hi = f64::from(self.hi);
        let r = round_ties_even(f64::from(x) * pow2_f64(self.k));
        // Written so that NaN takes the lower bound, as the vector path does.
        let r = if r > -hi { r } else { -hi };
        let r = if r < hi { r } else { hi };
        r as i32
    }

    /// Quantize one value to payload bytes: scale (exactly), clamp (rounding commutes
    /// with a clamp to integers), then round and convert with two magic additions, the
    /// first to a multiple of 256 and the second for the rest (`|v| ≤ L < 2³⁰`).
    #[inline(always)]
    fn quantize_lane<const TINY: bool, const MASK: bool>(&self, x: f32) -> [u8; 4] {
        let v = if !MASK || x.to_bits() & F32_ABS < F32_INF {
            x * self.a
        } else {
            0.0
        };
        let v = if TINY { v * self.b } else { v };
        let v = if v > -self.hi { v } else { -self.hi };
        let v = if v < self.hi { v } else { self.hi };
        let high = v + ROUND_HIGH;
        let low = (v - (high - ROUND_HIGH)) + ROUND_LOW;
        let q = (high.to_bits() << 8)
            .wrapping_add(low.to_bits())
            .wrapping_sub(ROUND_BITS);
        q.to_be_bytes()
    }

    /// Quantize `src` into `dst` as big-endian i32 (the packet payload: 4 bytes per value),
    /// a NaN or ±∞ as 0; return whether `src` held one (the caller flags the chunk,
    /// protocol.md §5.4).
    ///
    /// Processes `min(src.len(), dst.len() / 4)` values; the rest of `dst` is left as it is.
    pub fn quantize_f32(&self, src: &[f32], dst: &mut [u8]) -> bool {
        self.quantize_with::<_, true>(src, dst, |x| x)
    }

    /// Quantize `src`, known finite, into `dst` as [`quantize_f32`](Self::quantize_f32)
    /// does, without looking for a NaN or ±∞ (one select and one OR a value fewer, the
    /// fast path of every chunk a finite-checked tensor sends; a NaN or ±∞ given anyway
    /// quantizes to a clamped, meaningless value).
    pub fn quantize_finite_f32(&self, src: &[f32], dst: &mut [u8]) {
        self.quantize_with::<_, false>(src, dst, |x| x);
    }

    /// [`quantize_finite_f32`](Self::quantize_finite_f32) for f16 values.
    pub fn quantize_finite_f16(&self, src: &[f16], dst: &mut [u8]) {
        self.quantize_with::<_, false>(src, dst, f16::to_f32);
    }

    /// [`quantize_finite_f32`](Self::quantize_finite_f32) for bf16 values.
    pub fn quantize_finite_bf16(&self, src: &[bf16], dst: &mut [u8]) {
        self.quantize_with::<_, false>(src, dst, bf16::to_f32);
    }

    /// Quantize f16 values (converted to f32 exactly first); lengths and result as for
    /// [`quantize_f32`](Self::quantize_f32).
    pub fn quantize_f16(&self, src: &[f16], dst: &mut [u8]) -> bool {
        self.quantize_with::<_, true>(src, dst, f16::to_f32)
    }

    /// Quantize bf16 values (converted to f32 exactly first); lengths and result as for
    /// [`quantize_f32`](Self::quantize_f32).
    pub fn quantize_bf16(&self, src: &[bf16], dst: &mut [u8]) -> bool {
        self.quantize_with::<_, true>(src, dst, bf16::to_f32)
    }

    /// One flat loop per case, which LLVM vectorizes cleanly; blocks below `2⁻⁹⁷` (`k >
    /// 127`) take a second multiplication. Whether a value was non-finite is ORed along
    /// without a branch.
    #[inline(always)]
    fn quantize_with<T: Copy, const MASK: bool>(
        &self,
        src: &[T],
        dst: &mut [u8],
        to_f32: impl Fn(T) -> f32,
    ) -> bool {
        let values = src.iter().zip(dst.chunks_exact_mut(4));
        let non_finite = |x: f32| MASK && x.to_bits() & F32_ABS >= F32_INF;
        dispatch(
            #[inline(always)]
            || {
                let mut any = false;
                if self.k > 127 {
                    for (&x, out) in values {
                        let x = to_f32(x);
                        any |= non_finite(x);
                        out.copy_from_slice(&self.quantize_lane::<true, MASK>(x));
                    }
                } else {
                    for (&x, out) in values {
                        let x = to_f32(x);
                        any |= non_finite(x);
                        out.copy_from_slice(&self.quantize_lane::<false, MASK>(x));
                    }
                }
                any
            },
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::quant::exponent::exponent_of;
    use proptest::prelude::*;

    extern crate std;
    use std::vec;
    use std::vec::Vec;

    fn payload(bytes: &[u8]) -> Vec<i32> {
        bytes
            .chunks_exact(4)
            .map(|b| i32::from_be_bytes([b[0], b[1], b[2], b[3]]))
            .collect()
    }

    #[test]
    fn powers_of_two_are_exact() {
        assert_eq!(pow2(0), 1.0);
        assert_eq!(pow2(-1), 0.5);
        assert_eq!(pow2(127), 2f32.powi(127));
        assert_eq!(pow2(-126), f32::MIN_POSITIVE);
        assert_eq!(pow2_f64(-156), 2f64.powi(-156));
        assert_eq!(pow2_f64(156), 2f64.powi(156));
    }

    #[test]
    fn sum_bits_is_the_ceiling_of_log2() {
        for (n, p) in [
            (1, 1),
            (2, 1),
            (3, 2),
            (4, 2),
            (5, 3),
            (256, 8),
            (257, 9),
            (65535, 16),
        ] {
            assert_eq!(sum_bits(n), p, "n = {n}");
        }
    }

    #[test]
    fn round_ties_even_matches_std() {
        for y in [
            0.5,
            1.5,
            2.5,
            -0.5,
            -1.5,
            -2.5,
            0.49999999999999994,
            3.7,
            -3.2,
            1e20,
            -1e300,
            4503599627370495.5,
            -4503599627370495.5,
            0.0,
            -0.0,
        ] {
            assert_eq!(
                round_ties_even(y).to_bits(),
                y.round_ties_even().to_bits(),
                "{y}"
            );
        }
    }

    #[test]
    fn known_quantized_values() {
        // n = 1 (p = 1), e_max = 1 (byte 128): k = 29, L = 2^30 - 1.
        let s = Scale::new(1, 128);
        assert_eq!(s.limit(), (1 << 30) - 1);
        assert_eq!(s.quantize_value(1.0), 1 << 29);
        assert_eq!(s.quantize_value(-1.0), -(1 << 29));
        assert_eq!(s.quantize_value(0.5), 1 << 28);
        assert_eq!(s.quantize_value(-0.0), 0);
        // n = 2 has the same p; the largest f32 below 2 maps to 2^30 - 64, exactly.
        let s = Scale::new(2, 128);
        assert_eq!(s.limit(), (1 << 30) - 1);
        assert_eq!(s.quantize_value(2.0 - f32::EPSILON), 1_073_741_760);
        // Values above 2^e_max (a caller's mistake) clamp to L rounded down to an f32.
        assert_eq!(s.quantize_value(3.0), 1_073_741_760);
        assert_eq!(s.quantize_value(-3.0e30), -1_073_741_760);
        // World 0 is world 1.
        assert_eq!(Scale::new(0, 128).quantize_value(1.0), 1 << 29);
        // n = 300 (p = 9), e_max = 0: k = 22, L = 2^22 - 1; rounding, ties to even, and
        // the clamp where the largest values would round up to 2^22.
        let s = Scale::new(300, 127);
        assert_eq!(s.limit(), (1 << 22) - 1);
        assert_eq!(s.quantize_value(2f32.powi(-23)), 0); // 0.5
        assert_eq!(s.quantize_value(3.0 * 2f32.powi(-23)), 2); // 1.5
        assert_eq!(s.quantize_value(-5.0 * 2f32.powi(-23)), -2); // -2.5
        assert_eq!(s.quantize_value(1.0 - 2f32.powi(-24)), (1 << 22) - 1); // 2^22 - 0.25
    }

    #[test]
    fn known_payload_bytes() {
        let mut dst = [0u8; 12];
        Scale::new(1, 128).quantize_f32(&[1.0, -1.0, 0.75], &mut dst);
        assert_eq!(dst, [0x20, 0, 0, 0, 0xe0, 0, 0, 0, 0x18, 0, 0, 0]);
    }

    #[test]
    fn no_exponent_quantizes_to_zero() {
        let s = Scale::new(4, 0);
        let src = [
            0.0,
            -0.0,
            1.0,
            f32::MAX,
            -f32::MAX,
            f32::from_bits(1),
            f32::NAN,
        ];
        let mut dst = [0xaau8; 28];
        s.quantize_f32(&src, &mut dst);
        assert_eq!(dst, [0u8; 28]);
        assert_eq!(s.limit(), 0);
        assert!(src.iter().all(|&x| s.quantize_value(x) == 0));
    }

    #[test]
    fn subnormal_only_block() {
        let src = [
            f32::from_bits(1),
            -f32::from_bits(0x007f_ffff),
            f32::from_bits(0x0040_0000),
        ];
        let s = Scale::new(1, exponent_of(f32::from_bits(0x007f_ffff)));
        let q: Vec<i32> = src.iter().map(|&x| s.quantize_value(x)).collect();
        // k = 156: 2^-149 maps to 2^7, 2^-127 to 2^29.
        assert_eq!(q, [128, -(1 << 30) + 128, 1 << 29]);
        let mut dst = [0u8; 12];
        s.quantize_f32(&src, &mut dst);
        assert_eq!(payload(&dst), q);
    }

    #[test]
    fn non_finite_values_quantize_to_zero_and_are_reported() {
        // They travel as flags (protocol.md §5.4); their value must not spoil the sum.
        for s in [Scale::new(3, 130), Scale::new(3, 1), Scale::new(3, 0)] {
            assert_eq!(s.quantize_value(f32::INFINITY), 0);
            assert_eq!(s.quantize_value(f32::NEG_INFINITY), 0);
            assert_eq!(s.quantize_value(f32::NAN), 0);
            let mut dst = [0u8; 12];
            let any = s.quantize_f32(&[f32::INFINITY, f32::NEG_INFINITY, f32::NAN], &mut dst);
            assert!(any);
            assert_eq!(payload(&dst), [0, 0, 0]);
        }
        let s = Scale::new(3, 130);
        let mut dst = [0u8; 8];
        assert!(!s.quantize_f32(&[1.0, -2.0], &mut dst));
        assert!(s.quantize_f16(&[f16::ONE, f16::NEG_INFINITY], &mut dst));
        assert_eq!(payload(&dst)[1], 0);
        assert!(s.quantize_bf16(&[bf16::NAN, bf16::ONE], &mut dst));
        assert_eq!(payload(&dst)[0], 0);
        assert!(!s.quantize_bf16(&[bf16::MAX, bf16::ONE], &mut dst));
    }

    #[test]
    fn mismatched_lengths_process_the_shorter() {
        let s = Scale::new(1, 128);
        let src = [0.5f32; 19];
        let mut dst = vec![0x55u8; 4 * 11 + 3];
        s.quantize_f32(&src, &mut dst);
        assert!(payload(&dst[..44]).iter().all(|&q| q == 1 << 28));
        assert_eq!(&dst[44..], &[0x55; 3]);
        let mut dst = vec![0x55u8; 4 * 30];
        s.quantize_f32(&src, &mut dst);
        assert_eq!(&dst[76..], &[0x55; 44][..]);
        s.quantize_f32(&src, &mut []);
        s.quantize_f32(&[], &mut dst);
    }

    /// Any f32 bit pattern that is finite, weighted towards zeros, subnormals and extremes.
    pub(crate) fn finite_f32() -> impl Strategy<Value = f32> {
        prop_oneof![
            1 => Just(0.0f32),
            1 => Just(-0.0f32),
            2 => (1u32..0x0080_0000, any::<bool>()).prop_map(|(m, s)| signed(m, s)),
            1 => (0x7f00_0000u32..0x7f80_0000, any::<bool>()).prop_map(|(m, s)| signed(m, s)),
            6 => (0u32..0x7f80_0000, any::<bool>()).prop_map(|(m, s)| signed(m, s)),
        ]
    }

    fn signed(bits: u32, negative: bool) -> f32 {
        f32::from_bits(bits | if negative { 1 << 31 } else { 0 })
    }

    proptest! {
        #[test]
        fn vector_path_matches_scalar(
            src in proptest::collection::vec(finite_f32(), 0..70),
            world in 0u16..=1024,
            exp_max in any::<u8>(),
        ) {
            let s = Scale::new(world, exp_max);
            let mut dst = vec![0u8; 4 * src.len()];
            s.quantize_f32(&src, &mut dst);
            let want: Vec<i32> = src.iter().map(|&x| s.quantize_value(x)).collect();
            prop_assert_eq!(payload(&dst), want);
        }

        #[test]
        fn half_paths_match_f32(
            src in proptest::collection::vec(finite_f32(), 0..70),
            world in 1u16..=64,
            exp_max in any::<u8>(),
        ) {
            let s = Scale::new(world, exp_max);
            let h: Vec<f16> = src.iter().map(|&x| f16::from_f32(x)).collect();
            let hf: Vec<f32> = h.iter().map(|x| x.to_f32()).collect();
            let mut got = vec![0u8; 4 * src.len()];
            let mut want = vec![0u8; 4 * src.len()];
            s.quantize_f16(&h, &mut got);
            s.quantize_f32(&hf, &mut want);
            prop_assert_eq!(&got, &want);
            let b: Vec<bf16> = src.iter().map(|&x| bf16::from_f32(x)).collect();
            let bf: Vec<f32> = b.iter().map(|x| x.to_f32()).collect();
            s.quantize_bf16(&b, &mut got);
            s.quantize_f32(&bf, &mut want);
            prop_assert_eq!(&got, &want);
        }

        #[test]
        fn scalar_matches_the_spec_formula(x in finite_f32(), world in 1u16..=1024, exp_max in 1u8..=255) {
            // The spec's formula for |x| < 2^e_max, with std's rounding.
            let exp_max = exp_max.max(exponent_of(x));
            let p = f64::from(world).log2().ceil().max(1.0) as i32;
            let k = 31 - p - (i32::from(exp_max) - 127);
            let l = f64::from((1 << (31 - p)) - 1);
            let want = (f64::from(x) * 2f64.powi(k)).round_ties_even().clamp(-l, l) as i32;
            prop_assert_eq!(Scale::new(world, exp_max).quantize_value(x), want);
        }
    }
}
