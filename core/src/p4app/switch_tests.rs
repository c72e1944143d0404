//! Scenarios, each a few packets:
//!
//! ```text
//!  rank 0 ─┐
//!  rank 1 ─┼─ P4appSwitch (4 slots × 64 values, 64 ranks) ─ verdict + reply bytes
//!  rank 2 ─┘
//! ```

use super::*;
use crate::p4app::packet::{P4appSize, HEADER_LEN};

extern crate std;
use std::vec;
use std::vec::Vec;

type Switch<'s> = P4appSwitch<'s, 2, 64>;
const LEN: usize = HEADER_LEN + 256;

fn packet(slot: u16, set: bool, tsi: u32, e0: i8, value: i32) -> Vec<u8> {
    let repr = P4appRepr {
        msg_type: 1,
        unused_bit: false,
        size: P4appSize::Elements64,
        job: 3,
        tsi,
        set,
        slot,
        e0,
        e1: 0,
    };
    let mut b = vec![0u8; repr.buffer_len()];
    let mut p = P4appPacket::new_unchecked(&mut b[..]);
    repr.emit(&mut p);
    for (i, v) in p.values_mut().iter_mut().enumerate() {
        v.set(value.wrapping_add(i as i32));
    }
    b
}

fn reply(out: &[u8]) -> (P4appRepr, i32) {
    let p = P4appPacket::new_checked(out).unwrap();
    (P4appRepr::parse(&p).unwrap(), p.values()[0].get())
}

#[test]
fn three_workers_complete_a_set_and_the_last_one_multicasts() {
    let mut slots = [P4appSlot::EMPTY; 4];
    let mut sw = Switch::new(&mut slots);
    sw.reset(3).unwrap();
    let mut out = [0u8; LEN];
    assert_eq!(
        sw.process(0, &packet(2, false, 10, 5, 100), &mut out),
        P4appVerdict::Consumed
    );
    assert_eq!(
        sw.process(1, &packet(2, false, 11, 9, i32::MAX), &mut out),
        P4appVerdict::Consumed
    );
    assert_eq!(
        sw.process(2, &packet(2, false, 12, -3, 1), &mut out),
        P4appVerdict::Multicast { len: LEN }
    );
    let (r, v0) = reply(&out);
    // tsi and job from the completing packet, max exponent, wrapping sum.
    assert_eq!((r.tsi, r.job, r.slot, r.set, r.e0), (12, 3, 2, false, 9));
    assert_eq!(v0, 101i32.wrapping_add(i32::MAX));
    assert_eq!(sw.counters().multicast, 1);
    assert_eq!(sw.counters().consumed, 2);
}

#[test]
fn retransmissions_only_read_and_are_answered_by_unicast_once_complete() {
    let mut slots = [P4appSlot::EMPTY; 4];
    let mut sw = Switch::new(&mut slots);
    sw.reset(2).unwrap();
    let mut out = [0u8; LEN];
    sw.process(0, &packet(1, true, 7, 1, 5), &mut out);
    // Into the incomplete set: dropped, and not counted twice.
    assert_eq!(
        sw.process(0, &packet(1, true, 7, 1, 5), &mut out),
        P4appVerdict::Drop(P4appDrop::Incomplete)
    );
    assert_eq!(
        sw.process(1, &packet(1, true, 8, 2, 6), &mut out),
        P4appVerdict::Multicast { len: LEN }
    );
    assert_eq!(reply(&out).1, 11);
    out.fill(0);
    assert_eq!(
        sw.process(0, &packet(1, true, 70, 1, 5), &mut out),
        P4appVerdict::Unicast { rank: 0, len: LEN }
    );
    let (r, v0) = reply(&out);
    assert_eq!((r.tsi, r.e0, v0), (70, 2, 11));
    assert_eq!(sw.counters().incomplete, 1);
    assert_eq!(sw.counters().unicast, 1);
}

#[test]
fn the_next_use_of_a_set_overwrites_once_every_worker_moved_on() {
    let mut slots = [P4appSlot::EMPTY; 4];
    let mut sw = Switch::new(&mut slots);
    sw.reset(2).unwrap();
    let mut out = [0u8; LEN];
    for (set, base) in [(false, 10), (true, 20), (false, 30)] {
        sw.process(0, &packet(0, set, 0, 0, base), &mut out);
        assert_eq!(
            sw.process(1, &packet(0, set, 0, 0, base), &mut out),
            P4appVerdict::Multicast { len: LEN }
        );
        assert_eq!(reply(&out).1, 2 * base, "set {set}");
    }
}

#[test]
fn one_worker_jobs_complete_on_every_new_packet() {
    let mut slots = [P4appSlot::EMPTY; 4];
    let mut sw = Switch::new(&mut slots);
    sw.reset(1).unwrap();
    let mut out = [0u8; LEN];
    for set in [false, true, false] {
        assert_eq!(
            sw.process(0, &packet(3, set, 1, 4, 9), &mut out),
            P4appVerdict::Multicast { len: LEN }
        );
    }
    assert_eq!(
        sw.process(0, &packet(3, false, 1, 4, 9), &mut out),
        P4appVerdict::Unicast { rank: 0, len: LEN }
    );
}

#[test]
fn ranks_beyond_32_use_the_wider_bitmap() {
    let mut slots = [P4appSlot::EMPTY; 1];
    let mut sw = Switch::new(&mut slots);
    assert_eq!(sw.reset(65), Err(TooManyWorkers { capacity: 64 }));
    sw.reset(64).unwrap();
    let mut out = [0u8; LEN];
    for rank in 0..63 {
        assert_eq!(
            sw.process(rank, &packet(0, false, 0, 0, 1), &mut out),
            P4appVerdict::Consumed
        );
    }
    // Rank 32 shares bit 0 with rank 0 in a 32-bit map; here it is a retransmission.
    assert_eq!(
        sw.process(32, &packet(0, false, 0, 0, 1), &mut out),
        P4appVerdict::Drop(P4appDrop::Incomplete)
    );
    assert_eq!(
        sw.process(63, &packet(0, false, 0, 0, 1), &mut out),
        P4appVerdict::Multicast { len: LEN }
    );
    assert_eq!(reply(&out).1, 64);
}

#[test]
fn every_drop_reason_is_counted() {
    let mut slots = [P4appSlot::EMPTY; 4];
    let mut sw = Switch::new(&mut slots);
    let mut out = [0u8; LEN];
    let good = packet(0, false, 0, 0, 1);
    assert_eq!(
        sw.process(0, &good, &mut out),
        P4appVerdict::Drop(P4appDrop::UnknownRank)
    );
    sw.reset(2).unwrap();
    assert_eq!(
        sw.process(2, &good, &mut out),
        P4appVerdict::Drop(P4appDrop::UnknownRank)
    );
    assert_eq!(
        sw.process(0, &good[..20], &mut out),
        P4appVerdict::Drop(P4appDrop::Malformed)
    );
    let mut bad = good.clone();
    bad[0] = 0x12;
    assert_eq!(
        sw.process(0, &bad, &mut out),
        P4appVerdict::Drop(P4appDrop::Size)
    );
    let mut big = vec![0u8; HEADER_LEN + 1024];
    big[0] = 0x13;
    assert_eq!(
        sw.process(0, &big, &mut out),
        P4appVerdict::Drop(P4appDrop::TooLarge)
    );
    assert_eq!(
        sw.process(0, &packet(4, false, 0, 0, 1), &mut out),
        P4appVerdict::Drop(P4appDrop::Slot)
    );
    assert_eq!(
        sw.process(0, &good, &mut out[..LEN - 1]),
        P4appVerdict::Drop(P4appDrop::BufferTooSmall)
    );
    let c = sw.counters();
    assert_eq!(
        (
            c.unknown_rank,
            c.malformed,
            c.size,
            c.too_large,
            c.slot,
            c.buffer_too_small
        ),
        (2, 1, 1, 1, 1, 1)
    );
    assert_eq!(c.consumed + c.multicast + c.unicast, 0);
}

#[test]
fn reset_clears_every_slot() {
    let mut slots = [P4appSlot::EMPTY; 2];
    let mut sw = Switch::new(&mut slots);
    sw.reset(2).unwrap();
    let mut out = [0u8; LEN];
    sw.process(0, &packet(1, false, 0, 0, 1), &mut out);
    sw.reset(2).unwrap();
    // Without the reset this would be a retransmission into an incomplete set.
    assert_eq!(
        sw.process(0, &packet(1, false, 0, 0, 1), &mut out),
        P4appVerdict::Consumed
    );
}
