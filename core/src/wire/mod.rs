//! The wire format: zero-copy views and validated representations of every message.
//!
//! `docs/protocol.md` is the specification; field ranges live in each message's `field`
//! module and nowhere else. Each message has, in the style of smoltcp's `wire`:
//!
//! - a view `…Packet<T: AsRef<[u8]>>` with `new_unchecked`, `check_len`, `new_checked`,
//!   getters named after the fields and `set_*` twins when `T: AsMut<[u8]>`;
//! - a plain `…Repr` with `parse`, `emit` and `buffer_len`.
//!
//! The contract: after `check_len` (or `new_checked`) succeeds, no getter panics; `emit`
//! never panics on a buffer of `buffer_len()` bytes; `parse` never panics on any bytes.
//! Unknown code points (message types, abort reasons, slot states, flag bits) parse and
//! round-trip; reserved fields must be zero.

/// Define a message's zero-copy view: the struct, its constructors and the accessors of the
/// prefix every message shares (§2). Each message module writes `check_len` and its own
/// field accessors next to it; the contract is smoltcp's: after `check_len` succeeds, no
/// accessor panics.
macro_rules! packet_view {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Debug, Clone)]
        pub struct $name<T: AsRef<[u8]>> {
            buffer: T,
        }

        impl<T: AsRef<[u8]>> $name<T> {
            /// Wrap a buffer without checking it.
            pub const fn new_unchecked(buffer: T) -> Self {
                $name { buffer }
            }

            /// Wrap a buffer and check its length.
            pub fn new_checked(buffer: T) -> $crate::wire::Result<Self> {
                let p = Self::new_unchecked(buffer);
                p.check_len()?;
                Ok(p)
            }

            /// Return the underlying buffer.
            pub fn into_inner(self) -> T {
                self.buffer
            }

            /// Return the version field.
            pub fn version(&self) -> u8 {
                self.buffer.as_ref()[$crate::wire::prefix::VERSION]
            }

            /// Return the message type field.
            pub fn msg_type(&self) -> $crate::wire::MessageType {
                $crate::wire::MessageType::from(self.buffer.as_ref()[$crate::wire::prefix::TYPE])
            }

            /// Return the job id field.
            pub fn job_id(&self) -> u16 {
                $crate::wire::get_u16(self.buffer.as_ref(), $crate::wire::prefix::JOB)
            }

            /// Return the rank field.
            pub fn rank(&self) -> u16 {
                $crate::wire::get_u16(self.buffer.as_ref(), $crate::wire::prefix::RANK)
            }
        }

        impl<T: AsRef<[u8]> + AsMut<[u8]>> $name<T> {
            /// Set the version field.
            pub fn set_version(&mut self, v: u8) {
                self.buffer.as_mut()[$crate::wire::prefix::VERSION] = v;
            }

            /// Set the message type field.
            pub fn set_msg_type(&mut self, t: $crate::wire::MessageType) {
                self.buffer.as_mut()[$crate::wire::prefix::TYPE] = t.into();
            }

            /// Set the job id field.
            pub fn set_job_id(&mut self, v: u16) {
                $crate::wire::put_u16(self.buffer.as_mut(), $crate::wire::prefix::JOB, v);
            }

            /// Set the rank field.
            pub fn set_rank(&mut self, v: u16) {
                $crate::wire::put_u16(self.buffer.as_mut(), $crate::wire::prefix::RANK, v);
            }
        }
    };
}
pub(crate) use packet_view;

pub mod abort;
pub mod data;
pub mod join;
pub mod join_reply;
pub mod leave;
mod message;
pub mod probe;
pub mod probe_reply;
pub mod status;
pub mod status_reply;

pub use abort::{AbortPacket, AbortReason, AbortRepr};
pub use data::{DataKind, DataPacket, DataRepr, Flags};
pub use join::{JoinPacket, JoinRepr};
pub use join_reply::{JoinFlags, JoinReplyPacket, JoinReplyRepr};
pub use leave::{LeavePacket, LeaveRepr};
pub use message::Message;
pub use probe::{ProbePacket, ProbeRepr};
pub use probe_reply::{ProbeReplyPacket, ProbeReplyRepr, SlotState};
pub use status::{StatusPacket, StatusRepr};
pub use status_reply::{
    StatusCounters, StatusFlags, StatusReplyPacket, StatusReplyRepr, DROP_CLASSES,
};

/// The protocol version this crate speaks.
pub const VERSION: u8 = 1;
/// The UDP port the switch listens on (0xBEE0).
pub const SWITCH_PORT: u16 = 48864;
/// The rank field value meaning "every rank of the job" (multicast).
pub const RANK_ALL: u16 = 0xFFFF;
/// The largest bitmap in a JoinReply or ProbeReply, in bytes (1,024 ranks).
pub const MAX_BITMAP_LEN: usize = crate::ranks::MAX_WORLD / 8;

/// Why bytes are not a valid message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Error {
    /// Fewer bytes than the message's fixed part or its declared length.
    Truncated,
    /// More bytes than the message declares.
    TrailingBytes,
    /// The version field is not [`VERSION`].
    Version(u8),
    /// The named field holds a value the protocol forbids.
    Field(&'static str),
    /// The named reserved field is not zero.
    Reserved(&'static str),
    /// The output buffer is shorter than `buffer_len()`.
    BufferTooSmall,
}

impl core::fmt::Display for Error {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Error::Truncated => f.write_str("message truncated"),
            Error::TrailingBytes => f.write_str("bytes after the end of the message"),
            Error::Version(v) => write!(f, "protocol version {v}, expected {VERSION}"),
            Error::Field(name) => write!(f, "invalid value in field `{name}`"),
            Error::Reserved(name) => write!(f, "reserved field `{name}` is not zero"),
            Error::BufferTooSmall => f.write_str("output buffer too small"),
        }
    }
}

#[cfg(feature = "std")]
impl std::error::Error for Error {}

/// The result of parsing.
pub type Result<T> = core::result::Result<T, Error>;

/// The message type byte.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum MessageType {
    /// 0x01, worker → switch.
    Contribution,
    /// 0x02, switch → worker.
    Result,
    /// 0x10, worker → switch.
    Join,
    /// 0x11, switch → worker.
    JoinReply,
    /// 0x12, worker → switch.
    Probe,
    /// 0x13, switch → worker.
    ProbeReply,
    /// 0x14, either way.
    Abort,
    /// 0x15, tool → switch.
    Status,
    /// 0x16, switch → tool.
    StatusReply,
    /// 0x17, worker → switch.
    Leave,
    /// A type this version does not know.
    Unknown(u8),
}

impl From<u8> for MessageType {
    fn from(b: u8) -> Self {
        match b {
            0x01 => MessageType::Contribution,
            0x02 => MessageType::Result,
            0x10 => MessageType::Join,
            0x11 => MessageType::JoinReply,
            0x12 => MessageType::Probe,
            0x13 => MessageType::ProbeReply,
            0x14 => MessageType::Abort,
            0x15 => MessageType::Status,
            0x16 => MessageType::StatusReply,
            0x17 => MessageType::Leave,
            other => MessageType::Unknown(other),
        }
    }
}

impl From<MessageType> for u8 {
    fn from(t: MessageType) -> u8 {
        match t {
            MessageType::Contribution => 0x01,
            MessageType::Result => 0x02,
            MessageType::Join => 0x10,
            MessageType::JoinReply => 0x11,
            MessageType::Probe => 0x12,
            MessageType::ProbeReply => 0x13,
            MessageType::Abort => 0x14,
            MessageType::Status => 0x15,
            MessageType::StatusReply => 0x16,
            MessageType::Leave => 0x17,
            MessageType::Unknown(other) => other,
        }
    }
}

/// The 6-byte prefix every message starts with (protocol.md §2).
pub mod prefix {
    use core::ops::Range;

    /// Protocol version.
    pub const VERSION: usize = 0;
    /// Message type.
    pub const TYPE: usize = 1;
    /// Job id.
    pub const JOB: Range<usize> = 2..4;
    /// Rank.
    pub const RANK: Range<usize> = 4..6;
    /// Length of the prefix.
    pub const LEN: usize = RANK.end;
}

/// Read a big-endian u16 at `r` (callers have checked the length).
#[inline]
pub(crate) fn get_u16(b: &[u8], r: core::ops::Range<usize>) -> u16 {
    let mut a = [0u8; 2];
    a.copy_from_slice(&b[r]);
    u16::from_be_bytes(a)
}

/// Read a big-endian u32 at `r` (callers have checked the length).
#[inline]
pub(crate) fn get_u32(b: &[u8], r: core::ops::Range<usize>) -> u32 {
    let mut a = [0u8; 4];
    a.copy_from_slice(&b[r]);
    u32::from_be_bytes(a)
}

/// Read a big-endian u64 at `r` (callers have checked the length).
#[inline]
pub(crate) fn get_u64(b: &[u8], r: core::ops::Range<usize>) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[r]);
    u64::from_be_bytes(a)
}

/// Write a big-endian u16 at `r` (callers have checked the length).
#[inline]
pub(crate) fn put_u16(b: &mut [u8], r: core::ops::Range<usize>, v: u16) {
    b[r].copy_from_slice(&v.to_be_bytes());
}

/// Write a big-endian u32 at `r` (callers have checked the length).
#[inline]
pub(crate) fn put_u32(b: &mut [u8], r: core::ops::Range<usize>, v: u32) {
    b[r].copy_from_slice(&v.to_be_bytes());
}

/// Write a big-endian u64 at `r` (callers have checked the length).
#[inline]
pub(crate) fn put_u64(b: &mut [u8], r: core::ops::Range<usize>, v: u64) {
    b[r].copy_from_slice(&v.to_be_bytes());
}

/// Check that a buffer of `len` bytes holds exactly `want` bytes.
#[inline]
pub(crate) fn check_exact_len(len: usize, want: usize) -> Result<()> {
    match len.cmp(&want) {
        core::cmp::Ordering::Less => Err(Error::Truncated),
        core::cmp::Ordering::Greater => Err(Error::TrailingBytes),
        core::cmp::Ordering::Equal => Ok(()),
    }
}

/// Peek at the prefix: version, type, job and rank, without validating the rest.
#[inline]
pub fn peek(bytes: &[u8]) -> Result<(MessageType, u16, u16)> {
    if bytes.len() < prefix::LEN {
        return Err(Error::Truncated);
    }
    if bytes[prefix::VERSION] != VERSION {
        return Err(Error::Version(bytes[prefix::VERSION]));
    }
    Ok((
        MessageType::from(bytes[prefix::TYPE]),
        get_u16(bytes, prefix::JOB),
        get_u16(bytes, prefix::RANK),
    ))
}

/// Write the prefix (callers have checked the length).
#[inline]
pub(crate) fn put_prefix(b: &mut [u8], kind: MessageType, job: u16, rank: u16) {
    b[prefix::VERSION] = VERSION;
    b[prefix::TYPE] = kind.into();
    b[prefix::JOB].copy_from_slice(&job.to_be_bytes());
    b[prefix::RANK].copy_from_slice(&rank.to_be_bytes());
}
