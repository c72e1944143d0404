//! The finiteness check and the block exponents of every chunk, fused into one pass over a
//! tensor (protocol.md §5.1, §5.3).
//!
//! Before a float tensor's first chunk goes out the worker needs both: the check, so that a
//! NaN or ∞ is refused before any rank waits on this one (where the worker refuses them;
//! where they travel flagged, a tensor that holds one is scanned chunk by chunk instead,
//! protocol.md §5.4), and the exponents, for the
//! priming and look-ahead uses of every chunk. Done apart, [`check_finite_f32`] and
//! [`block_exponent_f32`] read the whole tensor twice from memory. Done together the check
//! is nearly free: NaN and ∞ have the largest magnitude bits of their type (the exponent
//! field all ones), so a chunk holds one exactly when the magnitude maximum that its
//! exponent needs anyway is at least that of ∞: one comparison per chunk. Only a chunk that
//! fails it is read again, to name the first culprit.
//!
//! The result is the same as the two separate scans, to the bit and to the index: per chunk
//! the same maximum goes through the same exponent function as in [`block_exponent_f32`],
//! and the error is [`check_finite_f32`]'s. The loop runs through `switchml_dispatch`, so
//! it is eight (f32) or sixteen (f16, bf16) lanes wide on a CPU with AVX2.
//!
//! [`check_finite_f32`]: super::check_finite_f32
//! [`block_exponent_f32`]: super::block_exponent_f32

use half::{bf16, f16};
use switchml_dispatch::dispatch;

use super::exponent::{
    exponent_of_abs_bits, exponent_of_bf16_abs_bits, exponent_of_f16_abs_bits, BF16_INF, F16_INF,
    F32_ABS, F32_INF, HALF_ABS,
};
use super::NonFinite;

/// Check that every element of `x` is finite and write the block exponent of each chunk of
/// `count` elements (the last may be shorter) into `exponents`, one byte per chunk, in one
/// pass. A `count` of 0 counts as 1.
///
/// The bytes are those of [`block_exponent_f32`](super::block_exponent_f32) on each chunk,
/// the error that of [`check_finite_f32`](super::check_finite_f32) on the whole of `x`.
/// Every element is checked even where `exponents` is shorter than the number of chunks
/// (`x.len().div_ceil(count)`); its bytes past that number are left as they are. On an
/// error, the bytes of the chunks before the culprit's are written and the rest are not.
pub fn finite_block_exponents_f32(
    x: &[f32],
    count: usize,
    exponents: &mut [u8],
) -> Result<(), NonFinite> {
    scan(x, count, exponents, f32_abs, F32_INF, exponent_of_abs_bits)
}

/// [`finite_block_exponents_f32`] for f16: the bytes of
/// [`block_exponent_f16`](super::block_exponent_f16), the error of
/// [`check_finite_f16`](super::check_finite_f16).
pub fn finite_block_exponents_f16(
    x: &[f16],
    count: usize,
    exponents: &mut [u8],
) -> Result<(), NonFinite> {
    scan(
        x,
        count,
        exponents,
        f16_abs,
        F16_INF,
        exponent_of_f16_abs_bits,
    )
}

/// [`finite_block_exponents_f32`] for bf16: the bytes of
/// [`block_exponent_bf16`](super::block_exponent_bf16), the error of
/// [`check_finite_bf16`](super::check_finite_bf16).
pub fn finite_block_exponents_bf16(
    x: &[bf16],
    count: usize,
    exponents: &mut [u8],
) -> Result<(), NonFinite> {
    scan(
        x,
        count,
        exponents,
        bf16_abs,
        BF16_INF,
        exponent_of_bf16_abs_bits,
    )
}

/// The magnitude bits of an f32.
#[inline(always)]
fn f32_abs(v: f32) -> u32 {
    v.to_bits() & F32_ABS
}

/// The magnitude bits of an f16.
#[inline(always)]
fn f16_abs(v: f16) -> u16 {
    v.to_bits() & HALF_ABS
}

/// The magnitude bits of a bf16.
#[inline(always)]
fn bf16_abs(v: bf16) -> u16 {
    v.to_bits() & HALF_ABS
}

/// The fused loop: per chunk, the maximum of the magnitude bits `abs` (branch-free, so it
/// vectorizes); at or above `inf` the chunk holds a NaN or ∞, else its byte is
/// `exponent(max)`.
#[inline(always)]
fn scan<T: Copy, M: Copy + Ord + Default>(
    x: &[T],
    count: usize,
    exponents: &mut [u8],
    abs: impl Fn(T) -> M,
    inf: M,
    exponent: impl Fn(M) -> u8,
) -> Result<(), NonFinite> {
    let count = count.max(1);
    dispatch(
        #[inline(always)]
        || {
            let mut bytes = exponents.iter_mut();
            for (j, chunk) in x.chunks(count).enumerate() {
                let max = chunk.iter().fold(M::default(), |m, &v| m.max(abs(v)));
                if max >= inf {
                    let within = chunk.iter().position(|&v| abs(v) >= inf).unwrap_or(0);
                    return Err(NonFinite {
                        index: j * count + within,
                    });
                }
                if let Some(byte) = bytes.next() {
                    *byte = exponent(max);
                }
            }
            Ok(())
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::quant::{
        block_exponent_bf16, block_exponent_f16, block_exponent_f32, check_finite_f32, NO_EXPONENT,
    };

    extern crate std;
    use std::vec::Vec;

    #[test]
    fn writes_one_byte_per_chunk_the_last_one_short() {
        let x = [0.5f32, -3.0, 0.0, 0.0, 1e-40, 7.0, -0.25];
        let mut out = [0xaau8; 5];
        assert_eq!(finite_block_exponents_f32(&x, 2, &mut out), Ok(()));
        assert_eq!(
            out,
            [
                block_exponent_f32(&x[0..2]),
                NO_EXPONENT,
                block_exponent_f32(&x[4..6]),
                block_exponent_f32(&x[6..7]),
                0xaa
            ]
        );
        assert_eq!(out[..4], [129, 0, 130, 126]);
    }

    #[test]
    fn names_the_first_non_finite_element_like_check_finite() {
        let mut x = Vec::from_iter((0..300).map(|i| i as f32 - 150.0));
        x[211] = f32::NEG_INFINITY;
        x[250] = f32::NAN;
        let mut out = [0u8; 3];
        let err = finite_block_exponents_f32(&x, 100, &mut out);
        assert_eq!(err, Err(NonFinite { index: 211 }));
        assert_eq!(err, check_finite_f32(&x));
        // The chunks before the culprit's were written.
        let before = [
            block_exponent_f32(&x[..100]),
            block_exponent_f32(&x[100..200]),
        ];
        assert_eq!(out, [before[0], before[1], 0]);
    }

    #[test]
    fn checks_every_element_even_without_room_for_its_exponent() {
        let x = [1.0f32, 2.0, 3.0, f32::INFINITY];
        assert_eq!(
            finite_block_exponents_f32(&x, 1, &mut []),
            Err(NonFinite { index: 3 })
        );
        assert_eq!(finite_block_exponents_f32(&x[..3], 0, &mut []), Ok(()));
        let mut out = [0u8; 3];
        assert_eq!(finite_block_exponents_f32(&x[..3], 0, &mut out), Ok(()));
        assert_eq!(out, [128, 129, 129]);
        assert_eq!(finite_block_exponents_f32(&[], 4, &mut out), Ok(()));
    }

    #[test]
    fn half_types_use_their_own_infinity() {
        // 0x7c00 is +∞ in f16 but 2^121 in bf16, whose +∞ is 0x7f80.
        let mut out = [0u8; 2];
        let h = [f16::from_bits(0x7bff), f16::from_bits(0x7c00)];
        assert_eq!(
            finite_block_exponents_f16(&h, 1, &mut out),
            Err(NonFinite { index: 1 })
        );
        assert_eq!(out[0], block_exponent_f16(&h[..1]));
        let b = [bf16::from_bits(0x7c00), bf16::from_bits(0xff80)];
        assert_eq!(
            finite_block_exponents_bf16(&b, 1, &mut out),
            Err(NonFinite { index: 1 })
        );
        assert_eq!(out[0], block_exponent_bf16(&b[..1]));
        assert_eq!(
            finite_block_exponents_bf16(&[bf16::MAX, bf16::MIN], 2, &mut out),
            Ok(())
        );
        assert_eq!(out[0], 255);
    }
}
