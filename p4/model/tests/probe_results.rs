//! `PROBE_RESULTS` (protocol.md §3.3): the P4 programs, and so their model behind
//! `switchml switch --pipeline p4-model`, do not offer it. Their JoinReply leaves the bit
//! clear, and a Probe that sets `RESULT` anyway is malformed there.

use switchml_core::switch::{DropReason, JobConfig};
use switchml_core::wire::{
    JoinFlags, JoinPacket, JoinRepr, Message, ProbeFlags, ProbePacket, ProbeRepr,
};
use switchml_p4model::pipeline::{Pipeline, Verdict};
use switchml_p4model::OUT_LEN;

#[test]
fn the_model_does_not_offer_probe_results() {
    let job = JobConfig {
        id: 7,
        world: 1,
        slot_lo: 0,
        slot_count: 4,
        key: 5,
    };
    let mut p = Pipeline::with_rank_ports(4, &[job], 9).unwrap();
    let mut out = vec![0u8; OUT_LEN];
    let mut join = JoinRepr {
        job: 7,
        rank: 0,
        world: 1,
        slot_lo: 0,
        slot_count: 4,
        count: 4,
        lanes: 1,
        nonce: 0x1234,
        cookie: 0,
        tag: [0; 16],
    };
    let mut reply = None;
    // The controller may answer a Cookie first; the Join then goes again with it.
    for _ in 0..2 {
        let mut b = [0u8; 44];
        join.sign(5)
            .emit(&mut JoinPacket::new_unchecked(&mut b[..]));
        let (Verdict::Unicast { len, .. } | Verdict::Multicast { len, .. }) =
            p.process_datagram(&b, &mut out)
        else {
            panic!("the Join was not answered")
        };
        match Message::parse(&out[..len]) {
            Ok(Message::Cookie(c)) => join.cookie = c.cookie,
            Ok(Message::JoinReply(r)) => {
                reply = Some((r.flags, r.session));
                break;
            }
            other => panic!("{other:?}"),
        }
    }
    let (flags, session) = reply.expect("a JoinReply");
    assert!(flags.contains(JoinFlags::COMPLETE));
    assert!(!flags.contains(JoinFlags::PROBE_RESULTS), "{flags:?}");
    let probe = |flags| {
        let mut b = [0u8; 20];
        ProbeRepr {
            job: 7,
            rank: 0,
            slot: 0,
            ver: 0,
            seq: 0,
            session,
            flags,
        }
        .emit(&mut ProbePacket::new_unchecked(&mut b[..]));
        b
    };
    assert!(matches!(
        p.process_datagram(&probe(ProbeFlags::RESULT), &mut out),
        Verdict::Drop(DropReason::Malformed)
    ));
    // The same Probe without the bit is answered.
    let Verdict::Unicast { len, .. } = p.process_datagram(&probe(ProbeFlags::NONE), &mut out)
    else {
        panic!("the Probe was not answered")
    };
    assert!(matches!(
        Message::parse(&out[..len]),
        Ok(Message::ProbeReply(_))
    ));
}
