//! All-reduce and broadcast over the host [`Ring`]: what the communicator does when it
//! falls back from the switch.
//!
//! The all-reduce is the classic ring: the tensor is cut into `P` segments; in `P − 1`
//! reduce-scatter steps each rank passes partial sums to its right neighbour and adds what
//! comes from its left, so that rank `r` ends with segment `r + 1 mod P` summed over every
//! rank; it rounds that segment to the element type once, and `P − 1` all-gather steps
//! pass the rounded segments around. Every rank therefore holds the same bits. Partial
//! sums travel as f32 for every float type (f16 and bf16 are summed in f32, like the switch
//! path's quantization through f32) and as i64 for i32, so an i32 sum is exact and an
//! overflow is found, at the segment's owner, and reported by every rank
//! ([`Error::Overflow`]). `Average` divides the f32 sum by `P` before rounding; for i32 it
//! is the sum, as on the switch path.

use std::any::Any;

use half::{bf16, f16};
use switchml_core::quant::{ElementType, Elements, Op};

use crate::error::Error;
use crate::ring::{Kind, Ring};

/// A copy of a tensor's values, typed.
#[derive(Debug, Clone, PartialEq)]
pub enum Values {
    /// 32-bit floats.
    F32(Vec<f32>),
    /// 32-bit integers.
    I32(Vec<i32>),
    /// IEEE half-precision floats.
    F16(Vec<f16>),
    /// bfloat16 floats.
    Bf16(Vec<bf16>),
}

/// "No overflow" in an all-gather frame.
const NO_OVERFLOW: u64 = u64::MAX;

impl Values {
    /// Copy a tensor.
    pub fn copy_of(e: Elements<'_>) -> Values {
        match e {
            Elements::F32(x) => Values::F32(x.to_vec()),
            Elements::I32(x) => Values::I32(x.to_vec()),
            Elements::F16(x) => Values::F16(x.to_vec()),
            Elements::Bf16(x) => Values::Bf16(x.to_vec()),
        }
    }

    /// Copy a tensor into this buffer, reusing it; false if the types or lengths differ.
    pub fn copy_from(&mut self, e: Elements<'_>) -> bool {
        match (self, e) {
            (Values::F32(v), Elements::F32(x)) if v.len() == x.len() => v.copy_from_slice(x),
            (Values::I32(v), Elements::I32(x)) if v.len() == x.len() => v.copy_from_slice(x),
            (Values::F16(v), Elements::F16(x)) if v.len() == x.len() => v.copy_from_slice(x),
            (Values::Bf16(v), Elements::Bf16(x)) if v.len() == x.len() => v.copy_from_slice(x),
            _ => return false,
        }
        true
    }

    /// Write these values into a tensor of the same type and length; false if they differ.
    pub fn write_to(&self, e: Elements<'_>) -> bool {
        match (self, e) {
            (Values::F32(v), Elements::F32(x)) if v.len() == x.len() => x.copy_from_slice(v),
            (Values::I32(v), Elements::I32(x)) if v.len() == x.len() => x.copy_from_slice(v),
            (Values::F16(v), Elements::F16(x)) if v.len() == x.len() => x.copy_from_slice(v),
            (Values::Bf16(v), Elements::Bf16(x)) if v.len() == x.len() => x.copy_from_slice(v),
            _ => return false,
        }
        true
    }

    /// Copy the vector an owned submission holds (an `allreduce_async` tensor).
    pub fn of_owner(owner: &(dyn Any + Send)) -> Option<Values> {
        if let Some(v) = owner.downcast_ref::<Vec<f32>>() {
            return Some(Values::F32(v.clone()));
        }
        if let Some(v) = owner.downcast_ref::<Vec<i32>>() {
            return Some(Values::I32(v.clone()));
        }
        if let Some(v) = owner.downcast_ref::<Vec<f16>>() {
            return Some(Values::F16(v.clone()));
        }
        owner
            .downcast_ref::<Vec<bf16>>()
            .map(|v| Values::Bf16(v.clone()))
    }

    /// Return the number of elements.
    pub fn len(&self) -> usize {
        match self {
            Values::F32(v) => v.len(),
            Values::I32(v) => v.len(),
            Values::F16(v) => v.len(),
            Values::Bf16(v) => v.len(),
        }
    }

    /// Return whether there are no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Return the element type.
    pub fn element(&self) -> ElementType {
        match self {
            Values::F32(_) => ElementType::F32,
            Values::I32(_) => ElementType::I32,
            Values::F16(_) => ElementType::F16,
            Values::Bf16(_) => ElementType::Bf16,
        }
    }

    /// Return the bytes of one element.
    pub fn width(&self) -> usize {
        match self {
            Values::F32(_) | Values::I32(_) => 4,
            Values::F16(_) | Values::Bf16(_) => 2,
        }
    }

    /// Append elements `r` as little-endian bytes.
    fn encode(&self, r: std::ops::Range<usize>, out: &mut Vec<u8>) {
        match self {
            Values::F32(v) => put(&v[r], out, f32::to_le_bytes),
            Values::I32(v) => put(&v[r], out, i32::to_le_bytes),
            Values::F16(v) => put(&v[r], out, |x| x.to_bits().to_le_bytes()),
            Values::Bf16(v) => put(&v[r], out, |x| x.to_bits().to_le_bytes()),
        }
    }

    /// Overwrite elements from `at` with little-endian `bytes`.
    fn decode(&mut self, at: usize, bytes: &[u8]) {
        let w = |b: &[u8]| [b[0], b[1], b[2], b[3]];
        let h = |b: &[u8]| u16::from_le_bytes([b[0], b[1]]);
        match self {
            Values::F32(v) => v[at..]
                .iter_mut()
                .zip(bytes.chunks_exact(4))
                .for_each(|(x, b)| *x = f32::from_le_bytes(w(b))),
            Values::I32(v) => v[at..]
                .iter_mut()
                .zip(bytes.chunks_exact(4))
                .for_each(|(x, b)| *x = i32::from_le_bytes(w(b))),
            Values::F16(v) => v[at..]
                .iter_mut()
                .zip(bytes.chunks_exact(2))
                .for_each(|(x, b)| *x = f16::from_bits(h(b))),
            Values::Bf16(v) => v[at..]
                .iter_mut()
                .zip(bytes.chunks_exact(2))
                .for_each(|(x, b)| *x = bf16::from_bits(h(b))),
        }
    }
}

/// Partial sums: f32 for the float types, i64 for i32.
enum Sums {
    Float(Vec<f32>),
    Int(Vec<i64>),
}

impl Sums {
    fn of(v: &Values) -> Sums {
        match v {
            Values::F32(x) => Sums::Float(x.clone()),
            Values::F16(x) => Sums::Float(x.iter().map(|h| h.to_f32()).collect()),
            Values::Bf16(x) => Sums::Float(x.iter().map(|h| h.to_f32()).collect()),
            Values::I32(x) => Sums::Int(x.iter().map(|&i| i64::from(i)).collect()),
        }
    }

    fn width(&self) -> usize {
        match self {
            Sums::Float(_) => 4,
            Sums::Int(_) => 8,
        }
    }

    fn encode(&self, r: std::ops::Range<usize>) -> Vec<u8> {
        let mut out = Vec::new();
        match self {
            Sums::Float(s) => put(&s[r], &mut out, f32::to_le_bytes),
            Sums::Int(s) => put(&s[r], &mut out, i64::to_le_bytes),
        }
        out
    }

    /// Add little-endian partial sums into elements from `at`.
    fn add(&mut self, at: usize, bytes: &[u8]) {
        match self {
            Sums::Float(s) => s[at..]
                .iter_mut()
                .zip(bytes.chunks_exact(4))
                .for_each(|(x, b)| {
                    *x += f32::from_le_bytes([b[0], b[1], b[2], b[3]]);
                }),
            Sums::Int(s) => s[at..]
                .iter_mut()
                .zip(bytes.chunks_exact(8))
                .for_each(|(x, b)| {
                    let mut w = [0u8; 8];
                    w.copy_from_slice(b);
                    *x += i64::from_le_bytes(w);
                }),
        }
    }

    /// Round elements `r` into `v`; return the first that overflowed i32, if any.
    fn finish(
        &self,
        r: std::ops::Range<usize>,
        v: &mut Values,
        op: Op,
        world: u16,
    ) -> Option<usize> {
        let scale = match op {
            Op::Average => f32::from(world),
            Op::Sum => 1.0,
        };
        match (self, v) {
            (Sums::Float(s), Values::F32(x)) => r.for_each(|i| x[i] = s[i] / scale),
            (Sums::Float(s), Values::F16(x)) => r.for_each(|i| x[i] = f16::from_f32(s[i] / scale)),
            (Sums::Float(s), Values::Bf16(x)) => {
                r.for_each(|i| x[i] = bf16::from_f32(s[i] / scale))
            }
            (Sums::Int(s), Values::I32(x)) => {
                let mut overflow = None;
                for i in r {
                    x[i] = i32::try_from(s[i]).unwrap_or_else(|_| {
                        overflow.get_or_insert(i);
                        s[i] as i32
                    });
                }
                return overflow;
            }
            _ => {}
        }
        None
    }
}

/// Append `values` as little-endian bytes, `W` each (one pass the compiler can vectorize).
fn put<const W: usize, T: Copy>(values: &[T], out: &mut Vec<u8>, le: impl Fn(T) -> [u8; W]) {
    let at = out.len();
    out.resize(at + values.len() * W, 0);
    for (dst, &v) in out[at..].chunks_exact_mut(W).zip(values) {
        dst.copy_from_slice(&le(v));
    }
}

/// Elements of segment `i` of `P` of a tensor of `len`.
fn segment(len: usize, world: u16, i: u16) -> std::ops::Range<usize> {
    let (p, i) = (usize::from(world), usize::from(i));
    len * i / p..len * (i + 1) / p
}

impl Ring {
    /// All-reduce `v` in place across the ring as tensor number `tensor`.
    pub fn allreduce(&mut self, tensor: u64, v: &mut Values, op: Op) -> Result<(), Error> {
        let (p, r, len) = (self.world, self.rank, v.len());
        let mut sums = Sums::of(v);
        let wrap = |i: i32| (i.rem_euclid(i32::from(p))) as u16;
        for step in 0..i32::from(p) - 1 {
            let out = segment(len, p, wrap(i32::from(r) - step));
            let into = segment(len, p, wrap(i32::from(r) - step - 1));
            let got = self.exchange(
                Kind::Partial,
                tensor,
                &sums.encode(out),
                into.len() * sums.width(),
            )?;
            self.check_len(&got, into.len() * sums.width(), tensor)?;
            sums.add(into.start, &got);
        }
        let own = segment(len, p, wrap(i32::from(r) + 1));
        let mut overflow = sums
            .finish(own.clone(), v, op, p)
            .map_or(NO_OVERFLOW, |i| i as u64);
        let mut first = overflow;
        for step in 0..i32::from(p) - 1 {
            let out = segment(len, p, wrap(i32::from(r) + 1 - step));
            let into = segment(len, p, wrap(i32::from(r) - step));
            let mut payload = overflow.to_le_bytes().to_vec();
            v.encode(out, &mut payload);
            let want = 8 + into.len() * v.width();
            let got = self.exchange(Kind::Reduced, tensor, &payload, want)?;
            self.check_len(&got, want, tensor)?;
            let mut word = [0u8; 8];
            word.copy_from_slice(&got[..8]);
            overflow = u64::from_le_bytes(word);
            first = first.min(overflow);
            v.decode(into.start, &got[8..]);
        }
        match first {
            NO_OVERFLOW => Ok(()),
            index => Err(Error::Overflow {
                index: index as usize,
                element: v.element(),
            }),
        }
    }

    /// Give every rank rank `root`'s `v` (tensor number `tensor`): the root sends it
    /// right, and every other rank passes it on until it comes back to the root.
    pub fn broadcast(&mut self, tensor: u64, root: u16, v: &mut Values) -> Result<(), Error> {
        if self.world == 1 {
            return Ok(());
        }
        let want = v.len() * v.width();
        let mut bytes = Vec::with_capacity(want);
        if self.rank == root {
            v.encode(0..v.len(), &mut bytes);
            return self.send(Kind::Whole, tensor, &bytes);
        }
        let got = self.recv(Kind::Whole, tensor, want)?;
        self.check_len(&got, want, tensor)?;
        if self.right_rank() != root {
            self.send(Kind::Whole, tensor, &got)?;
        }
        v.decode(0, &got);
        Ok(())
    }

    /// Give every rank every rank's `mine`; return them in rank order.
    pub fn allgather(&mut self, mine: Vec<u8>) -> Result<Vec<Vec<u8>>, Error> {
        let p = usize::from(self.world);
        let mut all = vec![Vec::new(); p];
        all[usize::from(self.rank)] = mine;
        for step in 0..p.saturating_sub(1) {
            let out = (usize::from(self.rank) + p - step) % p;
            let into = (usize::from(self.rank) + p - step - 1) % p;
            let payload = std::mem::take(&mut all[out]);
            all[into] = self.exchange(Kind::Status, u64::MAX, &payload, 1 << 20)?;
            all[out] = payload;
        }
        Ok(all)
    }

    fn check_len(&self, got: &[u8], want: usize, tensor: u64) -> Result<(), Error> {
        if got.len() == want {
            return Ok(());
        }
        Err(Error::Config(format!(
            "fallback ring: rank {} sent {} bytes of tensor {tensor} where {want} were expected: \
             the ranks' tensors differ",
            self.left_rank(),
            got.len()
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segments_cover_the_tensor_once() {
        for len in [0, 1, 5, 64, 1001] {
            for p in 1..6u16 {
                let mut next = 0;
                for i in 0..p {
                    let s = segment(len, p, i);
                    assert_eq!(s.start, next);
                    next = s.end;
                }
                assert_eq!(next, len);
            }
        }
    }

    #[test]
    fn values_round_trip_through_bytes() {
        let mut v = Values::F16(vec![f16::from_f32(1.5), f16::from_f32(-2.0)]);
        let mut b = Vec::new();
        v.encode(0..2, &mut b);
        let copy = v.clone();
        v.decode(0, &[0; 4]);
        v.decode(0, &b);
        assert_eq!(v, copy);
    }

    #[test]
    fn an_int_sum_out_of_range_is_named() {
        let mut v = Values::I32(vec![0, 0]);
        let s = Sums::Int(vec![1, i64::from(i32::MAX) + 1]);
        assert_eq!(s.finish(0..2, &mut v, Op::Sum, 2), Some(1));
    }
}
