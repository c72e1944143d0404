//! A caller's tensor of any supported element type, seen through one enum.
//!
//! The worker streams a tensor chunk by chunk: for each chunk it asks for the block exponent,
//! encodes the payload, and later overwrites the same elements with the decoded result. A
//! [`Tensor`] may keep room for the exponents of all its chunks ([`WithExponents`]); the
//! worker then finds them, and checks the tensor finite, in one pass when it is submitted
//! ([`Elements::finite_block_exponents`]) and reads each chunk's byte from there.
//! Every `range` given here is clamped to the tensor (`start` and `end` to at most `len`,
//! `end` to at least `start`), so an out-of-range request touches fewer elements or none,
//! and never panics.

use core::ops::Range;

use half::{bf16, f16};

use super::exponent::{
    block_exponent_bf16, block_exponent_f16, block_exponent_f32, check_finite_bf16,
    check_finite_f16, check_finite_f32, NO_EXPONENT,
};
use super::int32::{decode_i32, encode_i32};
use super::non_finite::NonFiniteKinds;
use super::scale::Scale;
use super::scan::{
    finite_block_exponents_bf16, finite_block_exponents_f16, finite_block_exponents_f32,
};
use super::unscale::Unscale;
use super::{ElementType, NonFinite, Op};

/// A caller's tensor, borrowed mutably: all-reduce works in place.
#[derive(Debug)]
pub enum Elements<'a> {
    /// IEEE binary32 values, quantized per block.
    F32(&'a mut [f32]),
    /// int32 values, summed exactly without scaling.
    I32(&'a mut [i32]),
    /// IEEE binary16 values, quantized per block through f32.
    F16(&'a mut [f16]),
    /// bfloat16 values, quantized per block through f32.
    Bf16(&'a mut [bf16]),
}

/// The non-finite kinds of `x`, looked for only if the quantizer saw `any`.
fn kinds_if<T>(any: bool, x: &[T], of: fn(&[T]) -> NonFiniteKinds) -> NonFiniteKinds {
    if any {
        of(x)
    } else {
        NonFiniteKinds::NONE
    }
}

/// Set every element of `x` to `value`, if both are there.
fn fill<T: Copy>(x: Option<&mut [T]>, value: Option<T>) {
    if let (Some(x), Some(v)) = (x, value) {
        x.fill(v);
    }
}

/// Clamp `range` to `0..len`.
fn clamp(range: Range<usize>, len: usize) -> Range<usize> {
    let start = range.start.min(len);
    start..range.end.min(len).max(start)
}

impl<'a> Elements<'a> {
    /// Return the number of elements.
    pub fn len(&self) -> usize {
        match self {
            Elements::F32(x) => x.len(),
            Elements::I32(x) => x.len(),
            Elements::F16(x) => x.len(),
            Elements::Bf16(x) => x.len(),
        }
    }

    /// Return whether there are no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Return the element type.
    pub fn element_type(&self) -> ElementType {
        match self {
            Elements::F32(_) => ElementType::F32,
            Elements::I32(_) => ElementType::I32,
            Elements::F16(_) => ElementType::F16,
            Elements::Bf16(_) => ElementType::Bf16,
        }
    }

    /// Check that every element is finite (always `Ok` for int32).
    pub fn check_finite(&self) -> Result<(), NonFinite> {
        match self {
            Elements::F32(x) => check_finite_f32(x),
            Elements::I32(_) => Ok(()),
            Elements::F16(x) => check_finite_f16(x),
            Elements::Bf16(x) => check_finite_bf16(x),
        }
    }

    /// Return the block exponent of the elements in `range` (clamped; [`NO_EXPONENT`] for
    /// int32 and for an empty range).
    pub fn block_exponent(&self, range: Range<usize>) -> u8 {
        let r = clamp(range, self.len());
        match self {
            Elements::F32(x) => block_exponent_f32(x.get(r).unwrap_or_default()),
            Elements::I32(_) => NO_EXPONENT,
            Elements::F16(x) => block_exponent_f16(x.get(r).unwrap_or_default()),
            Elements::Bf16(x) => block_exponent_bf16(x.get(r).unwrap_or_default()),
        }
    }

    /// Check that every element is finite and write the block exponent of each chunk of
    /// `count` elements into `exponents`, in one pass (int32: always `Ok`, every byte
    /// [`NO_EXPONENT`]). The bytes are those of [`block_exponent`](Self::block_exponent) on
    /// each chunk's range, the error that of [`check_finite`](Self::check_finite); lengths
    /// as in [`finite_block_exponents_f32`].
    pub fn finite_block_exponents(
        &self,
        count: usize,
        exponents: &mut [u8],
    ) -> Result<(), NonFinite> {
        match self {
            Elements::F32(x) => finite_block_exponents_f32(x, count, exponents),
            Elements::I32(x) => {
                let chunks = x.len().div_ceil(count.max(1));
                exponents
                    .iter_mut()
                    .take(chunks)
                    .for_each(|e| *e = NO_EXPONENT);
                Ok(())
            }
            Elements::F16(x) => finite_block_exponents_f16(x, count, exponents),
            Elements::Bf16(x) => finite_block_exponents_bf16(x, count, exponents),
        }
    }

    /// Write the payload for elements `range` (clamped) into `dst`, 4 bytes per element:
    /// quantized with [`Scale::new`]`(world, exp_max)` for floats, plain big-endian for int32
    /// (`world` and `exp_max` ignored).
    ///
    /// If `dst` is shorter than 4 bytes per element, only the elements that fit are written;
    /// bytes of `dst` past the payload are left as they are.
    ///
    /// A NaN or ±∞ is written as 0; return the kinds the range held (protocol.md §5.4),
    /// found by a second look only at a range that holds one (never for int32).
    pub fn encode(
        &self,
        range: Range<usize>,
        world: u16,
        exp_max: u8,
        dst: &mut [u8],
    ) -> NonFiniteKinds {
        let r = clamp(range, self.len());
        let scale = Scale::new(world, exp_max);
        match self {
            Elements::F32(x) => {
                let x = x.get(r).unwrap_or_default();
                let any = scale.quantize_f32(x, dst);
                kinds_if(any, x, NonFiniteKinds::of_f32)
            }
            Elements::I32(x) => {
                encode_i32(x.get(r).unwrap_or_default(), dst);
                NonFiniteKinds::NONE
            }
            Elements::F16(x) => {
                let x = x.get(r).unwrap_or_default();
                let any = scale.quantize_f16(x, dst);
                kinds_if(any, x, NonFiniteKinds::of_f16)
            }
            Elements::Bf16(x) => {
                let x = x.get(r).unwrap_or_default();
                let any = scale.quantize_bf16(x, dst);
                kinds_if(any, x, NonFiniteKinds::of_bf16)
            }
        }
    }

    /// [`encode`](Self::encode) for a range known to hold no NaN or ±∞ (its tensor was
    /// checked whole): the quantization's fast path, nothing looked for.
    pub fn encode_finite(&self, range: Range<usize>, world: u16, exp_max: u8, dst: &mut [u8]) {
        let r = clamp(range, self.len());
        let scale = Scale::new(world, exp_max);
        match self {
            Elements::F32(x) => scale.quantize_finite_f32(x.get(r).unwrap_or_default(), dst),
            Elements::I32(x) => encode_i32(x.get(r).unwrap_or_default(), dst),
            Elements::F16(x) => scale.quantize_finite_f16(x.get(r).unwrap_or_default(), dst),
            Elements::Bf16(x) => scale.quantize_finite_bf16(x.get(r).unwrap_or_default(), dst),
        }
    }

    /// Overwrite every element of `range` (clamped) with what IEEE addition gives for a
    /// sum holding `kinds` ([`NonFiniteKinds::sum_f32`]): a Result flagged non-finite
    /// (protocol.md §5.4). Nothing is written for int32 or when `kinds` is empty.
    pub fn fill_non_finite(&mut self, range: Range<usize>, kinds: NonFiniteKinds) {
        let r = clamp(range, self.len());
        match self {
            Elements::F32(x) => fill(x.get_mut(r), kinds.sum_f32()),
            Elements::I32(_) => {}
            Elements::F16(x) => fill(x.get_mut(r), kinds.sum_f16()),
            Elements::Bf16(x) => fill(x.get_mut(r), kinds.sum_bf16()),
        }
    }

    /// Overwrite elements `range` (clamped) with the summed payload `src`: dequantized with
    /// [`Unscale::new`]`(world, exp_max, op)` for floats, plain big-endian for int32 (where
    /// `op` is ignored: the worker rejects an average of int32 before sending anything).
    ///
    /// If `src` holds fewer values than the range, only that many elements are overwritten.
    ///
    /// Return the first element (its index in the tensor) whose float sum lies beyond the
    /// element type's range and was written as ±∞ (protocol.md §5.2); never for int32,
    /// whose overflow the switch flags.
    pub fn decode(
        &mut self,
        range: Range<usize>,
        world: u16,
        exp_max: u8,
        op: Op,
        src: &[u8],
    ) -> Option<usize> {
        let r = clamp(range, self.len());
        let start = r.start;
        let unscale = Unscale::new(world, exp_max, op);
        let within = match self {
            Elements::F32(x) => unscale.dequantize_f32(src, x.get_mut(r).unwrap_or_default()),
            Elements::I32(x) => {
                decode_i32(src, x.get_mut(r).unwrap_or_default());
                None
            }
            Elements::F16(x) => unscale.dequantize_f16(src, x.get_mut(r).unwrap_or_default()),
            Elements::Bf16(x) => unscale.dequantize_bf16(src, x.get_mut(r).unwrap_or_default()),
        };
        within.map(|i| start + i)
    }
}

/// What the worker holds: a tensor it can view as [`Elements`].
///
/// Implemented for the slices and arrays of the four element types, for `&mut T` of any
/// `Tensor` (so `&mut [f32]`, `&mut Vec<f32>` …), for [`Elements`] itself, and with feature
/// `std` for `Vec<f32>`, `Vec<i32>`, `Vec<f16>` and `Vec<bf16>`.
pub trait Tensor {
    /// Return the elements, borrowed for as long as `self` is.
    fn elements(&mut self) -> Elements<'_>;

    /// Return the elements and, if the tensor keeps one, its exponent cache: room for the
    /// block exponent of each of its chunks, one byte per chunk. The default keeps none.
    ///
    /// When a float tensor's cache has a byte for every chunk, the worker fills it in the
    /// same pass as the finiteness check at [`submit`](crate::worker::Worker::submit) and
    /// reads each chunk's exponent from it instead of scanning the chunk again; without
    /// one, it scans each chunk as it sends it. The worker owns the bytes while it holds the
    /// tensor: return the same bytes at every call, and change them only as the worker says
    /// (see [`submit_scanned`](crate::worker::Worker::submit_scanned)). [`WithExponents`]
    /// adds a cache to any tensor.
    fn elements_and_exponents(&mut self) -> (Elements<'_>, Option<&mut [u8]>) {
        (self.elements(), None)
    }
}

impl<T: Tensor + ?Sized> Tensor for &mut T {
    fn elements(&mut self) -> Elements<'_> {
        (**self).elements()
    }

    fn elements_and_exponents(&mut self) -> (Elements<'_>, Option<&mut [u8]>) {
        (**self).elements_and_exponents()
    }
}

/// A tensor with an exponent cache ([`Tensor::elements_and_exponents`]): `tensor`'s
/// elements and the bytes of `exponents`, which need one byte per chunk of the worker's
/// `count` elements (`len.div_ceil(count)`) to be used: a `[u8; N]`, a `&mut [u8]` or a
/// `Vec<u8>`, reused from one submission to the next.
#[derive(Debug)]
pub struct WithExponents<T, E> {
    /// The tensor.
    pub tensor: T,
    /// The room for its chunks' exponents.
    pub exponents: E,
}

impl<T: Tensor, E: AsMut<[u8]>> Tensor for WithExponents<T, E> {
    fn elements(&mut self) -> Elements<'_> {
        self.tensor.elements()
    }

    fn elements_and_exponents(&mut self) -> (Elements<'_>, Option<&mut [u8]>) {
        (self.tensor.elements(), Some(self.exponents.as_mut()))
    }
}

impl Tensor for Elements<'_> {
    fn elements(&mut self) -> Elements<'_> {
        match self {
            Elements::F32(x) => Elements::F32(x),
            Elements::I32(x) => Elements::I32(x),
            Elements::F16(x) => Elements::F16(x),
            Elements::Bf16(x) => Elements::Bf16(x),
        }
    }
}

/// `Tensor` for a slice, an array and (with `std`) a `Vec` of one element type.
macro_rules! tensor_impls {
    ($t:ty, $variant:ident) => {
        impl Tensor for [$t] {
            fn elements(&mut self) -> Elements<'_> {
                Elements::$variant(self)
            }
        }

        impl<const N: usize> Tensor for [$t; N] {
            fn elements(&mut self) -> Elements<'_> {
                Elements::$variant(self)
            }
        }

        #[cfg(feature = "std")]
        impl Tensor for std::vec::Vec<$t> {
            fn elements(&mut self) -> Elements<'_> {
                Elements::$variant(self)
            }
        }
    };
}

tensor_impls!(f32, F32);
tensor_impls!(i32, I32);
tensor_impls!(f16, F16);
tensor_impls!(bf16, Bf16);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_finite_fast_path_writes_the_same_bytes_as_the_checking_one() {
        let mut x: std::vec::Vec<f32> = (0..300).map(|i| (i as f32 - 150.0) * 0.37).collect();
        let t = Elements::F32(&mut x[..]);
        for exp in [0u8, 120, 127, 135, 200, 254] {
            let (mut fast, mut checked) = ([0u8; 4 * 300], [0u8; 4 * 300]);
            t.encode_finite(0..300, 5, exp, &mut fast);
            let kinds = t.encode(0..300, 5, exp, &mut checked);
            assert_eq!(kinds, NonFiniteKinds::NONE);
            assert_eq!(fast, checked, "exp {exp}");
        }
    }

    extern crate std;
    use std::vec::Vec;

    fn view<T: Tensor + ?Sized>(t: &mut T) -> Elements<'_> {
        t.elements()
    }

    #[test]
    fn views_report_type_and_length() {
        let mut a = [1.0f32, 2.0, 3.0];
        let mut b: Vec<i32> = (1..3).collect();
        let mut c = [f16::ONE; 4];
        let mut d: Vec<bf16> = Vec::new();
        assert_eq!(view(&mut a).element_type(), ElementType::F32);
        assert_eq!(view(&mut a[..]).len(), 3);
        assert_eq!(view(&mut b[..]).element_type(), ElementType::I32);
        assert_eq!(view(&mut &mut c[..]).len(), 4);
        assert_eq!(view(&mut c).element_type(), ElementType::F16);
        assert!(view(&mut d[..]).is_empty());
        assert_eq!(view(&mut d[..]).element_type(), ElementType::Bf16);
        let mut e = Elements::F32(&mut a);
        assert_eq!(e.elements().len(), 3);
    }

    #[cfg(feature = "std")]
    #[test]
    fn vectors_are_tensors() {
        let mut v = std::vec![1.0f32, 2.0];
        assert_eq!(v.elements().element_type(), ElementType::F32);
        let mut w: Vec<bf16> = std::vec![bf16::ONE; 3];
        assert_eq!(view(&mut w).len(), 3);
        assert_eq!(
            Vec::<i32>::new().elements().element_type(),
            ElementType::I32
        );
        assert_eq!(
            std::vec![f16::ONE].elements().element_type(),
            ElementType::F16
        );
    }

    #[test]
    fn float_encode_decode_uses_scale_and_unscale() {
        let mut x = [0.25f32, -1.5, 3.0, 0.0, 7.75];
        let mut t = Elements::F32(&mut x);
        let exp = t.block_exponent(1..4);
        assert_eq!(exp, block_exponent_f32(&[-1.5, 3.0, 0.0]));
        let mut payload = [0u8; 12];
        t.encode(1..4, 3, exp, &mut payload);
        let mut want = [0u8; 12];
        Scale::new(3, exp).quantize_f32(&[-1.5, 3.0, 0.0], &mut want);
        assert_eq!(payload, want);
        t.decode(1..4, 1, exp, Op::Sum, &payload);
        let mut y = [0.0f32; 3];
        Unscale::new(1, exp, Op::Sum).dequantize_f32(&payload, &mut y);
        assert_eq!(x, [0.25, y[0], y[1], y[2], 7.75]);
    }

    #[test]
    fn decode_names_the_first_overflowed_element_of_the_tensor() {
        let big = 1_900_000_000i32;
        let payload: Vec<u8> = [1, big, big].iter().flat_map(|s| s.to_be_bytes()).collect();
        let mut x = [0.0f32; 6];
        assert_eq!(
            Elements::F32(&mut x).decode(3..6, 4, 255, Op::Sum, &payload),
            Some(4)
        );
        assert_eq!(x[4], f32::INFINITY);
        let mut h = [f16::ZERO; 4];
        let mut t = Elements::F16(&mut h);
        assert_eq!(t.decode(1..4, 4, 127 + 16, Op::Sum, &payload), Some(2));
        assert_eq!(t.decode(1..4, 4, 100, Op::Sum, &payload), None);
        let mut i = [0i32; 3];
        assert_eq!(
            Elements::I32(&mut i).decode(0..3, 4, 255, Op::Sum, &payload),
            None
        );
    }

    #[test]
    fn int32_encode_decode_is_plain() {
        let mut x = [5i32, -2, 9];
        let mut t = Elements::I32(&mut x);
        assert_eq!(t.block_exponent(0..3), NO_EXPONENT);
        assert_eq!(t.check_finite(), Ok(()));
        let mut payload = [0u8; 8];
        t.encode(1..3, 7, 200, &mut payload);
        assert_eq!(payload, [0xff, 0xff, 0xff, 0xfe, 0, 0, 0, 9]);
        t.decode(0..2, 7, 200, Op::Average, &payload);
        assert_eq!(x, [-2, 9, 9]);
        let mut exps = [0xaau8; 3];
        assert_eq!(
            Elements::I32(&mut x).finite_block_exponents(2, &mut exps),
            Ok(())
        );
        assert_eq!(exps, [NO_EXPONENT, NO_EXPONENT, 0xaa]);
    }

    #[test]
    fn only_a_tensor_with_exponents_offers_a_cache() {
        let mut x = [1.0f32, -6.0, 0.5];
        assert!(view(&mut x).len() == 3);
        assert!(x.elements_and_exponents().1.is_none());
        let mut t = WithExponents {
            tensor: &mut x[..],
            exponents: [0u8; 2],
        };
        // Through `&mut T`'s forwarding impl.
        let mut by_ref = &mut t;
        let (elements, cache) = Tensor::elements_and_exponents(&mut by_ref);
        let cache = cache.unwrap();
        assert_eq!(elements.finite_block_exponents(2, cache), Ok(()));
        assert_eq!(t.exponents, [130, 127]);
        assert_eq!(t.elements().block_exponent(0..2), 130);
        let mut f = [f32::NAN];
        let mut e = Elements::F32(&mut f);
        let (elements, cache) = e.elements_and_exponents();
        assert!(cache.is_none());
        assert_eq!(
            elements.finite_block_exponents(1, &mut []),
            Err(NonFinite { index: 0 })
        );
    }

    #[test]
    fn half_types_go_through_f32() {
        let mut h = [f16::from_f32(1.5), f16::from_f32(-0.25)];
        let mut t = Elements::F16(&mut h);
        let exp = t.block_exponent(0..2);
        assert_eq!(exp, exponent_of_f32(1.5));
        let mut payload = [0u8; 8];
        t.encode(0..2, 2, exp, &mut payload);
        let mut want = [0u8; 8];
        Scale::new(2, exp).quantize_f32(&[1.5, -0.25], &mut want);
        assert_eq!(payload, want);
        t.decode(0..2, 2, exp, Op::Average, &payload);
        assert_eq!(h, [f16::from_f32(0.75), f16::from_f32(-0.125)]);

        let mut b = [bf16::from_f32(2.0), bf16::NAN];
        let t = Elements::Bf16(&mut b);
        assert_eq!(t.check_finite(), Err(NonFinite { index: 1 }));
    }

    fn exponent_of_f32(x: f32) -> u8 {
        crate::quant::exponent_of(x)
    }

    #[test]
    fn out_of_range_ranges_are_clamped() {
        let mut x = [1.0f32; 5];
        let mut t = Elements::F32(&mut x);
        let mut payload = [0xaau8; 40];
        // 3..10 clamps to 3..5: two values written, the rest of the payload untouched.
        t.encode(3..10, 1, 128, &mut payload);
        assert_eq!(payload[8..], [0xaa; 32]);
        #[allow(clippy::reversed_empty_ranges)]
        let backwards = 4..2;
        t.encode(backwards.clone(), 1, 128, &mut payload);
        t.encode(usize::MAX..usize::MAX, 1, 128, &mut payload);
        assert_eq!(t.block_exponent(backwards.clone()), NO_EXPONENT);
        assert_eq!(t.block_exponent(9..12), NO_EXPONENT);
        t.decode(backwards, 1, 128, Op::Sum, &payload);
        t.decode(4..usize::MAX, 1, 0, Op::Sum, &payload);
        t.decode(0..5, 1, 128, Op::Sum, &payload[..3]);
        assert_eq!(x, [1.0, 1.0, 1.0, 1.0, 0.0]);

        let mut i = [1i32; 3];
        let mut t = Elements::I32(&mut i);
        t.encode(2..9, 1, 0, &mut payload);
        t.decode(1..9, 1, 0, Op::Sum, &[0, 0, 0, 4]);
        assert_eq!(i, [1, 4, 1]);
    }
}
