//! The worker library's errors. Each says what is missing or wrong: the rank and lane, the
//! slot, the setting, the address. Stream failures carry the core's [`WorkerError`], whose
//! message names the missing ranks or the stalled slot, and socket failures the OS error:
//! both are the error's [`source`](std::error::Error::source). The enum may grow
//! variants (`#[non_exhaustive]`): match the ones you handle and keep a catch-all.

use std::fmt;
use std::io;
use std::net::SocketAddr;
use std::time::Duration;

use switchml_udp::OsError;

use switchml_core::quant::{ElementType, NonFinite};
use switchml_core::wire::AbortReason;
use switchml_core::worker::{SubmitErrorKind, TensorError, WorkerError};

/// Why a communicator call failed.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Error {
    /// A setting is missing or invalid; the message names it.
    Config(String),
    /// A socket operation failed.
    Io {
        /// What was being done, e.g. "bind 0.0.0.0:0".
        what: String,
        /// The OS error.
        source: OsError,
    },
    /// Nothing listens at the switch's address: while joining, the network refused the
    /// lane's Joins (ICMP port unreachable). A switch that is there but never answers ends
    /// in the join timeout instead.
    SwitchUnreachable {
        /// The switch address of the configuration.
        addr: SocketAddr,
    },
    /// This rank's lane shape is not the one the job's run agreed at Join (protocol.md
    /// §4.1): the switch refused it and named the run's value, which this rank must use.
    Shape {
        /// This worker's rank.
        rank: u16,
        /// The setting that differs.
        setting: ShapeSetting,
        /// The run's value.
        agreed: u16,
        /// This rank's value.
        ours: u16,
    },
    /// One lane's stream failed: the job cannot go on.
    Worker {
        /// This worker's rank.
        rank: u16,
        /// The lane (I/O thread).
        lane: usize,
        /// What the lane reported (boxed: it carries a bitmap of up to 1,024 ranks).
        error: Box<WorkerError>,
    },
    /// The sum left the element type's range: for int32 somewhere in the chunk starting at
    /// `index`; for a float type, only with `non_finite` refusing (else the ±∞ is the
    /// result), at element `index`, which holds ±∞ (protocol.md §5.2).
    Overflow {
        /// The first overflowed element (int32: the first of its chunk), in the whole
        /// tensor.
        index: usize,
        /// The tensor's element type.
        element: ElementType,
    },
    /// An element of the tensor is NaN or infinite: the communicator refused the tensor
    /// before any lane sent anything.
    NonFinite {
        /// The first such element, in the whole tensor.
        index: usize,
    },
    /// A lane refused the tensor before sending anything.
    Refused {
        /// The lane.
        lane: usize,
        /// Why.
        kind: SubmitErrorKind,
    },
    /// A lane's thread is gone (it panicked or the communicator was closed).
    LaneGone {
        /// The lane.
        lane: usize,
    },
    /// A wait ran out of time.
    Timeout {
        /// What was awaited.
        what: String,
        /// How long it waited.
        after: Duration,
    },
}

/// The settings that make up the lane shape every rank of a job must share (protocol.md §6).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ShapeSetting {
    /// The number of lanes (`SWITCHML_LANES`, `lanes`).
    Lanes,
    /// Slots per lane (`SWITCHML_WINDOW`, `window`).
    Window,
    /// Values per packet (`SWITCHML_COUNT`, `count`).
    Count,
}

impl ShapeSetting {
    /// Return the setting the switch's refusal `reason` is about, if it is a shape's.
    pub fn of(reason: AbortReason) -> Option<ShapeSetting> {
        match reason {
            AbortReason::LaneCountMismatch => Some(ShapeSetting::Lanes),
            AbortReason::LaneMismatch => Some(ShapeSetting::Window),
            AbortReason::ChunkMismatch => Some(ShapeSetting::Count),
            _ => None,
        }
    }

    /// Return the environment variable that sets it.
    pub fn variable(self) -> &'static str {
        match self {
            ShapeSetting::Lanes => "SWITCHML_LANES",
            ShapeSetting::Window => "SWITCHML_WINDOW",
            ShapeSetting::Count => "SWITCHML_COUNT",
        }
    }

    /// Return its key in a configuration file.
    pub fn key(self) -> &'static str {
        match self {
            ShapeSetting::Lanes => "lanes",
            ShapeSetting::Window => "window",
            ShapeSetting::Count => "count",
        }
    }

    /// Return what `n` of it are, in words: "2 lanes", "1 slot per lane".
    fn amount(self, n: u16) -> String {
        let plural = if n == 1 { "" } else { "s" };
        match self {
            ShapeSetting::Lanes => format!("{n} lane{plural}"),
            ShapeSetting::Window => format!("{n} slot{plural} per lane"),
            ShapeSetting::Count => format!("{n} value{plural} per packet"),
        }
    }
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
            Error::Io { what, source } => {
                write!(f, "{what}: {source}")?;
                if source.kind() == io::ErrorKind::ConnectionRefused {
                    f.write_str(" (nothing listens at the switch address)")?;
                }
                Ok(())
            }
            Error::SwitchUnreachable { addr } => write!(
                f,
                "nothing listens at {addr}: the switch's port is closed (ICMP port unreachable); is the switch running there, on that port?"
            ),
            Error::Shape {
                rank,
                setting,
                agreed,
                ours,
            } => write!(
                f,
                "rank {rank}: the job's ranks use {}; this rank has {ours}: set {}={agreed} \
                 (`{} = {agreed}` in the file)",
                setting.amount(*agreed),
                setting.variable(),
                setting.key(),
            ),
            Error::Worker { rank, lane, error } => write!(f, "rank {rank} lane {lane}: {error}"),
            Error::Overflow { index, element } => {
                let (index, element) = (*index, *element);
                write!(f, "{}", TensorError::Overflow { index, element })
            }
            Error::NonFinite { index } => {
                let index = *index;
                write!(f, "{}", SubmitErrorKind::NonFinite(NonFinite { index }))
            }
            Error::Refused { lane, kind } => write!(f, "lane {lane} refused the tensor: {kind}"),
            Error::LaneGone { lane } => write!(f, "lane {lane} has stopped"),
            Error::Timeout { what, after } => {
                write!(f, "timed out after {after:?} waiting for {what}")
            }
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Io { source, .. } => Some(source.get()),
            Error::Worker { error, .. } => Some(error.as_ref()),
            _ => None,
        }
    }
}

/// The ring's errors are the communicator's of the same names.
impl From<switchml_ring::Error> for Error {
    fn from(e: switchml_ring::Error) -> Error {
        use switchml_ring::Error as Ring;
        match e {
            Ring::Config(m) => Error::Config(m),
            Ring::Io { what, source } => Error::Io { what, source },
            Ring::Timeout { what, after } => Error::Timeout { what, after },
            Ring::Overflow { index, element } => Error::Overflow { index, element },
            // The ring's error is non-exhaustive; a new kind reads as what it says.
            other => Error::Config(other.to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::error::Error as _;

    #[test]
    fn a_socket_or_stream_failure_keeps_its_cause_as_the_source() {
        let os = io::Error::new(io::ErrorKind::ConnectionRefused, "refused");
        let e = Error::io("lane 0: send", &os);
        let source = e.source().expect("the OS error");
        let io = source.downcast_ref::<io::Error>().expect("an io::Error");
        assert_eq!(io.kind(), io::ErrorKind::ConnectionRefused);
        assert_eq!(e.clone(), e, "still Clone and Eq");
        let stream = Error::Worker {
            rank: 1,
            lane: 0,
            error: Box::new(WorkerError::Cancelled),
        };
        let source = stream.source().expect("the core's error");
        assert_eq!(
            source.downcast_ref::<WorkerError>(),
            Some(&WorkerError::Cancelled)
        );
        assert!(Error::LaneGone { lane: 0 }.source().is_none());
    }
}
