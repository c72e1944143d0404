//! Join (0x10): a worker lane asks to take part in a job (protocol.md §3.2).
//!
//! ```text
//!  0: version | 1: type | 2-3: job | 4-5: rank | 6-7: world | 8-9: slot_lo
//! 10-11: slot_count | 12-13: count | 14-15: lanes | 16-19: nonce | 20-27: cookie
//! 28-43: tag
//! ```
//!
//! The key itself never travels: the tag is an HMAC under it of bytes 0–27 (the cookie
//! included), so a Join proves that its sender holds the job's key, and a captured one cannot
//! be replayed once its cookie has expired or from another address (§4.2, [`crate::auth`]).

use zerocopy::network_endian::{U16, U32, U64};
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};

use super::{check_exact_len, Error, MessageType, Prefix, Result};
use crate::auth::{self, Label, Tag, TAG_LEN};

/// A Join message, in wire order.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned,
)]
#[repr(C)]
pub struct Header {
    /// Version, type, job and rank.
    pub prefix: Prefix,
    /// The world size the worker believes the job has.
    pub world: U16,
    /// First job-relative slot of the lane.
    pub slot_lo: U16,
    /// Number of slots the lane will drive.
    pub slot_count: U16,
    /// The chunk size `k` the lane will send.
    pub count: U16,
    /// The rank's number of lanes `L` (non-zero), the same for every lane.
    pub lanes: U16,
    /// The worker process's incarnation: non-zero, random, the same for every lane.
    pub nonce: U32,
    /// The switch's cookie for this sender (§4.2), or 0 when it has none yet.
    pub cookie: U64,
    /// HMAC-SHA-256 under the job's key of every byte before it, truncated (§4.2).
    pub tag: [u8; TAG_LEN],
}

/// Length of a Join message: the size of [`Header`].
pub const LEN: usize = core::mem::size_of::<Header>();

/// Where the tag starts: the bytes before it are the ones it covers.
pub const TAG_AT: usize = LEN - TAG_LEN;

super::packet_view!(
    /// A zero-copy view of a Join message.
    JoinPacket,
    Header
);

impl<T: AsRef<[u8]>> JoinPacket<T> {
    /// Check that the buffer is exactly [`LEN`] bytes long.
    pub fn check_len(&self) -> Result<()> {
        check_exact_len(self.buffer.as_ref().len(), LEN)
    }

    /// Return the world size field.
    pub fn world(&self) -> u16 {
        self.header().world.get()
    }

    /// Return the slot_lo field.
    pub fn slot_lo(&self) -> u16 {
        self.header().slot_lo.get()
    }

    /// Return the slot_count field.
    pub fn slot_count(&self) -> u16 {
        self.header().slot_count.get()
    }

    /// Return the count field.
    pub fn count(&self) -> u16 {
        self.header().count.get()
    }

    /// Return the lanes field.
    pub fn lanes(&self) -> u16 {
        self.header().lanes.get()
    }

    /// Return the nonce field.
    pub fn nonce(&self) -> u32 {
        self.header().nonce.get()
    }

    /// Return the cookie field.
    pub fn cookie(&self) -> u64 {
        self.header().cookie.get()
    }

    /// Return the tag field.
    pub fn tag(&self) -> Tag {
        self.header().tag
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> JoinPacket<T> {
    /// Set the world size field.
    pub fn set_world(&mut self, v: u16) {
        self.header_mut().world.set(v);
    }

    /// Set the slot_lo field.
    pub fn set_slot_lo(&mut self, v: u16) {
        self.header_mut().slot_lo.set(v);
    }

    /// Set the slot_count field.
    pub fn set_slot_count(&mut self, v: u16) {
        self.header_mut().slot_count.set(v);
    }

    /// Set the count field.
    pub fn set_count(&mut self, v: u16) {
        self.header_mut().count.set(v);
    }

    /// Set the lanes field.
    pub fn set_lanes(&mut self, v: u16) {
        self.header_mut().lanes.set(v);
    }

    /// Set the nonce field.
    pub fn set_nonce(&mut self, v: u32) {
        self.header_mut().nonce.set(v);
    }

    /// Set the cookie field.
    pub fn set_cookie(&mut self, v: u64) {
        self.header_mut().cookie.set(v);
    }

    /// Set the tag field.
    pub fn set_tag(&mut self, v: Tag) {
        self.header_mut().tag = v;
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
    /// The rank's number of lanes `L` (non-zero; every lane of a rank sends the same).
    pub lanes: u16,
    /// The worker process's incarnation (non-zero; every lane of a rank sends the same).
    pub nonce: u32,
    /// The switch's cookie for this sender, 0 before it has one (§4.2).
    pub cookie: u64,
    /// The tag over bytes 0–27 under the job's key ([`JoinRepr::sign`]).
    pub tag: Tag,
}

impl JoinRepr {
    /// Parse and validate a Join message.
    pub fn parse<T: AsRef<[u8]> + ?Sized>(packet: &JoinPacket<&T>) -> Result<JoinRepr> {
        packet.check_len()?;
        let h = packet.header();
        h.prefix.check(MessageType::Join)?;
        if h.lanes == U16::ZERO {
            return Err(Error::Field("lanes"));
        }
        if h.nonce == U32::ZERO {
            return Err(Error::Field("nonce"));
        }
        Ok(JoinRepr {
            job: h.prefix.job.get(),
            rank: h.prefix.rank.get(),
            world: h.world.get(),
            slot_lo: h.slot_lo.get(),
            slot_count: h.slot_count.get(),
            count: h.count.get(),
            lanes: h.lanes.get(),
            nonce: h.nonce.get(),
            cookie: h.cookie.get(),
            tag: h.tag,
        })
    }

    /// Return the length of the message.
    pub const fn buffer_len(&self) -> usize {
        LEN
    }

    /// Write the message. The packet must be at least [`LEN`] bytes long.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]> + ?Sized>(&self, packet: &mut JoinPacket<&mut T>) {
        *packet.header_mut() = Header {
            prefix: Prefix::new(MessageType::Join, self.job, self.rank),
            world: U16::new(self.world),
            slot_lo: U16::new(self.slot_lo),
            slot_count: U16::new(self.slot_count),
            count: U16::new(self.count),
            lanes: U16::new(self.lanes),
            nonce: U32::new(self.nonce),
            cookie: U64::new(self.cookie),
            tag: self.tag,
        };
    }

    fn covered_bytes(&self) -> [u8; LEN] {
        let mut b = [0u8; LEN];
        self.emit(&mut JoinPacket::new_unchecked(&mut b[..]));
        b
    }

    /// The same Join with its tag made under the job key `key`: call it after every change of
    /// a field (the cookie above all).
    #[must_use]
    pub fn sign(mut self, key: u64) -> JoinRepr {
        self.tag = auth::tag(key, Label::Join, &[&self.covered_bytes()[..TAG_AT]]);
        self
    }

    /// Whether the tag was made under `key` over exactly these fields (constant time).
    pub fn verify(&self, key: u64) -> bool {
        auth::verify(
            key,
            Label::Join,
            &[&self.covered_bytes()[..TAG_AT]],
            &self.tag,
        )
    }
}

/// One line: `Join job 7 rank 3 world 4 slot_lo 8 slot_count 4 count 256 lanes 3 nonce
/// 0x01020304 cookie 0x0000000000000009`. The tag is left out.
impl core::fmt::Display for JoinRepr {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(
            f,
            "Join job {} rank {} world {} slot_lo {} slot_count {} count {} lanes {} nonce {:#010x} cookie {:#018x}",
            self.job,
            self.rank,
            self.world,
            self.slot_lo,
            self.slot_count,
            self.count,
            self.lanes,
            self.nonce,
            self.cookie
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::VERSION;

    const KEY: u64 = 0x1122_3344_5566_7788;

    // Job 7, rank 3 of 4, slots 8..12 (lane 2 of 3), k = 256, nonce 0x01020304, cookie
    // 0x0A0B0C0D0E0F1011, signed with KEY.
    const HEAD: [u8; 28] = [
        0x01, 0x10, 0x00, 0x07, 0x00, 0x03, 0x00, 0x04, 0x00, 0x08, 0x00, 0x04, 0x01, 0x00, 0x00,
        0x03, 0x01, 0x02, 0x03, 0x04, 0x0A, 0x0B, 0x0C, 0x0D, 0x0E, 0x0F, 0x10, 0x11,
    ];
    // HMAC-SHA-256(KEY as 8 big-endian bytes, "switchml-rs v1 join\0" || HEAD)[..16], computed
    // independently (Python's hmac module): the known answer an implementer checks against.
    const TAG: [u8; 16] = [
        0x2d, 0x4f, 0x10, 0x8a, 0x71, 0xc6, 0xee, 0x51, 0x88, 0x4b, 0xed, 0xf1, 0xed, 0xf5, 0x7e,
        0xd2,
    ];
    const REPR: JoinRepr = JoinRepr {
        job: 7,
        rank: 3,
        world: 4,
        slot_lo: 8,
        slot_count: 4,
        count: 256,
        lanes: 3,
        nonce: 0x0102_0304,
        cookie: 0x0A0B_0C0D_0E0F_1011,
        tag: TAG,
    };

    fn bytes() -> [u8; LEN] {
        let mut b = [0u8; LEN];
        b[..28].copy_from_slice(&HEAD);
        b[28..].copy_from_slice(&TAG);
        b
    }

    #[test]
    fn decode_known_bytes() {
        let b = bytes();
        let p = JoinPacket::new_checked(&b[..]).unwrap();
        assert_eq!(JoinRepr::parse(&p), Ok(REPR));
    }

    #[test]
    fn encode_to_known_bytes() {
        let mut buf = [0xAAu8; LEN];
        assert_eq!(REPR.buffer_len(), 44);
        REPR.emit(&mut JoinPacket::new_unchecked(&mut buf[..]));
        assert_eq!(buf, bytes());
    }

    #[test]
    fn the_tag_is_the_known_answer_and_verifies_only_under_the_key() {
        let unsigned = JoinRepr {
            tag: [0; 16],
            ..REPR
        };
        assert_eq!(unsigned.sign(KEY), REPR);
        assert!(REPR.verify(KEY));
        assert!(!REPR.verify(KEY ^ 1));
        let other_cookie = JoinRepr { cookie: 1, ..REPR };
        assert!(!other_cookie.verify(KEY));
        let other_rank = JoinRepr { rank: 2, ..REPR };
        assert!(!other_rank.verify(KEY));
    }

    #[test]
    fn setters_write_the_fields() {
        let mut buf = [0u8; LEN];
        let mut p = JoinPacket::new_unchecked(&mut buf[..]);
        p.set_version(VERSION);
        p.set_msg_type(MessageType::Join);
        p.set_job_id(7);
        p.set_rank(3);
        p.set_world(4);
        p.set_slot_lo(8);
        p.set_slot_count(4);
        p.set_count(256);
        p.set_lanes(3);
        p.set_nonce(0x0102_0304);
        p.set_cookie(0x0A0B_0C0D_0E0F_1011);
        p.set_tag(TAG);
        assert_eq!(buf, bytes());
    }

    #[test]
    fn reject_impossible_lengths_and_fields() {
        let b = bytes();
        assert_eq!(
            JoinPacket::new_checked(&b[..LEN - 1]).err(),
            Some(Error::Truncated)
        );
        assert_eq!(
            JoinPacket::new_checked(&b[..0]).err(),
            Some(Error::Truncated)
        );
        let mut long = [0u8; LEN + 1];
        long[..LEN].copy_from_slice(&b);
        assert_eq!(
            JoinPacket::new_checked(&long[..]).err(),
            Some(Error::TrailingBytes)
        );
        let parse = |b: &[u8]| JoinRepr::parse(&JoinPacket::new_unchecked(b));
        let mut bad = b;
        bad[0] = 0;
        assert_eq!(parse(&bad), Err(Error::Version(0)));
        let mut bad = b;
        JoinPacket::new_unchecked(&mut bad[..]).set_msg_type(MessageType::Probe);
        assert_eq!(parse(&bad), Err(Error::Field("type")));
        let mut bad = b;
        JoinPacket::new_unchecked(&mut bad[..]).set_lanes(0);
        assert_eq!(parse(&bad), Err(Error::Field("lanes")));
        let mut bad = b;
        JoinPacket::new_unchecked(&mut bad[..]).set_nonce(0);
        assert_eq!(parse(&bad), Err(Error::Field("nonce")));
    }

    #[test]
    fn display_is_one_line_without_the_tag() {
        extern crate std;
        use std::string::ToString;
        let line = REPR.to_string();
        assert_eq!(
            line,
            "Join job 7 rank 3 world 4 slot_lo 8 slot_count 4 count 256 lanes 3 nonce 0x01020304 cookie 0x0a0b0c0d0e0f1011"
        );
    }

    #[test]
    fn len_is_derived_from_the_fields() {
        assert_eq!(LEN, 44);
        assert_eq!(TAG_AT, 28);
    }
}
