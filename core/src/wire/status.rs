//! Status (0x15): a tool (`switchml doctor`) asks the switch about a job (protocol.md §3.7).
//!
//! ```text
//!  0: version | 1: type | 2-3: job | 4-5: rank (any; echoed) | 6-7: reserved
//!  8-11: nonce | 12-19: cookie | 20-35: tag
//! ```
//!
//! Like a Join, a Status proves the job's key with a tag over its first 20 bytes and carries
//! the switch's cookie for its sender (§4.2): the switch answers one without a valid cookie
//! with a 20-byte Cookie, one without a valid tag not at all, so no stranger learns which jobs
//! exist or gets more bytes back than it sent.

use zerocopy::network_endian::{U16, U32, U64};
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};

use super::{check_exact_len, Error, MessageType, Prefix, Result};
use crate::auth::{self, Label, Tag, TAG_LEN};

/// A Status message, in wire order.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned,
)]
#[repr(C)]
pub struct Header {
    /// Version, type, job and rank.
    pub prefix: Prefix,
    /// Reserved pair of bytes.
    pub reserved: U16,
    /// The asker's nonce, named by the Cookie that answers it.
    pub nonce: U32,
    /// The switch's cookie for this asker, or 0 before it has one.
    pub cookie: U64,
    /// HMAC-SHA-256 under the job's key of every byte before it, truncated.
    pub tag: [u8; TAG_LEN],
}

/// Length of a Status message: the size of [`Header`].
pub const LEN: usize = core::mem::size_of::<Header>();

/// Where the tag starts: the bytes before it are the ones it covers.
pub const TAG_AT: usize = LEN - TAG_LEN;

super::packet_view!(
    /// A zero-copy view of a Status message.
    StatusPacket,
    Header
);

impl<T: AsRef<[u8]>> StatusPacket<T> {
    /// Check that the buffer is exactly [`LEN`] bytes long.
    pub fn check_len(&self) -> Result<()> {
        check_exact_len(self.buffer.as_ref().len(), LEN)
    }

    /// Return the reserved field.
    pub fn reserved(&self) -> u16 {
        self.header().reserved.get()
    }

    /// Return the nonce field.
    pub fn nonce(&self) -> u32 {
        self.header().nonce.get()
    }

    /// Return the cookie field.
    pub fn cookie(&self) -> u64 {
        self.header().cookie.get()
    }

    /// Return the tag field.
    pub fn tag(&self) -> Tag {
        self.header().tag
    }
}

/// A validated Status message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct StatusRepr {
    /// The job asked about.
    pub job: u16,
    /// Echoed in the reply; the switch does not check it.
    pub rank: u16,
    /// The asker's nonce (non-zero).
    pub nonce: u32,
    /// The switch's cookie for the asker, 0 before it has one.
    pub cookie: u64,
    /// The tag over bytes 0–19 under the job's key ([`StatusRepr::sign`]).
    pub tag: Tag,
}

impl StatusRepr {
    /// Parse and validate a Status message.
    pub fn parse<T: AsRef<[u8]> + ?Sized>(packet: &StatusPacket<&T>) -> Result<StatusRepr> {
        packet.check_len()?;
        let h = packet.header();
        h.prefix.check(MessageType::Status)?;
        if h.reserved != U16::ZERO {
            return Err(Error::Reserved("status.reserved"));
        }
        if h.nonce == U32::ZERO {
            return Err(Error::Field("nonce"));
        }
        Ok(StatusRepr {
            job: h.prefix.job.get(),
            rank: h.prefix.rank.get(),
            nonce: h.nonce.get(),
            cookie: h.cookie.get(),
            tag: h.tag,
        })
    }

    /// Return the length of a Status message.
    pub const fn buffer_len(&self) -> usize {
        LEN
    }

    /// Write the message into a buffer of at least [`LEN`] bytes.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]> + ?Sized>(&self, packet: &mut StatusPacket<&mut T>) {
        *packet.header_mut() = Header {
            prefix: Prefix::new(MessageType::Status, self.job, self.rank),
            reserved: U16::ZERO,
            nonce: U32::new(self.nonce),
            cookie: U64::new(self.cookie),
            tag: self.tag,
        };
    }

    fn covered_bytes(&self) -> [u8; LEN] {
        let mut b = [0u8; LEN];
        self.emit(&mut StatusPacket::new_unchecked(&mut b[..]));
        b
    }

    /// The same Status with its tag made under the job key `key`.
    #[must_use]
    pub fn sign(mut self, key: u64) -> StatusRepr {
        self.tag = auth::tag(key, Label::Status, &[&self.covered_bytes()[..TAG_AT]]);
        self
    }

    /// Whether the tag was made under `key` over exactly these fields (constant time).
    pub fn verify(&self, key: u64) -> bool {
        auth::verify(
            key,
            Label::Status,
            &[&self.covered_bytes()[..TAG_AT]],
            &self.tag,
        )
    }
}

/// One line: `Status job 7 rank 9 nonce 0x01020304 cookie 0x…`. The tag is left out.
impl core::fmt::Display for StatusRepr {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(
            f,
            "Status job {} rank {} nonce {:#010x} cookie {:#018x}",
            self.job, self.rank, self.nonce, self.cookie
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEAD: [u8; 20] = [
        0x01, 0x15, 0x00, 0x07, 0x00, 0x09, 0x00, 0x00, 0x01, 0x02, 0x03, 0x04, 0, 0, 0, 0, 0, 0,
        0, 0x05,
    ];
    const REPR: StatusRepr = StatusRepr {
        job: 7,
        rank: 9,
        nonce: 0x0102_0304,
        cookie: 5,
        tag: [0x5A; 16],
    };

    fn bytes() -> [u8; LEN] {
        let mut b = [0x5A; LEN];
        b[..20].copy_from_slice(&HEAD);
        b
    }

    #[test]
    fn decode_known_bytes() {
        let b = bytes();
        let p = StatusPacket::new_checked(&b[..]).unwrap();
        assert_eq!(StatusRepr::parse(&p), Ok(REPR));
    }

    #[test]
    fn encode_to_known_bytes() {
        let mut b = [0xAA; LEN];
        REPR.emit(&mut StatusPacket::new_unchecked(&mut b[..]));
        assert_eq!(b, bytes());
    }

    #[test]
    fn a_signed_status_verifies_only_under_its_key() {
        let s = REPR.sign(0x77);
        assert!(s.verify(0x77));
        assert!(!s.verify(0x78));
        assert!(!StatusRepr { job: 8, ..s }.verify(0x77));
        assert!(!REPR.verify(0x77));
        // A Join's tag over the same bytes is not a Status's (domain labels).
        let join_tag = auth::tag(0x77, Label::Join, &[&s.covered_bytes()[..TAG_AT]]);
        assert!(!StatusRepr { tag: join_tag, ..s }.verify(0x77));
    }

    #[test]
    fn display_is_one_line_without_the_tag() {
        extern crate std;
        use std::string::ToString;
        assert_eq!(
            REPR.to_string(),
            "Status job 7 rank 9 nonce 0x01020304 cookie 0x0000000000000005"
        );
    }

    #[test]
    fn reject_impossible_lengths_and_fields() {
        let b = bytes();
        assert_eq!(
            StatusPacket::new_checked(&b[..LEN - 1]).err(),
            Some(Error::Truncated)
        );
        assert_eq!(
            StatusPacket::new_checked(&[0u8; LEN + 1][..]).err(),
            Some(Error::TrailingBytes)
        );
        let mut bad = b;
        bad[7] = 1;
        assert_eq!(
            StatusRepr::parse(&StatusPacket::new_unchecked(&bad[..])),
            Err(Error::Reserved("status.reserved"))
        );
        let mut bad = b;
        bad[8..12].fill(0);
        assert_eq!(
            StatusRepr::parse(&StatusPacket::new_unchecked(&bad[..])),
            Err(Error::Field("nonce"))
        );
    }

    #[test]
    fn len_is_derived_from_the_fields() {
        assert_eq!(LEN, 36);
        assert_eq!(TAG_AT, 20);
    }
}
