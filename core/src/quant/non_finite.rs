//! Non-finite elements travel as flags, not values (protocol.md §5.4).
//!
//! A NaN or an infinity has no int32 image that survives a sum, so a worker sends it as 0
//! and says which kinds its chunk held (+∞, −∞, NaN) in the Contribution's flags; the
//! switch ORs the flags of every contribution into the Result. What comes back per chunk is
//! the set of kinds that any rank's chunk held, not where: so every rank writes, over the
//! whole chunk, the value IEEE addition gives for a sum holding those kinds — NaN if any
//! NaN or both infinities, else the infinity there is ([`NonFiniteKinds::sum_f32`]). Every
//! rank does the same from the same Result, so `isfinite` is false on every rank for the
//! same elements, which is what `torch.cuda.amp.GradScaler` needs to skip a step on all of
//! them; where IEEE addition would give ±∞ or NaN, this gives the same.

use half::{bf16, f16};

use super::exponent::{BF16_INF, F16_INF, F32_ABS, F32_INF, HALF_ABS};

/// Which kinds of non-finite value a chunk holds (or, from a Result, any rank's chunk held).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct NonFiniteKinds {
    /// A +∞.
    pub pos_inf: bool,
    /// A −∞.
    pub neg_inf: bool,
    /// A NaN (of either sign, quiet or signalling).
    pub nan: bool,
}

impl NonFiniteKinds {
    /// No non-finite value.
    pub const NONE: NonFiniteKinds = NonFiniteKinds {
        pos_inf: false,
        neg_inf: false,
        nan: false,
    };

    /// Return whether no kind is set.
    pub const fn is_empty(self) -> bool {
        !(self.pos_inf || self.neg_inf || self.nan)
    }

    /// Return the kinds set in either.
    #[must_use]
    pub const fn union(self, other: NonFiniteKinds) -> NonFiniteKinds {
        NonFiniteKinds {
            pos_inf: self.pos_inf || other.pos_inf,
            neg_inf: self.neg_inf || other.neg_inf,
            nan: self.nan || other.nan,
        }
    }

    /// Return the kinds among the f32 `values`.
    pub fn of_f32(values: &[f32]) -> NonFiniteKinds {
        kinds(
            values.iter().map(|v| v.to_bits()),
            F32_ABS,
            F32_INF,
            1 << 31,
        )
    }

    /// Return the kinds among the f16 `values`.
    pub fn of_f16(values: &[f16]) -> NonFiniteKinds {
        let bits = values.iter().map(|v| u32::from(v.to_bits()));
        kinds(bits, HALF_ABS.into(), F16_INF.into(), 1 << 15)
    }

    /// Return the kinds among the bf16 `values`.
    pub fn of_bf16(values: &[bf16]) -> NonFiniteKinds {
        let bits = values.iter().map(|v| u32::from(v.to_bits()));
        kinds(bits, HALF_ABS.into(), BF16_INF.into(), 1 << 15)
    }

    /// Return what IEEE addition gives for a sum (or average) whose terms hold these
    /// kinds and otherwise finite values: the canonical quiet NaN (sign clear) if any is a
    /// NaN or both infinities occur (∞ − ∞), else the infinity there is; `None` if none.
    pub fn sum_f32(self) -> Option<f32> {
        if self.nan || (self.pos_inf && self.neg_inf) {
            Some(f32::NAN)
        } else if self.pos_inf {
            Some(f32::INFINITY)
        } else if self.neg_inf {
            Some(f32::NEG_INFINITY)
        } else {
            None
        }
    }

    /// [`sum_f32`](Self::sum_f32) in f16 (NaN is `0x7E00`).
    pub fn sum_f16(self) -> Option<f16> {
        self.sum_f32().map(|v| {
            if v.is_nan() {
                f16::NAN
            } else {
                f16::from_f32(v)
            }
        })
    }

    /// [`sum_f32`](Self::sum_f32) in bf16 (NaN is `0x7FC0`).
    pub fn sum_bf16(self) -> Option<bf16> {
        self.sum_f32().map(|v| {
            if v.is_nan() {
                bf16::NAN
            } else {
                bf16::from_f32(v)
            }
        })
    }
}

/// The kinds among IEEE bit patterns `bits` whose magnitude mask is `abs`, infinity
/// magnitude `inf` and sign bit `sign`.
fn kinds(bits: impl Iterator<Item = u32>, abs: u32, inf: u32, sign: u32) -> NonFiniteKinds {
    bits.fold(NonFiniteKinds::NONE, |k, b| {
        let (a, negative) = (b & abs, b & sign != 0);
        NonFiniteKinds {
            pos_inf: k.pos_inf || (a == inf && !negative),
            neg_inf: k.neg_inf || (a == inf && negative),
            nan: k.nan || a > inf,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const NONE: NonFiniteKinds = NonFiniteKinds::NONE;
    const POS: NonFiniteKinds = NonFiniteKinds {
        pos_inf: true,
        ..NONE
    };
    const NEG: NonFiniteKinds = NonFiniteKinds {
        neg_inf: true,
        ..NONE
    };
    const NAN: NonFiniteKinds = NonFiniteKinds { nan: true, ..NONE };

    #[test]
    fn kinds_are_found_in_every_float_type() {
        assert_eq!(NonFiniteKinds::of_f32(&[1.0, f32::MAX, -0.0]), NONE);
        assert_eq!(NonFiniteKinds::of_f32(&[1.0, f32::INFINITY]), POS);
        assert_eq!(NonFiniteKinds::of_f32(&[f32::NEG_INFINITY, 2.0]), NEG);
        assert_eq!(NonFiniteKinds::of_f32(&[-f32::NAN]), NAN);
        assert_eq!(NonFiniteKinds::of_f16(&[f16::MAX, f16::INFINITY]), POS);
        assert_eq!(NonFiniteKinds::of_f16(&[f16::NEG_INFINITY]), NEG);
        assert_eq!(NonFiniteKinds::of_f16(&[f16::from_bits(0x7c01)]), NAN);
        assert_eq!(
            NonFiniteKinds::of_bf16(&[bf16::MAX, bf16::NEG_INFINITY]),
            NEG
        );
        assert_eq!(NonFiniteKinds::of_bf16(&[bf16::INFINITY]), POS);
        assert_eq!(
            NonFiniteKinds::of_bf16(&[bf16::NAN, bf16::INFINITY]),
            NAN.union(POS)
        );
    }

    #[test]
    fn the_sum_is_what_ieee_addition_gives() {
        assert_eq!(NONE.sum_f32(), None);
        assert_eq!(POS.sum_f32(), Some(1.0 + f32::INFINITY));
        assert_eq!(NEG.sum_f32(), Some(f32::NEG_INFINITY - 1.0));
        let both = POS.union(NEG).sum_f32().map(f32::to_bits);
        assert_eq!(both, Some(0x7fc0_0000), "+∞ + −∞ is NaN");
        assert_eq!(
            NAN.union(POS).sum_f32().map(f32::to_bits),
            Some(0x7fc0_0000)
        );
        assert_eq!(POS.sum_f16(), Some(f16::INFINITY));
        assert_eq!(NEG.sum_bf16(), Some(bf16::NEG_INFINITY));
        assert_eq!(NAN.sum_f16().map(f16::to_bits), Some(0x7e00));
        assert_eq!(POS.union(NEG).sum_bf16().map(bf16::to_bits), Some(0x7fc0));
    }
}
