//! The wire check: any bytes are safe to parse, and what parses is exactly what was sent.
//!
//! Invariants (protocol.md §1–3, `core/src/wire/mod.rs`'s contract):
//!
//! - [`Message::parse`] never panics, whatever the bytes;
//! - a message that parses re-emits to the very same bytes, `buffer_len()` is the number of
//!   bytes it consumed (the whole datagram: lengths are exact), and the emitted bytes parse
//!   back to an equal message — so no two datagrams mean the same thing, and a switch or a
//!   worker that forwards what it parsed forwards what it received;
//! - `emit` into a buffer one byte short fails with `BufferTooSmall` and writes nothing;
//! - the prefix accessors agree with [`wire::peek`];
//! - for every known type, the datagram one byte shorter and one byte longer do not parse
//!   (§1: "a datagram's length must equal the message's length exactly").
//!
//! Why: every receiver in the system — the switch, each worker, the P4 parser — starts here,
//! on bytes from the network.

use switchml_core::wire::{self, Error, Message, MessageType};

/// Check the wire invariants on one datagram; panic with a description if one fails.
pub fn check_wire(bytes: &[u8]) {
    let Ok(msg) = Message::parse(bytes) else {
        return;
    };
    let len = bytes.len();
    assert_eq!(msg.buffer_len(), len, "buffer_len of {msg:?}");

    let (kind, job, rank) = wire::peek(bytes).expect("a message that parses has a prefix");
    assert_eq!(
        (msg.msg_type(), msg.job(), msg.rank()),
        (kind, job, rank),
        "prefix of {msg:?}"
    );

    let mut out = vec![0xA5u8; len + 1];
    assert_eq!(msg.emit(&mut out), Ok(len), "emit {msg:?}");
    assert_eq!(&out[..len], bytes, "re-emitted bytes of {msg:?}");
    assert_eq!(out[len], 0xA5, "emit wrote past buffer_len for {msg:?}");
    assert_eq!(Message::parse(&out[..len]), Ok(msg), "reparse");

    if len > 0 {
        let mut short = vec![0x5Au8; len - 1];
        assert_eq!(msg.emit(&mut short), Err(Error::BufferTooSmall), "{msg:?}");
        assert!(
            short.iter().all(|&b| b == 0x5A),
            "a failed emit wrote bytes"
        );
    }

    if !matches!(kind, MessageType::Unknown(_)) {
        assert!(
            Message::parse(&bytes[..len - 1]).is_err(),
            "a {kind:?} one byte short parses"
        );
        out[len] = 0;
        assert_eq!(
            Message::parse(&out[..len + 1]),
            Err(Error::TrailingBytes),
            "a {kind:?} one byte long"
        );
    }
}
