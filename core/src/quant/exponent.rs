//! Block exponents (protocol.md §5.1) and the finiteness check made before anything is sent.
//!
//! Both scan a block once, branch-free, over the magnitude bits of each element: for finite
//! non-negative IEEE values the bit pattern, read as an unsigned integer, orders like the
//! value, so the largest magnitude is an integer `max` that the compiler vectorizes. The
//! worker needs both for a whole tensor; `scan.rs` does them in one pass with the same
//! helpers ([`finite_block_exponents_f32`](super::finite_block_exponents_f32)).

use half::{bf16, f16};

use super::NonFinite;

/// Biased exponent byte meaning "no exponent / all-zero block".
pub const NO_EXPONENT: u8 = 0;

/// Magnitude bits of an f32 (everything but the sign).
pub(super) const F32_ABS: u32 = 0x7fff_ffff;
/// Magnitude bits of +∞ in f32; every larger pattern is a NaN.
pub(super) const F32_INF: u32 = 0x7f80_0000;
/// Magnitude bits of an f16 or bf16.
pub(super) const HALF_ABS: u16 = 0x7fff;
/// Magnitude bits of +∞ in f16.
pub(super) const F16_INF: u16 = 0x7c00;
/// Magnitude bits of +∞ in bf16.
pub(super) const BF16_INF: u16 = 0x7f80;
/// Elements scanned at a time by the finiteness checks before looking for the culprit.
const CHECK_CHUNK: usize = 64;

/// Exponent byte of an f32 magnitude: 0 for ±0, else (IEEE biased exponent field E) + 1.
///
/// This is the smallest `e` with `|x| < 2^e`, clamped below at −126, biased by 127.
/// Subnormals give 1 (`e = −126`). Callers never pass non-finite values; they give 255.
pub fn exponent_of(max_abs: f32) -> u8 {
    exponent_of_abs_bits(max_abs.to_bits() & F32_ABS)
}

/// Return e = b − 127 for b in 1..=255, None for 0 ([`NO_EXPONENT`]).
pub fn exponent_value(b: u8) -> Option<i32> {
    if b == NO_EXPONENT {
        None
    } else {
        Some(i32::from(b) - 127)
    }
}

/// The exponent byte for f32 magnitude bits `abs` (sign already cleared).
#[inline(always)]
pub(super) fn exponent_of_abs_bits(abs: u32) -> u8 {
    // The field is 0..=255; +1 saturates so that ∞ and NaN (field 255) give 255 too.
    let biased = ((abs >> 23) + 1).min(255) as u8;
    if abs == 0 {
        NO_EXPONENT
    } else {
        biased
    }
}

/// Largest-magnitude exponent byte of an f32 block's finite elements ([`NO_EXPONENT`] if
/// they are all zero, or none is finite, or the block is empty). A NaN or ∞ is ignored: it
/// travels as a flag (protocol.md §5.4) and must not inflate the block's scale.
pub fn block_exponent_f32(block: &[f32]) -> u8 {
    let max = block.iter().fold(0u32, |m, x| {
        m.max(finite_abs(x.to_bits() & F32_ABS, F32_INF))
    });
    exponent_of_abs_bits(max)
}

/// Largest-magnitude exponent byte of an f16 block's finite elements, as
/// [`block_exponent_f32`].
pub fn block_exponent_f16(block: &[f16]) -> u8 {
    let max = block.iter().fold(0u16, |m, x| {
        m.max(finite_abs(x.to_bits() & HALF_ABS, F16_INF))
    });
    exponent_of_f16_abs_bits(max)
}

/// Largest-magnitude exponent byte of a bf16 block's finite elements, as
/// [`block_exponent_f32`].
pub fn block_exponent_bf16(block: &[bf16]) -> u8 {
    let max = block.iter().fold(0u16, |m, x| {
        m.max(finite_abs(x.to_bits() & HALF_ABS, BF16_INF))
    });
    exponent_of_bf16_abs_bits(max)
}

/// Magnitude bits `abs` of a finite value, 0 for a NaN or ∞ (whose magnitude bits are at
/// least those of ∞, `inf`). A select, so that the folds above still vectorize.
#[inline(always)]
fn finite_abs<M: Copy + Ord + Default>(abs: M, inf: M) -> M {
    if abs < inf {
        abs
    } else {
        M::default()
    }
}

/// The exponent byte for f16 magnitude bits `abs` (sign already cleared).
#[inline(always)]
pub(super) fn exponent_of_f16_abs_bits(abs: u16) -> u8 {
    exponent_of(f16::from_bits(abs).to_f32())
}

/// The exponent byte for bf16 magnitude bits `abs` (sign already cleared).
#[inline(always)]
pub(super) fn exponent_of_bf16_abs_bits(abs: u16) -> u8 {
    exponent_of(bf16::from_bits(abs).to_f32())
}

/// Check that every element is finite; on failure name the first NaN or infinity.
pub fn check_finite_f32(x: &[f32]) -> Result<(), NonFinite> {
    first_non_finite(x, |v| v.to_bits() & F32_ABS >= F32_INF)
}

/// Check that every element is finite; on failure name the first NaN or infinity.
pub fn check_finite_f16(x: &[f16]) -> Result<(), NonFinite> {
    first_non_finite(x, |v| v.to_bits() & HALF_ABS >= F16_INF)
}

/// Check that every element is finite; on failure name the first NaN or infinity.
pub fn check_finite_bf16(x: &[bf16]) -> Result<(), NonFinite> {
    first_non_finite(x, |v| v.to_bits() & HALF_ABS >= BF16_INF)
}

/// Scan `x` a chunk at a time without early exit (so the scan vectorizes); only in a chunk
/// that holds a bad element look for the first one.
#[inline(always)]
fn first_non_finite<T: Copy>(x: &[T], bad: impl Fn(T) -> bool) -> Result<(), NonFinite> {
    for (c, chunk) in x.chunks(CHECK_CHUNK).enumerate() {
        if chunk.iter().fold(false, |any, &v| any | bad(v)) {
            let within = chunk.iter().position(|&v| bad(v)).unwrap_or(0);
            return Err(NonFinite {
                index: c * CHECK_CHUNK + within,
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    extern crate std;
    use std::vec::Vec;

    #[test]
    fn exponent_of_known_values() {
        assert_eq!(exponent_of(0.0), 0);
        assert_eq!(exponent_of(-0.0), 0);
        assert_eq!(exponent_of(1.0), 128); // e = 1: 1.0 < 2^1
        assert_eq!(exponent_of(-1.0), 128);
        assert_eq!(exponent_of(0.75), 127); // e = 0
        assert_eq!(exponent_of(2.0 - f32::EPSILON), 128);
        assert_eq!(exponent_of(2.0), 129);
        assert_eq!(exponent_of(f32::MAX), 255); // e = 128
        assert_eq!(exponent_of(f32::from_bits(1)), 1); // smallest subnormal, e = -126
        assert_eq!(exponent_of(f32::from_bits(0x007f_ffff)), 1); // largest subnormal
        assert_eq!(exponent_of(f32::MIN_POSITIVE), 2); // 2^-126 < 2^-125
        assert_eq!(exponent_of(f32::INFINITY), 255);
        assert_eq!(exponent_of(f32::NAN), 255);
    }

    #[test]
    fn exponent_value_unbiases() {
        assert_eq!(exponent_value(0), None);
        assert_eq!(exponent_value(1), Some(-126));
        assert_eq!(exponent_value(127), Some(0));
        assert_eq!(exponent_value(255), Some(128));
    }

    #[test]
    fn exponent_bounds_the_magnitude() {
        // The defining property: |x| < 2^e, and e is the smallest such (above -126).
        for bits in (0u32..0x7f80_0000).step_by(0x0001_2345) {
            let x = f32::from_bits(bits);
            let e = exponent_value(exponent_of(x));
            match e {
                None => assert_eq!(bits, 0),
                Some(e) => {
                    let p = f64::from(x);
                    assert!(p < 2f64.powi(e), "{x:e} e={e}");
                    assert!(e == -126 || p >= 2f64.powi(e - 1), "{x:e} e={e}");
                }
            }
        }
    }

    #[test]
    fn non_finite_elements_do_not_change_the_block_exponent() {
        // Without the Inf the block's exponent is that of 3.0 (e = 2); an Inf or NaN must
        // not raise it to 255, which would quantize the finite values to nothing.
        let want = exponent_of(3.0);
        for bad in [f32::INFINITY, f32::NEG_INFINITY, f32::NAN, -f32::NAN] {
            assert_eq!(block_exponent_f32(&[1.0, bad, -3.0]), want, "{bad}");
            assert_eq!(block_exponent_f32(&[bad]), NO_EXPONENT, "{bad}");
        }
        let h = [
            f16::from_f32(1.0),
            f16::INFINITY,
            f16::from_f32(-3.0),
            f16::NAN,
        ];
        assert_eq!(block_exponent_f16(&h), want);
        let b = [bf16::NEG_INFINITY, bf16::from_f32(-3.0), bf16::NAN];
        assert_eq!(block_exponent_bf16(&b), want);
        assert_eq!(block_exponent_f16(&[f16::NEG_INFINITY]), NO_EXPONENT);
    }

    #[test]
    fn empty_and_zero_blocks_have_no_exponent() {
        assert_eq!(block_exponent_f32(&[]), NO_EXPONENT);
        assert_eq!(block_exponent_f32(&[0.0, -0.0, 0.0]), NO_EXPONENT);
        assert_eq!(block_exponent_f16(&[f16::NEG_ZERO]), NO_EXPONENT);
        assert_eq!(
            block_exponent_bf16(&[bf16::ZERO, bf16::NEG_ZERO]),
            NO_EXPONENT
        );
        assert_eq!(block_exponent_f32(&[f32::from_bits(3), -0.0]), 1);
    }

    #[test]
    fn half_block_exponents_follow_f32() {
        assert_eq!(block_exponent_f16(&[f16::from_f32(-3.0)]), exponent_of(3.0));
        assert_eq!(block_exponent_f16(&[f16::MAX]), exponent_of(65504.0));
        assert_eq!(block_exponent_bf16(&[bf16::MAX]), 255);
        assert_eq!(block_exponent_bf16(&[bf16::from_f32(0.5)]), 127);
    }

    #[test]
    fn check_finite_names_the_first_bad_index() {
        for bad in [f32::NAN, f32::INFINITY, f32::NEG_INFINITY, -f32::NAN] {
            for len in [1usize, 7, 64, 65, 200] {
                for at in [0, len / 2, len - 1] {
                    let mut v = Vec::from_iter((0..len).map(|i| i as f32 - 3.5));
                    v[at] = bad;
                    if at + 1 < len {
                        v[len - 1] = f32::NAN; // a later one must not be reported
                    }
                    assert_eq!(check_finite_f32(&v), Err(NonFinite { index: at }));
                    let h: Vec<f16> = v.iter().map(|&x| f16::from_f32(x)).collect();
                    assert_eq!(check_finite_f16(&h), Err(NonFinite { index: at }));
                    let b: Vec<bf16> = v.iter().map(|&x| bf16::from_f32(x)).collect();
                    assert_eq!(check_finite_bf16(&b), Err(NonFinite { index: at }));
                }
            }
        }
    }

    #[test]
    fn check_finite_accepts_finite_extremes() {
        assert_eq!(check_finite_f32(&[]), Ok(()));
        assert_eq!(
            check_finite_f32(&[f32::MAX, f32::MIN, f32::from_bits(1), -0.0]),
            Ok(())
        );
        assert_eq!(
            check_finite_f16(&[f16::MAX, f16::MIN, f16::from_bits(1)]),
            Ok(())
        );
        assert_eq!(check_finite_bf16(&[bf16::MAX, bf16::MIN]), Ok(()));
    }

    #[test]
    fn check_finite_f16_bit_patterns() {
        // 0x7c00 is +inf, 0xfc00 -inf, 0x7c01 and 0x7e00 NaN; 0x7bff is f16::MAX.
        for bits in [0x7c00u16, 0xfc00, 0x7c01, 0x7e00, 0xffff] {
            let v = [f16::from_bits(0x7bff), f16::from_bits(bits)];
            assert_eq!(
                check_finite_f16(&v),
                Err(NonFinite { index: 1 }),
                "{bits:#x}"
            );
        }
        // bf16 shares f32's exponent: 0x7c00 is a finite bf16.
        assert_eq!(check_finite_bf16(&[bf16::from_bits(0x7c00)]), Ok(()));
        assert_eq!(
            check_finite_bf16(&[bf16::from_bits(0x7f80)]),
            Err(NonFinite { index: 0 })
        );
    }

    fn finite_f32() -> impl Strategy<Value = f32> {
        prop_oneof![
            Just(0.0f32),
            Just(-0.0f32),
            (0u32..0x0080_0000, any::<bool>()).prop_map(|(m, s)| sign(f32::from_bits(m), s)),
            (0u32..0x7f80_0000, any::<bool>()).prop_map(|(b, s)| sign(f32::from_bits(b), s)),
        ]
    }

    fn sign(x: f32, negative: bool) -> f32 {
        if negative {
            -x
        } else {
            x
        }
    }

    proptest! {
        #[test]
        fn block_exponent_is_exponent_of_max_abs(v in proptest::collection::vec(finite_f32(), 0..80)) {
            let max = v.iter().fold(0.0f32, |m, x| m.max(x.abs()));
            prop_assert_eq!(block_exponent_f32(&v), exponent_of(max));
            let h: Vec<f16> = v.iter().map(|&x| f16::from_f32(x)).collect();
            // Values beyond f16's range convert to ∞, which the exponent ignores.
            let hmax = h.iter().filter(|x| x.is_finite()).fold(0.0f32, |m, x| m.max(x.to_f32().abs()));
            prop_assert_eq!(block_exponent_f16(&h), exponent_of(hmax));
            let b: Vec<bf16> = v.iter().map(|&x| bf16::from_f32(x)).collect();
            let bmax = b.iter().filter(|x| x.is_finite()).fold(0.0f32, |m, x| m.max(x.to_f32().abs()));
            prop_assert_eq!(block_exponent_bf16(&b), exponent_of(bmax));
        }

        #[test]
        fn finite_blocks_pass_the_check(v in proptest::collection::vec(finite_f32(), 0..80)) {
            prop_assert_eq!(check_finite_f32(&v), Ok(()));
        }
    }
}
