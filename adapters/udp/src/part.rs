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

use std::any::Any;
use std::ops::Range;
use std::ptr::NonNull;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use half::{bf16, f16};
use switchml_core::quant::{Elements, Tensor};
use switchml_core::worker::LaneLayout;

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

/// One lane's contiguous share of a tensor.
pub struct Part {
    ptr: NonNull<u8>,
    len: usize,
    kind: Kind,
    /// Index of this part's first element in the whole tensor.
    pub(crate) offset: usize,
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
        let (ptr, len) = (self.ptr.as_ptr(), self.len);
        // SAFETY: `ptr..ptr+len` is this part's exclusive, live, aligned range of `kind`
        // elements (see `split`); the returned borrow is tied to `&mut self`.
        unsafe {
            match self.kind {
                Kind::F32 => Elements::F32(std::slice::from_raw_parts_mut(ptr.cast(), len)),
                Kind::I32 => Elements::I32(std::slice::from_raw_parts_mut(ptr.cast(), len)),
                Kind::F16 => Elements::F16(std::slice::from_raw_parts_mut(ptr.cast(), len)),
                Kind::Bf16 => Elements::Bf16(std::slice::from_raw_parts_mut(ptr.cast(), len)),
            }
        }
    }
}

impl Drop for Part {
    fn drop(&mut self) {
        let outcome = self.outcome.take().unwrap_or(Err(Error::Config(
            "the communicator closed before the tensor finished".into(),
        )));
        self.submission.finish_part(outcome);
    }
}

/// Split `data` into one part per lane of `layout` (protocol.md §6), reporting to
/// `submission`.
///
/// # Safety
/// The caller must keep `data` alive and untouched until `submission` has every part back.
pub(crate) unsafe fn split<T: Element>(
    data: &mut [T],
    layout: LaneLayout,
    submission: &Arc<Submission>,
) -> Vec<Part> {
    let base = data.as_mut_ptr();
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
                submission: Arc::clone(submission),
                outcome: None,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_submission_waits_for_every_part_and_keeps_the_first_error() {
        let mut data = vec![1.0f32; 600];
        let s = Submission::new(3, None);
        // SAFETY: `data` outlives the parts, which are all dropped below.
        let mut parts = unsafe {
            split(
                &mut data,
                LaneLayout {
                    lanes: 3,
                    lane_slots: 4,
                    count: 100,
                },
                &s,
            )
        };
        assert_eq!(
            parts.iter().map(Part::len).collect::<Vec<_>>(),
            [200, 200, 200]
        );
        if let Elements::F32(x) = parts[1].elements() {
            x[0] = 5.0;
        }
        assert_eq!(s.wait(Some(Duration::from_millis(1))), None);
        parts[0].set_outcome(Ok(()));
        parts[2].set_outcome(Err(Error::LaneGone { lane: 2 }));
        drop(parts);
        let e = s.wait(None).unwrap().unwrap_err();
        assert!(e.to_string().contains("communicator closed"), "{e}");
        assert!(s.is_done());
        assert_eq!(data[200], 5.0);
    }
}
