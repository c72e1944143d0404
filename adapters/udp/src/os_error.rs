//! An OS error that an error enum can hold and still be `Clone` and `Eq`: the worker
//! library's and the ring's errors carry one as their `source()`.

use std::fmt;
use std::io;
use std::sync::Arc;

/// An OS error, shared; two are equal when their kind and text are.
#[derive(Debug, Clone)]
pub struct OsError(Arc<io::Error>);

impl OsError {
    /// Keep `err`'s kind and text (the OS error code, if any, is in the text).
    pub fn copy_of(err: &io::Error) -> OsError {
        OsError(Arc::new(io::Error::new(err.kind(), err.to_string())))
    }

    /// Return the error's kind.
    pub fn kind(&self) -> io::ErrorKind {
        self.0.kind()
    }

    /// Return the error itself.
    pub fn get(&self) -> &io::Error {
        &self.0
    }
}

impl From<io::Error> for OsError {
    fn from(err: io::Error) -> OsError {
        OsError(Arc::new(err))
    }
}

impl PartialEq for OsError {
    fn eq(&self, other: &OsError) -> bool {
        self.kind() == other.kind() && self.0.to_string() == other.0.to_string()
    }
}

impl Eq for OsError {}

impl fmt::Display for OsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}
