//! Summed int32 back to floats: the worker's side of protocol.md §5.2 after the Result.
//!
//! `y = fl32(fl64(S) · d)` with `d = fl64(n / M) · 2^e_max` for the sum and
//! `d = fl64(1 / M) · 2^e_max` for the average. f16 and bf16 outputs round the f32 result
//! to nearest, ties to even.

use half::{bf16, f16};

use super::exponent::exponent_value;
use super::scale::{pow2, M};
use super::Op;

/// Dequantization for one block: built from the world size `n`, the switch's max exponent
/// byte and the reduction.
#[derive(Debug, Clone, Copy)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Unscale {
    /// `d`.
    d: f64,
    /// No exponent: every output is exactly +0.0.
    zero: bool,
}

impl Unscale {
    /// Make the unscale for `world` workers (0 is treated as 1), the max exponent byte
    /// `exp_max` (`0`: every output is +0.0) and the reduction `op`.
    pub fn new(world: u16, exp_max: u8, op: Op) -> Unscale {
        let n = f64::from(world.max(1));
        match exponent_value(exp_max) {
            Some(e) => {
                let factor = match op {
                    Op::Sum => n / f64::from(M),
                    Op::Average => 1.0 / f64::from(M),
                };
                Unscale {
                    d: factor * pow2(e),
                    zero: false,
                }
            }
            None => Unscale { d: 0.0, zero: true },
        }
    }

    /// Return y for one summed value (the scalar reference every vector path matches).
    pub fn dequantize_value(&self, s: i32) -> f32 {
        if self.zero {
            0.0
        } else {
            (f64::from(s) * self.d) as f32
        }
    }

    /// Dequantize the big-endian i32 payload `src` into `dst`.
    ///
    /// Processes `min(src.len() / 4, dst.len())` values; the rest of `dst` is left as it is,
    /// and trailing bytes of `src` short of a whole value are ignored.
    pub fn dequantize_f32(&self, src: &[u8], dst: &mut [f32]) {
        self.dequantize_with(src, dst, |y| y);
    }

    /// Dequantize into f16 (the f32 result rounded to nearest, ties to even); lengths as
    /// for [`dequantize_f32`](Self::dequantize_f32).
    pub fn dequantize_f16(&self, src: &[u8], dst: &mut [f16]) {
        self.dequantize_with(src, dst, f16::from_f32);
    }

    /// Dequantize into bf16 (the f32 result rounded to nearest, ties to even); lengths as
    /// for [`dequantize_f32`](Self::dequantize_f32).
    pub fn dequantize_bf16(&self, src: &[u8], dst: &mut [bf16]) {
        self.dequantize_with(src, dst, bf16::from_f32);
    }

    #[inline(always)]
    fn dequantize_with<T: Copy>(&self, src: &[u8], dst: &mut [T], from_f32: impl Fn(f32) -> T) {
        if self.zero {
            for y in dst.iter_mut().take(src.len() / 4) {
                *y = from_f32(0.0);
            }
            return;
        }
        // One flat loop, as for quantization: it vectorizes cleanly.
        let d = self.d;
        for (b, y) in src.chunks_exact(4).zip(dst.iter_mut()) {
            let s = <[u8; 4]>::try_from(b).map_or(0, i32::from_be_bytes);
            *y = from_f32((f64::from(s) * d) as f32);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    extern crate std;
    use std::vec;
    use std::vec::Vec;

    fn bytes(v: &[i32]) -> Vec<u8> {
        v.iter().flat_map(|s| s.to_be_bytes()).collect()
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![Just(Op::Sum), Just(Op::Average)]
    }

    #[test]
    fn known_values() {
        // n = 2, e_max = 1 (byte 128): d = 2/M · 2 for the sum, 1/M · 2 for the average.
        let sum = Unscale::new(2, 128, Op::Sum);
        let avg = Unscale::new(2, 128, Op::Average);
        assert_eq!(sum.dequantize_value(1_073_741_824), 2.0);
        assert_eq!(avg.dequantize_value(1_073_741_824), 1.0);
        assert_eq!(sum.dequantize_value(-536_870_912), -1.0);
        assert_eq!(sum.dequantize_value(0).to_bits(), 0);
        let mut dst = [0.0f32; 2];
        sum.dequantize_f32(&[0x40, 0, 0, 0, 0xff, 0xff, 0xff, 0xff], &mut dst);
        assert_eq!(dst[0], 2.0);
        assert_eq!(dst[1], (-4.0f64 / f64::from(M)) as f32);
    }

    #[test]
    fn no_exponent_gives_positive_zeros() {
        for op in [Op::Sum, Op::Average] {
            let u = Unscale::new(8, 0, op);
            let src = bytes(&[0, -1, i32::MIN, i32::MAX, 5, -7, 0, 1, -9]);
            let mut dst = [f32::NAN; 9];
            u.dequantize_f32(&src, &mut dst);
            assert!(dst.iter().all(|y| y.to_bits() == 0), "{dst:?}");
            assert_eq!(u.dequantize_value(-3).to_bits(), 0);
            let mut h = [f16::NAN; 9];
            u.dequantize_f16(&src, &mut h);
            assert!(h.iter().all(|y| y.to_bits() == 0));
            let mut b = [bf16::NAN; 9];
            u.dequantize_bf16(&src, &mut b);
            assert!(b.iter().all(|y| y.to_bits() == 0));
        }
    }

    #[test]
    fn extreme_sums_stay_finite_or_overflow_to_infinity() {
        let u = Unscale::new(1, 255, Op::Average);
        assert!(u.dequantize_value(i32::MAX - 128).is_finite());
        assert!(u.dequantize_value(i32::MIN).is_infinite());
        let u = Unscale::new(1024, 1, Op::Sum);
        assert!(u.dequantize_value(i32::MIN) < 0.0);
    }

    #[test]
    fn mismatched_lengths_process_the_shorter() {
        let u = Unscale::new(1, 128, Op::Sum);
        let src = bytes(&[1 << 30; 21]);
        let mut dst = vec![7.0f32; 9];
        u.dequantize_f32(&src[..4 * 9 + 2], &mut dst);
        assert!(dst.iter().all(|&y| y == u.dequantize_value(1 << 30)));
        let mut dst = vec![7.0f32; 30];
        u.dequantize_f32(&src, &mut dst);
        assert!(dst[21..].iter().all(|&y| y == 7.0));
        u.dequantize_f32(&src[..3], &mut dst);
        assert_eq!(dst[0], u.dequantize_value(1 << 30));
        u.dequantize_f32(&src, &mut []);
        u.dequantize_f16(&[], &mut [f16::ONE]);
    }

    proptest! {
        #[test]
        fn vector_path_matches_scalar(
            src in proptest::collection::vec(any::<i32>(), 0..70),
            world in 0u16..=1024,
            exp_max in any::<u8>(),
            op in op(),
        ) {
            let u = Unscale::new(world, exp_max, op);
            let mut dst = vec![f32::NAN; src.len()];
            u.dequantize_f32(&bytes(&src), &mut dst);
            let want: Vec<u32> = src.iter().map(|&s| u.dequantize_value(s).to_bits()).collect();
            let got: Vec<u32> = dst.iter().map(|y| y.to_bits()).collect();
            prop_assert_eq!(got, want);
        }

        #[test]
        fn half_outputs_round_the_f32_result(
            src in proptest::collection::vec(any::<i32>(), 0..70),
            world in 1u16..=1024,
            exp_max in any::<u8>(),
            op in op(),
        ) {
            let u = Unscale::new(world, exp_max, op);
            let payload = bytes(&src);
            let mut h = vec![f16::ZERO; src.len()];
            u.dequantize_f16(&payload, &mut h);
            let mut b = vec![bf16::ZERO; src.len()];
            u.dequantize_bf16(&payload, &mut b);
            for ((&s, hy), by) in src.iter().zip(&h).zip(&b) {
                let y = u.dequantize_value(s);
                prop_assert_eq!(hy.to_bits(), f16::from_f32(y).to_bits());
                prop_assert_eq!(by.to_bits(), bf16::from_f32(y).to_bits());
            }
        }

        #[test]
        fn scalar_matches_the_spec_formula(s in any::<i32>(), world in 1u16..=1024, exp_max in 1u8..=255, op in op()) {
            let n = f64::from(world);
            let m = f64::from(M);
            let p = 2f64.powi(i32::from(exp_max) - 127);
            let d = match op { Op::Sum => (n / m) * p, Op::Average => (1.0 / m) * p };
            let want = (f64::from(s) * d) as f32;
            prop_assert_eq!(Unscale::new(world, exp_max, op).dequantize_value(s).to_bits(), want.to_bits());
        }
    }
}
