//! Leave (0x17): a worker's rank is done with the job's run (protocol.md §3.9).
//!
//! ```text
//!  0: version | 1: type | 2-3: job | 4-5: rank | 6-7: reserved | 8-11: session
//! ```

use zerocopy::network_endian::{U16, U32};
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};

use super::{check_exact_len, Error, MessageType, Prefix, Result};

/// A Leave message, in wire order.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned,
)]
#[repr(C)]
pub struct Header {
    /// Version, type, job and rank.
    pub prefix: Prefix,
    /// Reserved pair of bytes.
    pub reserved: U16,
    /// The job run's session token.
    pub session: U32,
}

/// Length of a Leave message: the size of [`Header`].
pub const LEN: usize = core::mem::size_of::<Header>();

super::packet_view!(
    /// A zero-copy view of a Leave message.
    LeavePacket,
    Header
);

impl<T: AsRef<[u8]>> LeavePacket<T> {
    /// Check that the buffer is exactly [`LEN`] bytes long.
    pub fn check_len(&self) -> Result<()> {
        check_exact_len(self.buffer.as_ref().len(), LEN)
    }

    /// Return the reserved field.
    pub fn reserved(&self) -> u16 {
        self.header().reserved.get()
    }

    /// Return the session field.
    pub fn session(&self) -> u32 {
        self.header().session.get()
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> LeavePacket<T> {
    /// Set the session field.
    pub fn set_session(&mut self, v: u32) {
        self.header_mut().session.set(v);
    }
}

/// A validated Leave message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct LeaveRepr {
    /// Job id.
    pub job: u16,
    /// The rank that is done.
    pub rank: u16,
    /// The job run's session token.
    pub session: u32,
}

impl LeaveRepr {
    /// Parse and validate a Leave message.
    pub fn parse<T: AsRef<[u8]> + ?Sized>(packet: &LeavePacket<&T>) -> Result<LeaveRepr> {
        packet.check_len()?;
        let h = packet.header();
        h.prefix.check(MessageType::Leave)?;
        if h.reserved != U16::ZERO {
            return Err(Error::Reserved("leave.reserved"));
        }
        Ok(LeaveRepr {
            job: h.prefix.job.get(),
            rank: h.prefix.rank.get(),
            session: h.session.get(),
        })
    }

    /// Return the length of the message.
    pub const fn buffer_len(&self) -> usize {
        LEN
    }

    /// Write the message. The packet must be at least [`LEN`] bytes long.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]> + ?Sized>(&self, packet: &mut LeavePacket<&mut T>) {
        *packet.header_mut() = Header {
            prefix: Prefix::new(MessageType::Leave, self.job, self.rank),
            reserved: U16::ZERO,
            session: U32::new(self.session),
        };
    }
}

/// One line: `Leave job 7 rank 2 session 0x01020304`.
impl core::fmt::Display for LeaveRepr {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(
            f,
            "Leave job {} rank {} session {:#010x}",
            self.job, self.rank, self.session
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Job 7, rank 2 is done with session 0x01020304.
    const BYTES: [u8; 12] = [
        0x01, 0x17, 0x00, 0x07, 0x00, 0x02, 0x00, 0x00, 0x01, 0x02, 0x03, 0x04,
    ];
    const REPR: LeaveRepr = LeaveRepr {
        job: 7,
        rank: 2,
        session: 0x0102_0304,
    };

    #[test]
    fn decode_known_bytes() {
        let p = LeavePacket::new_checked(&BYTES[..]).unwrap();
        assert_eq!(LeaveRepr::parse(&p), Ok(REPR));
    }

    #[test]
    fn encode_to_known_bytes() {
        let mut buf = [0xAAu8; 12];
        assert_eq!(REPR.buffer_len(), 12);
        REPR.emit(&mut LeavePacket::new_unchecked(&mut buf[..]));
        assert_eq!(buf, BYTES);
    }

    #[test]
    fn reject_impossible_lengths_and_fields() {
        let check = |b: &[u8]| LeavePacket::new_checked(b).err();
        assert_eq!(check(&BYTES[..11]), Some(Error::Truncated));
        let mut long = [0u8; 13];
        long[..12].copy_from_slice(&BYTES);
        assert_eq!(check(&long), Some(Error::TrailingBytes));
        let parse = |b: &[u8]| LeaveRepr::parse(&LeavePacket::new_unchecked(b));
        let mut bad = BYTES;
        LeavePacket::new_unchecked(&mut bad[..])
            .header_mut()
            .reserved = U16::new(0x100);
        assert_eq!(parse(&bad), Err(Error::Reserved("leave.reserved")));
        let mut bad = BYTES;
        LeavePacket::new_unchecked(&mut bad[..]).set_msg_type(MessageType::Status);
        assert_eq!(parse(&bad), Err(Error::Field("type")));
        let mut bad = BYTES;
        bad[0] = 2;
        assert_eq!(parse(&bad), Err(Error::Version(2)));
    }

    #[test]
    fn display_is_one_line_with_the_key_fields() {
        extern crate std;
        use std::string::ToString;
        assert_eq!(REPR.to_string(), "Leave job 7 rank 2 session 0x01020304");
    }

    #[test]
    fn len_is_derived_from_the_fields() {
        assert_eq!(LEN, 12);
    }
}
