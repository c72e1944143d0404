//! Tensors from Python: any object exporting a writable, C-contiguous buffer (a NumPy
//! array, the array under a CPU torch tensor), reduced where it lies.
//!
//! The blocking form hands the buffer's own memory to `Communicator::allreduce` with the
//! GIL released: zero copies. The asynchronous form goes through
//! `Communicator::allreduce_async`, which owns its vector while in flight, so it copies the
//! buffer in at submission and the result back at [`Handle::wait`] (a memcpy each way;
//! the network is the slower part by far). The handle keeps the buffer exported
//! meanwhile, so the array cannot be resized or freed under the reduction.
//!
//! `f16` and `bf16` arrive as 2-byte unsigned integers (`numpy.uint16` views) and the
//! caller names which: NumPy has no `bfloat16`, and PyO3 reads no `e` (half) buffers.

use std::mem::{align_of, size_of};

use half::{bf16, f16};
use pyo3::buffer::{Element as BufferElement, PyBuffer};
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use switchml_worker::{Communicator, Element, Op, Pending};

use crate::errors::to_py;

/// The element types, by their names in the Python API.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dtype {
    /// `float32`.
    F32,
    /// `int32`, summed exactly.
    I32,
    /// `float16`, as a `uint16` buffer.
    F16,
    /// `bfloat16`, as a `uint16` buffer.
    Bf16,
}

impl Dtype {
    /// Parse `"f32"`, `"i32"`, `"f16"` or `"bf16"`.
    pub fn parse(name: &str) -> PyResult<Dtype> {
        match name {
            "f32" => Ok(Dtype::F32),
            "i32" => Ok(Dtype::I32),
            "f16" => Ok(Dtype::F16),
            "bf16" => Ok(Dtype::Bf16),
            _ => Err(PyValueError::new_err(format!(
                "dtype {name:?}: expected \"f32\", \"i32\", \"f16\" or \"bf16\""
            ))),
        }
    }
}

/// Parse `"sum"` or `"average"`.
pub fn parse_op(name: &str) -> PyResult<Op> {
    match name {
        "sum" => Ok(Op::Sum),
        "average" | "avg" | "mean" => Ok(Op::Average),
        _ => Err(PyValueError::new_err(format!(
            "op {name:?}: expected \"sum\" or \"average\""
        ))),
    }
}

/// A buffer's memory as a slice of `T`, to cross into code that runs without the GIL.
struct Raw<T> {
    ptr: *mut T,
    len: usize,
}

// SAFETY: the memory belongs to a buffer export that outlives every use of `Raw` (the
// blocking call holds the `PyBuffer` until it returns), and `T` is a plain number.
unsafe impl<T: Send> Send for Raw<T> {}

/// Export `object`'s buffer as `B`, checking that it is writable, C-contiguous and
/// aligned for `T` (the type it will be read as, of `B`'s size).
fn export<B: BufferElement, T>(object: &Bound<'_, PyAny>) -> PyResult<(PyBuffer<B>, Raw<T>)> {
    const { assert!(size_of::<B>() == size_of::<T>()) };
    let buffer = PyBuffer::<B>::get(object)?;
    if buffer.readonly() {
        return Err(PyValueError::new_err("the tensor is read-only"));
    }
    if !buffer.is_c_contiguous() {
        return Err(PyValueError::new_err(
            "the tensor is not contiguous (pass a C-contiguous array or call .contiguous())",
        ));
    }
    let ptr = buffer.buf_ptr().cast::<T>();
    if !ptr.is_aligned() && buffer.item_count() > 0 {
        return Err(PyValueError::new_err(format!(
            "the tensor's memory is not aligned to {} bytes",
            align_of::<T>()
        )));
    }
    let len = buffer.item_count();
    Ok((buffer, Raw { ptr, len }))
}

/// All-reduce `object`'s buffer in place, read as `dtype`, with the GIL released.
pub fn allreduce(
    py: Python<'_>,
    comm: &Communicator,
    object: &Bound<'_, PyAny>,
    dtype: Dtype,
    op: Op,
) -> PyResult<()> {
    match dtype {
        Dtype::F32 => reduce::<f32, f32>(py, comm, object, op),
        Dtype::I32 => reduce::<i32, i32>(py, comm, object, op),
        Dtype::F16 => reduce::<u16, f16>(py, comm, object, op),
        Dtype::Bf16 => reduce::<u16, bf16>(py, comm, object, op),
    }
}

fn reduce<B: BufferElement, T: Element>(
    py: Python<'_>,
    comm: &Communicator,
    object: &Bound<'_, PyAny>,
    op: Op,
) -> PyResult<()> {
    let (buffer, raw) = export::<B, T>(object)?;
    if raw.len == 0 {
        return Ok(());
    }
    let done = py.allow_threads(move || {
        let raw = raw;
        // SAFETY: `buffer` keeps the export (and so the memory) alive until after this
        // call; `export` checked writability, contiguity and alignment.
        let data = unsafe { std::slice::from_raw_parts_mut(raw.ptr, raw.len) };
        comm.allreduce(data, op)
    });
    drop(buffer);
    done.map_err(to_py)
}

/// Start an all-reduce of a copy of `object`'s buffer; the handle writes the result back.
pub fn allreduce_async(
    comm: &Communicator,
    object: &Bound<'_, PyAny>,
    dtype: Dtype,
    op: Op,
) -> PyResult<Handle> {
    let flight: Box<dyn InFlight> = match dtype {
        Dtype::F32 => submit::<f32, f32>(comm, object, op)?,
        Dtype::I32 => submit::<i32, i32>(comm, object, op)?,
        Dtype::F16 => submit::<u16, f16>(comm, object, op)?,
        Dtype::Bf16 => submit::<u16, bf16>(comm, object, op)?,
    };
    Ok(Handle {
        state: std::sync::Mutex::new(State::Flying(flight)),
    })
}

fn submit<B: BufferElement + 'static, T: Element>(
    comm: &Communicator,
    object: &Bound<'_, PyAny>,
    op: Op,
) -> PyResult<Box<dyn InFlight>> {
    let (buffer, raw) = export::<B, T>(object)?;
    let data = if raw.len == 0 {
        Vec::new()
    } else {
        // SAFETY: as in `reduce`; the GIL is held, so only this thread reads it now.
        unsafe { std::slice::from_raw_parts(raw.ptr, raw.len) }.to_vec()
    };
    Ok(Box::new(Flight {
        pending: comm.allreduce_async(data, op),
        buffer,
        target: raw,
    }))
}

/// One asynchronous all-reduce: the communicator's handle and the buffer to write back.
struct Flight<B: BufferElement, T: Element> {
    pending: Pending<T>,
    buffer: PyBuffer<B>,
    target: Raw<T>,
}

// SAFETY: `target` points into `buffer`'s export, which the flight owns; `PyBuffer` is
// itself Send and Sync, and the pointer is only written through by `finish`, which
// consumes the flight.
unsafe impl<B: BufferElement, T: Element> Sync for Flight<B, T> {}

trait InFlight: Send + Sync {
    fn is_done(&self) -> bool;
    fn finish(self: Box<Self>, py: Python<'_>) -> PyResult<()>;
}

impl<B: BufferElement + 'static, T: Element> InFlight for Flight<B, T> {
    fn is_done(&self) -> bool {
        self.pending.is_finished()
    }

    fn finish(self: Box<Self>, py: Python<'_>) -> PyResult<()> {
        let Flight {
            pending,
            buffer,
            target,
        } = *self;
        let data = py.allow_threads(move || pending.wait()).map_err(to_py)?;
        if data.len() != target.len {
            return Err(PyRuntimeError::new_err("the result's length changed"));
        }
        if !data.is_empty() {
            // SAFETY: `buffer` still exports the memory `target` points to, and holds the
            // GIL-protected array's export; lengths checked above.
            unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), target.ptr, data.len()) };
        }
        drop(buffer);
        Ok(())
    }
}

enum State {
    Flying(Box<dyn InFlight>),
    Waiting,
    Done(Option<PyErr>),
}

/// An all-reduce in flight, from `Communicator.allreduce_buffer_async`. `wait()` writes
/// the result into the tensor (or raises the error); `is_completed()` polls.
#[pyclass(module = "switchml._switchml", frozen)]
pub struct Handle {
    state: std::sync::Mutex<State>,
}

#[pymethods]
impl Handle {
    /// Return True once the all-reduce has finished, successfully or not (False while
    /// another thread is inside wait()).
    fn is_completed(&self) -> bool {
        match &*self.state.lock().unwrap_or_else(|p| p.into_inner()) {
            State::Flying(f) => f.is_done(),
            State::Waiting => false,
            State::Done(_) => true,
        }
    }

    /// Wait for the result (the GIL released meanwhile) and write it into the tensor;
    /// raise the all-reduce's error if it failed. Waiting again returns (or raises) at once.
    fn wait(&self, py: Python<'_>) -> PyResult<()> {
        let flight = {
            let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
            match std::mem::replace(&mut *state, State::Waiting) {
                State::Flying(f) => f,
                State::Waiting => {
                    return Err(PyRuntimeError::new_err(
                        "another thread is already waiting on this handle",
                    ))
                }
                State::Done(e) => {
                    let again = e.as_ref().map(|e| e.clone_ref(py));
                    *state = State::Done(e);
                    return again.map_or(Ok(()), Err);
                }
            }
        };
        let outcome = flight.finish(py);
        let kept = outcome.as_ref().err().map(|e| e.clone_ref(py));
        *self.state.lock().unwrap_or_else(|p| p.into_inner()) = State::Done(kept);
        outcome
    }
}
