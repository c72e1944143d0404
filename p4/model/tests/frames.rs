//! The framed data plane on arbitrary input: random frames and valid frames with one byte
//! changed never panic, every frame is counted exactly once (ignored or received), and
//! every answer is a well-formed frame back out of a port of the test bed.

use proptest::prelude::*;
use switchml_p4model::headers::TRANSPORT_LEN;
use switchml_p4model::udp_sender::ipv4_checksum;
use switchml_p4model::{testbed, Verdict, FRAME_OUT_LEN};
use switchml_tests::vectors::{load, WIRE};

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn any_frame_is_counted_once_and_answers_are_well_formed(
        raw in prop::collection::vec(any::<u8>(), 0..200),
        pick in any::<prop::sample::Index>(),
        at in any::<prop::sample::Index>(),
        byte in any::<u8>(),
        mutate in any::<bool>(),
    ) {
        let vectors = load(WIRE).unwrap();
        let (port, mut frame) = testbed::frame(&vectors[pick.index(vectors.len())].bytes);
        if mutate {
            let i = at.index(frame.len());
            frame[i] = byte;
        }
        let mut p = testbed::pipeline();
        let mut out = vec![0u8; FRAME_OUT_LEN];
        for (port, f) in [(0u16, raw.as_slice()), (port, frame.as_slice())] {
            let before = (p.ignored_frames(), p.counters().received);
            let verdict = p.process(port, f, &mut out);
            let after = (p.ignored_frames(), p.counters().received);
            prop_assert_eq!(after.0 + after.1, before.0 + before.1 + 1);
            prop_assert_eq!(p.faults(), 0);
            if let Verdict::Unicast { port: to, len, .. } = verdict {
                prop_assert_eq!(to, port);
                prop_assert!(len > TRANSPORT_LEN && len <= out.len());
                prop_assert_eq!(ipv4_checksum(&out[14..34]), 0);
                let udp_len = u16::from_be_bytes([out[38], out[39]]);
                prop_assert_eq!(usize::from(udp_len), len - TRANSPORT_LEN + 8);
            }
        }
    }
}
