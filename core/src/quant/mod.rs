//! Block floating point: floats to int32 and back (`docs/protocol.md` §5).
//!
//! A switch adds integers; workers train with floats. SwitchML (Sapio et al., *Scaling
//! Distributed Machine Learning with In-Network Aggregation*, NSDI'21) bridges the two by
//! having every worker scale its floats by a factor that all workers share and convert them
//! to int32, the switch sum the int32, and every worker scale the sum back. The factor must
//! be large, for precision, but small enough that the `n`-way sum cannot overflow int32.
//!
//! Here the factor comes from a *block exponent*, as in block floating point: each chunk
//! ("block") of a tensor has one exponent, the smallest `e` with `max|x| < 2^e` over the
//! block ([`exponent_of`], [`block_exponent_f32`]), sent as one biased byte. The switch
//! returns the maximum `e_max` over all workers' blocks, one use of the slot ahead (§5.3),
//! and then every worker maps `[-2^e_max, 2^e_max]` onto `[-L, L]` with
//! `L = 2^(31−p) − 1`, `p = max(1, ⌈log₂ n⌉)` ([`Scale`]), so that the sum of `n` values fits.
//! The summed int32 come back and are mapped onto floats again ([`Unscale`]), as a sum or an
//! average. A summed element is off from the exact sum by at most `n` units of
//! `2^(e_max + p − 31)`, plus the rounding to f32.
//!
//! Every scale factor is a power of two, so the scaling is exact in f32 and the arithmetic
//! is specified to the bit with plain IEEE binary32 operations: every implementation — this
//! crate, the P4 model, SmartNIC firmware — sends and reads the same integers. (SwitchML's
//! `⌊(2³¹ − 1) / n⌋ / 2^e_max` uses up to one more bit of the int32 range when `n` is not a
//! power of two, but needs binary64 products to be reproducible, at half the vector width.) [`Scale::quantize_value`] and [`Unscale::dequantize_value`] spell the
//! arithmetic out for one value; the slice functions compute the same bits in loops the
//! compiler vectorizes, which `switchml_dispatch` compiles for AVX2 too and picks at run
//! time, so that a build for the x86-64 baseline runs on any x86-64 CPU and eight lanes
//! wide on one with AVX2.
//!
//! f16 and bf16 go through f32 (exactly) on the way in and are rounded on the way out.
//! int32 tensors are sent as they are ([`encode_i32`]); the sum is exact or flagged as
//! overflowed by the switch. A float sum beyond its type's range comes back as ±∞, and the
//! slice dequantizers say where, so that the worker reports it as an overflow too.
//! [`Elements`] and [`Tensor`] let the worker handle all four element types through one
//! interface. Non-finite floats cannot be quantized meaningfully: they are sent as 0, the
//! block exponent ignores them, and the chunk says which kinds it held
//! ([`NonFiniteKinds`]), so that every rank writes the non-finite value IEEE addition
//! would give over that chunk (protocol.md §5.4). A worker may refuse them instead
//! ([`check_finite_f32`]) before anything is sent. The check and the exponents of every
//! chunk can come from one pass over the tensor ([`finite_block_exponents_f32`]), which
//! the worker makes when a tensor keeps room for the exponents ([`WithExponents`]).
//!
//! ```
//! use switchml_core::quant::{block_exponent_f32, decode_i32, encode_i32, Op, Scale, Unscale};
//!
//! // Two workers' blocks; the switch returns the larger exponent.
//! let (a, b) = ([0.5f32, -1.25, 3.0], [0.25f32, 1.0, -0.5]);
//! let exp_max = block_exponent_f32(&a).max(block_exponent_f32(&b));
//! let scale = Scale::new(2, exp_max);
//! let (mut pa, mut pb) = ([0u8; 12], [0u8; 12]);
//! scale.quantize_f32(&a, &mut pa);
//! scale.quantize_f32(&b, &mut pb);
//!
//! // The switch adds the int32 values.
//! let (mut qa, mut qb) = ([0i32; 3], [0i32; 3]);
//! decode_i32(&pa, &mut qa);
//! decode_i32(&pb, &mut qb);
//! let sum = [qa[0] + qb[0], qa[1] + qb[1], qa[2] + qb[2]];
//! let mut result = [0u8; 12];
//! encode_i32(&sum, &mut result);
//!
//! let mut y = [0.0f32; 3];
//! Unscale::new(2, exp_max, Op::Sum).dequantize_f32(&result, &mut y);
//! for (y, exact) in y.iter().zip([0.75f32, -0.25, 2.5]) {
//!     assert!((y - exact).abs() < 1e-8);
//! }
//! ```

mod elements;
mod exponent;
mod int32;
mod non_finite;
mod scale;
mod scan;
mod unscale;

#[cfg(test)]
mod aggregate_tests;

use core::fmt;

pub use elements::{Elements, Tensor, WithExponents};
pub use exponent::{
    block_exponent_bf16, block_exponent_f16, block_exponent_f32, check_finite_bf16,
    check_finite_f16, check_finite_f32, exponent_of, exponent_value, NO_EXPONENT,
};
pub use int32::{decode_i32, encode_i32};
pub use non_finite::NonFiniteKinds;
pub use scale::Scale;
pub use scan::{
    finite_block_exponents_bf16, finite_block_exponents_f16, finite_block_exponents_f32,
};
pub use unscale::Unscale;

/// The reduction an all-reduce computes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Op {
    /// The element-wise sum over all workers.
    Sum,
    /// The element-wise sum divided by the world size (floats only).
    Average,
}

/// The element type of a tensor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum ElementType {
    /// IEEE binary32.
    F32,
    /// Two's complement 32-bit integers.
    I32,
    /// IEEE binary16.
    F16,
    /// bfloat16 (the top half of a binary32).
    Bf16,
}

impl fmt::Display for ElementType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ElementType::F32 => "f32",
            ElementType::I32 => "int32",
            ElementType::F16 => "f16",
            ElementType::Bf16 => "bf16",
        })
    }
}

/// A non-finite input, reported before anything is sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct NonFinite {
    /// The index of the first NaN or infinite element.
    pub index: usize,
}

impl fmt::Display for NonFinite {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "element {} is NaN or infinite", self.index)
    }
}

#[cfg(feature = "std")]
impl std::error::Error for NonFinite {}

#[cfg(test)]
mod tests {
    use super::*;

    extern crate std;
    use std::string::ToString;

    #[test]
    fn non_finite_displays_its_index() {
        assert_eq!(
            NonFinite { index: 17 }.to_string(),
            "element 17 is NaN or infinite"
        );
    }
}
