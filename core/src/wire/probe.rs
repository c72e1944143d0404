//! Probe (0x12): a stalled worker asks for the state of one slot version (protocol.md §3.4).
//!
//! ```text
//!  0: version | 1: type | 2-3: job | 4-5: rank | 6-7: slot | 8: ver | 9: reserved
//! 10-11: reserved | 12-15: seq | 16-19: session
//! ```

use super::{
    check_exact_len, get_u16, get_u32, prefix, put_prefix, put_u16, put_u32, Error, MessageType,
    Result, VERSION,
};

/// Field ranges.
pub mod field {
    use core::ops::Range;

    /// Job-relative slot index.
    pub const SLOT: Range<usize> = super::prefix::LEN..8;
    /// Shadow version (0 or 1).
    pub const VER: usize = SLOT.end;
    /// Reserved byte.
    pub const RESERVED_A: usize = VER + 1;
    /// Reserved pair of bytes.
    pub const RESERVED_B: Range<usize> = RESERVED_A + 1..RESERVED_A + 3;
    /// The use the worker is waiting for.
    pub const SEQ: Range<usize> = RESERVED_B.end..RESERVED_B.end + 4;
    /// The job run's session token.
    pub const SESSION: Range<usize> = SEQ.end..SEQ.end + 4;
}

/// Length of a Probe message.
pub const LEN: usize = field::SESSION.end;

super::packet_view!(
    /// A zero-copy view of a Probe message.
    ProbePacket
);

impl<T: AsRef<[u8]>> ProbePacket<T> {
    /// Check that the buffer is exactly [`LEN`] bytes long.
    pub fn check_len(&self) -> Result<()> {
        check_exact_len(self.buffer.as_ref().len(), LEN)
    }

    /// Return the slot field.
    pub fn slot(&self) -> u16 {
        get_u16(self.buffer.as_ref(), field::SLOT)
    }

    /// Return the shadow version field.
    pub fn ver(&self) -> u8 {
        self.buffer.as_ref()[field::VER]
    }

    /// Return the first reserved field.
    pub fn reserved_a(&self) -> u8 {
        self.buffer.as_ref()[field::RESERVED_A]
    }

    /// Return the second reserved field.
    pub fn reserved_b(&self) -> u16 {
        get_u16(self.buffer.as_ref(), field::RESERVED_B)
    }

    /// Return the seq field.
    pub fn seq(&self) -> u32 {
        get_u32(self.buffer.as_ref(), field::SEQ)
    }

    /// Return the session field.
    pub fn session(&self) -> u32 {
        get_u32(self.buffer.as_ref(), field::SESSION)
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> ProbePacket<T> {
    /// Set the slot field.
    pub fn set_slot(&mut self, v: u16) {
        put_u16(self.buffer.as_mut(), field::SLOT, v);
    }

    /// Set the shadow version field.
    pub fn set_ver(&mut self, v: u8) {
        self.buffer.as_mut()[field::VER] = v;
    }

    /// Set the seq field.
    pub fn set_seq(&mut self, v: u32) {
        put_u32(self.buffer.as_mut(), field::SEQ, v);
    }

    /// Set the session field.
    pub fn set_session(&mut self, v: u32) {
        put_u32(self.buffer.as_mut(), field::SESSION, v);
    }
}

/// A validated Probe message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct ProbeRepr {
    /// Job id.
    pub job: u16,
    /// The sender's rank.
    pub rank: u16,
    /// Job-relative slot.
    pub slot: u16,
    /// Shadow version, 0 or 1.
    pub ver: u8,
    /// The use the worker is waiting for.
    pub seq: u32,
    /// The job run's session token.
    pub session: u32,
}

impl ProbeRepr {
    /// Parse and validate a Probe message.
    pub fn parse<T: AsRef<[u8]> + ?Sized>(packet: &ProbePacket<&T>) -> Result<ProbeRepr> {
        packet.check_len()?;
        if packet.version() != VERSION {
            return Err(Error::Version(packet.version()));
        }
        if packet.msg_type() != MessageType::Probe {
            return Err(Error::Field("type"));
        }
        if packet.ver() > 1 {
            return Err(Error::Field("ver"));
        }
        if packet.reserved_a() != 0 || packet.reserved_b() != 0 {
            return Err(Error::Reserved("probe.reserved"));
        }
        Ok(ProbeRepr {
            job: packet.job_id(),
            rank: packet.rank(),
            slot: packet.slot(),
            ver: packet.ver(),
            seq: packet.seq(),
            session: packet.session(),
        })
    }

    /// Return the length of the message.
    pub const fn buffer_len(&self) -> usize {
        LEN
    }

    /// Write the message. The packet must be at least [`LEN`] bytes long.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]> + ?Sized>(&self, packet: &mut ProbePacket<&mut T>) {
        let b = packet.buffer.as_mut();
        put_prefix(b, MessageType::Probe, self.job, self.rank);
        put_u16(b, field::SLOT, self.slot);
        b[field::VER] = self.ver;
        b[field::RESERVED_A] = 0;
        put_u16(b, field::RESERVED_B, 0);
        put_u32(b, field::SEQ, self.seq);
        put_u32(b, field::SESSION, self.session);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Job 7, rank 2 asks about slot 5, version 0, use 0x10000, session 0x0A0B0C0D.
    const BYTES: [u8; 20] = [
        0x01, 0x12, 0x00, 0x07, 0x00, 0x02, 0x00, 0x05, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00,
        0x00, 0x0A, 0x0B, 0x0C, 0x0D,
    ];
    const REPR: ProbeRepr = ProbeRepr {
        job: 7,
        rank: 2,
        slot: 5,
        ver: 0,
        seq: 0x1_0000,
        session: 0x0A0B_0C0D,
    };

    #[test]
    fn decode_known_bytes() {
        let p = ProbePacket::new_checked(&BYTES[..]).unwrap();
        assert_eq!(ProbeRepr::parse(&p), Ok(REPR));
    }

    #[test]
    fn encode_to_known_bytes() {
        let mut buf = [0xAAu8; 20];
        assert_eq!(REPR.buffer_len(), 20);
        REPR.emit(&mut ProbePacket::new_unchecked(&mut buf[..]));
        assert_eq!(buf, BYTES);
    }

    #[test]
    fn reject_impossible_lengths_and_fields() {
        let check = |b: &[u8]| ProbePacket::new_checked(b).err();
        assert_eq!(check(&BYTES[..6]), Some(Error::Truncated));
        assert_eq!(check(&BYTES[..19]), Some(Error::Truncated));
        let mut long = [0u8; 21];
        long[..20].copy_from_slice(&BYTES);
        assert_eq!(check(&long), Some(Error::TrailingBytes));
        let parse = |b: &[u8]| ProbeRepr::parse(&ProbePacket::new_unchecked(b));
        let mut bad = BYTES;
        bad[field::VER] = 2;
        assert_eq!(parse(&bad), Err(Error::Field("ver")));
        let mut bad = BYTES;
        bad[field::RESERVED_A] = 0x80;
        assert_eq!(parse(&bad), Err(Error::Reserved("probe.reserved")));
        let mut bad = BYTES;
        bad[field::RESERVED_B.start] = 1;
        assert_eq!(parse(&bad), Err(Error::Reserved("probe.reserved")));
        let mut bad = BYTES;
        bad[prefix::TYPE] = 0x13;
        assert_eq!(parse(&bad), Err(Error::Field("type")));
        let mut bad = BYTES;
        bad[0] = 0xFF;
        assert_eq!(parse(&bad), Err(Error::Version(0xFF)));
    }

    #[test]
    fn len_is_derived_from_the_fields() {
        assert_eq!(LEN, 20);
    }
}
