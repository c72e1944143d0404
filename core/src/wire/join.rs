//! Join (0x10): a worker lane asks to take part in a job (protocol.md §3.2).
//!
//! ```text
//!  0: version | 1: type | 2-3: job | 4-5: rank | 6-7: world | 8-9: slot_lo
//! 10-11: slot_count | 12-13: count | 14-15: reserved | 16-19: nonce | 20-27: key
//! ```

use super::{
    check_exact_len, get_u16, get_u32, get_u64, prefix, put_prefix, put_u16, put_u32, put_u64,
    Error, MessageType, Result, VERSION,
};

/// Field ranges.
pub mod field {
    use core::ops::Range;

    /// The world size the worker believes the job has.
    pub const WORLD: Range<usize> = super::prefix::LEN..8;
    /// First job-relative slot of the lane.
    pub const SLOT_LO: Range<usize> = WORLD.end..WORLD.end + 2;
    /// Number of slots the lane will drive.
    pub const SLOT_COUNT: Range<usize> = SLOT_LO.end..SLOT_LO.end + 2;
    /// The chunk size `k` the lane will send.
    pub const COUNT: Range<usize> = SLOT_COUNT.end..SLOT_COUNT.end + 2;
    /// Reserved pair of bytes.
    pub const RESERVED: Range<usize> = COUNT.end..COUNT.end + 2;
    /// The worker process's incarnation: non-zero, random, the same for every lane.
    pub const NONCE: Range<usize> = RESERVED.end..RESERVED.end + 4;
    /// The job's credential, given to its ranks out of band.
    pub const KEY: Range<usize> = NONCE.end..NONCE.end + 8;
}

/// Length of a Join message.
pub const LEN: usize = field::KEY.end;

super::packet_view!(
    /// A zero-copy view of a Join message.
    JoinPacket
);

impl<T: AsRef<[u8]>> JoinPacket<T> {
    /// Check that the buffer is exactly [`LEN`] bytes long.
    pub fn check_len(&self) -> Result<()> {
        check_exact_len(self.buffer.as_ref().len(), LEN)
    }

    /// Return the world size field.
    pub fn world(&self) -> u16 {
        get_u16(self.buffer.as_ref(), field::WORLD)
    }

    /// Return the slot_lo field.
    pub fn slot_lo(&self) -> u16 {
        get_u16(self.buffer.as_ref(), field::SLOT_LO)
    }

    /// Return the slot_count field.
    pub fn slot_count(&self) -> u16 {
        get_u16(self.buffer.as_ref(), field::SLOT_COUNT)
    }

    /// Return the count field.
    pub fn count(&self) -> u16 {
        get_u16(self.buffer.as_ref(), field::COUNT)
    }

    /// Return the reserved field.
    pub fn reserved(&self) -> u16 {
        get_u16(self.buffer.as_ref(), field::RESERVED)
    }

    /// Return the nonce field.
    pub fn nonce(&self) -> u32 {
        get_u32(self.buffer.as_ref(), field::NONCE)
    }

    /// Return the key field.
    pub fn key(&self) -> u64 {
        get_u64(self.buffer.as_ref(), field::KEY)
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> JoinPacket<T> {
    /// Set the world size field.
    pub fn set_world(&mut self, v: u16) {
        put_u16(self.buffer.as_mut(), field::WORLD, v);
    }

    /// Set the slot_lo field.
    pub fn set_slot_lo(&mut self, v: u16) {
        put_u16(self.buffer.as_mut(), field::SLOT_LO, v);
    }

    /// Set the slot_count field.
    pub fn set_slot_count(&mut self, v: u16) {
        put_u16(self.buffer.as_mut(), field::SLOT_COUNT, v);
    }

    /// Set the count field.
    pub fn set_count(&mut self, v: u16) {
        put_u16(self.buffer.as_mut(), field::COUNT, v);
    }

    /// Set the nonce field.
    pub fn set_nonce(&mut self, v: u32) {
        put_u32(self.buffer.as_mut(), field::NONCE, v);
    }

    /// Set the key field.
    pub fn set_key(&mut self, v: u64) {
        put_u64(self.buffer.as_mut(), field::KEY, v);
    }
}

/// A validated Join message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct JoinRepr {
    /// Job id.
    pub job: u16,
    /// The sender's rank.
    pub rank: u16,
    /// The world size the worker believes the job has.
    pub world: u16,
    /// First job-relative slot of the lane.
    pub slot_lo: u16,
    /// Number of slots the lane will drive.
    pub slot_count: u16,
    /// The chunk size `k` the lane will send.
    pub count: u16,
    /// The worker process's incarnation (non-zero; every lane of a rank sends the same).
    pub nonce: u32,
    /// The job's credential.
    pub key: u64,
}

impl JoinRepr {
    /// Parse and validate a Join message.
    pub fn parse<T: AsRef<[u8]> + ?Sized>(packet: &JoinPacket<&T>) -> Result<JoinRepr> {
        packet.check_len()?;
        if packet.version() != VERSION {
            return Err(Error::Version(packet.version()));
        }
        if packet.msg_type() != MessageType::Join {
            return Err(Error::Field("type"));
        }
        if packet.reserved() != 0 {
            return Err(Error::Reserved("join.reserved"));
        }
        if packet.nonce() == 0 {
            return Err(Error::Field("nonce"));
        }
        Ok(JoinRepr {
            job: packet.job_id(),
            rank: packet.rank(),
            world: packet.world(),
            slot_lo: packet.slot_lo(),
            slot_count: packet.slot_count(),
            count: packet.count(),
            nonce: packet.nonce(),
            key: packet.key(),
        })
    }

    /// Return the length of the message.
    pub const fn buffer_len(&self) -> usize {
        LEN
    }

    /// Write the message. The packet must be at least [`LEN`] bytes long.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]> + ?Sized>(&self, packet: &mut JoinPacket<&mut T>) {
        let b = packet.buffer.as_mut();
        put_prefix(b, MessageType::Join, self.job, self.rank);
        put_u16(b, field::WORLD, self.world);
        put_u16(b, field::SLOT_LO, self.slot_lo);
        put_u16(b, field::SLOT_COUNT, self.slot_count);
        put_u16(b, field::COUNT, self.count);
        put_u16(b, field::RESERVED, 0);
        put_u32(b, field::NONCE, self.nonce);
        put_u64(b, field::KEY, self.key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Job 7, rank 3 of 4, slots 8..12, k = 256, nonce 0x01020304, key 0x1122334455667788.
    const BYTES: [u8; 28] = [
        0x01, 0x10, 0x00, 0x07, 0x00, 0x03, 0x00, 0x04, 0x00, 0x08, 0x00, 0x04, 0x01, 0x00, 0x00,
        0x00, 0x01, 0x02, 0x03, 0x04, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88,
    ];
    const REPR: JoinRepr = JoinRepr {
        job: 7,
        rank: 3,
        world: 4,
        slot_lo: 8,
        slot_count: 4,
        count: 256,
        nonce: 0x0102_0304,
        key: 0x1122_3344_5566_7788,
    };

    #[test]
    fn decode_known_bytes() {
        let p = JoinPacket::new_checked(&BYTES[..]).unwrap();
        assert_eq!(JoinRepr::parse(&p), Ok(REPR));
    }

    #[test]
    fn encode_to_known_bytes() {
        let mut buf = [0xAAu8; 28];
        assert_eq!(REPR.buffer_len(), 28);
        REPR.emit(&mut JoinPacket::new_unchecked(&mut buf[..]));
        assert_eq!(buf, BYTES);
    }

    #[test]
    fn setters_write_the_fields() {
        let mut buf = [0u8; 28];
        let mut p = JoinPacket::new_unchecked(&mut buf[..]);
        p.set_version(VERSION);
        p.set_msg_type(MessageType::Join);
        p.set_job_id(7);
        p.set_rank(3);
        p.set_world(4);
        p.set_slot_lo(8);
        p.set_slot_count(4);
        p.set_count(256);
        p.set_nonce(0x0102_0304);
        p.set_key(0x1122_3344_5566_7788);
        assert_eq!(buf, BYTES);
    }

    #[test]
    fn reject_impossible_lengths_and_fields() {
        assert_eq!(
            JoinPacket::new_checked(&BYTES[..27]).err(),
            Some(Error::Truncated)
        );
        assert_eq!(
            JoinPacket::new_checked(&BYTES[..0]).err(),
            Some(Error::Truncated)
        );
        let mut long = [0u8; 29];
        long[..28].copy_from_slice(&BYTES);
        assert_eq!(
            JoinPacket::new_checked(&long[..]).err(),
            Some(Error::TrailingBytes)
        );
        let parse = |b: &[u8]| JoinRepr::parse(&JoinPacket::new_unchecked(b));
        let mut bad = BYTES;
        bad[0] = 0;
        assert_eq!(parse(&bad), Err(Error::Version(0)));
        let mut bad = BYTES;
        bad[prefix::TYPE] = 0x12;
        assert_eq!(parse(&bad), Err(Error::Field("type")));
        let mut bad = BYTES;
        bad[field::RESERVED.end - 1] = 1;
        assert_eq!(parse(&bad), Err(Error::Reserved("join.reserved")));
        let mut bad = BYTES;
        bad[field::NONCE].fill(0);
        assert_eq!(parse(&bad), Err(Error::Field("nonce")));
    }

    #[test]
    fn len_is_derived_from_the_fields() {
        assert_eq!(LEN, 28);
    }
}
