//! A bucket of a rank's tensor: the unit a simulated rank hands its worker, filled with
//! values whose sum over the ranks is exact in the quantization, so that every result can
//! be checked.

use switchml_core::quant::{Elements, Tensor};

use crate::scenario::Dtype;

/// One bucket of a rank's tensor.
pub(crate) enum Bucket {
    F32(Vec<f32>),
    I32(Vec<i32>),
}

impl Tensor for Bucket {
    fn elements(&mut self) -> Elements<'_> {
        match self {
            Bucket::F32(v) => Elements::F32(v),
            Bucket::I32(v) => Elements::I32(v),
        }
    }
}

impl Bucket {
    /// A bucket of `len` elements, all `rank + 1` (scaled by 1/4 for f32: exact in the
    /// quantization, so the sum can be checked exactly).
    pub(crate) fn filled(dtype: Dtype, rank: usize, len: usize, reuse: Option<Bucket>) -> Bucket {
        match (dtype, reuse) {
            (Dtype::F32, Some(Bucket::F32(mut v))) => {
                v.clear();
                v.resize(len, (rank + 1) as f32 * 0.25);
                Bucket::F32(v)
            }
            (Dtype::I32, Some(Bucket::I32(mut v))) => {
                v.clear();
                v.resize(len, (rank + 1) as i32);
                Bucket::I32(v)
            }
            (Dtype::F32, _) => Bucket::F32(vec![(rank + 1) as f32 * 0.25; len]),
            (Dtype::I32, _) => Bucket::I32(vec![(rank + 1) as i32; len]),
        }
    }

    /// Return how many elements differ from the sum over `world` ranks.
    pub(crate) fn wrong_elements(&self, world: usize) -> u64 {
        let sum = world * (world + 1) / 2;
        match self {
            Bucket::F32(v) => v.iter().filter(|&&x| x != sum as f32 * 0.25).count() as u64,
            Bucket::I32(v) => v.iter().filter(|&&x| x != sum as i32).count() as u64,
        }
    }

    pub(crate) fn len(&self) -> usize {
        match self {
            Bucket::F32(v) => v.len(),
            Bucket::I32(v) => v.len(),
        }
    }
}
