//! Leave (0x17): a worker's rank is done with the job's run (protocol.md §3.9).
//!
//! ```text
//!  0: version | 1: type | 2-3: job | 4-5: rank | 6-7: reserved | 8-11: session
//! ```

use super::{
    check_exact_len, get_u16, get_u32, prefix, put_prefix, put_u16, put_u32, Error, MessageType,
    Result, VERSION,
};

/// Field ranges.
pub mod field {
    use core::ops::Range;

    /// Reserved pair of bytes.
    pub const RESERVED: Range<usize> = super::prefix::LEN..8;
    /// The job run's session token.
    pub const SESSION: Range<usize> = RESERVED.end..RESERVED.end + 4;
}

/// Length of a Leave message.
pub const LEN: usize = field::SESSION.end;

super::packet_view!(
    /// A zero-copy view of a Leave message.
    LeavePacket
);

impl<T: AsRef<[u8]>> LeavePacket<T> {
    /// Check that the buffer is exactly [`LEN`] bytes long.
    pub fn check_len(&self) -> Result<()> {
        check_exact_len(self.buffer.as_ref().len(), LEN)
    }

    /// Return the reserved field.
    pub fn reserved(&self) -> u16 {
        get_u16(self.buffer.as_ref(), field::RESERVED)
    }

    /// Return the session field.
    pub fn session(&self) -> u32 {
        get_u32(self.buffer.as_ref(), field::SESSION)
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> LeavePacket<T> {
    /// Set the session field.
    pub fn set_session(&mut self, v: u32) {
        put_u32(self.buffer.as_mut(), field::SESSION, v);
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
        if packet.version() != VERSION {
            return Err(Error::Version(packet.version()));
        }
        if packet.msg_type() != MessageType::Leave {
            return Err(Error::Field("type"));
        }
        if packet.reserved() != 0 {
            return Err(Error::Reserved("leave.reserved"));
        }
        Ok(LeaveRepr {
            job: packet.job_id(),
            rank: packet.rank(),
            session: packet.session(),
        })
    }

    /// Return the length of the message.
    pub const fn buffer_len(&self) -> usize {
        LEN
    }

    /// Write the message. The packet must be at least [`LEN`] bytes long.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]> + ?Sized>(&self, packet: &mut LeavePacket<&mut T>) {
        let b = packet.buffer.as_mut();
        put_prefix(b, MessageType::Leave, self.job, self.rank);
        put_u16(b, field::RESERVED, 0);
        put_u32(b, field::SESSION, self.session);
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
        bad[field::RESERVED.start] = 1;
        assert_eq!(parse(&bad), Err(Error::Reserved("leave.reserved")));
        let mut bad = BYTES;
        bad[prefix::TYPE] = 0x15;
        assert_eq!(parse(&bad), Err(Error::Field("type")));
        let mut bad = BYTES;
        bad[0] = 2;
        assert_eq!(parse(&bad), Err(Error::Version(2)));
    }

    #[test]
    fn len_is_derived_from_the_fields() {
        assert_eq!(LEN, 12);
    }
}
