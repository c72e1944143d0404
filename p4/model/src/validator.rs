//! `validator.p4`: the field checks a P4 parser cannot make, and the message class.
//!
//! A message is `Malformed` if its version is not 1, its length is not exactly what its
//! header declares, a reserved field is not zero, `ver` is above 1, or a Join's nonce or
//! lanes is zero (protocol.md §2–3);
//! types only a switch sends to workers (ProbeReply, StatusReply) are `UnexpectedType`,
//! unknown types `UnknownType` (§4). A Result or JoinReply is checked as a child switch
//! takes it from its parent (§7); the pipeline drops one as `UnexpectedType` before
//! these checks unless its job is a child's parent's (`tier_selector.rs`).

use switchml_core::switch::DropReason;

use switchml_core::wire::MAX_BITMAP_LEN;

use crate::headers::{
    AbortHeader, Body, DataHeader, Headers, JoinHeader, JoinReplyHeader, LeaveHeader, ProbeHeader,
    StatusHeader,
};

/// A message the switch acts on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Message {
    /// A Contribution.
    Contribution(DataHeader),
    /// A Join.
    Join(JoinHeader),
    /// A Probe.
    Probe(ProbeHeader),
    /// An Abort from a worker.
    Abort(AbortHeader),
    /// A Status request from a tool.
    Status(StatusHeader),
    /// A rank is done with the job's run.
    Leave(LeaveHeader),
    /// A Result, which only a child switch takes, from its parent (protocol.md §7).
    Result(DataHeader),
    /// A JoinReply, likewise.
    JoinReply(JoinReplyHeader),
    /// A Cookie (a parent's, protocol.md §4.2): the controller's.
    Cookie,
}

/// The validator (stateless).
#[derive(Debug, Clone, Copy, Default)]
pub struct Validator;

impl Validator {
    /// Check the parsed headers; return the message or why it is dropped.
    pub fn apply(h: &Headers<'_>) -> Result<Message, DropReason> {
        let exact = |len: usize| h.payload.len() == len;
        let (ok, message) = match h.body {
            Body::OtherVersion => return Err(DropReason::Malformed),
            Body::SwitchOnly => return Err(DropReason::UnexpectedType),
            Body::Unknown => return Err(DropReason::UnknownType),
            Body::Contribution(d) => (
                exact(4 * usize::from(d.count)) && d.ver <= 1 && d.reserved == 0,
                Message::Contribution(d),
            ),
            Body::Join(j) => (exact(0) && j.lanes != 0 && j.nonce != 0, Message::Join(j)),
            Body::Probe(p) => (exact(0) && p.ver <= 1 && p.reserved == 0, Message::Probe(p)),
            Body::Abort(a) => (exact(0) && a.reserved == 0, Message::Abort(a)),
            Body::Status(q) => (
                exact(0) && q.reserved == 0 && q.nonce != 0,
                Message::Status(q),
            ),
            Body::Leave(l) => (exact(0) && l.reserved == 0, Message::Leave(l)),
            Body::Cookie => (true, Message::Cookie),
            Body::Result(None) | Body::JoinReply(None) => return Err(DropReason::Malformed),
            Body::Result(Some(d)) => (
                exact(4 * usize::from(d.count)) && d.ver <= 1 && d.reserved == 0,
                Message::Result(d),
            ),
            Body::JoinReply(Some(r)) => (
                exact(usize::from(r.bitmap_len)) && usize::from(r.bitmap_len) <= MAX_BITMAP_LEN,
                Message::JoinReply(r),
            ),
        };
        if ok {
            Ok(message)
        } else {
            Err(DropReason::Malformed)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parser::Parser;

    fn check(bytes: &[u8]) -> Result<Message, DropReason> {
        Validator::apply(&Parser::parse_datagram(bytes).unwrap())
    }

    #[test]
    fn lengths_reserved_fields_and_versions_are_checked() {
        let mut c = [
            1u8, 1, 0, 7, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 9, 0, 0, 0, 1,
        ];
        assert!(matches!(check(&c), Ok(Message::Contribution(_))));
        assert_eq!(check(&c[..27]), Err(DropReason::Malformed));
        c[8] = 2;
        assert_eq!(check(&c), Err(DropReason::Malformed));
        c[8] = 0;
        c[19] = 1;
        assert_eq!(check(&c), Err(DropReason::Malformed));
        let mut join = [0u8; 44];
        join[..20].copy_from_slice(&[
            1u8, 0x10, 0, 7, 0, 0, 0, 2, 0, 0, 0, 1, 0, 1, 0, 1, 0, 0, 0, 5,
        ]);
        assert!(matches!(check(&join), Ok(Message::Join(_))));
        join[19] = 0;
        assert_eq!(check(&join), Err(DropReason::Malformed), "nonce 0");
        join[19] = 5;
        join[15] = 0;
        assert_eq!(check(&join), Err(DropReason::Malformed), "lanes 0");
        let mut leave = [1u8, 0x17, 0, 7, 0, 1, 0, 0, 0, 0, 0, 9];
        assert!(matches!(check(&leave), Ok(Message::Leave(_))));
        leave[7] = 1;
        assert_eq!(check(&leave), Err(DropReason::Malformed));
        assert_eq!(check(&[2, 0x10, 0, 0, 0, 0]), Err(DropReason::Malformed));
        assert_eq!(
            check(&[1, 0x13, 0, 0, 0, 0]),
            Err(DropReason::UnexpectedType)
        );
        assert_eq!(check(&[1, 0x99, 0, 0, 0, 0]), Err(DropReason::UnknownType));
        let mut status = [0u8; 36];
        status[..12].copy_from_slice(&[1u8, 0x15, 0, 7, 0xFF, 0xFF, 0, 0, 0, 0, 0, 1]);
        assert!(matches!(check(&status), Ok(Message::Status(_))));
        status[6] = 1;
        assert_eq!(check(&status), Err(DropReason::Malformed));
        status[6] = 0;
        status[11] = 0;
        assert_eq!(check(&status), Err(DropReason::Malformed), "nonce 0");
        status[11] = 1;
        let mut long = [0u8; 37];
        long[..36].copy_from_slice(&status);
        assert_eq!(check(&long), Err(DropReason::Malformed), "a byte too many");
        // A Cookie is the controller's (a parent's, protocol.md §4.2): the pipeline sends it
        // to the CPU port whatever its length.
        assert_eq!(check(&[1, 0x18, 0, 7, 0, 0]), Ok(Message::Cookie));
        assert_eq!(
            check(&[1, 0x16, 0, 7, 0, 0]),
            Err(DropReason::UnexpectedType)
        );
    }
}
