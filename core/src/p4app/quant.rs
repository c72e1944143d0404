//! The dialect's block floating point (protocol.md §8.4), which differs from ours (§5): the
//! exponent is a signed byte without a zero code, and the scale divides `INT32_MAX` by the
//! worker count rather than reserving `⌈log₂ n⌉` bits, so it is not a power of two.
//!
//! What coincides is shared: the exponent is our [`crate::quant::block_exponent_f32`] unbiased
//! (both are `E − 126` for IEEE exponent field `E`); only the all-zero block differs (−126
//! here, [`crate::quant::NO_EXPONENT`] there).

use crate::quant::{block_exponent_f32, check_finite_f32, exponent_value};

/// The exponent of an all-zero block (and of a block of subnormals).
pub const MIN_EXPONENT: i8 = -126;

/// Return the dialect's exponent of a block: `((bits(max |x|) & 0x7f800000) >> 23) − 126`,
/// −126 for an all-zero block; `None` when the block holds a NaN, an infinity or a value of
/// magnitude 2¹²⁷ or more, whose exponent (128) an int8 cannot carry (the original client
/// wraps it to −128 and overflows the sum).
pub fn block_exponent(block: &[f32]) -> Option<i8> {
    // Our exponent ignores non-finite values (they travel as flags, §5.4); this dialect
    // has no such flag, so they make a block unscalable.
    check_finite_f32(block).ok()?;
    let biased = block_exponent_f32(block);
    // Byte 255 is IEEE field 254 (e = 128) or a non-finite value: neither fits.
    match exponent_value(biased) {
        None => Some(MIN_EXPONENT),
        Some(e) => i8::try_from(e).ok(),
    }
}

/// Return `2^k` exactly as an f64, for `k` in the int8 range.
fn pow2(k: i8) -> f64 {
    f64::from_bits(((i64::from(k) + 1023) as u64) << 52)
}

/// The scale for one block: `INT32_MAX / (workers · 2^emax)`, rounded to an f32.
///
/// The original client computes in float32, and the captures tell which way: one worker
/// sends 33.0 with `emax` 6 as 33 · 2²⁵ = 1,107,296,256, the exact quotient
/// (33,554,431.98…) rounded to an f32, 2²⁵, times 33; with the exact quotient the product
/// rounds to 1,107,296,255. So the factor is the quotient rounded once to f32 (for a worker
/// count that is a power of two, a power of two: the same factor as our own
/// [`crate::quant::Scale`] where `p = log₂ n`) and the product is taken in f32.
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct P4appScale {
    factor: f32,
    /// `⌊INT32_MAX / workers⌋`: no value goes past it, so the sum of `workers` fits.
    limit: i32,
}

impl P4appScale {
    /// Make the scale for `workers` (0 is taken as 1) and the switch's max exponent.
    pub fn new(workers: u16, emax: i8) -> P4appScale {
        let n = i32::from(workers.max(1));
        P4appScale {
            factor: (f64::from(i32::MAX) / (f64::from(n) * pow2(emax))) as f32,
            limit: i32::MAX / n,
        }
    }

    /// Return the factor.
    pub fn factor(&self) -> f32 {
        self.factor
    }

    /// Quantize one value: `x · factor` in f32, rounded to the nearest integer (halves away
    /// from zero) and kept within `±⌊INT32_MAX / workers⌋`.
    ///
    /// With `|x| < 2^emax` the product stays below `2³¹ / workers` up to the two f32
    /// roundings; the clamp takes up those few units, so that the sum of `workers` values
    /// never wraps (the original client has no such clamp). Below 2²³ the product has a
    /// fraction, and which way the original rounds it the captures (small integers) do not
    /// show; to nearest is the more accurate choice.
    pub fn quantize_value(&self, x: f32) -> i32 {
        let y = f64::from(x * self.factor);
        // Adding ½ is exact for |y| < 2⁵², and `as` truncates toward zero (and saturates).
        let r = (y + if y < 0.0 { -0.5 } else { 0.5 }) as i64;
        r.clamp(-i64::from(self.limit), i64::from(self.limit)) as i32
    }

    /// Return a summed value scaled back: `s / factor`, rounded once to f32.
    pub fn dequantize_value(&self, s: i32) -> f32 {
        (f64::from(s) / f64::from(self.factor)) as f32
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exponents_match_the_dialects_formula() {
        // Computed by the formula for a few magnitudes.
        let by_formula = |m: f32| (((m.to_bits() & 0x7f80_0000) >> 23) as i32 - 126) as i8;
        for m in [1.0f32, 0.75, 3.0, 1e-30, 1e30, f32::MIN_POSITIVE, 1e-45] {
            assert_eq!(block_exponent(&[0.5 * m, -m]), Some(by_formula(m)), "{m}");
        }
        assert_eq!(block_exponent(&[0.0, -0.0]), Some(-126));
        assert_eq!(block_exponent(&[]), Some(-126));
        assert_eq!(block_exponent(&[1.7e38]), Some(127));
        assert_eq!(block_exponent(&[f32::MAX]), None);
        assert_eq!(block_exponent(&[f32::NAN]), None);
    }

    #[test]
    fn the_scale_is_int32_max_over_workers_times_two_to_the_exponent() {
        let s = P4appScale::new(3, 2);
        // 178,956,970.58… rounded to an f32.
        assert_eq!(s.factor(), 178_956_976.0);
        assert_eq!(s.quantize_value(1.0), 178_956_976);
        assert_eq!(s.quantize_value(0.5), 178_956_976 / 2);
        assert_eq!(s.quantize_value(-1.0), -s.quantize_value(1.0));
        assert!((s.dequantize_value(s.quantize_value(1.5)) - 1.5).abs() < 1e-8);
    }

    #[test]
    fn the_captured_client_rounds() {
        // float32-2workers.pcap, tsi 8: block 0 (emax 6) as 0x00000000, 0xff000000, …
        let s = P4appScale::new(2, 6);
        assert_eq!(s.quantize_value(0.0), 0);
        assert_eq!(s.quantize_value(-1.0), -0x0100_0000);
        assert_eq!(s.quantize_value(32.0), 0x2000_0000);
        // float32-1worker.pcap, tsi 8: 33.0 with emax 6 and one worker.
        assert_eq!(P4appScale::new(1, 6).quantize_value(33.0), 33 << 25);
    }

    #[test]
    fn the_largest_values_of_every_worker_sum_without_overflow() {
        for workers in [1u16, 2, 3, 5, 7, 40, 255, 256, 257, 1000, 1023, u16::MAX] {
            for emax in [-126i8, -3, 0, 1, 60, 127] {
                let s = P4appScale::new(workers, emax);
                // The largest f32 below 2^emax.
                let two_to_emax = ((i32::from(emax) + 127) as u32) << 23;
                let x = f32::from_bits(two_to_emax - 1);
                let q = i64::from(s.quantize_value(x));
                assert!(
                    q * i64::from(workers) <= i64::from(i32::MAX),
                    "{workers} {emax}"
                );
                assert!(q > 0);
                assert!(-q * i64::from(workers) >= -i64::from(i32::MAX));
            }
        }
    }
}
