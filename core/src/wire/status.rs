//! Status (0x15): a tool (`switchml doctor`) asks the switch about a job (protocol.md §3.7).
//!
//! ```text
//!  0: version | 1: type | 2-3: job | 4-5: rank (any; echoed) | 6-7: reserved
//! ```

use zerocopy::network_endian::U16;
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};

use super::{check_exact_len, Error, MessageType, Prefix, Result};

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
}

/// Length of a Status message: the size of [`Header`].
pub const LEN: usize = core::mem::size_of::<Header>();

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
}

/// A validated Status message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct StatusRepr {
    /// The job asked about.
    pub job: u16,
    /// Echoed in the reply; the switch does not check it.
    pub rank: u16,
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
        Ok(StatusRepr {
            job: h.prefix.job.get(),
            rank: h.prefix.rank.get(),
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
        };
    }
}

/// One line: `Status job 7 rank 9`.
impl core::fmt::Display for StatusRepr {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "Status job {} rank {}", self.job, self.rank)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BYTES: [u8; 8] = [0x01, 0x15, 0x00, 0x07, 0x00, 0x09, 0x00, 0x00];

    #[test]
    fn decode_known_bytes() {
        let p = StatusPacket::new_checked(&BYTES[..]).unwrap();
        assert_eq!(StatusRepr::parse(&p), Ok(StatusRepr { job: 7, rank: 9 }));
    }

    #[test]
    fn encode_to_known_bytes() {
        let mut b = [0xAA; 8];
        StatusRepr { job: 7, rank: 9 }.emit(&mut StatusPacket::new_unchecked(&mut b[..]));
        assert_eq!(b, BYTES);
    }

    #[test]
    fn display_is_one_line_with_the_key_fields() {
        extern crate std;
        use std::string::ToString;
        assert_eq!(
            StatusRepr { job: 7, rank: 9 }.to_string(),
            "Status job 7 rank 9"
        );
    }

    #[test]
    fn reject_impossible_lengths_and_fields() {
        assert_eq!(
            StatusPacket::new_checked(&BYTES[..7]).err(),
            Some(Error::Truncated)
        );
        assert_eq!(
            StatusPacket::new_checked(&[0u8; 9][..]).err(),
            Some(Error::TrailingBytes)
        );
        let mut bad = BYTES;
        bad[7] = 1;
        assert_eq!(
            StatusRepr::parse(&StatusPacket::new_unchecked(&bad[..])),
            Err(Error::Reserved("status.reserved"))
        );
    }
}
