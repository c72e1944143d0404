//! The dialect's switch: what the original P4 program does per (slot, set), sans-IO
//! (protocol.md §8.2).
//!
//! The caller lends the registers (a slice of [`P4appSlot`]s, as many slots as it wants up
//! to 16,384), maps each frame's (source MAC, source IP) to a rank with its own table, and
//! hands the UDP payload to [`P4appSwitch::process`]. The verdict says whether the reply
//! written into the caller's buffer goes to every rank (each copy's addresses rewritten per
//! worker, the UDP destination port taken from the request's source port), back to the
//! sender only, or nowhere.
//!
//! Limits of the original lifted here, none of which its client can observe:
//! - ranks: `32 · WORDS` (the original's bitmap is one 32-bit register);
//! - slots: as many as the lent slice holds, up to the pool index's 14 bits (the original
//!   has 8,192);
//! - sizes: 64 and 256 values in one program when `N` is 256 (the original serves 256 only
//!   on a four-pipe "folded" build).

use super::packet::{P4appPacket, P4appRepr};
use crate::wire::Error;

/// The registers of one slot: a bitmap, a countdown, two exponents and the values, for each
/// of the two sets. `WORDS` 32-bit words of bitmap (ranks), `N` values (64 or 256).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct P4appSlot<const WORDS: usize, const N: usize> {
    bitmap: [[u32; WORDS]; 2],
    count: [u16; 2],
    exp: [[i8; 2]; 2],
    values: [[i32; N]; 2],
}

impl<const WORDS: usize, const N: usize> P4appSlot<WORDS, N> {
    /// A slot nobody has used.
    pub const EMPTY: Self = P4appSlot {
        bitmap: [[0; WORDS]; 2],
        count: [0; 2],
        exp: [[0; 2]; 2],
        values: [[0; N]; 2],
    };
}

impl<const WORDS: usize, const N: usize> Default for P4appSlot<WORDS, N> {
    fn default() -> Self {
        Self::EMPTY
    }
}

/// Why the switch sent nothing back for a packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum P4appDrop {
    /// Too short, a wrong length for its size, or the reserved pool index bit set.
    Malformed,
    /// A size code the program does not serve (0, 2, 4–7).
    Size,
    /// More values than the lent slots hold (256 into 64-value slots).
    TooLarge,
    /// The rank is not below the session's worker count (or no session is set up).
    UnknownRank,
    /// The slot is beyond the lent storage.
    Slot,
    /// A retransmission into a set that is not complete yet: the result does not exist.
    Incomplete,
    /// The caller's reply buffer is shorter than the packet.
    BufferTooSmall,
}

/// What to do with the reply [`P4appSwitch::process`] wrote.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum P4appVerdict {
    /// The set is complete: send the first `len` bytes of the buffer to every rank.
    Multicast {
        /// Reply length.
        len: usize,
    },
    /// A retransmission into a complete set: send the stored result to `rank` only.
    Unicast {
        /// The sender.
        rank: u16,
        /// Reply length.
        len: usize,
    },
    /// A new contribution that did not complete its set: nothing to send.
    Consumed,
    /// Nothing to send, for this reason.
    Drop(P4appDrop),
}

/// What the switch has seen since it was made, by outcome.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct P4appCounters {
    /// Contributions consumed without a reply.
    pub consumed: u64,
    /// Sets completed (one multicast each).
    pub multicast: u64,
    /// Stored results sent back to a retransmitter.
    pub unicast: u64,
    /// Drops: [`P4appDrop::Malformed`].
    pub malformed: u64,
    /// Drops: [`P4appDrop::Size`].
    pub size: u64,
    /// Drops: [`P4appDrop::TooLarge`].
    pub too_large: u64,
    /// Drops: [`P4appDrop::UnknownRank`].
    pub unknown_rank: u64,
    /// Drops: [`P4appDrop::Slot`].
    pub slot: u64,
    /// Drops: [`P4appDrop::Incomplete`].
    pub incomplete: u64,
    /// Drops: [`P4appDrop::BufferTooSmall`].
    pub buffer_too_small: u64,
}

impl P4appCounters {
    fn count_drop(&mut self, why: P4appDrop) {
        let c = match why {
            P4appDrop::Malformed => &mut self.malformed,
            P4appDrop::Size => &mut self.size,
            P4appDrop::TooLarge => &mut self.too_large,
            P4appDrop::UnknownRank => &mut self.unknown_rank,
            P4appDrop::Slot => &mut self.slot,
            P4appDrop::Incomplete => &mut self.incomplete,
            P4appDrop::BufferTooSmall => &mut self.buffer_too_small,
        };
        *c += 1;
    }
}

/// A session that [`P4appSwitch::reset`] refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct TooManyWorkers {
    /// The most workers the bitmaps hold (`32 · WORDS`).
    pub capacity: usize,
}

/// The dialect's switch over lent slots (see the module doc).
#[derive(Debug)]
pub struct P4appSwitch<'s, const WORDS: usize, const N: usize> {
    slots: &'s mut [P4appSlot<WORDS, N>],
    workers: u16,
    counters: P4appCounters,
}

impl<'s, const WORDS: usize, const N: usize> P4appSwitch<'s, WORDS, N> {
    /// Make a switch over `slots`, with no session: every packet is dropped until
    /// [`reset`](Self::reset).
    pub fn new(slots: &'s mut [P4appSlot<WORDS, N>]) -> Self {
        P4appSwitch {
            slots,
            workers: 0,
            counters: P4appCounters::default(),
        }
    }

    /// Set up a session of `workers` ranks and clear every slot, as the original does when
    /// rank 0 calls `UdpSession`.
    pub fn reset(&mut self, workers: u16) -> Result<(), TooManyWorkers> {
        let capacity = 32 * WORDS;
        if usize::from(workers) > capacity {
            return Err(TooManyWorkers { capacity });
        }
        self.workers = workers;
        self.slots.fill(P4appSlot::EMPTY);
        Ok(())
    }

    /// Return the session's worker count (0 before the first reset).
    pub fn workers(&self) -> u16 {
        self.workers
    }

    /// Return the counters.
    pub fn counters(&self) -> P4appCounters {
        self.counters
    }

    /// Take one packet from `rank` (the UDP payload) and write the reply, if any, into
    /// `out`. Never panics.
    pub fn process(&mut self, rank: u16, bytes: &[u8], out: &mut [u8]) -> P4appVerdict {
        let verdict = self.process_inner(rank, bytes, out);
        match verdict {
            P4appVerdict::Multicast { .. } => self.counters.multicast += 1,
            P4appVerdict::Unicast { .. } => self.counters.unicast += 1,
            P4appVerdict::Consumed => self.counters.consumed += 1,
            P4appVerdict::Drop(why) => self.counters.count_drop(why),
        }
        verdict
    }

    fn process_inner(&mut self, rank: u16, bytes: &[u8], out: &mut [u8]) -> P4appVerdict {
        let repr = match P4appRepr::parse(&P4appPacket::new_unchecked(bytes)) {
            Ok(r) => r,
            Err(Error::Field("size")) => return P4appVerdict::Drop(P4appDrop::Size),
            Err(_) => return P4appVerdict::Drop(P4appDrop::Malformed),
        };
        let n = repr.size.elements();
        if n > N {
            return P4appVerdict::Drop(P4appDrop::TooLarge);
        }
        if rank >= self.workers {
            return P4appVerdict::Drop(P4appDrop::UnknownRank);
        }
        let len = repr.buffer_len();
        if out.len() < len {
            return P4appVerdict::Drop(P4appDrop::BufferTooSmall);
        }
        let Some(slot) = self.slots.get_mut(usize::from(repr.slot)) else {
            return P4appVerdict::Drop(P4appDrop::Slot);
        };
        let x = usize::from(repr.set);
        let (word, bit) = (usize::from(rank) / 32, 1u32 << (rank % 32));

        // bitmap: before = bitmap[x]; bitmap[x] |= me; bitmap[1 − x] &= ~me. Clearing the
        // other set is what lets the next use of that set start afresh: this packet proves
        // its sender holds the other set's result.
        let before = slot.bitmap[x];
        slot.bitmap[x][word] |= bit;
        slot.bitmap[1 - x][word] &= !bit;
        let retransmission = before[word] & bit != 0;

        let verdict = if retransmission {
            // Only a complete set (countdown back at 0) has a result to give again.
            if slot.count[x] != 0 {
                return P4appVerdict::Drop(P4appDrop::Incomplete);
            }
            P4appVerdict::Unicast { rank, len }
        } else {
            let values = P4appPacket::new_unchecked(bytes);
            let values = values.values();
            let first = before.iter().all(|w| *w == 0);
            let (exp, sum) = (&mut slot.exp[x], &mut slot.values[x]);
            if first {
                *exp = [repr.e0, repr.e1];
                for (s, v) in sum.iter_mut().zip(values) {
                    *s = v.get();
                }
            } else {
                *exp = [exp[0].max(repr.e0), exp[1].max(repr.e1)];
                for (s, v) in sum.iter_mut().zip(values) {
                    *s = s.wrapping_add(v.get());
                }
            }
            // The countdown: 0 → workers − 1, else − 1; the packet that takes it from 1 to
            // 0 is the last. With one worker it stays 0 and every new packet is last.
            let last = match slot.count[x] {
                0 => {
                    slot.count[x] = self.workers - 1;
                    self.workers == 1
                }
                c => {
                    slot.count[x] = c - 1;
                    c == 1
                }
            };
            if !last {
                return P4appVerdict::Consumed;
            }
            P4appVerdict::Multicast { len }
        };
        let reply = P4appRepr {
            e0: slot.exp[x][0],
            e1: slot.exp[x][1],
            ..repr
        };
        let mut p = P4appPacket::new_unchecked(&mut out[..len]);
        reply.emit(&mut p);
        for (o, s) in p.values_mut().iter_mut().zip(&slot.values[x]) {
            o.set(*s);
        }
        verdict
    }
}

#[cfg(test)]
#[path = "switch_tests.rs"]
mod tests;
