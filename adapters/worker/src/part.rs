//! A tensor split across lanes: each lane all-reduces one contiguous part in place.
//!
//! The lanes are threads and the core [`Worker`](switchml_core::worker::Worker) owns the
//! buffers it works on, so each lane gets a [`Part`]: a pointer to its disjoint range of
//! the caller's elements plus a shared [`Submission`] that counts the parts still out and
//! keeps the first error. A part reports when it is dropped — finished, refused, or dropped
//! with a dead lane — so a waiter is always released, whatever happens to the lane.
//!
//! Memory: for an owned tensor (`Vec`) the submission owns the vector until every part is
//! back, so the pointers stay valid however the handle is used; for a borrowed slice the
//! blocking call does not return before every part is back.
//!
//! Before a tensor is split, [`scan`] reads it once: the NaN/∞ check of the whole tensor
//! fused with the block exponent of every chunk of every part (protocol.md §5.3), which the
//! part carries to its lane as its exponent cache (`Tensor::elements_and_exponents`), so
//! that the lane's worker sends the exponents without reading the elements again. The
//! caches are vectors of one byte per chunk, reused through an [`ExponentPool`].

use std::any::Any;
use std::ops::Range;
use std::ptr::NonNull;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use half::{bf16, f16};
use switchml_core::quant::{Elements, Tensor};
use switchml_core::worker::{LaneLayout, NonFinitePolicy};

use crate::error::Error;

mod sealed {
    pub trait Sealed {}
    impl Sealed for f32 {}
    impl Sealed for i32 {}
    impl Sealed for half::f16 {}
    impl Sealed for half::bf16 {}
}

/// An element type the communicator reduces: `f32`, [`f16`](struct@f16) and [`bf16`] (quantized per
/// block through f32, protocol.md §5) or `i32` (summed exactly).
pub trait Element: Copy + Send + Sync + 'static + sealed::Sealed {
    /// Which kind.
    const KIND: Kind;

    /// Return a slice of this type as the core's view of a tensor.
    fn elements(data: &mut [Self]) -> Elements<'_>;
}

impl Element for f32 {
    const KIND: Kind = Kind::F32;

    fn elements(data: &mut [f32]) -> Elements<'_> {
        Elements::F32(data)
    }
}

impl Element for i32 {
    const KIND: Kind = Kind::I32;

    fn elements(data: &mut [i32]) -> Elements<'_> {
        Elements::I32(data)
    }
}

impl Element for f16 {
    const KIND: Kind = Kind::F16;

    fn elements(data: &mut [f16]) -> Elements<'_> {
        Elements::F16(data)
    }
}

impl Element for bf16 {
    const KIND: Kind = Kind::Bf16;

    fn elements(data: &mut [bf16]) -> Elements<'_> {
        Elements::Bf16(data)
    }
}

/// The element type of a part.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `f32`.
    F32,
    /// `i32`.
    I32,
    /// IEEE binary16.
    F16,
    /// bfloat16.
    Bf16,
}

/// The shared state of one submitted tensor.
pub(crate) struct Submission {
    progress: Mutex<Progress>,
    changed: Condvar,
    /// The owned vector behind the parts, if the caller gave one.
    owner: Mutex<Option<Box<dyn Any + Send>>>,
}

struct Progress {
    outstanding: usize,
    error: Option<Error>,
}

impl Submission {
    pub(crate) fn new(parts: usize, owner: Option<Box<dyn Any + Send>>) -> Arc<Submission> {
        Self::with(parts, None, owner)
    }

    /// A submission refused before it was split: no part, already failed with `error`.
    pub(crate) fn refused(error: Error, owner: Option<Box<dyn Any + Send>>) -> Arc<Submission> {
        Self::with(0, Some(error), owner)
    }

    fn with(
        parts: usize,
        error: Option<Error>,
        owner: Option<Box<dyn Any + Send>>,
    ) -> Arc<Submission> {
        Arc::new(Submission {
            progress: Mutex::new(Progress {
                outstanding: parts,
                error,
            }),
            changed: Condvar::new(),
            owner: Mutex::new(owner),
        })
    }

    fn lock(&self) -> MutexGuard<'_, Progress> {
        self.progress.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn finish_part(&self, outcome: Result<(), Error>) {
        let mut p = self.lock();
        if let Err(e) = outcome {
            p.error.get_or_insert(e);
        }
        p.outstanding = p.outstanding.saturating_sub(1);
        if p.outstanding == 0 {
            self.changed.notify_all();
        }
    }

    /// Return whether every part is back.
    pub(crate) fn is_done(&self) -> bool {
        self.lock().outstanding == 0
    }

    /// Wait until every part is back, at most `timeout` (forever with `None`); return the
    /// outcome, or `None` on timeout.
    pub(crate) fn wait(&self, timeout: Option<Duration>) -> Option<Result<(), Error>> {
        let deadline = timeout.map(|t| Instant::now() + t);
        let mut p = self.lock();
        while p.outstanding > 0 {
            let step = match deadline {
                Some(d) => d.checked_duration_since(Instant::now())?,
                None => Duration::from_secs(1),
            };
            p = self
                .changed
                .wait_timeout(p, step)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
        Some(p.error.clone().map_or(Ok(()), Err))
    }

    /// Call `f` with the owned vector, if any, once every part is back (the fallback
    /// copies a finished `allreduce_async` tensor that nobody has waited for yet).
    pub(crate) fn peek_owner<R>(&self, f: impl FnOnce(&(dyn Any + Send)) -> R) -> Option<R> {
        if !self.is_done() {
            return None;
        }
        let owner = self.owner.lock().unwrap_or_else(|p| p.into_inner());
        owner.as_deref().map(f)
    }

    /// Take the owned vector back (only once every part is back).
    pub(crate) fn take_owner(&self) -> Option<Box<dyn Any + Send>> {
        if !self.is_done() {
            return None;
        }
        self.owner.lock().unwrap_or_else(|p| p.into_inner()).take()
    }
}

/// Exponent caches for parts, kept for reuse: a part takes one when its tensor is scanned
/// and gives it back when it is dropped, so that a steady stream of tensors allocates none.
#[derive(Default)]
pub(crate) struct ExponentPool {
    free: Mutex<Vec<Vec<u8>>>,
}

/// Caches the pool keeps at most (more are freed): enough for every lane's parts of
/// several tensors in flight.
const POOL_KEEPS: usize = 256;

impl ExponentPool {
    fn lock(&self) -> MutexGuard<'_, Vec<Vec<u8>>> {
        self.free.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Return a cache of `len` bytes (contents unspecified).
    fn take(&self, len: usize) -> Vec<u8> {
        let mut cache = self.lock().pop().unwrap_or_default();
        cache.resize(len, 0);
        cache
    }

    fn give(&self, cache: Vec<u8>) {
        let mut free = self.lock();
        if free.len() < POOL_KEEPS && cache.capacity() > 0 {
            free.push(cache);
        }
    }
}

/// Each lane's exponent cache for `data`, from one pass over the whole tensor that also
/// checks it finite (the lanes' parts of [`split`], in order, so the first non-finite
/// element of a part is the tensor's first). Run before the tensor is split: one lane
/// refusing its part after another has sent its own would leave half a tensor reduced.
/// On a NaN or ∞ under [`NonFinitePolicy::Refuse`] the caches go back to `pool`; under
/// `Propagate` that part's cache is left empty, so its lane scans each chunk as it sends it
/// (the exponent then ignores the NaN or ∞, which travels flagged: protocol.md §5.4).
pub(crate) fn scan<T: Element>(
    data: &mut [T],
    layout: LaneLayout,
    pool: &ExponentPool,
    policy: NonFinitePolicy,
) -> Result<Vec<Vec<u8>>, Error> {
    let count = usize::from(layout.count.max(1));
    let mut caches = Vec::with_capacity(usize::from(layout.lanes));
    for lane in 0..layout.lanes {
        let range = layout.elements(data.len(), lane);
        let (offset, len) = (range.start, range.len());
        let mut cache = pool.take(len.div_ceil(count));
        let scanned = data.get_mut(range).map_or(Ok(()), |part| {
            T::elements(part).finite_block_exponents(count, &mut cache)
        });
        if scanned.is_err() && policy == NonFinitePolicy::Propagate {
            cache.clear();
            caches.push(cache);
            continue;
        }
        caches.push(cache);
        if let Err(e) = scanned {
            caches.into_iter().for_each(|c| pool.give(c));
            return Err(Error::NonFinite {
                index: offset + e.index,
            });
        }
    }
    Ok(caches)
}

/// One lane's contiguous share of a tensor.
pub struct Part {
    ptr: NonNull<u8>,
    len: usize,
    kind: Kind,
    /// Index of this part's first element in the whole tensor.
    pub(crate) offset: usize,
    /// The block exponents of its chunks ([`scan`]).
    exponents: Vec<u8>,
    pool: Arc<ExponentPool>,
    submission: Arc<Submission>,
    outcome: Option<Result<(), Error>>,
}

// SAFETY: a Part is the only handle to its range of elements (ranges of one submission are
// disjoint, and neither the caller nor the submission touches the elements while any part is
// out); the memory outlives the part (see the module doc). Moving it to a lane thread is
// therefore like moving a `&mut [T]` of a `Send` type.
unsafe impl Send for Part {}

impl Part {
    /// Record how the part ended; reported when it is dropped.
    pub(crate) fn set_outcome(&mut self, outcome: Result<(), Error>) {
        self.outcome = Some(outcome);
    }

    /// Return the number of elements.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.len
    }
}

impl Tensor for Part {
    fn elements(&mut self) -> Elements<'_> {
        self.elements_and_exponents().0
    }

    fn elements_and_exponents(&mut self) -> (Elements<'_>, Option<&mut [u8]>) {
        let (ptr, len) = (self.ptr.as_ptr(), self.len);
        // SAFETY: `ptr..ptr+len` is this part's exclusive, live, aligned range of `kind`
        // elements (see `split`), apart from `exponents`; the returned borrows are tied to
        // `&mut self`.
        let elements = unsafe {
            match self.kind {
                Kind::F32 => Elements::F32(std::slice::from_raw_parts_mut(ptr.cast(), len)),
                Kind::I32 => Elements::I32(std::slice::from_raw_parts_mut(ptr.cast(), len)),
                Kind::F16 => Elements::F16(std::slice::from_raw_parts_mut(ptr.cast(), len)),
                Kind::Bf16 => Elements::Bf16(std::slice::from_raw_parts_mut(ptr.cast(), len)),
            }
        };
        (elements, Some(&mut self.exponents))
    }
}

impl Drop for Part {
    fn drop(&mut self) {
        self.pool.give(std::mem::take(&mut self.exponents));
        let outcome = self.outcome.take().unwrap_or(Err(Error::Config(
            "the communicator closed before the tensor finished".into(),
        )));
        self.submission.finish_part(outcome);
    }
}

/// Split `data` into one part per lane of `layout` (protocol.md §6), reporting to
/// `submission`, each with its lane's exponent cache from [`scan`] (given back to `pool`).
///
/// # Safety
/// The caller must keep `data` alive and untouched until `submission` has every part back.
pub(crate) unsafe fn split<T: Element>(
    data: &mut [T],
    layout: LaneLayout,
    submission: &Arc<Submission>,
    exponents: Vec<Vec<u8>>,
    pool: &Arc<ExponentPool>,
) -> Vec<Part> {
    let base = data.as_mut_ptr();
    let mut exponents = exponents.into_iter();
    (0..layout.lanes)
        .map(|lane| {
            let Range { start: lo, end: hi } = layout.elements(data.len(), lane);
            Part {
                // SAFETY: `lo <= len`, so the pointer is in bounds or one past the end, and
                // it is non-null because `base` comes from a slice.
                ptr: unsafe { NonNull::new_unchecked(base.add(lo).cast()) },
                len: hi - lo,
                kind: T::KIND,
                offset: lo,
                exponents: exponents.next().unwrap_or_default(),
                pool: Arc::clone(pool),
                submission: Arc::clone(submission),
                outcome: None,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use switchml_core::quant::block_exponent_f32;

    const LAYOUT: LaneLayout = LaneLayout {
        lanes: 3,
        lane_slots: 4,
        count: 100,
    };

    #[test]
    fn parts_carry_their_chunks_exponents_from_one_scan_of_the_whole_tensor() {
        let mut data: Vec<f32> = (0..550).map(|i| (i as f32 - 300.0) / 7.0).collect();
        let want: Vec<u8> = data.chunks(100).map(block_exponent_f32).collect();
        let pool = Arc::new(ExponentPool::default());
        let caches = scan(&mut data, LAYOUT, &pool, NonFinitePolicy::Refuse).unwrap();
        assert_eq!(caches, [&want[0..2], &want[2..4], &want[4..6]]);
        let s = Submission::new(3, None);
        // SAFETY: `data` outlives the parts, which are all dropped below.
        let mut parts = unsafe { split(&mut data, LAYOUT, &s, caches, &pool) };
        let (elements, cache) = parts[1].elements_and_exponents();
        assert_eq!((elements.len(), cache.as_deref()), (200, Some(&want[2..4])));
        drop(parts);
        // The caches are back for the next tensor; a NaN in lane 2's part is refused with
        // its index in the whole tensor, and nothing is kept from the failed scan.
        assert_eq!(pool.lock().len(), 3);
        data[517] = f32::NAN;
        data[530] = f32::INFINITY;
        let e = scan(&mut data, LAYOUT, &pool, NonFinitePolicy::Refuse).unwrap_err();
        assert!(matches!(e, Error::NonFinite { index: 517 }), "{e}");
        assert_eq!(pool.lock().len(), 3);
        // Propagated instead: lane 2's part has no cache (scanned as sent), the others do.
        let caches = scan(&mut data, LAYOUT, &pool, NonFinitePolicy::Propagate).unwrap();
        assert_eq!(caches, [&want[0..2], &want[2..4], &[][..]]);
    }

    #[test]
    fn a_submission_waits_for_every_part_and_keeps_the_first_error() {
        let mut data = vec![1.0f32; 600];
        let s = Submission::new(3, None);
        let pool = Arc::default();
        // SAFETY: `data` outlives the parts, which are all dropped below.
        let mut parts = unsafe { split(&mut data, LAYOUT, &s, Vec::new(), &pool) };
        assert_eq!(
            parts.iter().map(Part::len).collect::<Vec<_>>(),
            [200, 200, 200]
        );
        if let Elements::F32(x) = parts[1].elements() {
            x[0] = 5.0;
        }
        assert!(s.wait(Some(Duration::from_millis(1))).is_none());
        parts[0].set_outcome(Ok(()));
        parts[2].set_outcome(Err(Error::LaneGone { lane: 2 }));
        drop(parts);
        let e = s.wait(None).unwrap().unwrap_err();
        assert!(e.to_string().contains("communicator closed"), "{e}");
        assert!(s.is_done());
        assert_eq!(data[200], 5.0);
    }
}
