//! Abort (0x14): the job cannot go on (protocol.md §3.6).
//!
//! ```text
//!  0: version | 1: type | 2-3: job | 4-5: rank | 6: reason | 7: reserved | 8-9: detail
//! 10-11: reserved | 12-15: epoch | 16-19: session
//! ```

use zerocopy::network_endian::{U16, U32};
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};

use super::{check_exact_len, Error, MessageType, Prefix, Result};

/// An Abort message, in wire order.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned,
)]
#[repr(C)]
pub struct Header {
    /// Version, type, job and rank.
    pub prefix: Prefix,
    /// Why the job cannot go on.
    pub reason: u8,
    /// Reserved byte.
    pub reserved_a: u8,
    /// A number that depends on the reason.
    pub detail: U16,
    /// Reserved pair of bytes.
    pub reserved_b: U16,
    /// The switch's incarnation (0 when a worker sends it).
    pub epoch: U32,
    /// The job run's session token (0 in answer to a Join that opened no run).
    pub session: U32,
}

/// Length of an Abort message: the size of [`Header`].
pub const LEN: usize = core::mem::size_of::<Header>();

/// Why a job cannot go on; the table of protocol.md §3.6.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum AbortReason {
    /// 1: the switch does not know the job (detail 0).
    UnknownJob,
    /// 2: the rank is not below the world size (detail: the job's world size).
    UnknownRank,
    /// 3: the Join's world size differs from the job's (detail: the registered world size).
    WorldMismatch,
    /// 4: the slot range is outside the job's (detail: the job's slot count).
    SlotRange,
    /// 5: the chunk size is over the switch's limit (detail: `max_count`).
    CountTooLarge,
    /// 6: the switch is shutting down (detail 0).
    Shutdown,
    /// 7: a worker gave up (detail: the rank it waited for, or `0xFFFF`).
    WorkerFailed,
    /// 8: the Join's tag was not made with the job's key (detail 0).
    BadKey,
    /// 9: a rank of the running job joined again as a new process (detail: the rank).
    RankRestarted,
    /// 10: the lane's slot count differs from the one the job's run agreed (detail: it).
    LaneMismatch,
    /// 11: the chunk size differs from the one the job's run agreed (detail: it).
    ChunkMismatch,
    /// 12: the sender's session is not the job's current run (detail 0).
    SessionEnded,
    /// 13: the Join reached a shard that does not serve its lane (detail: the switch's
    /// number of shards; the lane's shard is `lane mod shards`, protocol.md §1.1).
    WrongShard,
    /// 14: the rank's number of lanes differs from the one the job's run agreed (detail:
    /// it).
    LaneCountMismatch,
    /// 15: the job's parent switch ended the run (protocol.md §7; detail: the child switch,
    /// as a member of the parent's job, whose failure or refusal ended it, or `0xFFFF`).
    ParentFailed,
    /// 16: the operator removed the job from the switch while it had a run (protocol.md
    /// §4.1, "Adding and removing jobs"; detail 0). The switch goes on serving other jobs.
    JobRemoved,
    /// 17: the switch heard nothing from a rank of the run for its dead interval
    /// (protocol.md §4.3; detail: the rank). The process is gone or cut off.
    RankSilent,
    /// 18: a rank's Join was refused while the other ranks waited for it (protocol.md §4.3;
    /// detail: the rank). That rank's own answer says why.
    RankRefused,
    /// A reason this version does not know.
    Unknown(u8),
}

impl From<u8> for AbortReason {
    fn from(b: u8) -> Self {
        match b {
            1 => AbortReason::UnknownJob,
            2 => AbortReason::UnknownRank,
            3 => AbortReason::WorldMismatch,
            4 => AbortReason::SlotRange,
            5 => AbortReason::CountTooLarge,
            6 => AbortReason::Shutdown,
            7 => AbortReason::WorkerFailed,
            8 => AbortReason::BadKey,
            9 => AbortReason::RankRestarted,
            10 => AbortReason::LaneMismatch,
            11 => AbortReason::ChunkMismatch,
            12 => AbortReason::SessionEnded,
            13 => AbortReason::WrongShard,
            14 => AbortReason::LaneCountMismatch,
            15 => AbortReason::ParentFailed,
            16 => AbortReason::JobRemoved,
            17 => AbortReason::RankSilent,
            18 => AbortReason::RankRefused,
            other => AbortReason::Unknown(other),
        }
    }
}

impl From<AbortReason> for u8 {
    fn from(r: AbortReason) -> u8 {
        match r {
            AbortReason::UnknownJob => 1,
            AbortReason::UnknownRank => 2,
            AbortReason::WorldMismatch => 3,
            AbortReason::SlotRange => 4,
            AbortReason::CountTooLarge => 5,
            AbortReason::Shutdown => 6,
            AbortReason::WorkerFailed => 7,
            AbortReason::BadKey => 8,
            AbortReason::RankRestarted => 9,
            AbortReason::LaneMismatch => 10,
            AbortReason::ChunkMismatch => 11,
            AbortReason::SessionEnded => 12,
            AbortReason::WrongShard => 13,
            AbortReason::LaneCountMismatch => 14,
            AbortReason::ParentFailed => 15,
            AbortReason::JobRemoved => 16,
            AbortReason::RankSilent => 17,
            AbortReason::RankRefused => 18,
            AbortReason::Unknown(other) => other,
        }
    }
}

impl core::fmt::Display for AbortReason {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            AbortReason::UnknownJob => f.write_str("the switch does not know this job"),
            AbortReason::UnknownRank => f.write_str("the rank is not part of the job's world"),
            AbortReason::WorldMismatch => {
                f.write_str("the world size differs from the one registered for the job")
            }
            AbortReason::SlotRange => f.write_str("the slot range is outside the job's slots"),
            AbortReason::CountTooLarge => {
                f.write_str("the chunk size is larger than the switch accepts")
            }
            AbortReason::Shutdown => f.write_str("the switch is shutting down"),
            AbortReason::WorkerFailed => f.write_str("a worker of the job gave up"),
            AbortReason::BadKey => f.write_str("the job key is wrong (check SWITCHML_JOB_KEY)"),
            AbortReason::RankRestarted => {
                f.write_str("a rank of the job restarted: this run is over")
            }
            AbortReason::LaneMismatch => {
                f.write_str("the lane's slot count differs from the one the job's ranks use")
            }
            AbortReason::ChunkMismatch => {
                f.write_str("the chunk size differs from the one the job's ranks use")
            }
            AbortReason::SessionEnded => {
                f.write_str("the switch no longer runs this session of the job")
            }
            AbortReason::WrongShard => {
                f.write_str("this shard of the switch does not serve the lane")
            }
            AbortReason::LaneCountMismatch => {
                f.write_str("the number of lanes differs from the one the job's ranks use")
            }
            AbortReason::ParentFailed => f.write_str("the job's parent switch ended the run"),
            AbortReason::JobRemoved => f.write_str("the job was removed from the switch"),
            AbortReason::RankSilent => {
                f.write_str("a rank of the job went silent (its process is gone or cut off)")
            }
            AbortReason::RankRefused => {
                f.write_str("the switch refused a rank's Join (its settings differ from the run's)")
            }
            AbortReason::Unknown(b) => write!(f, "unknown abort reason {b:#04x}"),
        }
    }
}

super::packet_view!(
    /// A zero-copy view of an Abort message.
    AbortPacket,
    Header
);

impl<T: AsRef<[u8]>> AbortPacket<T> {
    /// Check that the buffer is exactly [`LEN`] bytes long.
    pub fn check_len(&self) -> Result<()> {
        check_exact_len(self.buffer.as_ref().len(), LEN)
    }

    /// Return the reason field.
    pub fn reason(&self) -> AbortReason {
        AbortReason::from(self.header().reason)
    }

    /// Return the first reserved field.
    pub fn reserved_a(&self) -> u8 {
        self.header().reserved_a
    }

    /// Return the detail field.
    pub fn detail(&self) -> u16 {
        self.header().detail.get()
    }

    /// Return the second reserved field.
    pub fn reserved_b(&self) -> u16 {
        self.header().reserved_b.get()
    }

    /// Return the epoch field.
    pub fn epoch(&self) -> u32 {
        self.header().epoch.get()
    }

    /// Return the session field.
    pub fn session(&self) -> u32 {
        self.header().session.get()
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> AbortPacket<T> {
    /// Set the reason field.
    pub fn set_reason(&mut self, r: AbortReason) {
        self.header_mut().reason = r.into();
    }

    /// Set the detail field.
    pub fn set_detail(&mut self, v: u16) {
        self.header_mut().detail.set(v);
    }

    /// Set the epoch field.
    pub fn set_epoch(&mut self, v: u32) {
        self.header_mut().epoch.set(v);
    }

    /// Set the session field.
    pub fn set_session(&mut self, v: u32) {
        self.header_mut().session.set(v);
    }
}

/// A validated Abort message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct AbortRepr {
    /// Job id.
    pub job: u16,
    /// The destination (switch → worker) or the sender (worker → switch).
    pub rank: u16,
    /// Why the job cannot go on.
    pub reason: AbortReason,
    /// A number that depends on the reason.
    pub detail: u16,
    /// The switch's incarnation (0 when a worker sends it).
    pub epoch: u32,
    /// The job run's session token.
    pub session: u32,
}

impl AbortRepr {
    /// Parse and validate an Abort message.
    pub fn parse<T: AsRef<[u8]> + ?Sized>(packet: &AbortPacket<&T>) -> Result<AbortRepr> {
        packet.check_len()?;
        let h = packet.header();
        h.prefix.check(MessageType::Abort)?;
        if h.reserved_a != 0 || h.reserved_b != U16::ZERO {
            return Err(Error::Reserved("abort.reserved"));
        }
        Ok(AbortRepr {
            job: h.prefix.job.get(),
            rank: h.prefix.rank.get(),
            reason: AbortReason::from(h.reason),
            detail: h.detail.get(),
            epoch: h.epoch.get(),
            session: h.session.get(),
        })
    }

    /// Return the length of the message.
    pub const fn buffer_len(&self) -> usize {
        LEN
    }

    /// Write the message. The packet must be at least [`LEN`] bytes long.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]> + ?Sized>(&self, packet: &mut AbortPacket<&mut T>) {
        *packet.header_mut() = Header {
            prefix: Prefix::new(MessageType::Abort, self.job, self.rank),
            reason: self.reason.into(),
            reserved_a: 0,
            detail: U16::new(self.detail),
            reserved_b: U16::ZERO,
            epoch: U32::new(self.epoch),
            session: U32::new(self.session),
        };
    }
}

/// One line: `Abort job 7 rank 1 reason WorldMismatch detail 8 epoch 0xdeadbeef session
/// 0x00000000`. (The reason's `Display` is the sentence a user reads.)
impl core::fmt::Display for AbortRepr {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(
            f,
            "Abort job {} rank {} reason {:?} detail {} epoch {:#010x} session {:#010x}",
            self.job,
            super::show::Rank(self.rank),
            self.reason,
            self.detail,
            self.epoch,
            self.session
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Job 7, to rank 1: the world size does not match; the job has 8 ranks; epoch 0xdeadbeef;
    // no session.
    const BYTES: [u8; 20] = [
        0x01, 0x14, 0x00, 0x07, 0x00, 0x01, 0x03, 0x00, 0x00, 0x08, 0x00, 0x00, 0xDE, 0xAD, 0xBE,
        0xEF, 0x00, 0x00, 0x00, 0x00,
    ];
    const REPR: AbortRepr = AbortRepr {
        job: 7,
        rank: 1,
        reason: AbortReason::WorldMismatch,
        detail: 8,
        epoch: 0xDEAD_BEEF,
        session: 0,
    };

    #[test]
    fn decode_known_bytes() {
        let p = AbortPacket::new_checked(&BYTES[..]).unwrap();
        assert_eq!(AbortRepr::parse(&p), Ok(REPR));
    }

    #[test]
    fn encode_to_known_bytes() {
        let mut buf = [0xAAu8; 20];
        assert_eq!(REPR.buffer_len(), 20);
        REPR.emit(&mut AbortPacket::new_unchecked(&mut buf[..]));
        assert_eq!(buf, BYTES);
    }

    #[test]
    fn unknown_reasons_round_trip() {
        for b in 0..=255u8 {
            assert_eq!(u8::from(AbortReason::from(b)), b);
        }
        assert_eq!(AbortReason::from(0), AbortReason::Unknown(0));
        assert_eq!(AbortReason::from(13), AbortReason::WrongShard);
        assert_eq!(AbortReason::from(14), AbortReason::LaneCountMismatch);
        assert_eq!(AbortReason::from(15), AbortReason::ParentFailed);
        assert_eq!(AbortReason::from(16), AbortReason::JobRemoved);
        assert_eq!(u8::from(AbortReason::JobRemoved), 16);
        assert_eq!(AbortReason::from(99), AbortReason::Unknown(99));
    }

    #[test]
    fn reject_impossible_lengths_and_fields() {
        let check = |b: &[u8]| AbortPacket::new_checked(b).err();
        assert_eq!(check(&BYTES[..19]), Some(Error::Truncated));
        let mut long = [0u8; 24];
        long[..20].copy_from_slice(&BYTES);
        assert_eq!(check(&long), Some(Error::TrailingBytes));
        let parse = |b: &[u8]| AbortRepr::parse(&AbortPacket::new_unchecked(b));
        let mut bad = BYTES;
        AbortPacket::new_unchecked(&mut bad[..])
            .header_mut()
            .reserved_a = 1;
        assert_eq!(parse(&bad), Err(Error::Reserved("abort.reserved")));
        let mut bad = BYTES;
        AbortPacket::new_unchecked(&mut bad[..])
            .header_mut()
            .reserved_b = U16::new(1);
        assert_eq!(parse(&bad), Err(Error::Reserved("abort.reserved")));
        let mut bad = BYTES;
        AbortPacket::new_unchecked(&mut bad[..]).set_msg_type(MessageType::Contribution);
        assert_eq!(parse(&bad), Err(Error::Field("type")));
        let mut bad = BYTES;
        bad[0] = 2;
        assert_eq!(parse(&bad), Err(Error::Version(2)));
    }

    #[test]
    fn display_is_one_line_with_the_key_fields() {
        extern crate std;
        use std::string::ToString;
        assert_eq!(
            REPR.to_string(),
            "Abort job 7 rank 1 reason WorldMismatch detail 8 epoch 0xdeadbeef session 0x00000000"
        );
        assert_eq!(
            AbortReason::Unknown(15).to_string(),
            "unknown abort reason 0x0f"
        );
    }

    #[test]
    fn len_is_derived_from_the_fields() {
        assert_eq!(LEN, 20);
    }
}
