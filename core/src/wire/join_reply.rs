//! JoinReply (0x11): the switch's answer to a Join (protocol.md §3.3).
//!
//! ```text
//!  0: version | 1: type | 2-3: job | 4-5: rank | 6-7: world | 8: flags | 9: shards
//! 10-11: max_count | 12-15: epoch | 16-17: slot_count | 18-19: bitmap_len
//! 20-23: session | 24-27: nonce | 28-29: lane_slots | 30-31: count
//! 32-: joined bitmap (bitmap_len bytes)
//! ```

use zerocopy::network_endian::{U16, U32};
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};

use super::{check_tail_len, split, Error, MessageType, Prefix, Result, MAX_BITMAP_LEN};

/// The fixed part of a JoinReply message, in wire order; the joined bitmap follows it.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned,
)]
#[repr(C)]
pub struct Header {
    /// Version, type, job and rank.
    pub prefix: Prefix,
    /// The job's registered world size.
    pub world: U16,
    /// Flag bits.
    pub flags: u8,
    /// The switch's number of shards (protocol.md §1.1); 0 for an unsharded switch.
    pub shards: u8,
    /// The largest count the switch accepts.
    pub max_count: U16,
    /// The switch's incarnation.
    pub epoch: U32,
    /// Number of slots in the job's range.
    pub slot_count: U16,
    /// Length of the bitmap in bytes.
    pub bitmap_len: U16,
    /// The job run's session token, which the worker's later messages carry.
    pub session: U32,
    /// The nonce of the Join this answers (the completing Join's, for the multicast).
    pub nonce: U32,
    /// The run's agreed slots per lane.
    pub lane_slots: U16,
    /// The run's agreed chunk size.
    pub count: U16,
}

/// Length of the fixed part, before the bitmap: the size of [`Header`].
pub const HEADER_LEN: usize = core::mem::size_of::<Header>();

/// The flag bits of a JoinReply. Unknown bits are kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct JoinFlags(pub u8);

impl JoinFlags {
    /// Every rank of the job has joined.
    pub const COMPLETE: JoinFlags = JoinFlags(0x01);
    /// The switch answers a Probe with `RESULT` set, of a complete use, with the stored
    /// Result (protocol.md §6.1); without this bit a worker sends no such Probe.
    pub const PROBE_RESULTS: JoinFlags = JoinFlags(0x02);

    /// Return whether every bit of `other` is set.
    pub const fn contains(self, other: JoinFlags) -> bool {
        self.0 & other.0 == other.0
    }

    /// Return the union.
    #[must_use]
    pub const fn with(self, other: JoinFlags) -> JoinFlags {
        JoinFlags(self.0 | other.0)
    }
}

impl core::fmt::Display for JoinFlags {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        super::show::flags(f, self.0, &[(JoinFlags::COMPLETE.0, "COMPLETE")])
    }
}

super::packet_view!(
    /// A zero-copy view of a JoinReply message.
    JoinReplyPacket,
    Header
);

impl<T: AsRef<[u8]>> JoinReplyPacket<T> {
    /// Check that the buffer holds the fixed part and exactly `bitmap_len` bitmap bytes.
    pub fn check_len(&self) -> Result<()> {
        check_tail_len(self.buffer.as_ref().len(), HEADER_LEN, || {
            usize::from(self.bitmap_len())
        })
    }

    /// Return the world size field.
    pub fn world(&self) -> u16 {
        self.header().world.get()
    }

    /// Return the flags field.
    pub fn flags(&self) -> JoinFlags {
        JoinFlags(self.header().flags)
    }

    /// Return the shards field.
    pub fn shards(&self) -> u8 {
        self.header().shards
    }

    /// Return the max_count field.
    pub fn max_count(&self) -> u16 {
        self.header().max_count.get()
    }

    /// Return the epoch field.
    pub fn epoch(&self) -> u32 {
        self.header().epoch.get()
    }

    /// Return the slot_count field.
    pub fn slot_count(&self) -> u16 {
        self.header().slot_count.get()
    }

    /// Return the bitmap_len field.
    pub fn bitmap_len(&self) -> u16 {
        self.header().bitmap_len.get()
    }

    /// Return the session field.
    pub fn session(&self) -> u32 {
        self.header().session.get()
    }

    /// Return the nonce field.
    pub fn nonce(&self) -> u32 {
        self.header().nonce.get()
    }

    /// Return the lane_slots field.
    pub fn lane_slots(&self) -> u16 {
        self.header().lane_slots.get()
    }

    /// Return the count field.
    pub fn count(&self) -> u16 {
        self.header().count.get()
    }

    /// Return the joined bitmap: `bitmap_len` bytes after the fixed part.
    pub fn bitmap(&self) -> &[u8] {
        &self.tail()[..usize::from(self.bitmap_len())]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> JoinReplyPacket<T> {
    /// Set the world size field.
    pub fn set_world(&mut self, v: u16) {
        self.header_mut().world.set(v);
    }

    /// Set the flags field.
    pub fn set_flags(&mut self, f: JoinFlags) {
        self.header_mut().flags = f.0;
    }

    /// Set the shards field.
    pub fn set_shards(&mut self, v: u8) {
        self.header_mut().shards = v;
    }

    /// Set the max_count field.
    pub fn set_max_count(&mut self, v: u16) {
        self.header_mut().max_count.set(v);
    }

    /// Set the epoch field.
    pub fn set_epoch(&mut self, v: u32) {
        self.header_mut().epoch.set(v);
    }

    /// Set the slot_count field.
    pub fn set_slot_count(&mut self, v: u16) {
        self.header_mut().slot_count.set(v);
    }

    /// Set the bitmap_len field.
    pub fn set_bitmap_len(&mut self, v: u16) {
        self.header_mut().bitmap_len.set(v);
    }

    /// Set the session field.
    pub fn set_session(&mut self, v: u32) {
        self.header_mut().session.set(v);
    }

    /// Set the nonce field.
    pub fn set_nonce(&mut self, v: u32) {
        self.header_mut().nonce.set(v);
    }

    /// Set the lane_slots field.
    pub fn set_lane_slots(&mut self, v: u16) {
        self.header_mut().lane_slots.set(v);
    }

    /// Set the count field.
    pub fn set_count(&mut self, v: u16) {
        self.header_mut().count.set(v);
    }

    /// Return the joined bitmap mutably: `bitmap_len` bytes after the fixed part.
    pub fn bitmap_mut(&mut self) -> &mut [u8] {
        let len = usize::from(self.bitmap_len());
        &mut self.split_mut().1[..len]
    }
}

/// A validated JoinReply message; the bitmap is borrowed from the packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct JoinReplyRepr<'a> {
    /// Job id.
    pub job: u16,
    /// The destination rank (`RANK_ALL` for multicast).
    pub rank: u16,
    /// The job's registered world size.
    pub world: u16,
    /// Flag bits.
    pub flags: JoinFlags,
    /// The switch's number of shards (protocol.md §1.1); 0 means an unsharded switch, as 1.
    pub shards: u8,
    /// The largest count the switch accepts in a Contribution.
    pub max_count: u16,
    /// The switch's incarnation.
    pub epoch: u32,
    /// Number of slots in the job's range.
    pub slot_count: u16,
    /// The job run's session token.
    pub session: u32,
    /// The nonce of the Join this answers (the completing Join's, for the multicast): a
    /// worker takes a session only from an answer to its own Join.
    pub nonce: u32,
    /// The run's agreed slots per lane (the first Join of the run proposed it, §4.1).
    pub lane_slots: u16,
    /// The run's agreed chunk size `k` (the first Join of the run proposed it, §4.1).
    pub count: u16,
    /// The joined bitmap, `ceil(world/8)` bytes, at most [`MAX_BITMAP_LEN`].
    pub joined: &'a [u8],
}

impl<'a> JoinReplyRepr<'a> {
    /// Parse and validate a JoinReply message.
    pub fn parse<T: AsRef<[u8]> + ?Sized>(
        packet: &JoinReplyPacket<&'a T>,
    ) -> Result<JoinReplyRepr<'a>> {
        packet.check_len()?;
        // Borrow the bitmap for 'a, not for the lifetime of `packet`.
        let (h, bitmap) = split::<Header>(packet.buffer.as_ref());
        h.prefix.check(MessageType::JoinReply)?;
        if usize::from(h.bitmap_len.get()) > MAX_BITMAP_LEN {
            return Err(Error::Field("bitmap_len"));
        }
        Ok(JoinReplyRepr {
            job: h.prefix.job.get(),
            rank: h.prefix.rank.get(),
            world: h.world.get(),
            flags: JoinFlags(h.flags),
            shards: h.shards,
            max_count: h.max_count.get(),
            epoch: h.epoch.get(),
            slot_count: h.slot_count.get(),
            session: h.session.get(),
            nonce: h.nonce.get(),
            lane_slots: h.lane_slots.get(),
            count: h.count.get(),
            joined: bitmap,
        })
    }

    /// Return the length of the message: fixed part and bitmap.
    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN + self.joined.len()
    }

    /// Write the message, bitmap included. The packet must be at least `buffer_len()` bytes
    /// long. A `joined` longer than [`MAX_BITMAP_LEN`] gives a message `parse` rejects.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]> + ?Sized>(
        &self,
        packet: &mut JoinReplyPacket<&mut T>,
    ) {
        let (h, bitmap) = packet.split_mut();
        *h = Header {
            prefix: Prefix::new(MessageType::JoinReply, self.job, self.rank),
            world: U16::new(self.world),
            flags: self.flags.0,
            shards: self.shards,
            max_count: U16::new(self.max_count),
            epoch: U32::new(self.epoch),
            slot_count: U16::new(self.slot_count),
            bitmap_len: U16::new(self.joined.len() as u16),
            session: U32::new(self.session),
            nonce: U32::new(self.nonce),
            lane_slots: U16::new(self.lane_slots),
            count: U16::new(self.count),
        };
        bitmap[..self.joined.len()].copy_from_slice(self.joined);
    }
}

/// One line: `JoinReply job 7 rank all world 10 epoch 0x01020304 session 0xcafef00d nonce
/// 0x11223344 slot_count 16 lane_slots 8 count 256 max_count 1024 joined 10/10 flags
/// COMPLETE` (`joined`: ranks in the bitmap / world; no `flags` when none is set).
impl core::fmt::Display for JoinReplyRepr<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(
            f,
            "JoinReply job {} rank {} world {} epoch {:#010x} session {:#010x} nonce {:#010x} \
             slot_count {} lane_slots {} count {} max_count {} joined {}",
            self.job,
            super::show::Rank(self.rank),
            self.world,
            self.epoch,
            self.session,
            self.nonce,
            self.slot_count,
            self.lane_slots,
            self.count,
            self.max_count,
            super::show::Ranks(self.joined, self.world)
        )?;
        if self.shards > 1 {
            write!(f, " shards {}", self.shards)?;
        }
        if self.flags != JoinFlags::default() {
            write!(f, " flags {}", self.flags)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Job 7, multicast, world 10, COMPLETE, a switch of 4 shards, max_count 1024, epoch 0x01020304, 16 slots,
    // session 0xCAFEF00D, answering nonce 0x11223344, lanes of 8 slots, chunks of 256, every
    // rank joined: bitmap ff 03.
    const BYTES: [u8; 34] = [
        0x01, 0x11, 0x00, 0x07, 0xFF, 0xFF, 0x00, 0x0A, 0x01, 0x04, 0x04, 0x00, 0x01, 0x02, 0x03,
        0x04, 0x00, 0x10, 0x00, 0x02, 0xCA, 0xFE, 0xF0, 0x0D, 0x11, 0x22, 0x33, 0x44, 0x00, 0x08,
        0x01, 0x00, 0xFF, 0x03,
    ];
    const REPR: JoinReplyRepr<'static> = JoinReplyRepr {
        job: 7,
        rank: 0xFFFF,
        world: 10,
        flags: JoinFlags::COMPLETE,
        shards: 4,
        max_count: 1024,
        epoch: 0x0102_0304,
        slot_count: 16,
        session: 0xCAFE_F00D,
        nonce: 0x1122_3344,
        lane_slots: 8,
        count: 256,
        joined: &[0xFF, 0x03],
    };

    #[test]
    fn decode_known_bytes() {
        let p = JoinReplyPacket::new_checked(&BYTES[..]).unwrap();
        assert_eq!(p.bitmap(), &[0xFF, 0x03]);
        let r = JoinReplyRepr::parse(&p).unwrap();
        assert_eq!(r, REPR);
        assert!(r.flags.contains(JoinFlags::COMPLETE));
    }

    #[test]
    fn encode_to_known_bytes() {
        let mut buf = [0xAAu8; 34];
        assert_eq!(REPR.buffer_len(), 34);
        REPR.emit(&mut JoinReplyPacket::new_unchecked(&mut buf[..]));
        assert_eq!(buf, BYTES);
    }

    #[test]
    fn bitmap_mut_writes_in_place() {
        let mut buf = BYTES;
        let mut p = JoinReplyPacket::new_unchecked(&mut buf[..]);
        p.bitmap_mut().copy_from_slice(&[0x0B, 0x01]);
        p.set_flags(JoinFlags(0x80));
        let r = JoinReplyRepr::parse(&JoinReplyPacket::new_unchecked(&buf[..])).unwrap();
        assert_eq!(r.joined, &[0x0B, 0x01]);
        assert!(!r.flags.contains(JoinFlags::COMPLETE));
        assert_eq!(r.flags, JoinFlags(0x80), "unknown bits are kept");
    }

    #[test]
    fn reject_impossible_lengths_and_fields() {
        let check = |b: &[u8]| JoinReplyPacket::new_checked(b).err();
        assert_eq!(check(&BYTES[..31]), Some(Error::Truncated));
        assert_eq!(check(&BYTES[..33]), Some(Error::Truncated));
        let mut long = [0u8; 35];
        long[..34].copy_from_slice(&BYTES);
        assert_eq!(check(&long), Some(Error::TrailingBytes));
        fn parse(b: &[u8]) -> Result<JoinReplyRepr<'_>> {
            JoinReplyRepr::parse(&JoinReplyPacket::new_unchecked(b))
        }
        let mut bad = BYTES;
        JoinReplyPacket::new_unchecked(&mut bad[..]).set_msg_type(MessageType::Join);
        assert_eq!(parse(&bad), Err(Error::Field("type")));
        let mut one = BYTES;
        JoinReplyPacket::new_unchecked(&mut one[..]).set_shards(0);
        assert_eq!(
            parse(&one).map(|r| r.shards),
            Ok(0),
            "0: an unsharded switch"
        );
        let mut bad = BYTES;
        bad[0] = 2;
        assert_eq!(parse(&bad), Err(Error::Version(2)));
        // 129 bitmap bytes: the right length for its header, but over the limit.
        let mut big = [0u8; HEADER_LEN + MAX_BITMAP_LEN + 1];
        big[..HEADER_LEN].copy_from_slice(&BYTES[..HEADER_LEN]);
        JoinReplyPacket::new_unchecked(&mut big[..]).set_bitmap_len(MAX_BITMAP_LEN as u16 + 1);
        assert_eq!(parse(&big), Err(Error::Field("bitmap_len")));
    }

    #[test]
    fn display_is_one_line_with_the_key_fields() {
        extern crate std;
        use std::string::ToString;
        assert_eq!(
            REPR.to_string(),
            "JoinReply job 7 rank all world 10 epoch 0x01020304 session 0xcafef00d \
             nonce 0x11223344 slot_count 16 lane_slots 8 count 256 max_count 1024 \
             joined 10/10 shards 4 flags COMPLETE"
        );
    }

    #[test]
    fn header_len_is_derived_from_the_fields() {
        assert_eq!(HEADER_LEN, 32);
        assert_eq!(core::mem::offset_of!(Header, count), 30);
    }
}
