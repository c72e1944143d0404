//! The worker packet by packet, and against [`P4appSwitch`].

use super::*;
use crate::p4app::packet::HEADER_LEN;
use crate::p4app::switch::{P4appSlot, P4appSwitch, P4appVerdict};

extern crate std;
use std::vec;
use std::vec::Vec;

const LEN: usize = HEADER_LEN + 256;
const T0: Instant = Instant::from_millis(1);

fn header(b: &[u8]) -> P4appRepr {
    P4appRepr::parse(&P4appPacket::new_checked(b).unwrap()).unwrap()
}

/// Everything `w` sends now.
fn drain<const M: usize>(w: &mut P4appWorker<'_, M>, now: Instant) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let mut buf = [0u8; LEN];
    while let Some(len) = w.poll_transmit(now, &mut buf) {
        out.push(buf[..len].to_vec());
    }
    out
}

/// Run every worker's current job through a lossless switch; return the packets per worker.
fn run_lossless<const M: usize>(ws: &mut [P4appWorker<'_, M>]) -> Vec<Vec<P4appRepr>> {
    let mut slots = vec![P4appSlot::<1, 64>::EMPTY; 64];
    let mut sw = P4appSwitch::new(&mut slots);
    sw.reset(ws.len() as u16).unwrap();
    let mut sent = vec![Vec::new(); ws.len()];
    let mut out = [0u8; LEN];
    for _ in 0..10_000 {
        let mut any = false;
        for r in 0..ws.len() {
            for p in drain(&mut ws[r], T0) {
                any = true;
                sent[r].push(header(&p));
                match sw.process(r as u16, &p, &mut out) {
                    P4appVerdict::Multicast { len } => {
                        ws.iter_mut().for_each(|w| w.handle_packet(T0, &out[..len]))
                    }
                    P4appVerdict::Unicast { rank, len } => {
                        ws[usize::from(rank)].handle_packet(T0, &out[..len])
                    }
                    _ => {}
                }
            }
        }
        if !any {
            break;
        }
    }
    sent
}

#[test]
fn packets_map_to_slots_and_sets_across_jobs() {
    let mut config = P4appConfig::new(1);
    config.thread = 1;
    let mut w = P4appWorker::<4>::new(config).unwrap();
    let mut t = vec![7i32; 6 * 64];
    w.submit(P4appTensor::I32(&mut t)).unwrap();
    let sent = run_lossless(core::slice::from_mut(&mut w));
    let map: Vec<_> = sent[0].iter().map(|r| (r.tsi, r.slot, r.set)).collect();
    // Thread 1 owns slots 8..12; i = k mod 8.
    assert_eq!(
        map,
        [
            (0, 8, false),
            (1, 9, false),
            (2, 10, false),
            (3, 11, false),
            (4, 8, true),
            (5, 9, true)
        ]
    );
    assert_eq!(w.poll_event(), Some(P4appEvent::Done { job: 0 }));
    assert_eq!(w.shift(), 6);
    let mut t = vec![1i32; 3 * 64];
    w.submit(P4appTensor::I32(&mut t)).unwrap();
    let sent = run_lossless(core::slice::from_mut(&mut w));
    let map: Vec<_> = sent[0]
        .iter()
        .map(|r| (r.job, r.tsi, r.slot, r.set))
        .collect();
    // The shift carries on: the next uses are i = 6, 7, 0, which alternate sets per slot.
    assert_eq!(map, [(1, 0, 10, true), (1, 1, 11, true), (1, 2, 8, false)]);
    assert_eq!(w.poll_event(), Some(P4appEvent::Done { job: 1 }));
}

#[test]
fn at_most_the_window_is_in_flight_and_each_reply_frees_one() {
    let mut w = P4appWorker::<4>::new(P4appConfig::new(1)).unwrap();
    let mut t = vec![3i32; 10 * 64];
    w.submit(P4appTensor::I32(&mut t)).unwrap();
    let first = drain(&mut w, T0);
    assert_eq!(first.len(), 4);
    let mut slots = [P4appSlot::<1, 64>::EMPTY; 4];
    let mut sw = P4appSwitch::new(&mut slots);
    sw.reset(1).unwrap();
    let mut out = [0u8; LEN];
    // The reply to packet 2 frees nothing: packet 4 waits for packet 0's reply (same slot).
    assert!(matches!(
        sw.process(0, &first[2], &mut out),
        P4appVerdict::Multicast { .. }
    ));
    w.handle_packet(T0, &out);
    assert!(drain(&mut w, T0).is_empty());
    assert!(matches!(
        sw.process(0, &first[0], &mut out),
        P4appVerdict::Multicast { .. }
    ));
    w.handle_packet(T0, &out);
    // A duplicate reply is ignored.
    w.handle_packet(T0, &out);
    let next = drain(&mut w, T0);
    assert_eq!(next.len(), 1);
    assert_eq!(header(&next[0]).tsi, 4);
}

#[test]
fn int32_sums_are_exact_and_wrap_like_the_switch() {
    let mut a: Vec<i32> = (0..1000).collect();
    let mut b: Vec<i32> = (0..1000).map(|i| i32::MAX - i).collect();
    let mut ws = [
        P4appWorker::<8>::new(P4appConfig::new(2)).unwrap(),
        P4appWorker::<8>::new(P4appConfig::new(2)).unwrap(),
    ];
    ws[0].submit(P4appTensor::I32(&mut a)).unwrap();
    ws[1].submit(P4appTensor::I32(&mut b)).unwrap();
    run_lossless(&mut ws);
    assert_eq!(ws[0].poll_event(), Some(P4appEvent::Done { job: 0 }));
    assert_eq!(ws[1].poll_event(), Some(P4appEvent::Done { job: 0 }));
    assert!(a.iter().all(|&x| x == i32::MAX));
    assert_eq!(a, b);
}

#[test]
fn float32_is_pipelined_one_window_ahead_and_sums_within_the_bound() {
    let n = 64 * 12 + 5;
    let mut a: Vec<f32> = (0..n).map(|i| (i as f32 * 0.37).sin() * 8.0).collect();
    let mut b: Vec<f32> = (0..n).map(|i| (i as f32 * 0.11).cos() / 4.0).collect();
    let exact: Vec<f64> = a
        .iter()
        .zip(&b)
        .map(|(x, y)| f64::from(*x) + f64::from(*y))
        .collect();
    let mut ws = [
        P4appWorker::<8>::new(P4appConfig::new(2)).unwrap(),
        P4appWorker::<8>::new(P4appConfig::new(2)).unwrap(),
    ];
    ws[0].submit(P4appTensor::F32(&mut a)).unwrap();
    ws[1].submit(P4appTensor::F32(&mut b)).unwrap();
    let sent = run_lossless(&mut ws);
    // 13 blocks, a window of 8: 21 packets; the first 8 carry exponents only.
    assert_eq!(sent[0].len(), 21);
    assert_eq!(sent[0][0].e0, 3); // max |x| of block 0 is in [4, 8)
    assert_eq!(sent[0][13].e0, -126); // data only
    assert_eq!(ws[0].poll_event(), Some(P4appEvent::Done { job: 0 }));
    for (i, ((x, y), e)) in a.iter().zip(&b).zip(&exact).enumerate() {
        assert_eq!(x, y);
        // Rounding costs each worker at most half a unit of 2 · 2^emax / INT32_MAX
        // (emax ≤ 3), and the result is rounded to f32 (half an ulp, 2⁻²⁴ relative).
        let bound = 2.0 * 16.0 / 2_147_483_647.0 + e.abs() / 16_777_216.0;
        assert!((f64::from(*x) - e).abs() <= bound, "{i} {x} {e}");
    }
}

#[test]
fn exponent_only_packets_carry_zeros_and_data_follows_with_the_reply_scale() {
    let mut t = vec![1.5f32; 64];
    let mut w = P4appWorker::<8>::new(P4appConfig::new(1)).unwrap();
    w.submit(P4appTensor::F32(&mut t)).unwrap();
    let p = drain(&mut w, T0);
    assert_eq!(p.len(), 1);
    let v = P4appPacket::new_checked(&p[0][..]).unwrap();
    assert_eq!(v.e0(), 1);
    assert!(v.values().iter().all(|x| x.get() == 0));
    let mut reply = p[0].clone();
    P4appPacket::new_unchecked(&mut reply[..]).set_e0(2);
    w.handle_packet(T0, &reply);
    let p = drain(&mut w, T0);
    let v = P4appPacket::new_checked(&p[0][..]).unwrap();
    assert_eq!(v.tsi(), 1);
    // Scaled by the reply's exponent 2, not the block's own 1.
    assert_eq!(
        v.values()[0].get(),
        P4appScale::new(1, 2).quantize_value(1.5)
    );
}

#[test]
fn a_lost_packet_is_resent_after_the_first_batch_wait_and_the_timeout_doubles() {
    let mut config = P4appConfig::new(1);
    config.timeout_threshold = 2;
    let mut w = P4appWorker::<2>::new(config).unwrap();
    let mut t = vec![5i32; 4 * 64];
    w.submit(P4appTensor::I32(&mut t)).unwrap();
    let first = drain(&mut w, T0);
    assert_eq!(first.len(), 2);
    // The first batch waits timeout × M = 20 ms.
    assert_eq!(w.poll_timeout(), Some(T0 + Duration::from_millis(20)));
    w.handle_timeout(T0 + Duration::from_millis(19));
    assert!(drain(&mut w, T0 + Duration::from_millis(19)).is_empty());
    let t1 = T0 + Duration::from_millis(20);
    w.handle_timeout(t1);
    assert_eq!(drain(&mut w, t1), first);
    // Two timeouts reached the threshold: now 20 ms each.
    assert_eq!(w.poll_timeout(), Some(t1 + Duration::from_millis(20)));
}

#[test]
fn replies_of_another_job_or_unsent_packets_are_ignored() {
    let mut w = P4appWorker::<2>::new(P4appConfig::new(1)).unwrap();
    let mut t = vec![5i32; 4 * 64];
    w.submit(P4appTensor::I32(&mut t)).unwrap();
    let first = drain(&mut w, T0);
    let mut other = first[0].clone();
    P4appPacket::new_unchecked(&mut other[..]).set_job(9);
    w.handle_packet(T0, &other);
    let mut unsent = first[0].clone();
    P4appPacket::new_unchecked(&mut unsent[..]).set_tsi(3);
    w.handle_packet(T0, &unsent);
    w.handle_packet(T0, &first[0][..20]);
    assert!(drain(&mut w, T0).is_empty());
    assert_eq!(
        w.submit(P4appTensor::I32(&mut [])),
        Err(P4appSubmitError::Busy)
    );
}

#[test]
fn unscalable_floats_and_bad_configs_are_refused() {
    let mut w = P4appWorker::<2>::new(P4appConfig::new(1)).unwrap();
    let mut t = vec![0.0f32; 200];
    t[130] = f32::INFINITY;
    assert_eq!(
        w.submit(P4appTensor::F32(&mut t)),
        Err(P4appSubmitError::Unscalable { block: 2 })
    );
    assert_eq!(
        P4appWorker::<0>::new(P4appConfig::new(1)).err(),
        Some(P4appConfigError::Slots)
    );
    let mut c = P4appConfig::new(1);
    c.thread = 4096;
    assert_eq!(
        P4appWorker::<2>::new(c).err(),
        Some(P4appConfigError::Slots)
    );
    assert_eq!(
        P4appWorker::<2>::new(P4appConfig::new(0)).err(),
        Some(P4appConfigError::Workers)
    );
    let mut empty: [i32; 0] = [];
    assert_eq!(w.submit(P4appTensor::I32(&mut empty)), Ok(0));
    assert_eq!(w.poll_event(), Some(P4appEvent::Done { job: 0 }));
}
