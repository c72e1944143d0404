//! Cookie (0x18): the switch's answer to a Join or Status whose cookie is missing or stale
//! (protocol.md §3.10, §4.2).
//!
//! ```text
//!  0: version | 1: type | 2-3: job | 4-5: rank | 6-7: reserved | 8-11: nonce
//! 12-19: cookie
//! ```
//!
//! 20 bytes, never more than the 36- or 44-byte request it answers, so it cannot amplify a
//! reflection. The asker puts the cookie into its next Join or Status (and signs it there):
//! only the address the cookie was issued to can use it, and only for a minute or so.

use zerocopy::network_endian::{U16, U32, U64};
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};

use super::{check_exact_len, Error, MessageType, Prefix, Result};

/// A Cookie message, in wire order.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned,
)]
#[repr(C)]
pub struct Header {
    /// Version, type, job and rank (the asker's).
    pub prefix: Prefix,
    /// Reserved pair of bytes.
    pub reserved: U16,
    /// The nonce of the Join or Status this answers.
    pub nonce: U32,
    /// The cookie to send back.
    pub cookie: U64,
}

/// Length of a Cookie message: the size of [`Header`].
pub const LEN: usize = core::mem::size_of::<Header>();

super::packet_view!(
    /// A zero-copy view of a Cookie message.
    CookiePacket,
    Header
);

impl<T: AsRef<[u8]>> CookiePacket<T> {
    /// Check that the buffer is exactly [`LEN`] bytes long.
    pub fn check_len(&self) -> Result<()> {
        check_exact_len(self.buffer.as_ref().len(), LEN)
    }

    /// Return the nonce field.
    pub fn nonce(&self) -> u32 {
        self.header().nonce.get()
    }

    /// Return the cookie field.
    pub fn cookie(&self) -> u64 {
        self.header().cookie.get()
    }
}

/// A validated Cookie message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct CookieRepr {
    /// Job id of the request.
    pub job: u16,
    /// Rank of the request.
    pub rank: u16,
    /// Nonce of the request.
    pub nonce: u32,
    /// The cookie (non-zero).
    pub cookie: u64,
}

impl CookieRepr {
    /// Parse and validate a Cookie message.
    pub fn parse<T: AsRef<[u8]> + ?Sized>(packet: &CookiePacket<&T>) -> Result<CookieRepr> {
        packet.check_len()?;
        let h = packet.header();
        h.prefix.check(MessageType::Cookie)?;
        if h.reserved != U16::ZERO {
            return Err(Error::Reserved("cookie.reserved"));
        }
        if h.cookie == U64::ZERO {
            return Err(Error::Field("cookie"));
        }
        Ok(CookieRepr {
            job: h.prefix.job.get(),
            rank: h.prefix.rank.get(),
            nonce: h.nonce.get(),
            cookie: h.cookie.get(),
        })
    }

    /// Return the length of a Cookie message.
    pub const fn buffer_len(&self) -> usize {
        LEN
    }

    /// Write the message into a buffer of at least [`LEN`] bytes.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]> + ?Sized>(&self, packet: &mut CookiePacket<&mut T>) {
        *packet.header_mut() = Header {
            prefix: Prefix::new(MessageType::Cookie, self.job, self.rank),
            reserved: U16::ZERO,
            nonce: U32::new(self.nonce),
            cookie: U64::new(self.cookie),
        };
    }
}

/// One line: `Cookie job 7 rank 9 nonce 0x01020304 cookie 0x…`.
impl core::fmt::Display for CookieRepr {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(
            f,
            "Cookie job {} rank {} nonce {:#010x} cookie {:#018x}",
            self.job, self.rank, self.nonce, self.cookie
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BYTES: [u8; 20] = [
        0x01, 0x18, 0x00, 0x07, 0x00, 0x09, 0x00, 0x00, 0x01, 0x02, 0x03, 0x04, 0x11, 0x22, 0x33,
        0x44, 0x55, 0x66, 0x77, 0x88,
    ];
    const REPR: CookieRepr = CookieRepr {
        job: 7,
        rank: 9,
        nonce: 0x0102_0304,
        cookie: 0x1122_3344_5566_7788,
    };

    #[test]
    fn decode_known_bytes() {
        let p = CookiePacket::new_checked(&BYTES[..]).unwrap();
        assert_eq!(CookieRepr::parse(&p), Ok(REPR));
    }

    #[test]
    fn encode_to_known_bytes() {
        let mut b = [0xAA; 20];
        REPR.emit(&mut CookiePacket::new_unchecked(&mut b[..]));
        assert_eq!(b, BYTES);
    }

    #[test]
    fn display_is_one_line() {
        extern crate std;
        use std::string::ToString;
        assert_eq!(
            REPR.to_string(),
            "Cookie job 7 rank 9 nonce 0x01020304 cookie 0x1122334455667788"
        );
    }

    #[test]
    fn reject_impossible_lengths_and_fields() {
        assert_eq!(
            CookiePacket::new_checked(&BYTES[..19]).err(),
            Some(Error::Truncated)
        );
        assert_eq!(
            CookiePacket::new_checked(&[0u8; 21][..]).err(),
            Some(Error::TrailingBytes)
        );
        let mut bad = BYTES;
        bad[6] = 1;
        assert_eq!(
            CookieRepr::parse(&CookiePacket::new_unchecked(&bad[..])),
            Err(Error::Reserved("cookie.reserved"))
        );
        let mut bad = BYTES;
        bad[12..].fill(0);
        assert_eq!(
            CookieRepr::parse(&CookiePacket::new_unchecked(&bad[..])),
            Err(Error::Field("cookie"))
        );
    }

    #[test]
    fn len_is_derived_from_the_fields() {
        assert_eq!(LEN, 20);
    }
}
