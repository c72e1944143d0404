//! Probe (0x12): a stalled worker asks for the state of one slot version (protocol.md §3.4).
//!
//! ```text
//!  0: version | 1: type | 2-3: job | 4-5: rank | 6-7: slot | 8: ver | 9: flags
//! 10-11: reserved | 12-15: seq | 16-19: session
//! ```

use zerocopy::network_endian::{U16, U32};
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};

use super::{check_exact_len, Error, MessageType, Prefix, Result};

/// A Probe message, in wire order.
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
    /// Flag bits ([`ProbeFlags`]; reserved, 0, before `RESULT`).
    pub flags: u8,
    /// Reserved pair of bytes.
    pub reserved_b: U16,
    /// The use the worker is waiting for.
    pub seq: U32,
    /// The job run's session token.
    pub session: U32,
}

/// Length of a Probe message: the size of [`Header`].
pub const LEN: usize = core::mem::size_of::<Header>();

super::packet_view!(
    /// A zero-copy view of a Probe message.
    ProbePacket,
    Header
);

impl<T: AsRef<[u8]>> ProbePacket<T> {
    /// Check that the buffer is exactly [`LEN`] bytes long.
    pub fn check_len(&self) -> Result<()> {
        check_exact_len(self.buffer.as_ref().len(), LEN)
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
    pub fn flags(&self) -> u8 {
        self.header().flags
    }

    /// Return the second reserved field.
    pub fn reserved_b(&self) -> u16 {
        self.header().reserved_b.get()
    }

    /// Return the seq field.
    pub fn seq(&self) -> u32 {
        self.header().seq.get()
    }

    /// Return the session field.
    pub fn session(&self) -> u32 {
        self.header().session.get()
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> ProbePacket<T> {
    /// Set the slot field.
    pub fn set_slot(&mut self, v: u16) {
        self.header_mut().slot.set(v);
    }

    /// Set the shadow version field.
    pub fn set_ver(&mut self, v: u8) {
        self.header_mut().ver = v;
    }

    /// Set the seq field.
    pub fn set_seq(&mut self, v: u32) {
        self.header_mut().seq.set(v);
    }

    /// Set the session field.
    pub fn set_session(&mut self, v: u32) {
        self.header_mut().session.set(v);
    }
}

/// The flag bits of a Probe. A Probe with any bit set goes only to a switch whose
/// JoinReply set `PROBE_RESULTS`; to any other it is malformed (the byte was reserved).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct ProbeFlags(pub u8);

impl ProbeFlags {
    /// No flag: the switch answers with a ProbeReply.
    pub const NONE: ProbeFlags = ProbeFlags(0);
    /// The worker's Result of this use was lost (a ProbeReply said the use is complete):
    /// answer with the stored Result instead of a ProbeReply (protocol.md §6.1).
    pub const RESULT: ProbeFlags = ProbeFlags(0x01);
    /// Every bit this version knows.
    const KNOWN: u8 = 0x01;

    /// Return whether every bit of `other` is set.
    pub const fn contains(self, other: ProbeFlags) -> bool {
        self.0 & other.0 == other.0
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
    /// Flag bits.
    pub flags: ProbeFlags,
}

impl ProbeRepr {
    /// Parse and validate a Probe message.
    pub fn parse<T: AsRef<[u8]> + ?Sized>(packet: &ProbePacket<&T>) -> Result<ProbeRepr> {
        packet.check_len()?;
        let h = packet.header();
        h.prefix.check(MessageType::Probe)?;
        if h.ver > 1 {
            return Err(Error::Field("ver"));
        }
        if h.flags & !ProbeFlags::KNOWN != 0 || h.reserved_b != U16::ZERO {
            return Err(Error::Reserved("probe.reserved"));
        }
        Ok(ProbeRepr {
            job: h.prefix.job.get(),
            rank: h.prefix.rank.get(),
            slot: h.slot.get(),
            ver: h.ver,
            seq: h.seq.get(),
            session: h.session.get(),
            flags: ProbeFlags(h.flags),
        })
    }

    /// Return the length of the message.
    pub const fn buffer_len(&self) -> usize {
        LEN
    }

    /// Write the message. The packet must be at least [`LEN`] bytes long.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]> + ?Sized>(&self, packet: &mut ProbePacket<&mut T>) {
        *packet.header_mut() = Header {
            prefix: Prefix::new(MessageType::Probe, self.job, self.rank),
            slot: U16::new(self.slot),
            ver: self.ver,
            flags: self.flags.0,
            reserved_b: U16::ZERO,
            seq: U32::new(self.seq),
            session: U32::new(self.session),
        };
    }
}

/// One line: `Probe job 7 rank 2 slot 5 ver 0 seq 65536 session 0x0a0b0c0d` (and
/// ` result` if it asks for the Result).
impl core::fmt::Display for ProbeRepr {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(
            f,
            "Probe job {} rank {} slot {} ver {} seq {} session {:#010x}",
            self.job, self.rank, self.slot, self.ver, self.seq, self.session
        )?;
        if self.flags.contains(ProbeFlags::RESULT) {
            f.write_str(" result")?;
        }
        Ok(())
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
        flags: ProbeFlags::NONE,
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
        ProbePacket::new_unchecked(&mut bad[..]).set_ver(2);
        assert_eq!(parse(&bad), Err(Error::Field("ver")));
        let mut bad = BYTES;
        ProbePacket::new_unchecked(&mut bad[..]).header_mut().flags = 0x80;
        assert_eq!(parse(&bad), Err(Error::Reserved("probe.reserved")));
        let mut bad = BYTES;
        ProbePacket::new_unchecked(&mut bad[..])
            .header_mut()
            .reserved_b = U16::new(0x100);
        assert_eq!(parse(&bad), Err(Error::Reserved("probe.reserved")));
        let mut bad = BYTES;
        ProbePacket::new_unchecked(&mut bad[..]).set_msg_type(MessageType::ProbeReply);
        assert_eq!(parse(&bad), Err(Error::Field("type")));
        let mut bad = BYTES;
        bad[0] = 0xFF;
        assert_eq!(parse(&bad), Err(Error::Version(0xFF)));
    }

    #[test]
    fn the_result_flag_round_trips() {
        let asks = ProbeRepr {
            flags: ProbeFlags::RESULT,
            ..REPR
        };
        let mut buf = [0u8; 20];
        asks.emit(&mut ProbePacket::new_unchecked(&mut buf[..]));
        assert_eq!(buf[9], 0x01);
        assert_eq!(
            ProbeRepr::parse(&ProbePacket::new_unchecked(&buf[..])),
            Ok(asks)
        );
    }

    #[test]
    fn display_is_one_line_with_the_key_fields() {
        extern crate std;
        use std::string::ToString;
        assert_eq!(
            REPR.to_string(),
            "Probe job 7 rank 2 slot 5 ver 0 seq 65536 session 0x0a0b0c0d"
        );
    }

    #[test]
    fn len_is_derived_from_the_fields() {
        assert_eq!(LEN, 20);
    }
}
