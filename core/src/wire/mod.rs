//! The wire format: zero-copy views and validated representations of every message.
//!
//! `docs/protocol.md` is the specification. Each message's fixed part is one
//! `#[repr(C)]` struct of zerocopy's network-endian integers (`…::Header`, with the shared
//! [`Prefix`] first), derived `FromBytes`, `IntoBytes`, `KnownLayout`, `Immutable` and
//! `Unaligned`: the struct is the layout, and `HEADER_LEN` (or `LEN`) is its size, never
//! typed twice. On top of it each message has, in the style of smoltcp's `wire`:
//!
//! - a view `…Packet<T: AsRef<[u8]>>` with `new_unchecked`, `check_len`, `new_checked`,
//!   `header()` (the fixed part in place) and `header_mut()`, getters named after the fields
//!   and `set_*` twins when `T: AsMut<[u8]>`;
//! - a plain `…Repr` with `parse`, `emit` and `buffer_len`, and a one-line `Display` (the
//!   form a packet trace prints: `Contribution job 7 rank 3 slot 5 ver 1 seq 9 …`).
//!
//! Three formats here are not switch datagrams: [`ring_handshake`], [`ring_frame`] and
//! [`ring_payload`], the handshake, the frame head and the set-up payloads of the TCP
//! fallback ring, which the ranks exchange among themselves (little-endian, no prefix).
//!
//! Variable-length tails (a Contribution's values, a bitmap) are the bytes after the header;
//! a data message's values can also be viewed in place as network-endian `I32`s
//! ([`DataPacket::values_i32`]).
//!
//! The contract: after `check_len` (or `new_checked`) succeeds, no getter panics; `emit`
//! never panics on a buffer of `buffer_len()` bytes; `parse` never panics on any bytes. (A
//! getter or setter on a buffer shorter than the message's header panics.) Unknown code
//! points (message types, abort reasons, slot states, flag bits) parse and round-trip;
//! reserved fields must be zero.

use zerocopy::network_endian::U16;
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};

/// Define a message's zero-copy view over its header struct: the view, its constructors,
/// the header in place, and the accessors of the prefix every message shares (§2). Each
/// message module writes `check_len` and its own field accessors next to it; the contract is
/// smoltcp's: after `check_len` succeeds, no accessor panics.
macro_rules! packet_view {
    ($(#[$doc:meta])* $name:ident, $header:ty) => {
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

            /// Return the fixed header in place. Panics if the buffer is shorter than it.
            #[inline]
            pub fn header(&self) -> &$header {
                $crate::wire::split::<$header>(self.buffer.as_ref()).0
            }

            /// Return the bytes after the fixed header. Panics if the buffer is shorter than it.
            #[inline]
            #[allow(dead_code)] // Fixed-length messages have no tail.
            fn tail(&self) -> &[u8] {
                $crate::wire::split::<$header>(self.buffer.as_ref()).1
            }

            /// Return the version field.
            #[inline]
            pub fn version(&self) -> u8 {
                $crate::wire::prefix_of(self.buffer.as_ref()).version
            }

            /// Return the message type field.
            #[inline]
            pub fn msg_type(&self) -> $crate::wire::MessageType {
                $crate::wire::prefix_of(self.buffer.as_ref()).msg_type()
            }

            /// Return the job id field.
            #[inline]
            pub fn job_id(&self) -> u16 {
                $crate::wire::prefix_of(self.buffer.as_ref()).job.get()
            }

            /// Return the rank field.
            #[inline]
            pub fn rank(&self) -> u16 {
                $crate::wire::prefix_of(self.buffer.as_ref()).rank.get()
            }
        }

        impl<T: AsRef<[u8]> + AsMut<[u8]>> $name<T> {
            /// Return the fixed header in place, mutably. Panics if the buffer is shorter
            /// than it.
            #[inline]
            pub fn header_mut(&mut self) -> &mut $header {
                $crate::wire::split_mut::<$header>(self.buffer.as_mut()).0
            }

            /// Return the header and the bytes after it, mutably. Panics if the buffer is
            /// shorter than the header.
            #[inline]
            #[allow(dead_code)] // Fixed-length messages have no tail.
            fn split_mut(&mut self) -> (&mut $header, &mut [u8]) {
                $crate::wire::split_mut::<$header>(self.buffer.as_mut())
            }

            /// Set the version field.
            #[inline]
            pub fn set_version(&mut self, v: u8) {
                $crate::wire::prefix_of_mut(self.buffer.as_mut()).version = v;
            }

            /// Set the message type field.
            #[inline]
            pub fn set_msg_type(&mut self, t: $crate::wire::MessageType) {
                $crate::wire::prefix_of_mut(self.buffer.as_mut()).msg_type = t.into();
            }

            /// Set the job id field.
            #[inline]
            pub fn set_job_id(&mut self, v: u16) {
                $crate::wire::prefix_of_mut(self.buffer.as_mut()).job.set(v);
            }

            /// Set the rank field.
            #[inline]
            pub fn set_rank(&mut self, v: u16) {
                $crate::wire::prefix_of_mut(self.buffer.as_mut()).rank.set(v);
            }
        }
    };
}
pub(crate) use packet_view;

pub mod abort;
pub mod cookie;
pub mod data;
pub mod join;
pub mod join_reply;
pub mod leave;
mod message;
mod pretty;
pub mod probe;
pub mod probe_reply;
pub mod ring_frame;
pub mod ring_handshake;
pub mod ring_payload;
pub mod status;
pub mod status_reply;

pub use abort::{AbortPacket, AbortReason, AbortRepr};
pub use cookie::{CookiePacket, CookieRepr};
pub use data::{DataKind, DataPacket, DataRepr, Flags};
pub use join::{JoinPacket, JoinRepr};
pub use join_reply::{JoinFlags, JoinReplyPacket, JoinReplyRepr};
pub use leave::{LeavePacket, LeaveRepr};
pub use message::Message;
pub use pretty::{Pretty, TRACE_TARGET};
pub use probe::{ProbeFlags, ProbePacket, ProbeRepr};
pub use probe_reply::{ProbeReplyPacket, ProbeReplyRepr, SlotState};
pub use ring_frame::{FrameKind, RingFramePacket, RingFrameRepr};
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
    /// 0x18, switch → worker or tool.
    Cookie,
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
            0x18 => MessageType::Cookie,
            other => MessageType::Unknown(other),
        }
    }
}

impl MessageType {
    /// Return the type byte.
    pub const fn to_u8(self) -> u8 {
        match self {
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
            MessageType::Cookie => 0x18,
            MessageType::Unknown(other) => other,
        }
    }
}

impl From<MessageType> for u8 {
    fn from(t: MessageType) -> u8 {
        t.to_u8()
    }
}

impl core::fmt::Display for MessageType {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            MessageType::Unknown(b) => write!(f, "Unknown({b:#04x})"),
            known => core::fmt::Debug::fmt(known, f),
        }
    }
}

/// The 6-byte prefix every message starts with (protocol.md §2), first in every header.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned,
)]
#[repr(C)]
pub struct Prefix {
    /// Protocol version.
    pub version: u8,
    /// Message type.
    pub msg_type: u8,
    /// Job id.
    pub job: U16,
    /// Rank.
    pub rank: U16,
}

impl Prefix {
    /// Return the prefix of a message of this crate's [`VERSION`].
    #[inline]
    pub const fn new(msg_type: MessageType, job: u16, rank: u16) -> Prefix {
        Prefix {
            version: VERSION,
            msg_type: msg_type.to_u8(),
            job: U16::new(job),
            rank: U16::new(rank),
        }
    }

    /// Return the message type.
    #[inline]
    pub fn msg_type(&self) -> MessageType {
        MessageType::from(self.msg_type)
    }

    /// Check the version, then that the type is `want`.
    #[inline]
    pub(crate) fn check(&self, want: MessageType) -> Result<()> {
        if self.version != VERSION {
            return Err(Error::Version(self.version));
        }
        if self.msg_type() != want {
            return Err(Error::Field("type"));
        }
        Ok(())
    }
}

/// The prefix's length.
pub mod prefix {
    /// Length of the prefix: the size of [`super::Prefix`].
    pub const LEN: usize = core::mem::size_of::<super::Prefix>();
}

/// Split `b` into a header `H` and the bytes after it.
///
/// Every header is `Unaligned`, so the only way to fail is a buffer shorter than `H`; the
/// views' `check_len` rules that out before any accessor runs.
#[inline]
pub(crate) fn split<H: FromBytes + KnownLayout + Immutable>(b: &[u8]) -> (&H, &[u8]) {
    match H::ref_from_prefix(b) {
        Ok(split) => split,
        Err(_) => shorter_than_header(),
    }
}

/// Split `b` into a header `H` and the bytes after it, mutably (see [`split`]).
#[inline]
pub(crate) fn split_mut<H: FromBytes + IntoBytes + KnownLayout>(
    b: &mut [u8],
) -> (&mut H, &mut [u8]) {
    match H::mut_from_prefix(b) {
        Ok(split) => split,
        Err(_) => shorter_than_header(),
    }
}

#[cold]
#[inline(never)]
#[track_caller]
fn shorter_than_header() -> ! {
    panic!("buffer shorter than the message header (call check_len first)")
}

/// Return the prefix of `b` (callers have checked the length).
#[inline]
pub(crate) fn prefix_of(b: &[u8]) -> &Prefix {
    split::<Prefix>(b).0
}

/// Return the prefix of `b` mutably (callers have checked the length).
#[inline]
pub(crate) fn prefix_of_mut(b: &mut [u8]) -> &mut Prefix {
    split_mut::<Prefix>(b).0
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

/// Check that a buffer of `len` bytes holds a `header`-byte header and then exactly
/// `tail` bytes.
#[inline]
pub(crate) fn check_tail_len(
    len: usize,
    header: usize,
    tail: impl FnOnce() -> usize,
) -> Result<()> {
    if len < header {
        return Err(Error::Truncated);
    }
    check_exact_len(len, header + tail())
}

/// Peek at the prefix: version, type, job and rank, without validating the rest.
#[inline]
pub fn peek(bytes: &[u8]) -> Result<(MessageType, u16, u16)> {
    let Ok((p, _)) = Prefix::ref_from_prefix(bytes) else {
        return Err(Error::Truncated);
    };
    if p.version != VERSION {
        return Err(Error::Version(p.version));
    }
    Ok((p.msg_type(), p.job.get(), p.rank.get()))
}

/// Pieces of the one-line `Display` of every `Repr` (a packet trace's format).
pub(crate) mod show {
    use core::fmt;

    /// A rank field: `all` for [`super::RANK_ALL`], else the number.
    pub(crate) struct Rank(pub u16);

    impl fmt::Display for Rank {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            if self.0 == super::RANK_ALL {
                f.write_str("all")
            } else {
                write!(f, "{}", self.0)
            }
        }
    }

    /// A bitmap as the number of ranks it holds over the world size: `9/12`.
    pub(crate) struct Ranks<'a>(pub &'a [u8], pub u16);

    impl fmt::Display for Ranks<'_> {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            let set: u32 = self.0.iter().map(|b| b.count_ones()).sum();
            write!(f, "{set}/{}", self.1)
        }
    }

    /// Flag bits by name, `|`-separated, unknown bits in hex; `none` when no bit is set.
    pub(crate) fn flags(f: &mut fmt::Formatter<'_>, bits: u8, names: &[(u8, &str)]) -> fmt::Result {
        if bits == 0 {
            return f.write_str("none");
        }
        let mut rest = bits;
        let mut sep = "";
        for &(bit, name) in names {
            if rest & bit != 0 {
                write!(f, "{sep}{name}")?;
                rest &= !bit;
                sep = "|";
            }
        }
        if rest != 0 {
            write!(f, "{sep}{rest:#04x}")?;
        }
        Ok(())
    }
}
