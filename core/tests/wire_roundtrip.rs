//! Property tests for the wire format.
//!
//! (a) `Message::parse` never panics, and whatever it accepts re-emits to the same bytes;
//! (b) for every kind of message, `parse(emit(r)) == r`, through the `Repr` and through
//! `Message`.

use proptest::collection::vec;
use proptest::prelude::*;
use proptest::sample::Index;
use switchml_core::wire::{
    AbortPacket, AbortReason, AbortRepr, CookieRepr, DataKind, DataPacket, DataRepr, Flags,
    JoinFlags, JoinPacket, JoinReplyPacket, JoinReplyRepr, JoinRepr, LeaveRepr, Message,
    MessageType, ProbePacket, ProbeReplyPacket, ProbeReplyRepr, ProbeRepr, SlotState, StatusRepr,
    MAX_BITMAP_LEN, VERSION,
};

/// The check a fuzz target would run: parsing never panics, and whatever parses re-emits to
/// exactly the input bytes.
fn check_roundtrip(bytes: &[u8]) {
    let Ok(msg) = Message::parse(bytes) else {
        return;
    };
    assert_eq!(msg.buffer_len(), bytes.len(), "{msg:?}");
    let mut out = vec![0u8; bytes.len()];
    assert_eq!(msg.emit(&mut out), Ok(bytes.len()), "{msg:?}");
    assert_eq!(out, bytes, "{msg:?}");
}

/// Emit a message into a vector of exactly `buffer_len()` bytes.
fn encode(msg: &Message) -> Vec<u8> {
    let mut out = vec![0u8; msg.buffer_len()];
    assert_eq!(msg.emit(&mut out), Ok(out.len()), "{msg:?}");
    out
}

/// Check `parse(emit(msg)) == msg` through `Message`, and return the bytes.
fn message_round_trips(msg: Message) -> Vec<u8> {
    let bytes = encode(&msg);
    assert_eq!(Message::parse(&bytes), Ok(msg));
    bytes
}

fn data() -> impl Strategy<Value = (DataRepr, Vec<u8>)> {
    (
        any::<bool>(),
        (any::<u16>(), any::<u16>(), any::<u16>()),
        0u8..=1,
        any::<u8>(),
        0u16..=300,
        any::<u32>(),
        (any::<u8>(), any::<u32>()),
    )
        .prop_flat_map(
            |(result, (job, rank, slot), ver, flags, count, seq, (exp, session))| {
                let kind = if result {
                    DataKind::Result
                } else {
                    DataKind::Contribution
                };
                let repr = DataRepr {
                    kind,
                    job,
                    rank,
                    slot,
                    ver,
                    flags: Flags(flags),
                    count,
                    seq,
                    exp,
                    session,
                };
                (Just(repr), vec(any::<u8>(), 4 * count as usize))
            },
        )
}

fn join() -> impl Strategy<Value = JoinRepr> {
    (any::<[u16; 6]>(), 1..=u16::MAX, 1..=u32::MAX, any::<u64>()).prop_map(
        |([job, rank, world, slot_lo, slot_count, count], lanes, nonce, key)| {
            JoinRepr {
                job,
                rank,
                world,
                slot_lo,
                slot_count,
                count,
                lanes,
                nonce,
                cookie: 0,
                tag: [0; 16],
            }
            .sign(key)
        },
    )
}

/// A JoinReply with an empty `joined` and the bitmap to put there.
fn join_reply() -> impl Strategy<Value = (JoinReplyRepr<'static>, Vec<u8>)> {
    (
        any::<[u16; 7]>(),
        any::<[u8; 2]>(),
        any::<[u32; 3]>(),
        vec(any::<u8>(), 0..=MAX_BITMAP_LEN),
    )
        .prop_map(
            |(
                [job, rank, world, max_count, slot_count, lane_slots, count],
                [flags, shards],
                [epoch, session, nonce],
                bitmap,
            )| {
                let repr = JoinReplyRepr {
                    job,
                    rank,
                    world,
                    flags: JoinFlags(flags),
                    shards,
                    max_count,
                    epoch,
                    slot_count,
                    session,
                    nonce,
                    lane_slots,
                    count,
                    joined: &[],
                };
                (repr, bitmap)
            },
        )
}

fn probe() -> impl Strategy<Value = ProbeRepr> {
    (any::<[u16; 3]>(), 0u8..=1, any::<[u32; 2]>()).prop_map(
        |([job, rank, slot], ver, [seq, session])| ProbeRepr {
            job,
            rank,
            slot,
            ver,
            seq,
            session,
            flags: switchml_core::wire::ProbeFlags::NONE,
        },
    )
}

/// A ProbeReply with an empty `seen` and the bitmap to put there.
fn probe_reply() -> impl Strategy<Value = (ProbeReplyRepr<'static>, Vec<u8>)> {
    (
        any::<[u16; 5]>(),
        0u8..=1,
        any::<u8>(),
        any::<[u32; 3]>(),
        vec(any::<u8>(), 0..=MAX_BITMAP_LEN),
    )
        .prop_map(
            |([job, rank, slot, remaining, world], ver, state, [seq, epoch, session], bitmap)| {
                let repr = ProbeReplyRepr {
                    job,
                    rank,
                    slot,
                    ver,
                    state: SlotState::from(state),
                    remaining,
                    seq,
                    epoch,
                    world,
                    session,
                    seen: &[],
                };
                (repr, bitmap)
            },
        )
}

fn abort() -> impl Strategy<Value = AbortRepr> {
    (any::<[u16; 3]>(), any::<u8>(), any::<[u32; 2]>()).prop_map(
        |([job, rank, detail], reason, [epoch, session])| AbortRepr {
            job,
            rank,
            reason: AbortReason::from(reason),
            detail,
            epoch,
            session,
        },
    )
}

fn leave() -> impl Strategy<Value = LeaveRepr> {
    (any::<[u16; 2]>(), any::<u32>()).prop_map(|([job, rank], session)| LeaveRepr {
        job,
        rank,
        session,
    })
}

fn status() -> impl Strategy<Value = StatusRepr> {
    (any::<[u16; 2]>(), 1..=u32::MAX, any::<u64>(), any::<u64>()).prop_map(
        |([job, rank], nonce, cookie, key)| {
            StatusRepr {
                job,
                rank,
                nonce,
                cookie,
                tag: [0; 16],
            }
            .sign(key)
        },
    )
}

fn cookie() -> impl Strategy<Value = CookieRepr> {
    (any::<[u16; 2]>(), any::<u32>(), 1..=u64::MAX).prop_map(|([job, rank], nonce, cookie)| {
        CookieRepr {
            job,
            rank,
            nonce,
            cookie,
        }
    })
}

fn unknown_type() -> impl Strategy<Value = u8> {
    any::<u8>().prop_filter("a type this version does not know", |t| {
        matches!(MessageType::from(*t), MessageType::Unknown(_))
    })
}

/// The bytes of a valid message of any kind.
fn valid_bytes() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        data().prop_map(|(r, v)| encode(&Message::Data(r, &v))),
        join().prop_map(|r| encode(&Message::Join(r))),
        join_reply()
            .prop_map(|(r, b)| encode(&Message::JoinReply(JoinReplyRepr { joined: &b, ..r }))),
        probe().prop_map(|r| encode(&Message::Probe(r))),
        probe_reply()
            .prop_map(|(r, b)| encode(&Message::ProbeReply(ProbeReplyRepr { seen: &b, ..r }))),
        abort().prop_map(|r| encode(&Message::Abort(r))),
        leave().prop_map(|r| encode(&Message::Leave(r))),
        status().prop_map(|r| encode(&Message::Status(r))),
        cookie().prop_map(|r| encode(&Message::Cookie(r))),
        (
            unknown_type(),
            any::<u16>(),
            any::<u16>(),
            vec(any::<u8>(), 0..64)
        )
            .prop_map(|(msg_type, job, rank, body)| encode(&Message::Unknown {
                msg_type,
                job,
                rank,
                body: &body,
            })),
    ]
}

/// A type byte: mostly known types, sometimes anything.
fn type_byte() -> impl Strategy<Value = u8> {
    prop_oneof![
        3 => prop::sample::select(vec![
            0x01u8, 0x02, 0x10, 0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17, 0x18
        ]),
        1 => any::<u8>(),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2048))]

    #[test]
    fn arbitrary_bytes_never_panic(bytes in vec(any::<u8>(), 0..600)) {
        check_roundtrip(&bytes);
    }

    #[test]
    fn valid_prefix_with_random_rest(
        msg_type in type_byte(),
        job in any::<u16>(),
        rank in any::<u16>(),
        rest in vec(prop_oneof![3 => Just(0u8), 1 => any::<u8>()], 0..600),
    ) {
        let mut bytes = vec![VERSION, msg_type];
        bytes.extend_from_slice(&job.to_be_bytes());
        bytes.extend_from_slice(&rank.to_be_bytes());
        bytes.extend_from_slice(&rest);
        check_roundtrip(&bytes);
    }

    #[test]
    fn mutated_valid_messages(
        bytes in valid_bytes(),
        edits in vec((any::<Index>(), any::<u8>()), 0..4),
        resize in -3i64..=3,
    ) {
        check_roundtrip(&bytes);
        prop_assert!(Message::parse(&bytes).is_ok());
        let mut bytes = bytes;
        for (at, b) in edits {
            let i = at.index(bytes.len());
            bytes[i] = b;
        }
        let len = (bytes.len() as i64 + resize).max(0) as usize;
        bytes.resize(len, 0);
        check_roundtrip(&bytes);
    }

    #[test]
    fn data_round_trips((repr, values) in data()) {
        let mut buf = vec![0u8; repr.buffer_len()];
        let mut packet = DataPacket::new_unchecked(&mut buf[..]);
        repr.emit(&mut packet);
        packet.values_mut().copy_from_slice(&values);
        let packet = DataPacket::new_checked(&buf[..]).unwrap();
        prop_assert_eq!(DataRepr::parse(&packet), Ok(repr));
        prop_assert_eq!(packet.values(), &values[..]);
        prop_assert_eq!(message_round_trips(Message::Data(repr, &values)), buf);
    }

    #[test]
    fn join_round_trips(repr in join()) {
        let mut buf = vec![0u8; repr.buffer_len()];
        repr.emit(&mut JoinPacket::new_unchecked(&mut buf[..]));
        prop_assert_eq!(JoinRepr::parse(&JoinPacket::new_checked(&buf[..]).unwrap()), Ok(repr));
        prop_assert_eq!(message_round_trips(Message::Join(repr)), buf);
    }

    #[test]
    fn join_reply_round_trips((repr, bitmap) in join_reply()) {
        let repr = JoinReplyRepr { joined: &bitmap, ..repr };
        let mut buf = vec![0u8; repr.buffer_len()];
        repr.emit(&mut JoinReplyPacket::new_unchecked(&mut buf[..]));
        let packet = JoinReplyPacket::new_checked(&buf[..]).unwrap();
        prop_assert_eq!(JoinReplyRepr::parse(&packet), Ok(repr));
        prop_assert_eq!(message_round_trips(Message::JoinReply(repr)), buf);
    }

    #[test]
    fn probe_round_trips(repr in probe()) {
        let mut buf = vec![0u8; repr.buffer_len()];
        repr.emit(&mut ProbePacket::new_unchecked(&mut buf[..]));
        prop_assert_eq!(ProbeRepr::parse(&ProbePacket::new_checked(&buf[..]).unwrap()), Ok(repr));
        prop_assert_eq!(message_round_trips(Message::Probe(repr)), buf);
    }

    #[test]
    fn probe_reply_round_trips((repr, bitmap) in probe_reply()) {
        let repr = ProbeReplyRepr { seen: &bitmap, ..repr };
        let mut buf = vec![0u8; repr.buffer_len()];
        repr.emit(&mut ProbeReplyPacket::new_unchecked(&mut buf[..]));
        let packet = ProbeReplyPacket::new_checked(&buf[..]).unwrap();
        prop_assert_eq!(ProbeReplyRepr::parse(&packet), Ok(repr));
        prop_assert_eq!(message_round_trips(Message::ProbeReply(repr)), buf);
    }

    #[test]
    fn abort_round_trips(repr in abort()) {
        let mut buf = vec![0u8; repr.buffer_len()];
        repr.emit(&mut AbortPacket::new_unchecked(&mut buf[..]));
        prop_assert_eq!(AbortRepr::parse(&AbortPacket::new_checked(&buf[..]).unwrap()), Ok(repr));
        prop_assert_eq!(message_round_trips(Message::Abort(repr)), buf);
    }

    #[test]
    fn unknown_round_trips(
        msg_type in unknown_type(),
        job in any::<u16>(),
        rank in any::<u16>(),
        body in vec(any::<u8>(), 0..600),
    ) {
        message_round_trips(Message::Unknown { msg_type, job, rank, body: &body });
    }

    #[test]
    fn emit_refuses_short_buffers(bytes in valid_bytes(), short in any::<Index>()) {
        let msg = Message::parse(&bytes).unwrap();
        let mut out = vec![0xAAu8; short.index(bytes.len())];
        prop_assert_eq!(msg.emit(&mut out), Err(switchml_core::wire::Error::BufferTooSmall));
        prop_assert!(out.iter().all(|&b| b == 0xAA), "nothing written");
    }
}
