//! The exceptions: one Python class per kind of [`Error`], every one a
//! [`SwitchMLError`] (itself a `RuntimeError`), each message the Rust error's own words
//! (the missing ranks, the slot, the setting, a restarted switch). Those about ranks
//! carry them as attributes too: `ranks` (a list) on [`JoinTimeoutError`] and
//! [`RankFailedError`], and `rank` (the first of them) on the latter.

use pyo3::create_exception;
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::PyErr;
use switchml_core::wire::AbortReason;
use switchml_core::worker::{StallReport, WorkerError};
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
    RankFailedError,
    StreamError,
    "Another rank failed the job: it gave up, or never contributed to a slot; `rank` names \
     it (the first, if several) and `ranks` lists them all."
);
create_exception!(
    switchml,
    NonFiniteError,
    SwitchMLError,
    "The tensor holds a NaN or an infinity (the message names the first); nothing was sent \
     and the tensor is untouched."
);

/// The ranks a worker's error blames, if it blames any.
fn blamed(error: &WorkerError) -> Option<Vec<u16>> {
    match error {
        WorkerError::PeerAborted { rank, .. } => Some(vec![*rank]),
        // The switch named a rank that went silent, restarted or was refused (§4.3).
        WorkerError::Refused {
            reason: AbortReason::RankSilent | AbortReason::RankRefused | AbortReason::RankRestarted,
            detail,
        } => Some(vec![*detail]),
        WorkerError::Stalled {
            report: StallReport::Probed { missing, .. },
            ..
        } => Some(missing.iter().collect()),
        _ => None,
    }
}

/// `err` with `ranks` (and `rank`, the first) set on its value.
fn with_ranks(err: PyErr, ranks: Vec<u16>) -> PyErr {
    Python::with_gil(|py| {
        let value = err.value(py);
        let first = ranks.first().copied();
        // Setting attributes on a fresh exception object cannot fail but for memory.
        let _ = value.setattr("rank", first);
        let _ = value.setattr("ranks", ranks);
        err
    })
}

/// Turn a communicator or switch error into the matching Python exception.
pub fn to_py(error: Error) -> PyErr {
    let message = error.to_string();
    match error {
        Error::Config(_) | Error::Shape { .. } => ConfigError::new_err(message),
        Error::SwitchUnreachable { .. } => SwitchUnreachableError::new_err(message),
        Error::Timeout { .. } => JoinTimeoutError::new_err(message),
        Error::Worker { error, .. } => match (*error, blamed(&error)) {
            (WorkerError::JoinTimeout { missing, .. }, _) => {
                with_ranks(JoinTimeoutError::new_err(message), missing.iter().collect())
            }
            (WorkerError::PortUnreachable { .. }, _) => SwitchUnreachableError::new_err(message),
            (_, Some(ranks)) if !ranks.is_empty() => {
                with_ranks(RankFailedError::new_err(message), ranks)
            }
            _ => StreamError::new_err(message),
        },
        Error::LaneGone { .. } => StreamError::new_err(message),
        Error::NonFinite { .. } => NonFiniteError::new_err(message),
        _ => SwitchMLError::new_err(message),
    }
}

/// Turn a socket error of the switch into a [`SwitchMLError`].
pub fn io_to_py(error: std::io::Error) -> PyErr {
    SwitchMLError::new_err(error.to_string())
}
