//! ProbeReply (0x13): the state of one slot version, as the switch holds it (protocol.md §3.5).
//!
//! ```text
//!  0: version | 1: type | 2-3: job | 4-5: rank | 6-7: slot | 8: ver | 9: state
//! 10-11: remaining | 12-15: seq | 16-19: epoch | 20-21: world | 22-23: bitmap_len
//! 24-27: session | 28-: seen bitmap (bitmap_len bytes)
//! ```
//!
//! The session is the Probe's, echoed: a worker takes a ProbeReply (and the epoch in it) only
//! if it names the worker's own run, so no one who cannot read the run's packets can forge one
//! (§4.2).

use zerocopy::network_endian::{U16, U32};
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};

use super::{check_tail_len, split, Error, MessageType, Prefix, Result, MAX_BITMAP_LEN};

/// The fixed part of a ProbeReply message, in wire order; the seen bitmap follows it.
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
    /// Slot state.
    pub state: u8,
    /// Contributions still missing.
    pub remaining: U16,
    /// The use number the switch holds.
    pub seq: U32,
    /// The switch's incarnation.
    pub epoch: U32,
    /// The job's world size.
    pub world: U16,
    /// Length of the bitmap in bytes.
    pub bitmap_len: U16,
    /// The session of the Probe this answers.
    pub session: U32,
}

/// Length of the fixed part, before the bitmap: the size of [`Header`].
pub const HEADER_LEN: usize = core::mem::size_of::<Header>();

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
    ProbeReplyPacket,
    Header
);

impl<T: AsRef<[u8]>> ProbeReplyPacket<T> {
    /// Check that the buffer holds the fixed part and exactly `bitmap_len` bitmap bytes.
    pub fn check_len(&self) -> Result<()> {
        check_tail_len(self.buffer.as_ref().len(), HEADER_LEN, || {
            usize::from(self.bitmap_len())
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

    /// Return the state field.
    pub fn state(&self) -> SlotState {
        SlotState::from(self.header().state)
    }

    /// Return the remaining field.
    pub fn remaining(&self) -> u16 {
        self.header().remaining.get()
    }

    /// Return the seq field.
    pub fn seq(&self) -> u32 {
        self.header().seq.get()
    }

    /// Return the epoch field.
    pub fn epoch(&self) -> u32 {
        self.header().epoch.get()
    }

    /// Return the world size field.
    pub fn world(&self) -> u16 {
        self.header().world.get()
    }

    /// Return the bitmap_len field.
    pub fn bitmap_len(&self) -> u16 {
        self.header().bitmap_len.get()
    }

    /// Return the session field.
    pub fn session(&self) -> u32 {
        self.header().session.get()
    }

    /// Return the seen bitmap: `bitmap_len` bytes after the fixed part.
    pub fn bitmap(&self) -> &[u8] {
        &self.tail()[..usize::from(self.bitmap_len())]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> ProbeReplyPacket<T> {
    /// Set the slot field.
    pub fn set_slot(&mut self, v: u16) {
        self.header_mut().slot.set(v);
    }

    /// Set the shadow version field.
    pub fn set_ver(&mut self, v: u8) {
        self.header_mut().ver = v;
    }

    /// Set the state field.
    pub fn set_state(&mut self, s: SlotState) {
        self.header_mut().state = s.into();
    }

    /// Set the remaining field.
    pub fn set_remaining(&mut self, v: u16) {
        self.header_mut().remaining.set(v);
    }

    /// Set the seq field.
    pub fn set_seq(&mut self, v: u32) {
        self.header_mut().seq.set(v);
    }

    /// Set the epoch field.
    pub fn set_epoch(&mut self, v: u32) {
        self.header_mut().epoch.set(v);
    }

    /// Set the world size field.
    pub fn set_world(&mut self, v: u16) {
        self.header_mut().world.set(v);
    }

    /// Set the bitmap_len field.
    pub fn set_bitmap_len(&mut self, v: u16) {
        self.header_mut().bitmap_len.set(v);
    }

    /// Set the session field.
    pub fn set_session(&mut self, v: u32) {
        self.header_mut().session.set(v);
    }

    /// Return the seen bitmap mutably: `bitmap_len` bytes after the fixed part.
    pub fn bitmap_mut(&mut self) -> &mut [u8] {
        let len = usize::from(self.bitmap_len());
        &mut self.split_mut().1[..len]
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
    /// The session of the Probe this answers.
    pub session: u32,
    /// The seen bitmap of the held use, at most [`MAX_BITMAP_LEN`] bytes.
    pub seen: &'a [u8],
}

impl<'a> ProbeReplyRepr<'a> {
    /// Parse and validate a ProbeReply message.
    pub fn parse<T: AsRef<[u8]> + ?Sized>(
        packet: &ProbeReplyPacket<&'a T>,
    ) -> Result<ProbeReplyRepr<'a>> {
        packet.check_len()?;
        // Borrow the bitmap for 'a, not for the lifetime of `packet`.
        let (h, bitmap) = split::<Header>(packet.buffer.as_ref());
        h.prefix.check(MessageType::ProbeReply)?;
        if h.ver > 1 {
            return Err(Error::Field("ver"));
        }
        if usize::from(h.bitmap_len.get()) > MAX_BITMAP_LEN {
            return Err(Error::Field("bitmap_len"));
        }
        Ok(ProbeReplyRepr {
            job: h.prefix.job.get(),
            rank: h.prefix.rank.get(),
            slot: h.slot.get(),
            ver: h.ver,
            state: SlotState::from(h.state),
            remaining: h.remaining.get(),
            seq: h.seq.get(),
            epoch: h.epoch.get(),
            world: h.world.get(),
            session: h.session.get(),
            seen: bitmap,
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
        let (h, bitmap) = packet.split_mut();
        *h = Header {
            prefix: Prefix::new(MessageType::ProbeReply, self.job, self.rank),
            slot: U16::new(self.slot),
            ver: self.ver,
            state: self.state.into(),
            remaining: U16::new(self.remaining),
            seq: U32::new(self.seq),
            epoch: U32::new(self.epoch),
            world: U16::new(self.world),
            bitmap_len: U16::new(self.seen.len() as u16),
            session: U32::new(self.session),
        };
        bitmap[..self.seen.len()].copy_from_slice(self.seen);
    }
}

/// One line: `ProbeReply job 7 rank 2 slot 5 ver 1 seq 9 state Collecting remaining 3
/// world 12 seen 9/12 epoch 0x0000002a session 0x01020304` (`seen`: ranks in the bitmap / world).
impl core::fmt::Display for ProbeReplyRepr<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(
            f,
            "ProbeReply job {} rank {} slot {} ver {} seq {} state {:?} remaining {} world {} \
             seen {} epoch {:#010x} session {:#010x}",
            self.job,
            super::show::Rank(self.rank),
            self.slot,
            self.ver,
            self.seq,
            self.state,
            self.remaining,
            self.world,
            super::show::Ranks(self.seen, self.world),
            self.epoch,
            self.session
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Job 7, to rank 2: slot 5 version 1 is collecting use 9, 3 of 12 missing (ranks 2, 8, 11),
    // epoch 42, session 0x01020304.
    const BYTES: [u8; 30] = [
        0x01, 0x13, 0x00, 0x07, 0x00, 0x02, 0x00, 0x05, 0x01, 0x01, 0x00, 0x03, 0x00, 0x00, 0x00,
        0x09, 0x00, 0x00, 0x00, 0x2A, 0x00, 0x0C, 0x00, 0x02, 0x01, 0x02, 0x03, 0x04, 0xFB, 0x06,
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
        session: 0x0102_0304,
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
        let mut buf = [0xAAu8; 30];
        assert_eq!(REPR.buffer_len(), 30);
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
        assert_eq!(check(&BYTES[..27]), Some(Error::Truncated));
        assert_eq!(check(&BYTES[..29]), Some(Error::Truncated));
        let mut long = [0u8; 31];
        long[..30].copy_from_slice(&BYTES);
        assert_eq!(check(&long), Some(Error::TrailingBytes));
        fn parse(b: &[u8]) -> Result<ProbeReplyRepr<'_>> {
            ProbeReplyRepr::parse(&ProbeReplyPacket::new_unchecked(b))
        }
        let mut bad = BYTES;
        ProbeReplyPacket::new_unchecked(&mut bad[..]).set_ver(3);
        assert_eq!(parse(&bad), Err(Error::Field("ver")));
        let mut bad = BYTES;
        ProbeReplyPacket::new_unchecked(&mut bad[..]).set_msg_type(MessageType::JoinReply);
        assert_eq!(parse(&bad), Err(Error::Field("type")));
        let mut bad = BYTES;
        bad[0] = 0;
        assert_eq!(parse(&bad), Err(Error::Version(0)));
        let mut big = [0u8; HEADER_LEN + MAX_BITMAP_LEN + 1];
        big[..HEADER_LEN].copy_from_slice(&BYTES[..HEADER_LEN]);
        ProbeReplyPacket::new_unchecked(&mut big[..]).set_bitmap_len(MAX_BITMAP_LEN as u16 + 1);
        assert_eq!(parse(&big), Err(Error::Field("bitmap_len")));
    }

    #[test]
    fn display_is_one_line_with_the_key_fields() {
        extern crate std;
        use std::string::ToString;
        assert_eq!(
            REPR.to_string(),
            "ProbeReply job 7 rank 2 slot 5 ver 1 seq 9 state Collecting remaining 3 world 12 \
             seen 9/12 epoch 0x0000002a session 0x01020304"
        );
    }

    #[test]
    fn header_len_is_derived_from_the_fields() {
        assert_eq!(HEADER_LEN, 28);
    }
}
