//! The check `fuzz/fuzz_targets/p4app.rs` runs (it includes this file), and seeds for it
//! that `cargo test` runs: any bytes into the dialect's parser and switch.
//!
//! The input is a session size and a sequence of packets, each a sender rank and bytes —
//! mostly a well-formed header over a few slots with the values made from the input, now
//! and then raw bytes. The invariants:
//! - the parser never panics, and what it accepts re-emits to the same bytes;
//! - the switch never panics, and its counters add up to the packets it took;
//! - a reply names the request's slot, set and size, and a unicast goes to its sender;
//! - a (slot, set) completes exactly when the original program's countdown says (a new
//!   contribution to an idle counter sets it to `workers − 1`, any other decrements it; the
//!   one that takes it from 1 to 0 is the last; a retransmission never counts): with
//!   conforming senders, after `workers` new contributions. A sender that skips ahead to a
//!   use of the other set clears its bit here and can make a use complete with fewer — the
//!   original does the same (protocol.md §8), and the fuzzer found it;
//! - a completion's values are the wrapping sum of the new contributions since the set's
//!   bitmap was last empty (a new use overwrites).

use switchml_core::p4app::packet::HEADER_LEN;
use switchml_core::p4app::{
    P4appPacket, P4appRepr, P4appSize, P4appSlot, P4appSwitch, P4appVerdict,
};

const SLOTS: usize = 4;

/// Read the next byte, 0 past the end.
fn take(data: &mut &[u8]) -> u8 {
    let (b, rest) = data.split_first().map_or((0, &[][..]), |(b, r)| (*b, r));
    *data = rest;
    b
}

/// The check: see the file's doc.
pub fn check_p4app(mut data: &[u8]) {
    let workers = u16::from(take(&mut data) % 70);
    let mut slots = vec![P4appSlot::<3, 64>::EMPTY; SLOTS];
    let mut sw = P4appSwitch::new(&mut slots);
    let accepted = sw.reset(workers).is_ok();
    assert_eq!(accepted, workers <= 96);
    // Per (slot, set): new contributions since the last completion, their sum, completions.
    let mut fresh = [[(0u64, 0i32); 2]; SLOTS + 1];
    // Per (slot, set): the original's countdown (0: idle).
    let mut countdown = [[0u16; 2]; SLOTS + 1];
    let mut seen = [[[false; 96]; 2]; SLOTS + 1];
    let mut taken = 0u64;
    let mut out = vec![0u8; HEADER_LEN + 1024];
    while !data.is_empty() {
        let rank = u16::from(take(&mut data)) % 100;
        let mode = take(&mut data);
        let bytes = if mode < 16 {
            // Raw bytes, up to a full frame.
            let n = (usize::from(take(&mut data)) * 5).min(data.len());
            let (b, rest) = data.split_at(n);
            data = rest;
            b.to_vec()
        } else {
            let slot = u16::from(mode % 5);
            let repr = P4appRepr {
                msg_type: 1,
                unused_bit: false,
                size: P4appSize::Elements64,
                job: 0,
                tsi: u32::from(take(&mut data)),
                set: mode & 0x80 != 0,
                slot,
                e0: take(&mut data) as i8,
                e1: 0,
            };
            let mut b = vec![0u8; repr.buffer_len()];
            let mut p = P4appPacket::new_unchecked(&mut b[..]);
            repr.emit(&mut p);
            let v = i32::from_le_bytes([take(&mut data), take(&mut data), 0, 0]) << 15;
            p.values_mut().iter_mut().for_each(|x| x.set(v));
            b
        };
        check_roundtrip(&bytes);
        let request = P4appRepr::parse(&P4appPacket::new_unchecked(&bytes[..])).ok();
        let verdict = sw.process(rank, &bytes, &mut out);
        taken += 1;
        let reply = match verdict {
            P4appVerdict::Multicast { len } | P4appVerdict::Unicast { len, .. } => {
                Some(P4appRepr::parse(&P4appPacket::new_checked(&out[..len]).unwrap()).unwrap())
            }
            _ => None,
        };
        if let P4appVerdict::Unicast { rank: to, .. } = verdict {
            assert_eq!(to, rank);
        }
        let Some(req) = request else {
            assert!(reply.is_none(), "a reply to bytes that do not parse");
            continue;
        };
        if let Some(reply) = reply {
            assert_eq!(
                (reply.slot, reply.set, reply.size),
                (req.slot, req.set, req.size)
            );
            assert_eq!((reply.tsi, reply.job), (req.tsi, req.job));
        }
        // Track new contributions of well-formed 64-value packets in range.
        let (s, x, r) = (
            usize::from(req.slot),
            usize::from(req.set),
            usize::from(rank),
        );
        // (Raw bytes can parse as a 256-value packet, which these 64-value slots drop.)
        if s >= SLOTS || rank >= workers || !accepted || req.size != P4appSize::Elements64 {
            continue;
        }
        let value = P4appPacket::new_unchecked(&bytes[..]).values()[0].get();
        let mut last = false;
        if !seen[s][x][r] {
            let c = &mut countdown[s][x];
            if *c == 0 {
                *c = workers.saturating_sub(1);
                last = workers == 1;
            } else {
                *c -= 1;
                last = *c == 0;
            }
            let fresh_use = seen[s][x].iter().all(|b| !b);
            seen[s][x][r] = true;
            seen[s][1 - x][r] = false;
            let f = &mut fresh[s][x];
            *f = if fresh_use {
                (1, value)
            } else {
                (f.0 + 1, f.1.wrapping_add(value))
            };
        }
        assert_eq!(
            matches!(verdict, P4appVerdict::Multicast { .. }),
            last,
            "a completion the countdown does not make, or none where it does"
        );
        if let P4appVerdict::Multicast { len } = verdict {
            let f = fresh[s][x];
            let sum = P4appPacket::new_unchecked(&out[..len]).values()[0].get();
            assert_eq!(sum, f.1);
            fresh[s][x].0 = 0;
        }
    }
    let c = sw.counters();
    let total = c.consumed
        + c.multicast
        + c.unicast
        + c.malformed
        + c.size
        + c.too_large
        + c.unknown_rank
        + c.slot
        + c.incomplete
        + c.buffer_too_small;
    assert_eq!(total, taken);
}

/// Parsing never panics, and what parses re-emits to the same bytes.
fn check_roundtrip(bytes: &[u8]) {
    let Ok(r) = P4appRepr::parse(&P4appPacket::new_unchecked(bytes)) else {
        return;
    };
    let mut out = bytes.to_vec();
    out[..HEADER_LEN].fill(0);
    r.emit(&mut P4appPacket::new_unchecked(&mut out[..]));
    assert_eq!(out, bytes);
}

#[cfg(test)]
mod tests {
    use super::check_p4app;

    /// A deterministic stream of inputs (xorshift), so the check runs on many shapes.
    #[test]
    fn the_check_holds_on_seeded_inputs() {
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        for len in 0..400usize {
            let input: Vec<u8> = (0..len * 7)
                .map(|_| {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    (state >> 24) as u8
                })
                .collect();
            for workers in [1u8, 2, 3, 33] {
                let mut i = input.clone();
                if let Some(b) = i.first_mut() {
                    *b = workers;
                }
                check_p4app(&i);
            }
        }
    }

    /// The fuzzer's find (fuzz/regressions/p4app): a rank that skips ahead to the other set
    /// clears its bit, and the countdown completes the use with fewer contributions than
    /// ranks — as the original program does; the check once called it "completed early".
    #[test]
    fn a_rank_that_skips_ahead_completes_a_use_as_the_original_does() {
        check_p4app(include_bytes!(
            "../../fuzz/regressions/p4app/a-rank-that-skips-ahead-completes-a-use-early"
        ));
    }

    /// The fuzzer's second find: raw bytes that parse as a 256-value packet, which the
    /// 64-value slots drop (`TooLarge`); the check once counted it as a contribution.
    #[test]
    fn a_256_value_packet_to_64_value_slots_is_no_contribution() {
        check_p4app(include_bytes!(
            "../../fuzz/regressions/p4app/a-256-value-packet-is-no-contribution"
        ));
    }

    /// Two ranks complete slot 0 set 0, then rank 0 retransmits: one completion, one unicast.
    #[test]
    fn a_hand_written_sequence_passes() {
        let input = [2u8, 0, 16, 1, 5, 1, 0, 1, 16, 2, 5, 2, 0, 0, 16, 1, 5, 1, 0];
        check_p4app(&input);
    }
}
