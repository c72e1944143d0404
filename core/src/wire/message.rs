//! Any message: parse a datagram by its type byte, emit any message into a buffer.
//!
//! [`Message::parse`] is what a receiver calls on a datagram; [`Message::emit`] writes exactly
//! [`Message::buffer_len`] bytes. For every `bytes` that parse, emitting the result gives
//! `bytes` back, unknown message types included (protocol.md §2).

use super::{
    data, peek, prefix, split_mut, AbortPacket, AbortRepr, CookiePacket, CookieRepr, DataPacket,
    DataRepr, Error, JoinPacket, JoinReplyPacket, JoinReplyRepr, JoinRepr, LeavePacket, LeaveRepr,
    MessageType, Prefix, ProbePacket, ProbeReplyPacket, ProbeReplyRepr, ProbeRepr, Result,
    StatusPacket, StatusReplyPacket, StatusReplyRepr, StatusRepr, MAX_BITMAP_LEN,
};

/// One message of any type, validated; variable parts are borrowed from the datagram.
// A StatusReply carries its counters by value (≈ 250 bytes); a `Message` lives on the stack
// for one call, so boxing it would cost more than it saves (and `core` cannot allocate).
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Message<'a> {
    /// A Contribution or Result: the header and the values as big-endian bytes.
    Data(DataRepr, &'a [u8]),
    /// A Join.
    Join(JoinRepr),
    /// A JoinReply.
    JoinReply(JoinReplyRepr<'a>),
    /// A Probe.
    Probe(ProbeRepr),
    /// A ProbeReply.
    ProbeReply(ProbeReplyRepr<'a>),
    /// An Abort.
    Abort(AbortRepr),
    /// A Status request.
    Status(StatusRepr),
    /// A StatusReply.
    StatusReply(StatusReplyRepr<'a>),
    /// A Leave.
    Leave(LeaveRepr),
    /// A Cookie.
    Cookie(CookieRepr),
    /// A message of a type this version does not know, kept as it came.
    Unknown {
        /// The type byte; never one of the known types.
        msg_type: u8,
        /// Job id.
        job: u16,
        /// Rank.
        rank: u16,
        /// The bytes after the 6-byte prefix.
        body: &'a [u8],
    },
}

impl<'a> Message<'a> {
    /// Parse and validate a whole datagram.
    pub fn parse(bytes: &'a [u8]) -> Result<Message<'a>> {
        let (msg_type, job, rank) = peek(bytes)?;
        Ok(match msg_type {
            MessageType::Contribution | MessageType::Result => {
                let repr = DataRepr::parse(&DataPacket::new_unchecked(bytes))?;
                Message::Data(repr, &bytes[data::HEADER_LEN..])
            }
            MessageType::Join => Message::Join(JoinRepr::parse(&JoinPacket::new_unchecked(bytes))?),
            MessageType::JoinReply => Message::JoinReply(JoinReplyRepr::parse(
                &JoinReplyPacket::new_unchecked(bytes),
            )?),
            MessageType::Probe => {
                Message::Probe(ProbeRepr::parse(&ProbePacket::new_unchecked(bytes))?)
            }
            MessageType::ProbeReply => Message::ProbeReply(ProbeReplyRepr::parse(
                &ProbeReplyPacket::new_unchecked(bytes),
            )?),
            MessageType::Abort => {
                Message::Abort(AbortRepr::parse(&AbortPacket::new_unchecked(bytes))?)
            }
            MessageType::Status => {
                Message::Status(StatusRepr::parse(&StatusPacket::new_unchecked(bytes))?)
            }
            MessageType::StatusReply => Message::StatusReply(StatusReplyRepr::parse(
                &StatusReplyPacket::new_unchecked(bytes),
            )?),
            MessageType::Leave => {
                Message::Leave(LeaveRepr::parse(&LeavePacket::new_unchecked(bytes))?)
            }
            MessageType::Cookie => {
                Message::Cookie(CookieRepr::parse(&CookiePacket::new_unchecked(bytes))?)
            }
            MessageType::Unknown(msg_type) => Message::Unknown {
                msg_type,
                job,
                rank,
                body: &bytes[prefix::LEN..],
            },
        })
    }

    /// Return the message type.
    pub fn msg_type(&self) -> MessageType {
        match self {
            Message::Data(repr, _) => repr.kind.into(),
            Message::Join(_) => MessageType::Join,
            Message::JoinReply(_) => MessageType::JoinReply,
            Message::Probe(_) => MessageType::Probe,
            Message::ProbeReply(_) => MessageType::ProbeReply,
            Message::Abort(_) => MessageType::Abort,
            Message::Status(_) => MessageType::Status,
            Message::StatusReply(_) => MessageType::StatusReply,
            Message::Leave(_) => MessageType::Leave,
            Message::Cookie(_) => MessageType::Cookie,
            Message::Unknown { msg_type, .. } => MessageType::Unknown(*msg_type),
        }
    }

    /// Return the job id.
    pub fn job(&self) -> u16 {
        match self {
            Message::Data(repr, _) => repr.job,
            Message::Join(repr) => repr.job,
            Message::JoinReply(repr) => repr.job,
            Message::Probe(repr) => repr.job,
            Message::ProbeReply(repr) => repr.job,
            Message::Abort(repr) => repr.job,
            Message::Status(repr) => repr.job,
            Message::StatusReply(repr) => repr.job,
            Message::Leave(repr) => repr.job,
            Message::Cookie(repr) => repr.job,
            Message::Unknown { job, .. } => *job,
        }
    }

    /// Return the rank.
    pub fn rank(&self) -> u16 {
        match self {
            Message::Data(repr, _) => repr.rank,
            Message::Join(repr) => repr.rank,
            Message::JoinReply(repr) => repr.rank,
            Message::Probe(repr) => repr.rank,
            Message::ProbeReply(repr) => repr.rank,
            Message::Abort(repr) => repr.rank,
            Message::Status(repr) => repr.rank,
            Message::StatusReply(repr) => repr.rank,
            Message::Leave(repr) => repr.rank,
            Message::Cookie(repr) => repr.rank,
            Message::Unknown { rank, .. } => *rank,
        }
    }

    /// Return the length of the emitted message.
    pub fn buffer_len(&self) -> usize {
        match self {
            Message::Data(repr, _) => repr.buffer_len(),
            Message::Join(repr) => repr.buffer_len(),
            Message::JoinReply(repr) => repr.buffer_len(),
            Message::Probe(repr) => repr.buffer_len(),
            Message::ProbeReply(repr) => repr.buffer_len(),
            Message::Abort(repr) => repr.buffer_len(),
            Message::Status(repr) => repr.buffer_len(),
            Message::StatusReply(repr) => repr.buffer_len(),
            Message::Leave(repr) => repr.buffer_len(),
            Message::Cookie(repr) => repr.buffer_len(),
            Message::Unknown { body, .. } => prefix::LEN + body.len(),
        }
    }

    /// Check that the emitted bytes would parse back to `self`.
    fn check(&self) -> Result<()> {
        let ver = |v: u8| {
            if v > 1 {
                Err(Error::Field("ver"))
            } else {
                Ok(())
            }
        };
        let bitmap = |b: &[u8]| {
            if b.len() > MAX_BITMAP_LEN {
                Err(Error::Field("bitmap_len"))
            } else {
                Ok(())
            }
        };
        match self {
            Message::Data(repr, values) => {
                ver(repr.ver)?;
                if values.len() != 4 * repr.count as usize {
                    return Err(Error::Field("count"));
                }
                Ok(())
            }
            Message::JoinReply(repr) => bitmap(repr.joined),
            Message::Probe(repr) => ver(repr.ver),
            Message::ProbeReply(repr) => ver(repr.ver).and(bitmap(repr.seen)),
            Message::Unknown { msg_type, .. } => match MessageType::from(*msg_type) {
                MessageType::Unknown(_) => Ok(()),
                _ => Err(Error::Field("type")),
            },
            Message::StatusReply(repr) => bitmap(repr.joined),
            Message::Join(repr) if repr.nonce == 0 => Err(Error::Field("nonce")),
            Message::Join(_)
            | Message::Abort(_)
            | Message::Status(_)
            | Message::Leave(_)
            | Message::Cookie(_) => Ok(()),
        }
    }

    /// Write the message into the start of `out` and return its length, `buffer_len()`.
    ///
    /// Fails with [`Error::BufferTooSmall`] if `out` is shorter, and with the error `parse`
    /// would give if the message could not be read back: a `ver` over 1, a Data payload that
    /// is not `4 · count` bytes, a bitmap over [`MAX_BITMAP_LEN`] bytes, or an `Unknown` whose
    /// type is a known one. Nothing is written when it fails.
    pub fn emit(&self, out: &mut [u8]) -> Result<usize> {
        self.check()?;
        let len = self.buffer_len();
        let out = out.get_mut(..len).ok_or(Error::BufferTooSmall)?;
        match self {
            Message::Data(repr, values) => {
                let mut packet = DataPacket::new_unchecked(&mut *out);
                repr.emit(&mut packet);
                packet.values_mut().copy_from_slice(values);
            }
            Message::Join(repr) => repr.emit(&mut JoinPacket::new_unchecked(out)),
            Message::JoinReply(repr) => repr.emit(&mut JoinReplyPacket::new_unchecked(out)),
            Message::Probe(repr) => repr.emit(&mut ProbePacket::new_unchecked(out)),
            Message::ProbeReply(repr) => repr.emit(&mut ProbeReplyPacket::new_unchecked(out)),
            Message::Abort(repr) => repr.emit(&mut AbortPacket::new_unchecked(out)),
            Message::Status(repr) => repr.emit(&mut StatusPacket::new_unchecked(out)),
            Message::StatusReply(repr) => repr.emit(&mut StatusReplyPacket::new_unchecked(out)),
            Message::Leave(repr) => repr.emit(&mut LeavePacket::new_unchecked(out)),
            Message::Cookie(repr) => repr.emit(&mut CookiePacket::new_unchecked(out)),
            Message::Unknown {
                msg_type,
                job,
                rank,
                body,
            } => {
                let (prefix, rest) = split_mut::<Prefix>(out);
                *prefix = Prefix::new(MessageType::Unknown(*msg_type), *job, *rank);
                rest.copy_from_slice(body);
            }
        }
        Ok(len)
    }
}

/// One line, the message's `Repr`'s (`Contribution job 7 rank 3 slot 5 …`); a message of an
/// unknown type shows its type byte, job, rank and body length. This is the form a packet
/// trace prints.
impl core::fmt::Display for Message<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Message::Data(repr, _) => repr.fmt(f),
            Message::Join(repr) => repr.fmt(f),
            Message::JoinReply(repr) => repr.fmt(f),
            Message::Probe(repr) => repr.fmt(f),
            Message::ProbeReply(repr) => repr.fmt(f),
            Message::Abort(repr) => repr.fmt(f),
            Message::Status(repr) => repr.fmt(f),
            Message::StatusReply(repr) => repr.fmt(f),
            Message::Leave(repr) => repr.fmt(f),
            Message::Cookie(repr) => repr.fmt(f),
            Message::Unknown {
                msg_type,
                job,
                rank,
                body,
            } => write!(
                f,
                "Unknown type {msg_type:#04x} job {job} rank {rank} body_len {}",
                body.len()
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::{AbortReason, DataKind, Flags, JoinFlags};

    #[test]
    fn decode_known_bytes_of_every_kind() {
        let join = [
            1, 0x10, 0, 7, 0, 3, 0, 4, 0, 8, 0, 4, 1, 0, 0, 3, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 9,
            0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
        ];
        assert!(matches!(
            Message::parse(&join),
            Ok(Message::Join(JoinRepr { count: 256, .. }))
        ));
        let abort = [
            1, 0x14, 0, 7, 0, 1, 6, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 2,
        ];
        assert!(matches!(
            Message::parse(&abort),
            Ok(Message::Abort(AbortRepr {
                reason: AbortReason::Shutdown,
                epoch: 1,
                ..
            }))
        ));
        let unknown = [1, 0x42, 0, 7, 0, 1, 0xAB];
        let msg = Message::parse(&unknown).unwrap();
        assert_eq!(
            msg,
            Message::Unknown {
                msg_type: 0x42,
                job: 7,
                rank: 1,
                body: &[0xAB]
            }
        );
        assert_eq!(msg.msg_type(), MessageType::Unknown(0x42));
        let priming = [
            1, 2, 0, 7, 0xFF, 0xFF, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0x80, 0, 0, 0, 0, 0, 0, 3,
        ];
        let msg = Message::parse(&priming).unwrap();
        let Message::Data(repr, values) = msg else {
            panic!("{msg:?}")
        };
        assert_eq!(
            (repr.kind, repr.count, repr.exp),
            (DataKind::Result, 0, 0x80)
        );
        assert!(values.is_empty());
        assert_eq!((msg.job(), msg.rank()), (7, 0xFFFF));
    }

    #[test]
    fn encode_to_known_bytes() {
        let values = [0x00, 0x00, 0x00, 0x01];
        let msg = Message::Data(
            DataRepr {
                kind: DataKind::Contribution,
                job: 1,
                rank: 2,
                slot: 3,
                ver: 0,
                flags: Flags::default(),
                count: 1,
                seq: 4,
                exp: 5,
                session: 6,
            },
            &values,
        );
        let mut out = [0xAAu8; 32];
        assert_eq!(msg.emit(&mut out), Ok(28));
        assert_eq!(
            out[..28],
            [1, 1, 0, 1, 0, 2, 0, 3, 0, 0, 0, 1, 0, 0, 0, 4, 5, 0, 0, 0, 0, 0, 0, 6, 0, 0, 0, 1]
        );
        assert_eq!(out[28], 0xAA, "nothing past buffer_len is written");
        let msg = Message::Unknown {
            msg_type: 0xFE,
            job: 0x0102,
            rank: 0x0304,
            body: &[9, 9],
        };
        assert_eq!(msg.emit(&mut out), Ok(8));
        assert_eq!(out[..8], [1, 0xFE, 1, 2, 3, 4, 9, 9]);
    }

    #[test]
    fn display_is_the_reprs_line() {
        extern crate std;
        use std::string::ToString;
        let abort = [
            1, 0x14, 0, 7, 0, 1, 6, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 2,
        ];
        let msg = Message::parse(&abort).unwrap();
        let Message::Abort(repr) = msg else {
            panic!("{msg:?}")
        };
        assert_eq!(msg.to_string(), repr.to_string());
        assert!(msg
            .to_string()
            .starts_with("Abort job 7 rank 1 reason Shutdown"));
        let unknown = Message::parse(&[1, 0x42, 0, 7, 0, 1, 0xAB]).unwrap();
        assert_eq!(
            unknown.to_string(),
            "Unknown type 0x42 job 7 rank 1 body_len 1"
        );
        assert_eq!(MessageType::Unknown(0x42).to_string(), "Unknown(0x42)");
        assert_eq!(MessageType::JoinReply.to_string(), "JoinReply");
        assert_eq!(
            Error::Field("type").to_string(),
            "invalid value in field `type`"
        );
    }

    #[test]
    fn reject_impossible_messages() {
        assert_eq!(Message::parse(&[]), Err(Error::Truncated));
        assert_eq!(Message::parse(&[1, 0x10, 0, 0, 0]), Err(Error::Truncated));
        assert_eq!(
            Message::parse(&[2, 0x42, 0, 0, 0, 0]),
            Err(Error::Version(2))
        );
        assert_eq!(
            Message::parse(&[1, 0x12, 0, 0, 0, 0]),
            Err(Error::Truncated)
        );
        let join = Message::Join(
            JoinRepr {
                job: 1,
                rank: 2,
                world: 3,
                slot_lo: 0,
                slot_count: 1,
                count: 64,
                lanes: 1,
                nonce: 9,
                cookie: 0,
                tag: [0; 16],
            }
            .sign(10),
        );
        assert_eq!(join.emit(&mut [0u8; 27]), Err(Error::BufferTooSmall));
        let big = [0u8; MAX_BITMAP_LEN + 1];
        let reply = Message::JoinReply(JoinReplyRepr {
            job: 1,
            rank: 2,
            world: 3,
            flags: JoinFlags::COMPLETE,
            shards: 0,
            max_count: 256,
            epoch: 0,
            slot_count: 1,
            session: 0,
            lane_slots: 1,
            count: 64,
            nonce: 0,
            joined: &big,
        });
        assert_eq!(reply.emit(&mut [0u8; 200]), Err(Error::Field("bitmap_len")));
        let unknown = Message::Unknown {
            msg_type: 0x10,
            job: 0,
            rank: 0,
            body: &[],
        };
        assert_eq!(unknown.emit(&mut [0u8; 6]), Err(Error::Field("type")));
        let bad_payload = Message::Data(
            DataRepr {
                kind: DataKind::Result,
                job: 1,
                rank: 2,
                slot: 3,
                ver: 1,
                flags: Flags::OVERFLOW,
                count: 2,
                seq: 4,
                exp: 5,
                session: 6,
            },
            &[0; 4],
        );
        assert_eq!(bad_payload.emit(&mut [0u8; 64]), Err(Error::Field("count")));
    }
}
