//! Floats to int32: the worker's side of protocol.md §5.2.
//!
//! `q = clamp(roundTiesEven(fl64(x · c)), −L, L)` with `c = fl64(M / n) · 2^(−e_max)` and
//! `L = floor(M / n)`, `M = 2³¹ − 1`. [`Scale::quantize_value`] spells this out one value at
//! a time and is the reference; the slice paths compute the same bits with selects only, so
//! that they vectorize.

use half::{bf16, f16};

use super::exponent::exponent_value;

/// `M = 2³¹ − 1`, the largest int32: the whole range the `n`-way sum may use.
pub(crate) const M: i32 = i32::MAX;

/// `2⁵²`: adding and subtracting it rounds an f64 below it in magnitude to an integer.
const TWO_52: f64 = 4_503_599_627_370_496.0;

/// `1.5 · 2⁵²`: for `|y| < 2⁵¹`, `y + ROUND_BIAS` rounds `y` to an integer (ties to even)
/// and leaves that integer, two's complement, in the low 32 bits of the sum's bit pattern.
const ROUND_BIAS: f64 = 6_755_399_441_055_744.0;

/// Return `2^k` exactly, built from its bits; `k` is clamped to the normal f64 range.
pub(crate) fn pow2(k: i32) -> f64 {
    let biased = k.clamp(-1022, 1023) + 1023;
    f64::from_bits(u64::from(biased.unsigned_abs()) << 52)
}

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
    /// `c`, or 0 when there is no exponent.
    c: f64,
    /// `L` as f64 (exact), or 0 when there is no exponent: every q is then 0, whatever x.
    limit: f64,
}

impl Scale {
    /// Make the scale for `world` workers (0 is treated as 1) and the max exponent byte
    /// `exp_max` (`0`: every value quantizes to 0).
    pub fn new(world: u16, exp_max: u8) -> Scale {
        let n = world.max(1);
        match exponent_value(exp_max) {
            Some(e) => Scale {
                c: (f64::from(M) / f64::from(n)) * pow2(-e),
                limit: f64::from(M / i32::from(n)),
            },
            None => Scale { c: 0.0, limit: 0.0 },
        }
    }

    /// Return the largest `|q|` this scale produces: `L = floor(M / n)`, or 0 when there is
    /// no exponent.
    pub fn limit(&self) -> i32 {
        self.limit as i32
    }

    /// Return q for one value (the scalar reference every vector path matches bit for bit).
    ///
    /// Callers check finiteness first; for the record, ±∞ gives ±L and NaN gives −L (0
    /// when there is no exponent).
    pub fn quantize_value(&self, x: f32) -> i32 {
        let r = round_ties_even(f64::from(x) * self.c);
        // Written so that NaN takes the lower bound, as the vector path does.
        let r = if r > -self.limit { r } else { -self.limit };
        let r = if r < self.limit { r } else { self.limit };
        r as i32
    }

    /// Quantize one value to payload bytes: clamp first (rounding commutes with a clamp to
    /// integers), then round and convert in one addition (`|y| ≤ L < 2³¹`).
    #[inline(always)]
    fn quantize_lane(&self, x: f32) -> [u8; 4] {
        let y = f64::from(x) * self.c;
        let y = if y > -self.limit { y } else { -self.limit };
        let y = if y < self.limit { y } else { self.limit };
        let q = (y + ROUND_BIAS).to_bits() as u32;
        q.to_be_bytes()
    }

    /// Quantize `src` into `dst` as big-endian i32 (the packet payload: 4 bytes per value).
    ///
    /// Processes `min(src.len(), dst.len() / 4)` values; the rest of `dst` is left as it is.
    pub fn quantize_f32(&self, src: &[f32], dst: &mut [u8]) {
        self.quantize_with(src, dst, |x| x);
    }

    /// Quantize f16 values (converted to f32 exactly first); lengths as for
    /// [`quantize_f32`](Self::quantize_f32).
    pub fn quantize_f16(&self, src: &[f16], dst: &mut [u8]) {
        self.quantize_with(src, dst, f16::to_f32);
    }

    /// Quantize bf16 values (converted to f32 exactly first); lengths as for
    /// [`quantize_f32`](Self::quantize_f32).
    pub fn quantize_bf16(&self, src: &[bf16], dst: &mut [u8]) {
        self.quantize_with(src, dst, bf16::to_f32);
    }

    /// One flat loop: LLVM vectorizes it cleanly (two or four lanes of f64 per step, a
    /// byte shuffle, one store); nesting it in fixed-size groups made it vectorize the
    /// outer loop instead, with transposes and spills, at half the speed.
    #[inline(always)]
    fn quantize_with<T: Copy>(&self, src: &[T], dst: &mut [u8], to_f32: impl Fn(T) -> f32) {
        for (&x, out) in src.iter().zip(dst.chunks_exact_mut(4)) {
            out.copy_from_slice(&self.quantize_lane(to_f32(x)));
        }
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
    fn pow2_is_exact() {
        assert_eq!(pow2(0), 1.0);
        assert_eq!(pow2(-1), 0.5);
        assert_eq!(pow2(128), 2f64.powi(128));
        assert_eq!(pow2(-128), 2f64.powi(-128));
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
        // n = 1, e_max = 1 (byte 128): c = M / 2.
        let s = Scale::new(1, 128);
        assert_eq!(s.limit(), M);
        assert_eq!(s.quantize_value(1.0), 1_073_741_824); // 1073741823.5 ties to even
        assert_eq!(s.quantize_value(-1.0), -1_073_741_824);
        assert_eq!(s.quantize_value(0.5), 536_870_912); // 536870911.75
        assert_eq!(s.quantize_value(-0.0), 0);
        // n = 2, e_max = 1: c = 1073741823.5 / 2, L = 1073741823.
        let s = Scale::new(2, 128);
        assert_eq!(s.limit(), 1_073_741_823);
        assert_eq!(s.quantize_value(1.0), 536_870_912); // 536870911.75
        assert_eq!(s.quantize_value(2.0 - f32::EPSILON), 1_073_741_760);
        // Values above 2^e_max (a caller's mistake) clamp to ±L.
        assert_eq!(s.quantize_value(3.0), 1_073_741_823);
        assert_eq!(s.quantize_value(-3.0e30), -1_073_741_823);
        // World 0 is world 1.
        assert_eq!(Scale::new(0, 128).quantize_value(1.0), 1_073_741_824);
    }

    #[test]
    fn known_payload_bytes() {
        let mut dst = [0u8; 8];
        Scale::new(1, 128).quantize_f32(&[1.0, -1.0], &mut dst);
        assert_eq!(dst, [0x40, 0, 0, 0, 0xc0, 0, 0, 0]);
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
        // 2^-126 maps to M, so the largest subnormal is one step of 2^-149·M·2^126 below it.
        assert_eq!(q, [256, -2_147_483_391, 1_073_741_824]);
    }

    #[test]
    fn non_finite_values_do_not_panic() {
        let s = Scale::new(3, 130);
        assert_eq!(s.quantize_value(f32::INFINITY), s.limit());
        assert_eq!(s.quantize_value(f32::NEG_INFINITY), -s.limit());
        assert_eq!(s.quantize_value(f32::NAN), -s.limit());
        let mut dst = [0u8; 12];
        s.quantize_f32(&[f32::INFINITY, f32::NEG_INFINITY, f32::NAN], &mut dst);
        assert_eq!(payload(&dst), [s.limit(), -s.limit(), -s.limit()]);
    }

    #[test]
    fn mismatched_lengths_process_the_shorter() {
        let s = Scale::new(1, 128);
        let src = [0.5f32; 19];
        let mut dst = vec![0x55u8; 4 * 11 + 3];
        s.quantize_f32(&src, &mut dst);
        assert!(payload(&dst[..44]).iter().all(|&q| q == 536_870_912));
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
            // The spec's formula, with std's rounding, against our no_std one.
            let n = f64::from(world);
            let c = (f64::from(M) / n) * 2f64.powi(127 - i32::from(exp_max));
            let l = f64::from(M / i32::from(world));
            let want = (f64::from(x) * c).round_ties_even().clamp(-l, l) as i32;
            prop_assert_eq!(Scale::new(world, exp_max).quantize_value(x), want);
        }
    }
}
