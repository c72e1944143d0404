//! Contribution (0x01) and Result (0x02): the data message (protocol.md §3.1).
//!
//! ```text
//!  0: version | 1: type | 2-3: job | 4-5: rank | 6-7: slot | 8: ver | 9: flags
//! 10-11: count | 12-15: seq | 16: exp | 17: reserved | 18-19: reserved | 20-23: session
//! 24-: count × i32
//! ```

use zerocopy::network_endian::{I32, U16, U32};
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};

use super::{check_tail_len, Error, MessageType, Prefix, Result, VERSION};

/// The fixed header of a data message, in wire order.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned,
)]
#[repr(C)]
pub struct Header {
    /// Version, type, job and rank.
    pub prefix: Prefix,
    /// Job-relative slot index.
    pub slot: U16,
    /// Shadow version (0 or 1).
    pub ver: u8,
    /// Flag bits.
    pub flags: u8,
    /// Number of int32 values.
    pub count: U16,
    /// Use number of the slot.
    pub seq: U32,
    /// Biased block exponent.
    pub exp: u8,
    /// Reserved byte.
    pub reserved_a: u8,
    /// Reserved pair of bytes.
    pub reserved_b: U16,
    /// The job run's session token (protocol.md §4.1).
    pub session: U32,
}

/// Length of the data header: the size of [`Header`]; the values follow it.
pub const HEADER_LEN: usize = core::mem::size_of::<Header>();
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
    /// Contribution: the chunk held a +∞ (sent as 0). Result: some contribution did.
    pub const POS_INF: Flags = Flags(0x04);
    /// Contribution: the chunk held a −∞ (sent as 0). Result: some contribution did.
    pub const NEG_INF: Flags = Flags(0x08);
    /// Contribution: the chunk held a NaN (sent as 0). Result: some contribution did.
    pub const NAN: Flags = Flags(0x10);
    /// Contribution: the sender's path is congested. Result: some contribution was marked,
    /// or the switch marked the Result itself (protocol.md §6.3).
    pub const CONGESTED: Flags = Flags(0x20);
    /// The three non-finite bits (protocol.md §5.4).
    pub const NON_FINITE: Flags = Flags(0x1c);
    /// The bits a switch ORs from every counted Contribution into the Result: the
    /// non-finite ones and `CONGESTED` (protocol.md §4).
    pub const CARRIED: Flags = Flags(0x3c);
    /// The bits a slot version keeps for its Result: `OVERFLOW` and the carried ones.
    pub const STICKY: Flags = Flags(0x3d);

    /// Return whether every bit of `other` is set.
    pub const fn contains(self, other: Flags) -> bool {
        self.0 & other.0 == other.0
    }

    /// Return the union.
    #[must_use]
    pub const fn with(self, other: Flags) -> Flags {
        Flags(self.0 | other.0)
    }

    /// Return the bits set in both.
    #[must_use]
    pub const fn and(self, other: Flags) -> Flags {
        Flags(self.0 & other.0)
    }

    /// Return whether any bit of `other` is set.
    pub const fn intersects(self, other: Flags) -> bool {
        self.0 & other.0 != 0
    }
}

impl core::fmt::Display for Flags {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        super::show::flags(
            f,
            self.0,
            &[
                (Flags::OVERFLOW.0, "OVERFLOW"),
                (Flags::RETRANSMIT.0, "RETRANSMIT"),
                (Flags::POS_INF.0, "POS_INF"),
                (Flags::NEG_INF.0, "NEG_INF"),
                (Flags::NAN.0, "NAN"),
                (Flags::CONGESTED.0, "CONGESTED"),
            ],
        )
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

impl core::fmt::Display for DataKind {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        core::fmt::Debug::fmt(self, f)
    }
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
    DataPacket,
    Header
);

impl<T: AsRef<[u8]>> DataPacket<T> {
    /// Check that the buffer holds the header and exactly `count` values.
    pub fn check_len(&self) -> Result<()> {
        check_tail_len(self.buffer.as_ref().len(), HEADER_LEN, || {
            4 * usize::from(self.count())
        })
    }

    /// Return the slot field.
    pub fn slot(&self) -> u16 {
        self.header().slot.get()
    }

    /// Return the shadow version field.
    pub fn ver(&self) -> u8 {
        self.header().ver
    }

    /// Return the flags field.
    pub fn flags(&self) -> Flags {
        Flags(self.header().flags)
    }

    /// Return the count field.
    pub fn count(&self) -> u16 {
        self.header().count.get()
    }

    /// Return the seq field.
    pub fn seq(&self) -> u32 {
        self.header().seq.get()
    }

    /// Return the exponent field.
    pub fn exp(&self) -> u8 {
        self.header().exp
    }

    /// Return the first reserved field.
    pub fn reserved_a(&self) -> u8 {
        self.header().reserved_a
    }

    /// Return the second reserved field.
    pub fn reserved_b(&self) -> u16 {
        self.header().reserved_b.get()
    }

    /// Return the session field.
    pub fn session(&self) -> u32 {
        self.header().session.get()
    }

    /// Return the payload: the values as big-endian bytes.
    pub fn values(&self) -> &[u8] {
        self.tail()
    }

    /// Return the payload in place as network-endian int32 (a trailing partial value, which
    /// `check_len` rules out, is left out).
    pub fn values_i32(&self) -> &[I32] {
        let tail = self.tail();
        <[I32]>::ref_from_prefix_with_elems(tail, tail.len() / 4).map_or(&[], |(v, _)| v)
    }

    /// Return value `i`, or `None` beyond the buffer.
    pub fn value(&self, i: usize) -> Option<i32> {
        self.values_i32().get(i).map(|v| v.get())
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> DataPacket<T> {
    /// Set the slot field.
    pub fn set_slot(&mut self, v: u16) {
        self.header_mut().slot.set(v);
    }

    /// Set the flags field.
    pub fn set_flags(&mut self, f: Flags) {
        self.header_mut().flags = f.0;
    }

    /// Set the count field.
    pub fn set_count(&mut self, v: u16) {
        self.header_mut().count.set(v);
    }

    /// Set the seq field.
    pub fn set_seq(&mut self, v: u32) {
        self.header_mut().seq.set(v);
    }

    /// Set the exponent field.
    pub fn set_exp(&mut self, v: u8) {
        self.header_mut().exp = v;
    }

    /// Set the session field.
    pub fn set_session(&mut self, v: u32) {
        self.header_mut().session.set(v);
    }

    /// Return the payload, mutably.
    pub fn values_mut(&mut self) -> &mut [u8] {
        self.split_mut().1
    }

    /// Return the payload in place as network-endian int32, mutably (a trailing partial
    /// value, which `check_len` rules out, is left out).
    pub fn values_i32_mut(&mut self) -> &mut [I32] {
        let tail = self.split_mut().1;
        let n = tail.len() / 4;
        <[I32]>::mut_from_prefix_with_elems(tail, n).map_or(&mut [], |(v, _)| v)
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
    // Inlined: the switch parses every Contribution, and out of line the result went
    // through memory and cost its data path ~15% (core/benches/switch.rs).
    #[inline]
    pub fn parse<T: AsRef<[u8]> + ?Sized>(packet: &DataPacket<&T>) -> Result<DataRepr> {
        packet.check_len()?;
        let h = packet.header();
        if h.prefix.version != VERSION {
            return Err(Error::Version(h.prefix.version));
        }
        let kind = match h.prefix.msg_type() {
            MessageType::Contribution => DataKind::Contribution,
            MessageType::Result => DataKind::Result,
            _ => return Err(Error::Field("type")),
        };
        if h.ver > 1 {
            return Err(Error::Field("ver"));
        }
        if h.reserved_a != 0 || h.reserved_b != U16::ZERO {
            return Err(Error::Reserved("data.reserved"));
        }
        Ok(DataRepr {
            kind,
            job: h.prefix.job.get(),
            rank: h.prefix.rank.get(),
            slot: h.slot.get(),
            ver: h.ver,
            flags: Flags(h.flags),
            count: h.count.get(),
            seq: h.seq.get(),
            exp: h.exp,
            session: h.session.get(),
        })
    }

    /// Return the length of the whole message: header and values.
    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN + 4 * self.count as usize
    }

    /// Write the header; the values are written through [`DataPacket::values_mut`].
    /// The packet must be at least `HEADER_LEN` bytes long.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]> + ?Sized>(&self, packet: &mut DataPacket<&mut T>) {
        *packet.header_mut() = Header {
            prefix: Prefix::new(self.kind.into(), self.job, self.rank),
            slot: U16::new(self.slot),
            ver: self.ver,
            flags: self.flags.0,
            count: U16::new(self.count),
            seq: U32::new(self.seq),
            exp: self.exp,
            reserved_a: 0,
            reserved_b: U16::ZERO,
            session: U32::new(self.session),
        };
    }
}

/// One line: `Contribution job 7 rank 3 slot 5 ver 1 seq 9 count 2 exp 130 session
/// 0xa1b2c3d4 flags RETRANSMIT` (no `flags` when none is set).
impl core::fmt::Display for DataRepr {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(
            f,
            "{} job {} rank {} slot {} ver {} seq {} count {} exp {} session {:#010x}",
            self.kind,
            self.job,
            super::show::Rank(self.rank),
            self.slot,
            self.ver,
            self.seq,
            self.count,
            self.exp,
            self.session
        )?;
        if self.flags != Flags::default() {
            write!(f, " flags {}", self.flags)?;
        }
        Ok(())
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
        p.values_i32_mut()
            .copy_from_slice(&[I32::new(1), I32::new(-2)]);
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
        DataPacket::new_unchecked(&mut bad[..]).header_mut().ver = 2;
        assert_eq!(
            DataRepr::parse(&DataPacket::new_unchecked(&bad[..])),
            Err(Error::Field("ver"))
        );
        let mut bad = BYTES;
        DataPacket::new_unchecked(&mut bad[..])
            .header_mut()
            .reserved_b = U16::new(0x100);
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
    fn display_is_one_line_with_the_key_fields() {
        extern crate std;
        use std::string::ToString;
        assert_eq!(
            REPR.to_string(),
            "Contribution job 7 rank 3 slot 5 ver 1 seq 9 count 2 exp 130 session 0xa1b2c3d4 \
             flags RETRANSMIT"
        );
        let result = DataRepr {
            kind: DataKind::Result,
            rank: crate::wire::RANK_ALL,
            flags: Flags::OVERFLOW.with(Flags(0x80)),
            ..REPR
        };
        assert_eq!(
            result.to_string(),
            "Result job 7 rank all slot 5 ver 1 seq 9 count 2 exp 130 session 0xa1b2c3d4 \
             flags OVERFLOW|0x80"
        );
        let plain = DataRepr {
            flags: Flags::default(),
            ..REPR
        };
        assert!(plain.to_string().ends_with("session 0xa1b2c3d4"));
    }

    #[test]
    fn header_len_is_derived_from_the_fields() {
        assert_eq!(HEADER_LEN, 24);
        assert_eq!(core::mem::offset_of!(Header, session), 20);
        assert_eq!(MAX_COUNT, 16370);
    }
}
