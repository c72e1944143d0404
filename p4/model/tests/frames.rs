//! The framed data plane on arbitrary input: random frames and valid frames with one byte
//! changed never panic, every frame is counted exactly once (ignored or received), and
//! every answer is a well-formed frame back out of a port of the test bed.

use proptest::prelude::*;
use switchml_p4model::headers::TRANSPORT_LEN;
use switchml_p4model::udp_sender::ipv4_checksum;
use switchml_p4model::{Verdict, FRAME_OUT_LEN};
use switchml_p4model_harness::testbed;
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

/// A child switch (protocol.md §7) on the test bed: ranks 4 and 5 of 8 at hosts 0 and 1,
/// its parent at host 3's address. The last rank's Join goes up, out of the parent's port,
/// to the parent's addresses, as the child's Join to the parent's job; once the child
/// holds the parent's session, a rank's Abort ends its run and the Abort it owes the
/// parent (`poll_up_frame`) leaves the same way.
#[test]
fn what_a_child_sends_up_leaves_for_its_parent() {
    use switchml_core::switch::{JobConfig, ParentLink};
    use switchml_core::wire::{
        AbortPacket, AbortReason, AbortRepr, CookiePacket, CookieRepr, JoinFlags, JoinPacket,
        JoinReplyPacket, JoinReplyRepr, JoinRepr,
    };
    use switchml_p4model::tier_selector::{LinkEntry, TierEntry};

    let mut p = testbed::pipeline();
    let config = JobConfig {
        id: 21,
        world: 2,
        slot_lo: 0,
        slot_count: 1,
        key: 5,
    };
    p.remove_job(7).unwrap();
    let link = ParentLink {
        world: 8,
        rank_lo: 4,
        job: 30,
        member: 2,
        members: 4,
        key: 0x77,
    };
    let parent = testbed::host(3);
    p.add_tiered_job(config, TierEntry::Child(LinkEntry { link, parent }))
        .unwrap();
    for (rank, host) in [(4, 0), (5, 1)] {
        let mut w = testbed::host(host);
        w.port = host;
        p.add_worker(21, rank, w).unwrap();
    }
    let join = |rank: u16| {
        let repr = JoinRepr {
            job: 21,
            rank,
            world: 8,
            slot_lo: 0,
            slot_count: 1,
            count: 4,
            lanes: 1,
            nonce: 100 + u32::from(rank),
            cookie: 0,
            tag: [0; 16],
        }
        .sign(5);
        let mut b = vec![0u8; repr.buffer_len()];
        repr.emit(&mut JoinPacket::new_unchecked(&mut b[..]));
        b
    };
    // The test bed's frames come from host(rank): ranks 4 and 5 are not hosts there, so
    // address them by hand from hosts 0 and 1.
    let framed_bytes = |bytes: &[u8], host: u16| {
        let (_, mut f) = testbed::frame(bytes);
        let h = testbed::host(host);
        f[6..12].copy_from_slice(&h.mac);
        f[26..30].copy_from_slice(&h.source.ip);
        f[24..26].copy_from_slice(&[0, 0]);
        let sum = ipv4_checksum(&f[14..34]);
        f[24..26].copy_from_slice(&sum.to_be_bytes());
        f[34..36].copy_from_slice(&h.source.udp_port.to_be_bytes());
        (host, f)
    };
    let framed = |rank: u16, host: u16| framed_bytes(&join(rank), host);
    for (rank, host) in [(4, 0), (5, 1)] {
        let (port, f) = framed(rank, host);
        let sent = testbed::answers(&mut p, port, &f);
        assert_eq!(sent.len(), 1, "rank {rank}");
    }
    // A Join of the complete child goes up while the parent has not answered.
    let (port, f) = framed(4, 0);
    let sent = testbed::answers(&mut p, port, &f);
    let [(to, frame)] = sent.as_slice() else {
        panic!("{sent:?}");
    };
    assert_eq!(*to, parent.port);
    assert_eq!(frame[0..6], parent.mac);
    assert_eq!(frame[30..34], parent.source.ip);
    assert_eq!(frame[36..38], parent.source.udp_port.to_be_bytes());
    assert_eq!(ipv4_checksum(&frame[14..34]), 0);
    let up = JoinRepr::parse(&JoinPacket::new_unchecked(&frame[TRANSPORT_LEN..])).unwrap();
    assert_eq!(
        (up.job, up.rank, up.world, up.verify(0x77)),
        (30, 2, 4, true)
    );
    assert_eq!(p.counters().upward, 1);

    // The parent answers it with a Cookie (protocol.md §4.2): the controller sends that
    // Join up again at once, with the cookie, signed over it.
    let cookie = CookieRepr {
        job: 30,
        rank: 2,
        nonce: up.nonce,
        cookie: 0xC0FFEE,
    };
    let mut b = vec![0u8; switchml_core::wire::cookie::LEN];
    cookie.emit(&mut CookiePacket::new_unchecked(&mut b[..]));
    let (port, f) = framed_bytes(&b, 3);
    let sent = testbed::answers(&mut p, port, &f);
    let [(to, again)] = sent.as_slice() else {
        panic!("{sent:?}");
    };
    assert_eq!(*to, parent.port);
    let again = JoinRepr::parse(&JoinPacket::new_unchecked(&again[TRANSPORT_LEN..])).unwrap();
    assert_eq!((again.nonce, again.cookie), (up.nonce, 0xC0FFEE));
    assert!(again.verify(0x77));
    // A Cookie for another nonce is nobody's: dropped.
    let stray = CookieRepr { nonce: 9, ..cookie };
    stray.emit(&mut CookiePacket::new_unchecked(&mut b[..]));
    let (port, f) = framed_bytes(&b, 3);
    assert_eq!(testbed::answers(&mut p, port, &f), Vec::new());
    assert_eq!(p.counters().upward, 2);

    // The parent answers the Join up (not COMPLETE): the child takes its session.
    let child_session = p.job(21).unwrap().session;
    let reply = JoinReplyRepr {
        job: 30,
        rank: 2,
        world: 4,
        shards: 0,
        flags: JoinFlags::default(),
        max_count: 4,
        epoch: 1,
        slot_count: 1,
        session: 0x5000_0001,
        nonce: child_session,
        lane_slots: 1,
        count: 4,
        joined: &[0b100],
    };
    let mut b = vec![0u8; reply.buffer_len()];
    reply.emit(&mut JoinReplyPacket::new_unchecked(&mut b[..]));
    let (port, f) = framed_bytes(&b, 3);
    assert_eq!(testbed::answers(&mut p, port, &f), Vec::new());
    // Rank 4 gives up: its Abort goes to the ranks, and one up.
    let abort = AbortRepr {
        job: 21,
        rank: 4,
        reason: AbortReason::WorkerFailed,
        detail: 5,
        epoch: 0,
        session: child_session,
    };
    let mut b = vec![0u8; abort.buffer_len()];
    abort.emit(&mut AbortPacket::new_unchecked(&mut b[..]));
    let (port, f) = framed_bytes(&b, 0);
    assert_eq!(
        testbed::answers(&mut p, port, &f).len(),
        2,
        "to ranks 4 and 5"
    );
    let mut out = vec![0u8; FRAME_OUT_LEN];
    let Some(Verdict::Up { job: 30, port, len }) = p.poll_up_frame(&mut out) else {
        panic!("no Abort up");
    };
    assert_eq!(port, parent.port);
    assert_eq!(out[0..6], parent.mac);
    assert_eq!(out[30..34], parent.source.ip);
    assert_eq!(ipv4_checksum(&out[14..34]), 0);
    let up = AbortRepr::parse(&AbortPacket::new_unchecked(&out[TRANSPORT_LEN..len])).unwrap();
    let owed = AbortRepr {
        job: 30,
        rank: 2,
        reason: AbortReason::WorkerFailed,
        detail: 0xFFFF,
        epoch: 0,
        session: 0x5000_0001,
    };
    assert_eq!(up, owed);
    assert_eq!(p.poll_up_frame(&mut out), None, "owed once");
    assert_eq!(p.counters().upward, 3, "two Joins up and the Abort");
}
