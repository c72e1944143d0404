//! A frame of the TCP fallback ring (docs/fallback.md, "Frames and the handshake").
//!
//! Once a fallback connection's handshake has succeeded, every frame is a fixed head — a
//! 24-byte header and a 16-byte tag — followed on the stream by the payload the header
//! declares. Unlike the switch's datagrams, the ring's integers are little-endian:
//!
//! ```text
//!  0-3: magic "SMLR" | 4: kind | 5: reserved | 6-7: sender rank
//!  8-15: tensor number | 16-23: payload length | 24-39: tag
//! ```
//!
//! The view ([`RingFramePacket`]) spans the head only: a reader reads the head, learns the
//! payload's length from it ([`RingFrameRepr::payload_len_at_most`], which refuses one longer than
//! the reader can hold), and only then reads the payload. The tag is HMAC-SHA-256 under the
//! job key ([`crate::auth`], label [`Label::Fallback`](crate::auth::Label::Fallback)); what
//! it covers, and the handshake that precedes the frames, are the adapter's
//! (`switchml-ring`'s `link` module), which owns the connection's transcript.

use zerocopy::little_endian::{U16, U64};
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};

use super::{check_exact_len, split, split_mut, Error, Result};
use crate::auth::{Tag, TAG_LEN};

/// The first four bytes of every frame.
pub const MAGIC: [u8; 4] = *b"SMLR";

/// A frame's header, in wire order (little-endian).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned,
)]
#[repr(C)]
pub struct Header {
    /// [`MAGIC`].
    pub magic: [u8; 4],
    /// What the frame carries ([`FrameKind`]).
    pub kind: u8,
    /// Reserved; zero.
    pub reserved: u8,
    /// The sending rank.
    pub rank: U16,
    /// The tensor the frame is about (its number in the order the ranks submitted them).
    pub tensor: U64,
    /// The length of the payload that follows the head.
    pub payload_len: U64,
}

/// Length of a frame's header: the size of [`Header`].
pub const HEADER_LEN: usize = core::mem::size_of::<Header>();
/// Length of a frame's head: its header and its tag; the payload follows.
pub const HEAD_LEN: usize = HEADER_LEN + TAG_LEN;

/// What a frame carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum FrameKind {
    /// The first frame of every connection: the initiator's ring port.
    Hello,
    /// Rank 0's table of ring addresses.
    Table,
    /// A rank's record of its tensors at the switch-to-ring transition.
    Status,
    /// Partial sums of one segment (reduce-scatter).
    Partial,
    /// A reduced segment (all-gather).
    Reduced,
    /// A whole tensor passed on from a rank that holds it.
    Whole,
    /// A code point this version does not know.
    Unknown(u8),
}

impl From<u8> for FrameKind {
    fn from(v: u8) -> Self {
        match v {
            1 => FrameKind::Hello,
            2 => FrameKind::Table,
            3 => FrameKind::Status,
            4 => FrameKind::Partial,
            5 => FrameKind::Reduced,
            6 => FrameKind::Whole,
            other => FrameKind::Unknown(other),
        }
    }
}

impl From<FrameKind> for u8 {
    fn from(k: FrameKind) -> u8 {
        match k {
            FrameKind::Hello => 1,
            FrameKind::Table => 2,
            FrameKind::Status => 3,
            FrameKind::Partial => 4,
            FrameKind::Reduced => 5,
            FrameKind::Whole => 6,
            FrameKind::Unknown(v) => v,
        }
    }
}

/// The length of a Hello frame's payload: the sender's ring port.
pub const HELLO_LEN: usize = 2;

/// A zero-copy view of a frame's head.
#[derive(Debug, Clone)]
pub struct RingFramePacket<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> RingFramePacket<T> {
    /// Wrap a buffer without checking it.
    pub const fn new_unchecked(buffer: T) -> Self {
        RingFramePacket { buffer }
    }

    /// Wrap a buffer and check its length.
    pub fn new_checked(buffer: T) -> Result<Self> {
        let p = Self::new_unchecked(buffer);
        p.check_len()?;
        Ok(p)
    }

    /// Check that the buffer is exactly [`HEAD_LEN`] bytes long.
    pub fn check_len(&self) -> Result<()> {
        check_exact_len(self.buffer.as_ref().len(), HEAD_LEN)
    }

    /// Return the underlying buffer.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// Return the header in place. Panics if the buffer is shorter than it.
    pub fn header(&self) -> &Header {
        split::<Header>(self.buffer.as_ref()).0
    }

    /// Return the header's bytes (what the tag covers, with the payload).
    pub fn header_bytes(&self) -> &[u8] {
        &self.buffer.as_ref()[..HEADER_LEN]
    }

    /// Return the magic field.
    pub fn magic(&self) -> [u8; 4] {
        self.header().magic
    }

    /// Return the kind field.
    pub fn kind(&self) -> FrameKind {
        self.header().kind.into()
    }

    /// Return the sender rank field.
    pub fn rank(&self) -> u16 {
        self.header().rank.get()
    }

    /// Return the tensor field.
    pub fn tensor(&self) -> u64 {
        self.header().tensor.get()
    }

    /// Return the payload length field.
    pub fn payload_len(&self) -> u64 {
        self.header().payload_len.get()
    }

    /// Return the tag field.
    pub fn tag(&self) -> &[u8] {
        &self.buffer.as_ref()[HEADER_LEN..HEAD_LEN]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> RingFramePacket<T> {
    /// Return the header in place, mutably. Panics if the buffer is shorter than it.
    pub fn header_mut(&mut self) -> &mut Header {
        split_mut::<Header>(self.buffer.as_mut()).0
    }

    /// Set the tag field.
    pub fn set_tag(&mut self, tag: &Tag) {
        self.buffer.as_mut()[HEADER_LEN..HEAD_LEN].copy_from_slice(tag);
    }
}

/// A validated frame head (less its tag, which only the connection can check).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct RingFrameRepr {
    /// What the frame carries.
    pub kind: FrameKind,
    /// The sending rank.
    pub rank: u16,
    /// The tensor the frame is about.
    pub tensor: u64,
    /// The length of the payload that follows.
    pub payload_len: u64,
}

/// Why a frame whose tag held is not the one a rank expected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Unexpected {
    /// Another kind, or another tensor: the ranks did not submit the same tensors in the
    /// same order.
    KindOrTensor,
    /// Another sender than the connection's peer.
    Sender,
}

impl RingFrameRepr {
    /// Any tensor, for [`RingFrameRepr::expect`].
    pub const ANY_TENSOR: u64 = u64::MAX;

    /// Parse and validate a frame's head: its length, magic and reserved byte.
    pub fn parse<T: AsRef<[u8]> + ?Sized>(packet: &RingFramePacket<&T>) -> Result<RingFrameRepr> {
        packet.check_len()?;
        let h = packet.header();
        if h.magic != MAGIC {
            return Err(Error::Field("ring_frame.magic"));
        }
        if h.reserved != 0 {
            return Err(Error::Reserved("ring_frame.reserved"));
        }
        Ok(RingFrameRepr {
            kind: h.kind.into(),
            rank: h.rank.get(),
            tensor: h.tensor.get(),
            payload_len: h.payload_len.get(),
        })
    }

    /// Return the length of the head.
    pub const fn buffer_len(&self) -> usize {
        HEAD_LEN
    }

    /// Write the header (the tag is left as it is). The packet must be at least
    /// [`HEADER_LEN`] bytes long.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]> + ?Sized>(
        &self,
        packet: &mut RingFramePacket<&mut T>,
    ) {
        *packet.header_mut() = Header {
            magic: MAGIC,
            kind: self.kind.into(),
            reserved: 0,
            rank: U16::new(self.rank),
            tensor: U64::new(self.tensor),
            payload_len: U64::new(self.payload_len),
        };
    }

    /// Return the payload's length if it is at most `max` bytes (what the reader can hold:
    /// a longer one means the ranks' tensors differ, or the frame was altered).
    pub fn payload_len_at_most(&self, max: usize) -> Result<usize> {
        match usize::try_from(self.payload_len) {
            Ok(n) if n <= max => Ok(n),
            _ => Err(Error::Field("ring_frame.payload_len")),
        }
    }

    /// Check that the frame is of `kind`, for `tensor` (any with [`Self::ANY_TENSOR`]),
    /// and from `peer`.
    pub fn expect(
        &self,
        kind: FrameKind,
        tensor: u64,
        peer: u16,
    ) -> core::result::Result<(), Unexpected> {
        if self.kind != kind || (tensor != Self::ANY_TENSOR && self.tensor != tensor) {
            return Err(Unexpected::KindOrTensor);
        }
        if self.rank != peer {
            return Err(Unexpected::Sender);
        }
        Ok(())
    }
}

/// One line: `RingFrame Partial rank 0 tensor 5 payload_len 12`.
impl core::fmt::Display for RingFrameRepr {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(
            f,
            "RingFrame {:?} rank {} tensor {} payload_len {}",
            self.kind, self.rank, self.tensor, self.payload_len
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    // Rank 1 sends tensor 5's partial sums, 12 bytes; the tag is 0x11 × 16.
    const BYTES: [u8; HEAD_LEN] = [
        b'S', b'M', b'L', b'R', 0x04, 0x00, 0x01, 0x00, // magic, kind, reserved, rank
        0x05, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, // tensor
        0x0C, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, // payload_len
        0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11, // tag
        0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11,
    ];
    const REPR: RingFrameRepr = RingFrameRepr {
        kind: FrameKind::Partial,
        rank: 1,
        tensor: 5,
        payload_len: 12,
    };

    #[test]
    fn decode_known_bytes() {
        let p = RingFramePacket::new_checked(&BYTES[..]).unwrap();
        assert_eq!(RingFrameRepr::parse(&p), Ok(REPR));
        assert_eq!(p.tag(), &[0x11; TAG_LEN]);
        assert_eq!(p.header_bytes(), &BYTES[..HEADER_LEN]);
        assert_eq!(HEADER_LEN, 24);
    }

    #[test]
    fn encode_to_known_bytes() {
        let mut buf = [0xAAu8; HEAD_LEN];
        assert_eq!(REPR.buffer_len(), HEAD_LEN);
        let mut p = RingFramePacket::new_unchecked(&mut buf[..]);
        REPR.emit(&mut p);
        p.set_tag(&[0x11; TAG_LEN]);
        assert_eq!(buf, BYTES);
    }

    #[test]
    fn reject_impossible_lengths_and_fields() {
        let check = |b: &[u8]| RingFramePacket::new_checked(b).err();
        assert_eq!(check(&BYTES[..HEAD_LEN - 1]), Some(Error::Truncated));
        assert_eq!(check(&[0; HEAD_LEN + 1]), Some(Error::TrailingBytes));
        let parse = |b: &[u8]| RingFrameRepr::parse(&RingFramePacket::new_unchecked(b));
        assert_eq!(parse(&[0; 3]), Err(Error::Truncated));
        assert_eq!(
            parse(&[0xAB; HEAD_LEN]),
            Err(Error::Field("ring_frame.magic"))
        );
        let mut bad = BYTES;
        bad[5] = 1;
        assert_eq!(parse(&bad), Err(Error::Reserved("ring_frame.reserved")));
    }

    #[test]
    fn a_payload_longer_than_the_reader_holds_is_refused() {
        assert_eq!(REPR.payload_len_at_most(12), Ok(12));
        assert_eq!(
            REPR.payload_len_at_most(11),
            Err(Error::Field("ring_frame.payload_len"))
        );
        let huge = RingFrameRepr {
            payload_len: u64::MAX,
            ..REPR
        };
        assert_eq!(
            huge.payload_len_at_most(1 << 20),
            Err(Error::Field("ring_frame.payload_len"))
        );
    }

    #[test]
    fn expect_names_what_differs() {
        assert_eq!(REPR.expect(FrameKind::Partial, 5, 1), Ok(()));
        let any = RingFrameRepr::ANY_TENSOR;
        assert_eq!(REPR.expect(FrameKind::Partial, any, 1), Ok(()));
        let kind_or_tensor = Err(Unexpected::KindOrTensor);
        assert_eq!(REPR.expect(FrameKind::Reduced, 5, 1), kind_or_tensor);
        assert_eq!(REPR.expect(FrameKind::Partial, 6, 1), kind_or_tensor);
        assert_eq!(
            REPR.expect(FrameKind::Partial, 5, 0),
            Err(Unexpected::Sender)
        );
    }

    #[test]
    fn kinds_keep_their_code_points_and_unknown_ones_round_trip() {
        let known = [
            (FrameKind::Hello, 1),
            (FrameKind::Table, 2),
            (FrameKind::Status, 3),
            (FrameKind::Partial, 4),
            (FrameKind::Reduced, 5),
            (FrameKind::Whole, 6),
        ];
        for (k, v) in known {
            assert_eq!((u8::from(k), FrameKind::from(v)), (v, k));
        }
        assert_eq!(FrameKind::from(9), FrameKind::Unknown(9));
        assert_eq!(u8::from(FrameKind::Unknown(9)), 9);
    }

    proptest! {
        #[test]
        fn parse_of_emit_is_identity(kind: u8, rank: u16, tensor: u64, payload_len: u64) {
            let r = RingFrameRepr { kind: kind.into(), rank, tensor, payload_len };
            let mut buf = [0u8; HEAD_LEN];
            r.emit(&mut RingFramePacket::new_unchecked(&mut buf[..]));
            let p = RingFramePacket::new_checked(&buf[..]).unwrap();
            prop_assert_eq!(RingFrameRepr::parse(&p), Ok(r));
        }

        #[test]
        fn parse_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
            let _ = RingFrameRepr::parse(&RingFramePacket::new_unchecked(&bytes[..]));
        }
    }
}
