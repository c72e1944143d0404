//! The ring's errors. Each names the peer, the step or the setting; the worker library
//! hands them on as its own (`switchml_worker::Error`'s variants of the same names).

use std::fmt;
use std::io;
use std::time::Duration;

use switchml_udp::OsError;

use switchml_core::quant::ElementType;
use switchml_core::worker::TensorError;

/// Why a ring operation failed.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Error {
    /// A peer broke the protocol, or a setting is wrong; the message says which.
    Config(String),
    /// A socket operation failed.
    Io {
        /// What was being done, e.g. "fallback ring: bind this rank's ring listener".
        what: String,
        /// The OS error.
        source: OsError,
    },
    /// A wait for a peer ran out of time.
    Timeout {
        /// What was awaited (it names the peer).
        what: String,
        /// How long it waited.
        after: Duration,
    },
    /// The sum left the element type's range, at element `index` (int32: the first of its
    /// chunk).
    Overflow {
        /// The first overflowed element.
        index: usize,
        /// The tensor's element type.
        element: ElementType,
    },
}

impl Error {
    /// Wrap an OS error with what was being done.
    pub fn io(what: impl Into<String>, err: &io::Error) -> Error {
        Error::Io {
            what: what.into(),
            source: OsError::copy_of(err),
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Config(m) => write!(f, "configuration: {m}"),
            Error::Io { what, source } => write!(f, "{what}: {source}"),
            Error::Timeout { what, after } => {
                write!(f, "timed out after {after:?} waiting for {what}")
            }
            Error::Overflow { index, element } => {
                let (index, element) = (*index, *element);
                write!(f, "{}", TensorError::Overflow { index, element })
            }
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Io { source, .. } => Some(source.get()),
            _ => None,
        }
    }
}
