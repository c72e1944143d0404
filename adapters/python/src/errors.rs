//! The exceptions: one Python class per kind of [`Error`], every one a
//! [`SwitchMLError`] (itself a `RuntimeError`), each message the Rust error's own words
//! (the missing ranks, the slot, the setting, a restarted switch).

use pyo3::create_exception;
use pyo3::exceptions::PyRuntimeError;
use pyo3::PyErr;
use switchml_worker::Error;

create_exception!(
    switchml,
    SwitchMLError,
    PyRuntimeError,
    "Any switchml failure; the message is the Rust library's."
);
create_exception!(
    switchml,
    ConfigError,
    SwitchMLError,
    "A setting is missing or invalid; the message names it (RANK, SWITCHML_SWITCH, ...)."
);
create_exception!(
    switchml,
    SwitchUnreachableError,
    SwitchMLError,
    "Nothing listens at the switch's address (the network refused the Joins)."
);
create_exception!(
    switchml,
    JoinTimeoutError,
    SwitchMLError,
    "Not every rank joined the job in time."
);
create_exception!(
    switchml,
    StreamError,
    SwitchMLError,
    "A lane's stream failed, so the job cannot go on: the message names the rank and lane, \
     and the slot and the ranks that never contributed, or that the switch restarted."
);
create_exception!(
    switchml,
    NonFiniteError,
    SwitchMLError,
    "The tensor holds a NaN or an infinity (the message names the first); nothing was sent \
     and the tensor is untouched."
);

/// Turn a communicator or switch error into the matching Python exception.
pub fn to_py(error: Error) -> PyErr {
    let message = error.to_string();
    match error {
        Error::Config(_) | Error::Shape { .. } => ConfigError::new_err(message),
        Error::SwitchUnreachable { .. } => SwitchUnreachableError::new_err(message),
        Error::Timeout { .. } => JoinTimeoutError::new_err(message),
        Error::Worker { .. } | Error::LaneGone { .. } => StreamError::new_err(message),
        Error::NonFinite { .. } => NonFiniteError::new_err(message),
        _ => SwitchMLError::new_err(message),
    }
}

/// Turn a socket error of the switch into a [`SwitchMLError`].
pub fn io_to_py(error: std::io::Error) -> PyErr {
    SwitchMLError::new_err(error.to_string())
}
