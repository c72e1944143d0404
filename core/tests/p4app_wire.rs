//! Property tests for the p4app dialect's header: `parse(emit(r)) == r` for every header,
//! and whatever parses re-emits to exactly its bytes.

use proptest::collection::vec;
use proptest::prelude::*;
use switchml_core::p4app::packet::MAX_SLOT;
use switchml_core::p4app::{P4appPacket, P4appRepr, P4appSize};

fn repr() -> impl Strategy<Value = P4appRepr> {
    (
        (0u8..16, any::<bool>(), any::<bool>(), any::<u8>()),
        (any::<u32>(), any::<bool>(), 0..=MAX_SLOT),
        (any::<i8>(), any::<i8>()),
    )
        .prop_map(
            |((msg_type, unused_bit, big, job), (tsi, set, slot), (e0, e1))| P4appRepr {
                msg_type,
                unused_bit,
                size: if big {
                    P4appSize::Elements256
                } else {
                    P4appSize::Elements64
                },
                job,
                tsi,
                set,
                slot,
                e0,
                e1,
            },
        )
}

proptest! {
    #[test]
    fn parse_of_emit_is_identity(r in repr(), values in vec(any::<i32>(), 256)) {
        let mut buf = vec![0u8; r.buffer_len()];
        let mut p = P4appPacket::new_unchecked(&mut buf[..]);
        r.emit(&mut p);
        for (v, x) in p.values_mut().iter_mut().zip(&values) {
            v.set(*x);
        }
        let p = P4appPacket::new_checked(&buf[..]).unwrap();
        prop_assert_eq!(P4appRepr::parse(&p), Ok(r));
        let back: Vec<i32> = p.values().iter().map(|v| v.get()).collect();
        prop_assert_eq!(&back[..], &values[..r.size.elements()]);
    }

    #[test]
    fn whatever_parses_re_emits_to_its_bytes(
        head in vec(any::<u8>(), 10),
        tail_len in prop_oneof![Just(256usize), Just(1024), 0usize..1100],
    ) {
        let mut bytes = head;
        bytes.resize(10 + tail_len, 0x5a);
        let Ok(r) = P4appRepr::parse(&P4appPacket::new_unchecked(&bytes[..])) else {
            return Ok(());
        };
        prop_assert_eq!(r.buffer_len(), bytes.len());
        let mut out = bytes.clone();
        out[..10].fill(0);
        r.emit(&mut P4appPacket::new_unchecked(&mut out[..]));
        prop_assert_eq!(out, bytes);
    }
}
