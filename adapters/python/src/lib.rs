//! The Python binding of switchml-rs: the `switchml._switchml` extension module.
//!
//! A thin layer over `switchml_worker` and `switchml_switchd`, and nothing of the protocol: [`Communicator`] wraps
//! the UDP communicator (settings, blocking and asynchronous all-reduce over Python
//! buffers, counters), [`Switch`] the in-process software switch, and `errors` turns the
//! Rust errors into Python exceptions with the same words, `collectives` builds exact
//! byte broadcasts and all-gathers from int32 sums (for the torch backend), and `logging`
//! hands Rust log records to Python's `logging`. The GIL is released around
//! every call that can block. The pure-Python package around it (`python/switchml/`)
//! takes NumPy arrays and torch tensors and holds the PyTorch hook.

mod collectives;
mod communicator;
mod errors;
mod logging;
mod switch;
mod tensor;

use pyo3::prelude::*;

use communicator::Communicator;
use switch::Switch;
use tensor::Handle;

/// Return a fresh random job key (64 bits from the OS), as a switch and its workers share.
#[pyfunction]
fn fresh_key() -> u64 {
    switchml_switchd::fresh_key()
}

/// Return the names of the optional behaviours this build has, for code (and tests) that
/// must know: "byte_collectives" (`Communicator.broadcast_bytes`/`allgather_bytes`),
/// "logging" (Rust records reach Python's `logging`).
#[pyfunction]
fn features() -> Vec<&'static str> {
    vec!["byte_collectives", "logging", "non_finite", "liveness"]
}

/// The compiled core of the `switchml` package; import `switchml` instead.
#[pymodule]
fn _switchml(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    logging::install(py)?;
    m.add_function(wrap_pyfunction!(logging::reset_logging, m)?)?;
    m.add_function(wrap_pyfunction!(features, m)?)?;
    m.add("SETTINGS", switchml_worker::Settings::NAMES.to_vec())?;
    m.add_class::<Communicator>()?;
    m.add_class::<Handle>()?;
    m.add_class::<Switch>()?;
    m.add_function(wrap_pyfunction!(fresh_key, m)?)?;
    m.add("SwitchMLError", py.get_type::<errors::SwitchMLError>())?;
    m.add("ConfigError", py.get_type::<errors::ConfigError>())?;
    m.add(
        "SwitchUnreachableError",
        py.get_type::<errors::SwitchUnreachableError>(),
    )?;
    m.add(
        "JoinTimeoutError",
        py.get_type::<errors::JoinTimeoutError>(),
    )?;
    m.add("StreamError", py.get_type::<errors::StreamError>())?;
    m.add("RankFailedError", py.get_type::<errors::RankFailedError>())?;
    m.add("NonFiniteError", py.get_type::<errors::NonFiniteError>())?;
    Ok(())
}
