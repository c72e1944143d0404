//! `bitmap_checker.p4`: the seen bitmaps of both versions of a slot, as the original's pair
//! register, in two registers as in `tna/bitmap_checker.p4` (a Tofino cell is at most two
//! 32-bit words): `seen_lo` (ranks 0–31) and `seen_hi` (ranks 32–63), each cell the pair
//! {version 0's word, version 1's word}. Only `seen[v]` changes: a new use resets it and a
//! counted contribution sets the rank's bit; `seen[1−v]` is left alone (protocol.md §4,
//! "Why `seen[1−v]` is not cleared").
//!
//! The countdown comes after this register and the hardware cannot go back to it. So the
//! bit is set whenever it was clear and the count matched, before the pipeline knows
//! whether the use is already complete. That is always right: a complete use counted
//! `world` distinct ranks since its reset, each of which set its bit, and nothing clears a
//! bit but the next reset. So in a complete use every rank's bit is set, the check writes
//! nothing, and the bitmap stays as the reference leaves it when it answers a completed
//! use; the bit can only be clear, and the set only happen, in an incomplete use.
//!
//! A word's action compares once (a new use?) and masks with nothing (a Tofino 1 stateful
//! ALU masks only with constants): it returns the word before the packet (0 on a new use,
//! which resets it) and ORs in the rank's bit when the count matched; whether the rank was
//! seen is tested on the returned words after the registers.

use crate::register::{Hazard, Pass, Register};

/// The bitmap checker: registers `seen_lo` and `seen_hi`, one cell (both versions) per
/// slot each.
#[derive(Debug, Clone)]
pub struct BitmapChecker {
    seen_lo: Register<[u32; 2]>,
    seen_hi: Register<[u32; 2]>,
}

fn half(ver: u8) -> usize {
    usize::from(ver & 1)
}

/// The low and high words of a 64-rank bitmap.
fn words(bits: u64) -> (u32, u32) {
    (bits as u32, (bits >> 32) as u32)
}

/// `check_v0`/`check_v1` on one word: version `v`'s word before this packet (0 on a new
/// use, which resets it), with `set_bit` ORed in.
fn check(word: &mut [u32; 2], v: usize, begin: bool, set_bit: u32) -> u32 {
    if begin {
        word[v] = set_bit;
        0
    } else {
        let before = word[v];
        word[v] |= set_bit;
        before
    }
}

impl BitmapChecker {
    /// Make the registers for `slots` slots.
    pub fn new(slots: usize) -> Self {
        BitmapChecker {
            seen_lo: Register::new("seen_lo", slots, [0; 2]),
            seen_hi: Register::new("seen_hi", slots, [0; 2]),
        }
    }

    /// Check rank `bit` in version `ver` of `slot`; set it if it was clear and the count
    /// matched. A new use clears `seen[v]` first. Return whether the bit was set (after the
    /// reset).
    pub fn apply(
        &mut self,
        pass: &Pass,
        slot: usize,
        ver: u8,
        bit: u64,
        begin: bool,
        count_ok: bool,
    ) -> Result<bool, Hazard> {
        let v = half(ver);
        let (set_lo, set_hi) = words(if count_ok { bit } else { 0 });
        let lo = self
            .seen_lo
            .execute(pass, slot, |w| check(w, v, begin, set_lo))?;
        let hi = self
            .seen_hi
            .execute(pass, slot, |w| check(w, v, begin, set_hi))?;
        let (bit_lo, bit_hi) = words(bit);
        Ok((lo & bit_lo) | (hi & bit_hi) != 0)
    }

    /// Read `seen[ver]` of `slot` for a Probe.
    pub fn probe(&mut self, pass: &Pass, slot: usize, ver: u8) -> Result<u64, Hazard> {
        let v = half(ver);
        let lo = self.seen_lo.execute(pass, slot, |w| w[v])?;
        let hi = self.seen_hi.execute(pass, slot, |w| w[v])?;
        Ok(u64::from(hi) << 32 | u64::from(lo))
    }

    /// Return both versions' bitmaps of `slot` (control plane).
    pub fn read(&self, slot: usize) -> Option<[u64; 2]> {
        let (lo, hi) = (self.seen_lo.read(slot)?, self.seen_hi.read(slot)?);
        Some([0, 1].map(|v| u64::from(hi[v]) << 32 | u64::from(lo[v])))
    }

    /// Reset `slot` (control plane).
    pub fn reset(&mut self, slot: usize) {
        self.seen_lo.write(slot, [0; 2]);
        self.seen_hi.write(slot, [0; 2]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::register::PassClock;

    #[test]
    fn set_touches_only_its_version() {
        let mut clock = PassClock::default();
        let mut b = BitmapChecker::new(1);
        let high = 1u64 << 40;
        assert_eq!(b.apply(&clock.begin(0), 0, 0, 0b10, true, true), Ok(false));
        assert_eq!(b.apply(&clock.begin(0), 0, 1, 0b10, true, true), Ok(false));
        assert_eq!(b.read(0), Some([0b10, 0b10]));
        // A new use of version 1 resets only version 1, both words.
        assert_eq!(b.apply(&clock.begin(0), 0, 1, high, true, true), Ok(false));
        assert_eq!(b.read(0), Some([0b10, high]));
        // Seen, or a count mismatch: nothing is written.
        assert_eq!(b.apply(&clock.begin(0), 0, 0, 0b10, false, false), Ok(true));
        assert_eq!(b.apply(&clock.begin(0), 0, 1, high, false, true), Ok(true));
        assert_eq!(
            b.apply(&clock.begin(0), 0, 0, 0b01, false, false),
            Ok(false)
        );
        assert_eq!(b.read(0), Some([0b10, high]));
        assert_eq!(b.probe(&clock.begin(0), 0, 1), Ok(high));
    }

    #[test]
    fn a_second_access_in_one_pass_is_a_hazard() {
        let mut clock = PassClock::default();
        let mut b = BitmapChecker::new(1);
        let pass = clock.begin(0);
        b.apply(&pass, 0, 0, 0b10, true, true).unwrap();
        assert_eq!(b.probe(&pass, 0, 0), Err(Hazard::SecondAccess("seen_lo")));
    }
}
