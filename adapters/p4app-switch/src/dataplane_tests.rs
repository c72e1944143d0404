//! The data plane without a socket. Two workers behind one interface:
//!
//! ```text
//!  w1 02:..:01 10.77.0.1:4000 ─┐
//!                               ├── switch 02:..:fe 10.77.0.254:48864
//!  w2 02:..:02 10.77.0.2:4000 ─┘
//! ```

use super::*;
use switchml_core::p4app::{P4appPacket, P4appRepr, P4appSize};

const MAC: [u8; 6] = [2, 0, 0, 0, 0, 0xfe];
const IP: Ipv4Addr = Ipv4Addr::new(10, 77, 0, 254);

fn worker(i: u8) -> Peer {
    Peer {
        mac: [2, 0, 0, 0, 0, i],
        ip: Ipv4Addr::new(10, 77, 0, i),
    }
}

/// A request frame from `from` (port 4000) for slot 3, set 0, tsi 9, 64 values `v`.
fn request(from: Peer, v: i32) -> Vec<u8> {
    let repr = P4appRepr {
        msg_type: 1,
        unused_bit: false,
        size: P4appSize::Elements64,
        job: 0,
        tsi: 9,
        set: false,
        slot: 3,
        e0: 5,
        e1: 0,
    };
    let mut f = vec![0u8; REPLY_HEADERS_LEN + repr.buffer_len()];
    let me = Peer { mac: MAC, ip: IP };
    frame::write_reply_headers(
        &mut f,
        (from.mac, from.ip, 4000),
        (me, 48864),
        repr.buffer_len(),
    )
    .unwrap();
    f[24..26].copy_from_slice(&[0, 0]); // the client's IPv4 checksum
    let mut p = P4appPacket::new_unchecked(&mut f[REPLY_HEADERS_LEN..]);
    repr.emit(&mut p);
    for x in p.values_mut() {
        x.set(v);
    }
    f
}

fn feed(engine: &mut Engine<'_>, frame: &[u8]) -> Vec<Vec<u8>> {
    let mut sent = Vec::new();
    let mut out = [0u8; 2048];
    engine.handle(frame, frame.len(), &mut out, &mut |f| {
        sent.push(f.to_vec());
        Ok(())
    });
    sent
}

#[test]
fn the_last_packet_goes_to_every_worker_with_its_addresses_and_the_sum() {
    let mut slots = vec![Slot::EMPTY; 8];
    let mut e = Engine::new(&mut slots, MAC, IP);
    e.apply(Command::Reset { workers: 2 });
    e.apply(Command::Register {
        rank: 0,
        peer: worker(1),
    });
    e.apply(Command::Register {
        rank: 1,
        peer: worker(2),
    });
    assert!(feed(&mut e, &request(worker(1), 5)).is_empty());
    let sent = feed(&mut e, &request(worker(2), -7));
    assert_eq!(sent.len(), 2);
    for (f, to) in sent.iter().zip([worker(1), worker(2)]) {
        assert_eq!(&f[..6], &to.mac);
        assert_eq!(&f[6..12], &MAC);
        assert_eq!(&f[26..30], &IP.octets());
        assert_eq!(&f[30..34], &to.ip.octets());
        assert_eq!(&f[34..38], &[0xbe, 0xe0, 0x0f, 0xa0]); // 48864 → 4000
        let p = P4appPacket::new_checked(&f[REPLY_HEADERS_LEN..]).unwrap();
        assert!(p.values().iter().all(|v| v.get() == -2));
        assert_eq!((p.tsi(), p.slot(), p.e0()), (9, 3, 5));
    }
    // A retransmission into the complete set: the stored result, to its sender only.
    let again = feed(&mut e, &request(worker(2), -7));
    assert_eq!(again.len(), 1);
    assert_eq!(&again[0][..6], &worker(2).mac);
    let s = e.stats();
    assert_eq!(
        (s.switch.consumed, s.switch.multicast, s.switch.unicast),
        (1, 1, 1)
    );
    assert_eq!(s.frames.sent, 3);
}

#[test]
fn strangers_and_junk_are_counted_and_change_nothing() {
    let mut slots = vec![Slot::EMPTY; 8];
    let mut e = Engine::new(&mut slots, MAC, IP);
    // Before any session: nobody is known.
    assert!(feed(&mut e, &request(worker(1), 1)).is_empty());
    e.apply(Command::Reset { workers: 1 });
    e.apply(Command::Register {
        rank: 0,
        peer: worker(1),
    });
    assert!(feed(&mut e, &request(worker(9), 1)).is_empty());
    let good = request(worker(1), 1);
    let mut sizeless = good.clone();
    sizeless[REPLY_HEADERS_LEN] = 0x10;
    assert!(feed(&mut e, &sizeless).is_empty());
    assert!(feed(&mut e, &good[..100]).is_empty());
    let mut out = [0u8; 2048];
    e.handle(&good[..60], good.len(), &mut out, &mut |_| Ok(()));
    let s = e.stats();
    assert_eq!(s.frames.unknown_sender, 2);
    assert_eq!(s.switch.size, 1);
    assert_eq!(s.frames.malformed, 2);
    // The one worker's own packet is then the whole sum.
    let sent = feed(&mut e, &good);
    assert_eq!(sent.len(), 1);
    let p = P4appPacket::new_checked(&sent[0][REPLY_HEADERS_LEN..]).unwrap();
    assert!(p.values().iter().all(|v| v.get() == 1));
}

#[test]
fn any_bytes_at_all_never_panic() {
    let mut slots = vec![Slot::EMPTY; 2];
    let mut e = Engine::new(&mut slots, MAC, IP);
    e.apply(Command::Reset { workers: 1 });
    e.apply(Command::Register {
        rank: 0,
        peer: worker(1),
    });
    let good = request(worker(1), 3);
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    for len in 0..good.len() {
        let mut f = good[..len].to_vec();
        for b in f.iter_mut().skip(14) {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            if state % 16 == 0 {
                *b = state as u8;
            }
        }
        let _ = feed(&mut e, &f);
    }
    assert_eq!(e.stats().frames.received, good.len() as u64);
}
