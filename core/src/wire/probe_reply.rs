//! ProbeReply (0x13): the state of one slot version, as the switch holds it (protocol.md §3.5).
//!
//! ```text
//!  0: version | 1: type | 2-3: job | 4-5: rank | 6-7: slot | 8: ver | 9: state
//! 10-11: remaining | 12-15: seq | 16-19: epoch | 20-21: world | 22-23: bitmap_len
//! 24-: seen bitmap (bitmap_len bytes)
//! ```

use super::{
    check_exact_len, get_u16, get_u32, prefix, put_prefix, put_u16, put_u32, Error, MessageType,
    Result, MAX_BITMAP_LEN, VERSION,
};

/// Field ranges.
pub mod field {
    use core::ops::Range;

    /// Job-relative slot index.
    pub const SLOT: Range<usize> = super::prefix::LEN..8;
    /// Shadow version (0 or 1).
    pub const VER: usize = SLOT.end;
    /// Slot state.
    pub const STATE: usize = VER + 1;
    /// Contributions still missing.
    pub const REMAINING: Range<usize> = STATE + 1..STATE + 3;
    /// The use number the switch holds.
    pub const SEQ: Range<usize> = REMAINING.end..REMAINING.end + 4;
    /// The switch's incarnation.
    pub const EPOCH: Range<usize> = SEQ.end..SEQ.end + 4;
    /// The job's world size.
    pub const WORLD: Range<usize> = EPOCH.end..EPOCH.end + 2;
    /// Length of the bitmap in bytes.
    pub const BITMAP_LEN: Range<usize> = WORLD.end..WORLD.end + 2;
    /// The seen bitmap.
    pub const BITMAP: usize = BITMAP_LEN.end;
}

/// Length of the fixed part, before the bitmap.
pub const HEADER_LEN: usize = field::BITMAP;

/// The state of a slot version.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum SlotState {
    /// 0: never used since the job was set up.
    Idle,
    /// 1: collecting contributions.
    Collecting,
    /// 2: every contribution arrived; the result is held.
    Complete,
    /// A state this version does not know.
    Unknown(u8),
}

impl From<u8> for SlotState {
    fn from(b: u8) -> Self {
        match b {
            0 => SlotState::Idle,
            1 => SlotState::Collecting,
            2 => SlotState::Complete,
            other => SlotState::Unknown(other),
        }
    }
}

impl From<SlotState> for u8 {
    fn from(s: SlotState) -> u8 {
        match s {
            SlotState::Idle => 0,
            SlotState::Collecting => 1,
            SlotState::Complete => 2,
            SlotState::Unknown(other) => other,
        }
    }
}

super::packet_view!(
    /// A zero-copy view of a ProbeReply message.
    ProbeReplyPacket
);

impl<T: AsRef<[u8]>> ProbeReplyPacket<T> {
    /// Check that the buffer holds the fixed part and exactly `bitmap_len` bitmap bytes.
    pub fn check_len(&self) -> Result<()> {
        let len = self.buffer.as_ref().len();
        if len < HEADER_LEN {
            return Err(Error::Truncated);
        }
        check_exact_len(len, HEADER_LEN + self.bitmap_len() as usize)
    }

    /// Return the slot field.
    pub fn slot(&self) -> u16 {
        get_u16(self.buffer.as_ref(), field::SLOT)
    }

    /// Return the shadow version field.
    pub fn ver(&self) -> u8 {
        self.buffer.as_ref()[field::VER]
    }

    /// Return the state field.
    pub fn state(&self) -> SlotState {
        SlotState::from(self.buffer.as_ref()[field::STATE])
    }

    /// Return the remaining field.
    pub fn remaining(&self) -> u16 {
        get_u16(self.buffer.as_ref(), field::REMAINING)
    }

    /// Return the seq field.
    pub fn seq(&self) -> u32 {
        get_u32(self.buffer.as_ref(), field::SEQ)
    }

    /// Return the epoch field.
    pub fn epoch(&self) -> u32 {
        get_u32(self.buffer.as_ref(), field::EPOCH)
    }

    /// Return the world size field.
    pub fn world(&self) -> u16 {
        get_u16(self.buffer.as_ref(), field::WORLD)
    }

    /// Return the bitmap_len field.
    pub fn bitmap_len(&self) -> u16 {
        get_u16(self.buffer.as_ref(), field::BITMAP_LEN)
    }

    /// Return the seen bitmap: `bitmap_len` bytes after the fixed part.
    pub fn bitmap(&self) -> &[u8] {
        &self.buffer.as_ref()[HEADER_LEN..HEADER_LEN + self.bitmap_len() as usize]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> ProbeReplyPacket<T> {
    /// Set the slot field.
    pub fn set_slot(&mut self, v: u16) {
        put_u16(self.buffer.as_mut(), field::SLOT, v);
    }

    /// Set the shadow version field.
    pub fn set_ver(&mut self, v: u8) {
        self.buffer.as_mut()[field::VER] = v;
    }

    /// Set the state field.
    pub fn set_state(&mut self, s: SlotState) {
        self.buffer.as_mut()[field::STATE] = s.into();
    }

    /// Set the remaining field.
    pub fn set_remaining(&mut self, v: u16) {
        put_u16(self.buffer.as_mut(), field::REMAINING, v);
    }

    /// Set the seq field.
    pub fn set_seq(&mut self, v: u32) {
        put_u32(self.buffer.as_mut(), field::SEQ, v);
    }

    /// Set the epoch field.
    pub fn set_epoch(&mut self, v: u32) {
        put_u32(self.buffer.as_mut(), field::EPOCH, v);
    }

    /// Set the world size field.
    pub fn set_world(&mut self, v: u16) {
        put_u16(self.buffer.as_mut(), field::WORLD, v);
    }

    /// Set the bitmap_len field.
    pub fn set_bitmap_len(&mut self, v: u16) {
        put_u16(self.buffer.as_mut(), field::BITMAP_LEN, v);
    }

    /// Return the seen bitmap mutably: `bitmap_len` bytes after the fixed part.
    pub fn bitmap_mut(&mut self) -> &mut [u8] {
        let end = HEADER_LEN + self.bitmap_len() as usize;
        &mut self.buffer.as_mut()[HEADER_LEN..end]
    }
}

/// A validated ProbeReply message; the bitmap is borrowed from the packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct ProbeReplyRepr<'a> {
    /// Job id.
    pub job: u16,
    /// The destination rank.
    pub rank: u16,
    /// Job-relative slot.
    pub slot: u16,
    /// Shadow version, 0 or 1.
    pub ver: u8,
    /// The slot version's state.
    pub state: SlotState,
    /// Contributions still missing for the use the switch holds.
    pub remaining: u16,
    /// The use number the switch holds.
    pub seq: u32,
    /// The switch's incarnation.
    pub epoch: u32,
    /// The job's world size.
    pub world: u16,
    /// The seen bitmap of the held use, at most [`MAX_BITMAP_LEN`] bytes.
    pub seen: &'a [u8],
}

impl<'a> ProbeReplyRepr<'a> {
    /// Parse and validate a ProbeReply message.
    pub fn parse<T: AsRef<[u8]> + ?Sized>(
        packet: &ProbeReplyPacket<&'a T>,
    ) -> Result<ProbeReplyRepr<'a>> {
        packet.check_len()?;
        if packet.version() != VERSION {
            return Err(Error::Version(packet.version()));
        }
        if packet.msg_type() != MessageType::ProbeReply {
            return Err(Error::Field("type"));
        }
        if packet.ver() > 1 {
            return Err(Error::Field("ver"));
        }
        let bitmap_len = packet.bitmap_len() as usize;
        if bitmap_len > MAX_BITMAP_LEN {
            return Err(Error::Field("bitmap_len"));
        }
        // Borrow the bitmap for 'a, not for the lifetime of `packet`.
        let bytes: &'a [u8] = packet.buffer.as_ref();
        Ok(ProbeReplyRepr {
            job: packet.job_id(),
            rank: packet.rank(),
            slot: packet.slot(),
            ver: packet.ver(),
            state: packet.state(),
            remaining: packet.remaining(),
            seq: packet.seq(),
            epoch: packet.epoch(),
            world: packet.world(),
            seen: &bytes[HEADER_LEN..HEADER_LEN + bitmap_len],
        })
    }

    /// Return the length of the message: fixed part and bitmap.
    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN + self.seen.len()
    }

    /// Write the message, bitmap included. The packet must be at least `buffer_len()` bytes
    /// long. A `seen` longer than [`MAX_BITMAP_LEN`] gives a message `parse` rejects.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]> + ?Sized>(
        &self,
        packet: &mut ProbeReplyPacket<&mut T>,
    ) {
        let b = packet.buffer.as_mut();
        put_prefix(b, MessageType::ProbeReply, self.job, self.rank);
        put_u16(b, field::SLOT, self.slot);
        b[field::VER] = self.ver;
        b[field::STATE] = self.state.into();
        put_u16(b, field::REMAINING, self.remaining);
        put_u32(b, field::SEQ, self.seq);
        put_u32(b, field::EPOCH, self.epoch);
        put_u16(b, field::WORLD, self.world);
        put_u16(b, field::BITMAP_LEN, self.seen.len() as u16);
        b[HEADER_LEN..HEADER_LEN + self.seen.len()].copy_from_slice(self.seen);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Job 7, to rank 2: slot 5 version 1 is collecting use 9, 3 of 12 missing (ranks 2, 8, 11),
    // epoch 42.
    const BYTES: [u8; 26] = [
        0x01, 0x13, 0x00, 0x07, 0x00, 0x02, 0x00, 0x05, 0x01, 0x01, 0x00, 0x03, 0x00, 0x00, 0x00,
        0x09, 0x00, 0x00, 0x00, 0x2A, 0x00, 0x0C, 0x00, 0x02, 0xFB, 0x06,
    ];
    const REPR: ProbeReplyRepr<'static> = ProbeReplyRepr {
        job: 7,
        rank: 2,
        slot: 5,
        ver: 1,
        state: SlotState::Collecting,
        remaining: 3,
        seq: 9,
        epoch: 42,
        world: 12,
        seen: &[0xFB, 0x06],
    };

    #[test]
    fn decode_known_bytes() {
        let p = ProbeReplyPacket::new_checked(&BYTES[..]).unwrap();
        assert_eq!(p.bitmap(), &[0xFB, 0x06]);
        assert_eq!(ProbeReplyRepr::parse(&p), Ok(REPR));
    }

    #[test]
    fn encode_to_known_bytes() {
        let mut buf = [0xAAu8; 26];
        assert_eq!(REPR.buffer_len(), 26);
        REPR.emit(&mut ProbeReplyPacket::new_unchecked(&mut buf[..]));
        assert_eq!(buf, BYTES);
    }

    #[test]
    fn unknown_states_round_trip() {
        for b in 0..=255u8 {
            assert_eq!(u8::from(SlotState::from(b)), b);
        }
        let mut buf = BYTES;
        ProbeReplyPacket::new_unchecked(&mut buf[..]).set_state(SlotState::Unknown(9));
        let r = ProbeReplyRepr::parse(&ProbeReplyPacket::new_unchecked(&buf[..])).unwrap();
        assert_eq!(r.state, SlotState::Unknown(9));
    }

    #[test]
    fn reject_impossible_lengths_and_fields() {
        let check = |b: &[u8]| ProbeReplyPacket::new_checked(b).err();
        assert_eq!(check(&BYTES[..23]), Some(Error::Truncated));
        assert_eq!(check(&BYTES[..25]), Some(Error::Truncated));
        let mut long = [0u8; 27];
        long[..26].copy_from_slice(&BYTES);
        assert_eq!(check(&long), Some(Error::TrailingBytes));
        fn parse(b: &[u8]) -> Result<ProbeReplyRepr<'_>> {
            ProbeReplyRepr::parse(&ProbeReplyPacket::new_unchecked(b))
        }
        let mut bad = BYTES;
        bad[field::VER] = 3;
        assert_eq!(parse(&bad), Err(Error::Field("ver")));
        let mut bad = BYTES;
        bad[prefix::TYPE] = 0x11;
        assert_eq!(parse(&bad), Err(Error::Field("type")));
        let mut bad = BYTES;
        bad[0] = 0;
        assert_eq!(parse(&bad), Err(Error::Version(0)));
        let mut big = [0u8; HEADER_LEN + MAX_BITMAP_LEN + 1];
        big[..HEADER_LEN].copy_from_slice(&BYTES[..HEADER_LEN]);
        big[field::BITMAP_LEN].copy_from_slice(&(MAX_BITMAP_LEN as u16 + 1).to_be_bytes());
        assert_eq!(parse(&big), Err(Error::Field("bitmap_len")));
    }

    #[test]
    fn header_len_is_derived_from_the_fields() {
        assert_eq!(HEADER_LEN, 24);
    }
}
