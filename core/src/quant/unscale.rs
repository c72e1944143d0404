//! Summed int32 back to floats: the worker's side of protocol.md §5.2 after the Result.
//!
//! `t = fl32(fl32(S) · r)`, then `y = t · 2^s` rounded once to f32, with `r = 1`,
//! `s = e_max + p − 31` for the sum and `r = fl32(2^p / n)`, `s = e_max − 31` for the
//! average (`r = 1` too when `n` is a power of two). Every step is one IEEE binary32
//! operation, so the slice paths vectorize at full f32 width; the scaling is exact unless
//! `y` is subnormal or beyond the range. f16 and bf16 outputs round the f32 result to
//! nearest, ties to even.
//!
//! A sum of finite values can lie beyond the output type's range; `y` is then ±∞, and the
//! slice functions return where that first happened, so that the worker reports an
//! overflow instead of handing back an infinity. When no sum of the block can get that
//! far (`2³¹ · r · 2^s` within the range: every block but those whose exponent is near the
//! top of the type's range) the loop does not look.

use half::{bf16, f16};
use switchml_dispatch::dispatch;

use super::exponent::exponent_value;
use super::scale::{pow2, pow2_f64, sum_bits};
use super::Op;

/// Dequantization for one block: built from the world size `n`, the switch's max exponent
/// byte and the reduction.
#[derive(Debug, Clone, Copy)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Unscale {
    /// `r`: 1 for the sum, `fl32(2^p / n)` for the average.
    r: f32,
    /// `s`, the power of two applied to `t`.
    s: i32,
    /// `2^s` as two f32 factors, `a · b`: the first product exact, the second rounding
    /// once; `b` is 1 unless `s < −126`.
    a: f32,
    /// See `a`.
    b: f32,
    /// `2³¹ · r · 2^s`, a bound on `|y|` (exact in binary64).
    largest: f64,
    /// No exponent: every output is exactly +0.0.
    zero: bool,
}

impl Unscale {
    /// Make the unscale for `world` workers (0 is treated as 1), the max exponent byte
    /// `exp_max` (`0`: every output is +0.0) and the reduction `op`.
    pub fn new(world: u16, exp_max: u8, op: Op) -> Unscale {
        let n = world.max(1);
        let p = sum_bits(n);
        let Some(e) = exponent_value(exp_max) else {
            return Unscale {
                r: 1.0,
                s: 0,
                a: 0.0,
                b: 0.0,
                largest: 0.0,
                zero: true,
            };
        };
        let (r, s) = match op {
            Op::Sum => (1.0, e + p - 31),
            // 2^p / n lies in [1, 2]; f32 division is correctly rounded.
            Op::Average => (pow2(p) / f32::from(n), e - 31),
        };
        // t is 0 or at least 1, so t · 2^(s+32) is a normal f32 for s ≥ −158: exact.
        let (a, b) = if s >= -126 {
            (pow2(s), 1.0)
        } else {
            (pow2(s + 32), pow2(-32))
        };
        Unscale {
            r,
            s,
            a,
            b,
            largest: LARGEST_SUM * f64::from(r) * pow2_f64(s),
            zero: false,
        }
    }

    /// Return y for one summed value (the scalar reference every vector path matches).
    ///
    /// The scaling is done in binary64, where `t · 2^s` is exact, and rounded once to f32.
    pub fn dequantize_value(&self, s: i32) -> f32 {
        if self.zero {
            return 0.0;
        }
        let t = s as f32 * self.r;
        (f64::from(t) * pow2_f64(self.s)) as f32
    }

    /// Dequantize the big-endian i32 payload `src` into `dst`; return the index in `dst`
    /// of the first value whose sum lies beyond the f32 range (written there as ±∞).
    ///
    /// Processes `min(src.len() / 4, dst.len())` values; the rest of `dst` is left as it is,
    /// and trailing bytes of `src` short of a whole value are ignored.
    pub fn dequantize_f32(&self, src: &[u8], dst: &mut [f32]) -> Option<usize> {
        self.dequantize_with(src, dst, |y| y, f64::from(f32::MAX), f32::is_infinite)
    }

    /// Dequantize into f16 (the f32 result rounded to nearest, ties to even); lengths and
    /// the returned overflow (beyond the f16 range) as for
    /// [`dequantize_f32`](Self::dequantize_f32).
    pub fn dequantize_f16(&self, src: &[u8], dst: &mut [f16]) -> Option<usize> {
        let max = f64::from(f16::MAX.to_f32());
        self.dequantize_with(src, dst, f16::from_f32, max, f16::is_infinite)
    }

    /// Dequantize into bf16 (the f32 result rounded to nearest, ties to even); lengths and
    /// the returned overflow (beyond the bf16 range) as for
    /// [`dequantize_f32`](Self::dequantize_f32).
    pub fn dequantize_bf16(&self, src: &[u8], dst: &mut [bf16]) -> Option<usize> {
        let max = f64::from(bf16::MAX.to_f32());
        self.dequantize_with(src, dst, bf16::from_f32, max, bf16::is_infinite)
    }

    /// The slice paths: `from_f32` rounds to the output type, whose largest finite value is
    /// `max`.
    #[inline(always)]
    fn dequantize_with<T: Copy>(
        &self,
        src: &[u8],
        dst: &mut [T],
        from_f32: impl Fn(f32) -> T,
        max: f64,
        is_infinite: impl Fn(T) -> bool,
    ) -> Option<usize> {
        if self.zero {
            for (_, y) in src.chunks_exact(4).zip(dst.iter_mut()) {
                *y = from_f32(0.0);
            }
            return None;
        }
        // Multiplying by r = 1 or b = 1 changes no bit: those loops leave it out.
        let (f, inf) = (&from_f32, &is_infinite);
        let lanes = dispatch(
            #[inline(always)]
            || match (self.r != 1.0, self.b != 1.0) {
                (false, false) => self.lanes::<false, false, T>(src, dst, f, max, inf),
                (true, false) => self.lanes::<true, false, T>(src, dst, f, max, inf),
                (false, true) => self.lanes::<false, true, T>(src, dst, f, max, inf),
                (true, true) => self.lanes::<true, true, T>(src, dst, f, max, inf),
            },
        );
        if !lanes {
            return None;
        }
        dst.iter().take(src.len() / 4).position(|&v| is_infinite(v))
    }

    /// One flat loop, which LLVM vectorizes cleanly; return whether an output may be
    /// infinite.
    #[inline(always)]
    fn lanes<const AVERAGE: bool, const TINY: bool, T: Copy>(
        &self,
        src: &[u8],
        dst: &mut [T],
        from_f32: &impl Fn(f32) -> T,
        max: f64,
        is_infinite: &impl Fn(T) -> bool,
    ) -> bool {
        let values = src.chunks_exact(4).zip(dst.iter_mut());
        let (r, a, b) = (self.r, self.a, self.b);
        let y = |bytes: &[u8]| {
            let s = <[u8; 4]>::try_from(bytes).map_or(0, i32::from_be_bytes);
            let t = s as f32;
            let t = if AVERAGE { t * r } else { t };
            let y = t * a;
            from_f32(if TINY { y * b } else { y })
        };
        // Below `max` rounding cannot reach infinity (`max` is an f32).
        if self.largest <= max {
            for (bytes, out) in values {
                *out = y(bytes);
            }
            return false;
        }
        // Near the top of the range: the same loop, or-ing a flag (still no branch).
        let mut overflow = false;
        for (bytes, out) in values {
            let v = y(bytes);
            overflow |= is_infinite(v);
            *out = v;
        }
        overflow
    }
}

/// `2³¹`: the largest magnitude of an int32 sum (`|i32::MIN|`).
const LARGEST_SUM: f64 = 2_147_483_648.0;

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
        // n = 2 (p = 1), e_max = 1 (byte 128): s = -29 for the sum; r = 1, s = -30 for the
        // average.
        let sum = Unscale::new(2, 128, Op::Sum);
        let avg = Unscale::new(2, 128, Op::Average);
        assert_eq!(sum.dequantize_value(1_073_741_824), 2.0);
        assert_eq!(avg.dequantize_value(1_073_741_824), 1.0);
        assert_eq!(sum.dequantize_value(-536_870_912), -1.0);
        assert_eq!(sum.dequantize_value(0).to_bits(), 0);
        let mut dst = [0.0f32; 2];
        sum.dequantize_f32(&[0x40, 0, 0, 0, 0xff, 0xff, 0xff, 0xff], &mut dst);
        assert_eq!(dst[0], 2.0);
        assert_eq!(dst[1], -2f32.powi(-29));
        // n = 3 (p = 2): r = fl32(4/3) for the average, s = -30.
        let avg = Unscale::new(3, 128, Op::Average);
        let third = 4.0f32 / 3.0;
        assert_eq!(avg.dequantize_value(3 << 28), 3.0 * third / 4.0);
        let sum = Unscale::new(3, 128, Op::Sum);
        assert_eq!(sum.dequantize_value(3 << 28), 3.0);
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
        // n = 1 (p = 1), e_max = 128: the largest q, 2^30 - 64, gives f32::MAX.
        let u = Unscale::new(1, 255, Op::Average);
        assert_eq!(u.dequantize_value((1 << 30) - 64), f32::MAX);
        assert!(u.dequantize_value(i32::MIN).is_infinite());
        let u = Unscale::new(1024, 1, Op::Sum);
        assert!(u.dequantize_value(i32::MIN) < 0.0);
    }

    #[test]
    fn sums_beyond_the_range_are_reported_where_they_first_occur() {
        // 4 ranks near 3e38 each (e_max = 128, byte 255): the sum is beyond f32 and bf16.
        let u = Unscale::new(4, 255, Op::Sum);
        let big = 1_900_000_000;
        let src = bytes(&[5, big, -big, 7]);
        let mut y = [0.0f32; 4];
        assert_eq!(u.dequantize_f32(&src, &mut y), Some(1));
        assert_eq!(y[1..3], [f32::INFINITY, f32::NEG_INFINITY]);
        assert!(y[0].is_finite() && y[3].is_finite());
        let mut b = [bf16::ZERO; 4];
        assert_eq!(u.dequantize_bf16(&src, &mut b), Some(1));
        assert_eq!(u.dequantize_f32(&bytes(&[5, 7, 1 << 20]), &mut y), None);
        // Only the values processed count, not what `dst` held past them.
        let mut y = [f32::INFINITY; 4];
        assert_eq!(u.dequantize_f32(&bytes(&[5, -big]), &mut y), Some(1));
        // Two f16 ranks near 2^15 each: 2^16 is beyond f16 (65504) but fine in f32.
        let u = Unscale::new(2, 127 + 16, Op::Sum);
        let mut h = [f16::ZERO; 3];
        assert_eq!(u.dequantize_f16(&bytes(&[1, 2, 1 << 30]), &mut h), Some(2));
        assert!(h[2].is_infinite());
        assert_eq!(u.dequantize_f32(&bytes(&[1, 2, 1 << 30]), &mut y), None);
        // An average rounds to infinity only at the very top.
        let u = Unscale::new(1, 255, Op::Average);
        assert_eq!(u.dequantize_f32(&bytes(&[0, i32::MIN]), &mut y), Some(1));
    }

    #[test]
    fn blocks_that_cannot_overflow_report_nothing() {
        for (world, exp, op) in [
            (4, 200, Op::Sum),
            (1024, 128, Op::Sum),
            (2, 254, Op::Average),
        ] {
            let u = Unscale::new(world, exp, op);
            let src = bytes(&[i32::MIN, i32::MAX, 0, -1]);
            let mut y = [0.0f32; 4];
            assert_eq!(u.dequantize_f32(&src, &mut y), None);
            assert!(y.iter().all(|v| v.is_finite()));
        }
        let mut h = [f16::ZERO; 1];
        assert_eq!(
            Unscale::new(8, 0, Op::Sum).dequantize_f16(&bytes(&[i32::MIN]), &mut h),
            None
        );
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
        fn the_reported_overflow_is_the_first_infinite_output(
            src in proptest::collection::vec(any::<i32>(), 0..70),
            world in 1u16..=1024,
            exp_max in prop_oneof![Just(0u8), 130u8..=150, 230u8..=255],
            op in op(),
        ) {
            let u = Unscale::new(world, exp_max, op);
            let payload = bytes(&src);
            let first = |inf: &dyn Fn(f32) -> bool| src.iter().position(|&s| inf(u.dequantize_value(s)));
            let mut y = vec![0.0f32; src.len()];
            prop_assert_eq!(u.dequantize_f32(&payload, &mut y), first(&|y| y.is_infinite()));
            let mut h = vec![f16::ZERO; src.len()];
            let want = first(&|y| f16::from_f32(y).is_infinite());
            prop_assert_eq!(u.dequantize_f16(&payload, &mut h), want);
            let mut b = vec![bf16::ZERO; src.len()];
            let want = first(&|y| bf16::from_f32(y).is_infinite());
            prop_assert_eq!(u.dequantize_bf16(&payload, &mut b), want);
        }

        #[test]
        fn scalar_matches_the_spec_formula(s in any::<i32>(), world in 1u16..=1024, exp_max in 1u8..=255, op in op()) {
            let p = f64::from(world).log2().ceil().max(1.0) as i32;
            let e = i32::from(exp_max) - 127;
            let (t, k) = match op {
                Op::Sum => (s as f32, e + p - 31),
                Op::Average => (s as f32 * (2f32.powi(p) / f32::from(world)), e - 31),
            };
            let want = (f64::from(t) * 2f64.powi(k)) as f32;
            prop_assert_eq!(Unscale::new(world, exp_max, op).dequantize_value(s).to_bits(), want.to_bits());
        }
    }
}
