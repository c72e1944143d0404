//! The golden wire vectors (`tests/vectors/wire.txt`) against the Rust wire code: every
//! valid vector parses to exactly its fields and re-emits to its bytes, every invalid vector
//! fails with the error it names, and the file covers what other implementations need.

use std::collections::BTreeSet;

use switchml_core::wire::{AbortReason, DataKind, Flags, JoinFlags, Message, RANK_ALL};
use switchml_tests::vectors::{describe, error_name, load, reason_name, Vector, WIRE};

fn vectors() -> Vec<Vector> {
    load(WIRE).unwrap_or_else(|e| panic!("tests/vectors/wire.txt: {e}"))
}

#[test]
fn valid_vectors_parse_to_their_fields_and_re_emit_their_bytes() {
    for v in vectors() {
        let Some(fields) = &v.fields else { continue };
        let msg = Message::parse(&v.bytes)
            .unwrap_or_else(|e| panic!("[{}] does not parse: {e:?}", v.name));
        assert_eq!(&describe(&msg), fields, "[{}] parsed fields", v.name);
        assert_eq!(msg.buffer_len(), v.bytes.len(), "[{}] buffer_len", v.name);
        let mut out = vec![0u8; v.bytes.len()];
        assert_eq!(msg.emit(&mut out), Ok(v.bytes.len()), "[{}] emit", v.name);
        assert_eq!(out, v.bytes, "[{}] re-emitted bytes", v.name);
    }
}

#[test]
fn invalid_vectors_fail_with_the_named_error() {
    for v in vectors() {
        let Some(expected) = &v.expect_error else {
            continue;
        };
        match Message::parse(&v.bytes) {
            Ok(msg) => panic!("[{}] parsed as {msg:?}, expected {expected}", v.name),
            Err(e) => assert_eq!(&error_name(&e), expected, "[{}]", v.name),
        }
    }
}

/// Return the parsed valid messages with their names.
fn parsed(vectors: &[Vector]) -> Vec<(&str, Message<'_>)> {
    vectors
        .iter()
        .filter(|v| v.fields.is_some())
        .map(|v| (v.name.as_str(), Message::parse(&v.bytes).unwrap()))
        .collect()
}

#[test]
fn the_file_covers_every_message_type_and_the_edge_cases() {
    let vectors = vectors();
    let msgs = parsed(&vectors);
    let has = |what: &str, pred: &dyn Fn(&Message) -> bool| {
        assert!(msgs.iter().any(|(_, m)| pred(m)), "no vector with {what}");
    };

    let types: BTreeSet<String> = msgs
        .iter()
        .map(|(_, m)| describe(m)["type"].clone())
        .collect();
    let all = [
        "contribution",
        "result",
        "join",
        "join_reply",
        "probe",
        "probe_reply",
        "abort",
        "status",
        "status_reply",
        "leave",
        "cookie",
        "unknown",
    ];
    assert_eq!(types, all.iter().map(|t| t.to_string()).collect());

    let data = |kind: DataKind, count: u16| {
        move |m: &Message| match m {
            Message::Data(r, _) => r.kind == kind && r.count == count,
            _ => false,
        }
    };
    has("a k = 64 Contribution", &data(DataKind::Contribution, 64));
    has("a k = 256 Contribution", &data(DataKind::Contribution, 256));
    has("a k = 64 Result", &data(DataKind::Result, 64));
    has("a k = 256 Result", &data(DataKind::Result, 256));
    has("a priming Contribution", &data(DataKind::Contribution, 0));
    has("i32::MIN and i32::MAX values", &|m| {
        let values = describe(m).get("values").cloned().unwrap_or_default();
        let values: Vec<&str> = values.split(',').collect();
        values.contains(&"-2147483648") && values.contains(&"2147483647")
    });
    has("a multicast Result with OVERFLOW", &|m| match m {
        Message::Data(r, _) => {
            r.kind == DataKind::Result && r.rank == RANK_ALL && r.flags.contains(Flags::OVERFLOW)
        }
        _ => false,
    });
    has(
        "a JoinReply with COMPLETE and a 2-byte bitmap",
        &|m| match m {
            Message::JoinReply(r) => r.flags.contains(JoinFlags::COMPLETE) && r.joined.len() == 2,
            _ => false,
        },
    );

    let reasons: BTreeSet<String> = msgs
        .iter()
        .filter_map(|(_, m)| match m {
            Message::Abort(r) => Some(reason_name(r.reason)),
            _ => None,
        })
        .collect();
    for b in 1..=12u8 {
        let name = reason_name(AbortReason::from(b));
        assert!(reasons.contains(&name), "no Abort with reason {name}");
    }
    has(
        "a Join with every bit of nonce and cookie set",
        &|m| matches!(m, Message::Join(r) if r.nonce == u32::MAX && r.cookie == u64::MAX),
    );
    has(
        "a Join whose tag verifies under its key",
        &|m| matches!(m, Message::Join(r) if r.verify(0x0123_4567_89AB_CDEF) && r.cookie != 0),
    );
    has(
        "a Status whose tag verifies under its key",
        &|m| matches!(m, Message::Status(r) if r.verify(0x0123_4567_89AB_CDEF)),
    );
    has("a Result that echoes a session", &|m| match m {
        Message::Data(r, _) => r.kind == DataKind::Result && r.session != 0,
        _ => false,
    });
    has(
        "an Abort with an unknown reason",
        &|m| matches!(m, Message::Abort(r) if matches!(r.reason, AbortReason::Unknown(_))),
    );

    let errors: Vec<&str> = vectors
        .iter()
        .filter_map(|v| v.expect_error.as_deref())
        .collect();
    assert!(errors.len() >= 8, "only {} invalid vectors", errors.len());
    for kind in [
        "truncated",
        "trailing",
        "version",
        "field ver",
        "field bitmap_len",
        "field nonce",
        "reserved",
    ] {
        assert!(errors.contains(&kind), "no invalid vector for {kind}");
    }
}

#[test]
fn names_and_meanings_are_filled_in() {
    for v in vectors() {
        assert!(!v.meaning.is_empty(), "[{}] has no meaning", v.name);
    }
}
