//! StatusReply (0x16): the switch's answer to a Status (protocol.md §3.8): who joined the
//! job and what the switch counted.
//!
//! ```text
//!  0: version | 1: type | 2-3: job | 4-5: rank | 6-7: world | 8: flags | 9: shards
//! 10-11: slot_count | 12-15: epoch | 16-17: bitmap_len | 18-19: reserved
//! 20-251: twenty-nine u64 counters | 252-: joined bitmap
//! ```

use zerocopy::network_endian::{U16, U32, U64};
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};

use super::{check_tail_len, split, Error, MessageType, Prefix, Result, MAX_BITMAP_LEN};

/// The fixed part of a StatusReply message, in wire order; the joined bitmap follows it.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned,
)]
#[repr(C)]
pub struct Header {
    /// Version, type, job and rank.
    pub prefix: Prefix,
    /// The job's world size.
    pub world: U16,
    /// Flag bits.
    pub flags: u8,
    /// The switch's number of shards (protocol.md §1.1); 0 for an unsharded switch.
    pub shards: u8,
    /// Slots in the job's range.
    pub slot_count: U16,
    /// The switch's incarnation.
    pub epoch: U32,
    /// Length of the bitmap in bytes.
    pub bitmap_len: U16,
    /// Reserved pair of bytes.
    pub reserved_b: U16,
    /// The counters, in the order of [`StatusCounters::to_array`].
    pub counters: [U64; StatusCounters::COUNT],
}

/// Length of the fixed part, before the bitmap: the size of [`Header`].
pub const HEADER_LEN: usize = core::mem::size_of::<Header>();

/// The flag bits of a StatusReply. Unknown bits are kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct StatusFlags(pub u8);

impl StatusFlags {
    /// Every rank of the job has joined its current run.
    pub const ALL_JOINED: StatusFlags = StatusFlags(0x01);
    /// The job has a run open.
    pub const RUN_OPEN: StatusFlags = StatusFlags(0x02);

    /// Return whether every bit of `other` is set.
    pub const fn contains(self, other: StatusFlags) -> bool {
        self.0 & other.0 == other.0
    }
}

impl core::fmt::Display for StatusFlags {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        super::show::flags(
            f,
            self.0,
            &[
                (StatusFlags::ALL_JOINED.0, "ALL_JOINED"),
                (StatusFlags::RUN_OPEN.0, "RUN_OPEN"),
            ],
        )
    }
}

/// The number of drop classes a StatusReply reports, one counter each, in the order of
/// protocol.md §3.8 (the switch's `DropReason::ALL`).
pub const DROP_CLASSES: usize = 15;

/// The counters a StatusReply carries, in wire order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct StatusCounters {
    /// Datagrams the switch received, all jobs.
    pub received: u64,
    /// Datagrams it dropped, all jobs and reasons.
    pub dropped: u64,
    /// Contributions added into this job's slots.
    pub contributions: u64,
    /// Uses completed.
    pub completions: u64,
    /// Stored results sent again.
    pub retransmit_replies: u64,
    /// Duplicates dropped.
    pub duplicates: u64,
    /// Stale contributions dropped.
    pub stale: u64,
    /// Other contributions of the job dropped.
    pub rejected: u64,
    /// Joins answered.
    pub joins: u64,
    /// Probes answered.
    pub probes: u64,
    /// Aborts passed on.
    pub aborts: u64,
    /// Uses that overflowed.
    pub overflows: u64,
    /// Runs (sessions) of this job opened since it was registered.
    pub runs: u64,
    /// Messages naming this job refused for a wrong key or session.
    pub unauthorized: u64,
    /// Drops of every job by class (switch-wide), in the order of `DropReason::ALL`.
    pub drops: [u64; DROP_CLASSES],
}

impl StatusCounters {
    /// Number of counters.
    pub const COUNT: usize = 14 + DROP_CLASSES;

    /// Return the counters in wire order.
    pub fn to_array(&self) -> [u64; Self::COUNT] {
        let mut a = [0u64; Self::COUNT];
        a[..14].copy_from_slice(&[
            self.received,
            self.dropped,
            self.contributions,
            self.completions,
            self.retransmit_replies,
            self.duplicates,
            self.stale,
            self.rejected,
            self.joins,
            self.probes,
            self.aborts,
            self.overflows,
            self.runs,
            self.unauthorized,
        ]);
        a[14..].copy_from_slice(&self.drops);
        a
    }

    /// Build from counters in wire order.
    pub fn from_array(a: [u64; Self::COUNT]) -> Self {
        let mut drops = [0u64; DROP_CLASSES];
        drops.copy_from_slice(&a[14..]);
        StatusCounters {
            received: a[0],
            dropped: a[1],
            contributions: a[2],
            completions: a[3],
            retransmit_replies: a[4],
            duplicates: a[5],
            stale: a[6],
            rejected: a[7],
            joins: a[8],
            probes: a[9],
            aborts: a[10],
            overflows: a[11],
            runs: a[12],
            unauthorized: a[13],
            drops,
        }
    }
}

super::packet_view!(
    /// A zero-copy view of a StatusReply message.
    StatusReplyPacket,
    Header
);

impl<T: AsRef<[u8]>> StatusReplyPacket<T> {
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
    pub fn flags(&self) -> StatusFlags {
        StatusFlags(self.header().flags)
    }

    /// Return the slot count field.
    pub fn slot_count(&self) -> u16 {
        self.header().slot_count.get()
    }

    /// Return the epoch field.
    pub fn epoch(&self) -> u32 {
        self.header().epoch.get()
    }

    /// Return the bitmap length field.
    pub fn bitmap_len(&self) -> u16 {
        self.header().bitmap_len.get()
    }

    /// Return whether the reserved field is zero.
    pub fn reserved_is_zero(&self) -> bool {
        self.header().reserved_b == U16::ZERO
    }

    /// Return the shards field.
    pub fn shards(&self) -> u8 {
        self.header().shards
    }

    /// Return the counters.
    pub fn counters(&self) -> StatusCounters {
        StatusCounters::from_array(self.header().counters.map(U64::get))
    }

    /// Return the joined bitmap.
    pub fn bitmap(&self) -> &[u8] {
        self.tail()
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> StatusReplyPacket<T> {
    /// Set the shards field.
    pub fn set_shards(&mut self, v: u8) {
        self.header_mut().shards = v;
    }
}

/// A validated StatusReply message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct StatusReplyRepr<'a> {
    /// Job id.
    pub job: u16,
    /// The rank field of the Status answered.
    pub rank: u16,
    /// The job's world size.
    pub world: u16,
    /// Flag bits.
    pub flags: StatusFlags,
    /// The switch's number of shards (protocol.md §1.1); 0 means an unsharded switch, as 1.
    /// The counters and the run are the answering shard's.
    pub shards: u8,
    /// Slots in the job's range.
    pub slot_count: u16,
    /// The switch's epoch.
    pub epoch: u32,
    /// The counters.
    pub counters: StatusCounters,
    /// Ranks joined, as a wire bitmap.
    pub joined: &'a [u8],
}

impl<'a> StatusReplyRepr<'a> {
    /// Parse and validate a StatusReply message.
    pub fn parse<T: AsRef<[u8]> + ?Sized>(
        packet: &StatusReplyPacket<&'a T>,
    ) -> Result<StatusReplyRepr<'a>> {
        packet.check_len()?;
        // Borrow the bitmap for 'a, not for the lifetime of `packet`.
        let (h, bitmap) = split::<Header>(packet.buffer.as_ref());
        h.prefix.check(MessageType::StatusReply)?;
        if usize::from(h.bitmap_len.get()) > MAX_BITMAP_LEN {
            return Err(Error::Field("bitmap_len"));
        }
        if !packet.reserved_is_zero() {
            return Err(Error::Reserved("status_reply.reserved"));
        }
        Ok(StatusReplyRepr {
            job: h.prefix.job.get(),
            rank: h.prefix.rank.get(),
            world: h.world.get(),
            flags: StatusFlags(h.flags),
            shards: h.shards,
            slot_count: h.slot_count.get(),
            epoch: h.epoch.get(),
            counters: StatusCounters::from_array(h.counters.map(U64::get)),
            joined: bitmap,
        })
    }

    /// Return the length of the whole message.
    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN + self.joined.len()
    }

    /// Write the message into a buffer of at least `buffer_len()` bytes.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]> + ?Sized>(
        &self,
        packet: &mut StatusReplyPacket<&mut T>,
    ) {
        let (h, bitmap) = packet.split_mut();
        *h = Header {
            prefix: Prefix::new(MessageType::StatusReply, self.job, self.rank),
            world: U16::new(self.world),
            flags: self.flags.0,
            shards: self.shards,
            slot_count: U16::new(self.slot_count),
            epoch: U32::new(self.epoch),
            bitmap_len: U16::new(self.joined.len() as u16),
            reserved_b: U16::ZERO,
            counters: self.counters.to_array().map(U64::new),
        };
        bitmap[..self.joined.len()].copy_from_slice(self.joined);
    }
}

/// One line: `StatusReply job 7 rank 1 world 10 slot_count 16 epoch 0x01020304 joined 10/10
/// received 1 dropped 2 contributions 3 completions 4 runs 13 flags ALL_JOINED` (a few
/// counters; `joined`: ranks in the bitmap / world; no `flags` when none is set).
impl core::fmt::Display for StatusReplyRepr<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let c = &self.counters;
        write!(
            f,
            "StatusReply job {} rank {} world {} slot_count {} epoch {:#010x} joined {} \
             received {} dropped {} contributions {} completions {} runs {}",
            self.job,
            self.rank,
            self.world,
            self.slot_count,
            self.epoch,
            super::show::Ranks(self.joined, self.world),
            c.received,
            c.dropped,
            c.contributions,
            c.completions,
            c.runs
        )?;
        if self.flags != StatusFlags::default() {
            write!(f, " flags {}", self.flags)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn repr(joined: &[u8]) -> StatusReplyRepr<'_> {
        let mut a = [0u64; StatusCounters::COUNT];
        for (i, c) in a.iter_mut().enumerate() {
            *c = i as u64 + 1;
        }
        a[11] = 0x1_0000_0000;
        StatusReplyRepr {
            job: 7,
            rank: 1,
            world: 10,
            flags: StatusFlags::ALL_JOINED,
            shards: 3,
            slot_count: 16,
            epoch: 0x0102_0304,
            counters: StatusCounters::from_array(a),
            joined,
        }
    }

    const LEN: usize = HEADER_LEN + 2;

    fn known_bytes() -> [u8; LEN] {
        let mut b = [0u8; LEN];
        b[..20].copy_from_slice(&[
            0x01, 0x16, 0x00, 0x07, 0x00, 0x01, 0x00, 0x0A, 0x01, 0x03, 0x00, 0x10, 0x01, 0x02,
            0x03, 0x04, 0x00, 0x02, 0x00, 0x00,
        ]);
        for i in 0..StatusCounters::COUNT {
            b[20 + 8 * i + 7] = i as u8 + 1;
        }
        b[20 + 8 * 11 + 7] = 0;
        b[20 + 8 * 11 + 3] = 1;
        b[HEADER_LEN..].copy_from_slice(&[0xFF, 0x03]);
        b
    }

    #[test]
    fn decode_known_bytes() {
        let b = known_bytes();
        let p = StatusReplyPacket::new_checked(&b[..]).unwrap();
        assert_eq!(StatusReplyRepr::parse(&p), Ok(repr(&[0xFF, 0x03])));
    }

    #[test]
    fn encode_to_known_bytes() {
        let r = repr(&[0xFF, 0x03]);
        let mut b = [0xAA; LEN];
        assert_eq!(r.buffer_len(), LEN);
        r.emit(&mut StatusReplyPacket::new_unchecked(&mut b[..]));
        assert_eq!(b, known_bytes());
    }

    #[test]
    fn reject_impossible_lengths_and_fields() {
        let b = known_bytes();
        assert_eq!(
            StatusReplyPacket::new_checked(&b[..LEN - 1]).err(),
            Some(Error::Truncated)
        );
        assert_eq!(
            StatusReplyPacket::new_checked(&b[..100]).err(),
            Some(Error::Truncated)
        );
        let mut long = [0u8; LEN + 1];
        long[..LEN].copy_from_slice(&b);
        assert_eq!(
            StatusReplyPacket::new_checked(&long[..]).err(),
            Some(Error::TrailingBytes)
        );
        let mut bad = b;
        bad[18] = 1;
        assert_eq!(
            StatusReplyRepr::parse(&StatusReplyPacket::new_unchecked(&bad[..])),
            Err(Error::Reserved("status_reply.reserved"))
        );
    }

    #[test]
    fn display_is_one_line_with_the_key_fields() {
        extern crate std;
        use std::string::ToString;
        assert_eq!(
            repr(&[0xFF, 0x03]).to_string(),
            "StatusReply job 7 rank 1 world 10 slot_count 16 epoch 0x01020304 joined 10/10 \
             received 1 dropped 2 contributions 3 completions 4 runs 13 flags ALL_JOINED"
        );
    }

    #[test]
    fn header_len_is_derived_from_the_fields() {
        assert_eq!(HEADER_LEN, 252);
    }
}
