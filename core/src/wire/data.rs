//! Contribution (0x01) and Result (0x02): the data message (protocol.md §3.1).
//!
//! ```text
//!  0: version | 1: type | 2-3: job | 4-5: rank | 6-7: slot | 8: ver | 9: flags
//! 10-11: count | 12-15: seq | 16: exp | 17: reserved | 18-19: reserved | 20-23: session
//! 24-: count × i32
//! ```

use super::{get_u16, get_u32, prefix, put_prefix, Error, MessageType, Result, VERSION};

/// Field ranges.
pub mod field {
    use core::ops::Range;

    /// Job-relative slot index.
    pub const SLOT: Range<usize> = super::prefix::LEN..8;
    /// Shadow version (0 or 1).
    pub const VER: usize = SLOT.end;
    /// Flag bits.
    pub const FLAGS: usize = VER + 1;
    /// Number of int32 values.
    pub const COUNT: Range<usize> = FLAGS + 1..FLAGS + 3;
    /// Use number of the slot.
    pub const SEQ: Range<usize> = COUNT.end..COUNT.end + 4;
    /// Biased block exponent.
    pub const EXP: usize = SEQ.end;
    /// Reserved byte.
    pub const RESERVED_A: usize = EXP + 1;
    /// Reserved pair of bytes.
    pub const RESERVED_B: Range<usize> = RESERVED_A + 1..RESERVED_A + 3;
    /// The job run's session token (protocol.md §4.1).
    pub const SESSION: Range<usize> = RESERVED_B.end..RESERVED_B.end + 4;
    /// The values.
    pub const VALUES: usize = SESSION.end;
}

/// Length of the data header.
pub const HEADER_LEN: usize = field::VALUES;
/// The largest count a datagram can carry over IPv4 (65,507 payload bytes).
pub const MAX_COUNT: u16 = ((65_507 - HEADER_LEN) / 4) as u16;

/// The flag bits of a data message. Unknown bits are kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Flags(pub u8);

impl Flags {
    /// Result: an addition into the slot overflowed int32.
    pub const OVERFLOW: Flags = Flags(0x01);
    /// Contribution: a resend. Result: a unicast answer to a resend.
    pub const RETRANSMIT: Flags = Flags(0x02);

    /// Return whether every bit of `other` is set.
    pub const fn contains(self, other: Flags) -> bool {
        self.0 & other.0 == other.0
    }

    /// Return the union.
    #[must_use]
    pub const fn with(self, other: Flags) -> Flags {
        Flags(self.0 | other.0)
    }
}

/// Which of the two data messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum DataKind {
    /// Worker → switch.
    Contribution,
    /// Switch → worker.
    Result,
}

impl From<DataKind> for MessageType {
    fn from(k: DataKind) -> MessageType {
        match k {
            DataKind::Contribution => MessageType::Contribution,
            DataKind::Result => MessageType::Result,
        }
    }
}

super::packet_view!(
    /// A zero-copy view of a data message.
    DataPacket
);

impl<T: AsRef<[u8]>> DataPacket<T> {
    /// Check that the buffer holds the header and exactly `count` values.
    pub fn check_len(&self) -> Result<()> {
        let len = self.buffer.as_ref().len();
        if len < HEADER_LEN {
            return Err(Error::Truncated);
        }
        let want = HEADER_LEN + 4 * self.count() as usize;
        match len.cmp(&want) {
            core::cmp::Ordering::Less => Err(Error::Truncated),
            core::cmp::Ordering::Greater => Err(Error::TrailingBytes),
            core::cmp::Ordering::Equal => Ok(()),
        }
    }

    /// Return the slot field.
    pub fn slot(&self) -> u16 {
        get_u16(self.buffer.as_ref(), field::SLOT)
    }

    /// Return the shadow version field.
    pub fn ver(&self) -> u8 {
        self.buffer.as_ref()[field::VER]
    }

    /// Return the flags field.
    pub fn flags(&self) -> Flags {
        Flags(self.buffer.as_ref()[field::FLAGS])
    }

    /// Return the count field.
    pub fn count(&self) -> u16 {
        get_u16(self.buffer.as_ref(), field::COUNT)
    }

    /// Return the seq field.
    pub fn seq(&self) -> u32 {
        get_u32(self.buffer.as_ref(), field::SEQ)
    }

    /// Return the exponent field.
    pub fn exp(&self) -> u8 {
        self.buffer.as_ref()[field::EXP]
    }

    /// Return the first reserved field.
    pub fn reserved_a(&self) -> u8 {
        self.buffer.as_ref()[field::RESERVED_A]
    }

    /// Return the second reserved field.
    pub fn reserved_b(&self) -> u16 {
        get_u16(self.buffer.as_ref(), field::RESERVED_B)
    }

    /// Return the session field.
    pub fn session(&self) -> u32 {
        get_u32(self.buffer.as_ref(), field::SESSION)
    }

    /// Return the payload: the values as big-endian bytes.
    pub fn values(&self) -> &[u8] {
        &self.buffer.as_ref()[field::VALUES..]
    }

    /// Return value `i`, or `None` beyond the buffer.
    pub fn value(&self, i: usize) -> Option<i32> {
        let b = self.values().get(4 * i..4 * i + 4)?;
        Some(i32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> DataPacket<T> {
    /// Set the slot field.
    pub fn set_slot(&mut self, v: u16) {
        self.buffer.as_mut()[field::SLOT].copy_from_slice(&v.to_be_bytes());
    }

    /// Set the flags field.
    pub fn set_flags(&mut self, f: Flags) {
        self.buffer.as_mut()[field::FLAGS] = f.0;
    }

    /// Set the count field.
    pub fn set_count(&mut self, v: u16) {
        self.buffer.as_mut()[field::COUNT].copy_from_slice(&v.to_be_bytes());
    }

    /// Set the seq field.
    pub fn set_seq(&mut self, v: u32) {
        self.buffer.as_mut()[field::SEQ].copy_from_slice(&v.to_be_bytes());
    }

    /// Set the exponent field.
    pub fn set_exp(&mut self, v: u8) {
        self.buffer.as_mut()[field::EXP] = v;
    }

    /// Set the session field.
    pub fn set_session(&mut self, v: u32) {
        self.buffer.as_mut()[field::SESSION].copy_from_slice(&v.to_be_bytes());
    }

    /// Return the payload, mutably.
    pub fn values_mut(&mut self) -> &mut [u8] {
        &mut self.buffer.as_mut()[field::VALUES..]
    }
}

/// A validated data message header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct DataRepr {
    /// Contribution or Result.
    pub kind: DataKind,
    /// Job id.
    pub job: u16,
    /// Sender (Contribution) or destination (Result; `RANK_ALL` for multicast).
    pub rank: u16,
    /// Job-relative slot.
    pub slot: u16,
    /// Shadow version, 0 or 1.
    pub ver: u8,
    /// Flag bits.
    pub flags: Flags,
    /// Number of values.
    pub count: u16,
    /// The slot's use number.
    pub seq: u32,
    /// Biased block exponent.
    pub exp: u8,
    /// The job run's session token (the switch echoes it in Results).
    pub session: u32,
}

impl DataRepr {
    /// Parse and validate a data message header (values are read through the packet).
    pub fn parse<T: AsRef<[u8]> + ?Sized>(packet: &DataPacket<&T>) -> Result<DataRepr> {
        packet.check_len()?;
        if packet.version() != VERSION {
            return Err(Error::Version(packet.version()));
        }
        let kind = match packet.msg_type() {
            MessageType::Contribution => DataKind::Contribution,
            MessageType::Result => DataKind::Result,
            _ => return Err(Error::Field("type")),
        };
        if packet.ver() > 1 {
            return Err(Error::Field("ver"));
        }
        if packet.reserved_a() != 0 || packet.reserved_b() != 0 {
            return Err(Error::Reserved("data.reserved"));
        }
        Ok(DataRepr {
            kind,
            job: packet.job_id(),
            rank: packet.rank(),
            slot: packet.slot(),
            ver: packet.ver(),
            flags: packet.flags(),
            count: packet.count(),
            seq: packet.seq(),
            exp: packet.exp(),
            session: packet.session(),
        })
    }

    /// Return the length of the whole message: header and values.
    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN + 4 * self.count as usize
    }

    /// Write the header; the values are written through [`DataPacket::values_mut`].
    /// The packet must be at least `HEADER_LEN` bytes long.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]> + ?Sized>(&self, packet: &mut DataPacket<&mut T>) {
        let b = packet.buffer.as_mut();
        put_prefix(b, self.kind.into(), self.job, self.rank);
        b[field::SLOT].copy_from_slice(&self.slot.to_be_bytes());
        b[field::VER] = self.ver;
        b[field::FLAGS] = self.flags.0;
        b[field::COUNT].copy_from_slice(&self.count.to_be_bytes());
        b[field::SEQ].copy_from_slice(&self.seq.to_be_bytes());
        b[field::EXP] = self.exp;
        b[field::RESERVED_A] = 0;
        b[field::RESERVED_B].copy_from_slice(&[0, 0]);
        b[field::SESSION].copy_from_slice(&self.session.to_be_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // A Contribution: job 7, rank 3, slot 5, ver 1, RETRANSMIT, count 2, seq 9, exp 130,
    // session 0xA1B2C3D4, values [1, -2].
    const BYTES: [u8; 32] = [
        0x01, 0x01, 0x00, 0x07, 0x00, 0x03, 0x00, 0x05, 0x01, 0x02, 0x00, 0x02, 0x00, 0x00, 0x00,
        0x09, 0x82, 0x00, 0x00, 0x00, 0xA1, 0xB2, 0xC3, 0xD4, 0x00, 0x00, 0x00, 0x01, 0xFF, 0xFF,
        0xFF, 0xFE,
    ];
    const REPR: DataRepr = DataRepr {
        kind: DataKind::Contribution,
        job: 7,
        rank: 3,
        slot: 5,
        ver: 1,
        flags: Flags::RETRANSMIT,
        count: 2,
        seq: 9,
        exp: 130,
        session: 0xA1B2_C3D4,
    };

    #[test]
    fn decode_known_bytes() {
        let p = DataPacket::new_checked(&BYTES[..]).unwrap();
        assert_eq!(DataRepr::parse(&p), Ok(REPR));
        assert_eq!(p.value(0), Some(1));
        assert_eq!(p.value(1), Some(-2));
        assert_eq!(p.value(2), None);
    }

    #[test]
    fn encode_to_known_bytes() {
        let mut buf = [0xAAu8; 32];
        assert_eq!(REPR.buffer_len(), 32);
        let mut p = DataPacket::new_unchecked(&mut buf[..]);
        REPR.emit(&mut p);
        p.values_mut()[..4].copy_from_slice(&1i32.to_be_bytes());
        p.values_mut()[4..].copy_from_slice(&(-2i32).to_be_bytes());
        assert_eq!(buf, BYTES);
    }

    #[test]
    fn reject_impossible_lengths_and_fields() {
        let short = DataPacket::new_unchecked(&BYTES[..HEADER_LEN - 1]);
        assert_eq!(short.check_len(), Err(Error::Truncated));
        assert_eq!(
            DataPacket::new_checked(&BYTES[..31]).err(),
            Some(Error::Truncated)
        );
        let mut long = [0u8; 33];
        long[..32].copy_from_slice(&BYTES);
        assert_eq!(
            DataPacket::new_checked(&long[..]).err(),
            Some(Error::TrailingBytes)
        );
        let mut bad = BYTES;
        bad[field::VER] = 2;
        assert_eq!(
            DataRepr::parse(&DataPacket::new_unchecked(&bad[..])),
            Err(Error::Field("ver"))
        );
        let mut bad = BYTES;
        bad[field::RESERVED_B.start] = 1;
        assert_eq!(
            DataRepr::parse(&DataPacket::new_unchecked(&bad[..])),
            Err(Error::Reserved("data.reserved"))
        );
        let mut bad = BYTES;
        bad[0] = 2;
        assert_eq!(
            DataRepr::parse(&DataPacket::new_unchecked(&bad[..])),
            Err(Error::Version(2))
        );
    }

    #[test]
    fn header_len_is_derived_from_the_fields() {
        assert_eq!(HEADER_LEN, 24);
        assert_eq!(MAX_COUNT, 16370);
    }
}
