//! `bitmap_checker.p4`: the seen bitmaps of both versions of a slot in one register cell,
//! as the original's pair register. Only `seen[v]` changes: a new use resets it and a
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

use crate::register::{Hazard, Pass, Register};

/// The bitmap checker: register `seen`, one cell (both versions) per slot.
#[derive(Debug, Clone)]
pub struct BitmapChecker {
    seen: Register<[u64; 2]>,
}

fn half(ver: u8) -> usize {
    usize::from(ver & 1)
}

impl BitmapChecker {
    /// Make the register for `slots` slots.
    pub fn new(slots: usize) -> Self {
        BitmapChecker {
            seen: Register::new("seen", slots, [0; 2]),
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
        self.seen.execute(pass, slot, |cell| {
            if begin {
                cell[v] = 0;
            }
            let seen = cell[v] & bit != 0;
            if count_ok && !seen {
                cell[v] |= bit;
            }
            seen
        })
    }

    /// Read `seen[ver]` of `slot` for a Probe.
    pub fn probe(&mut self, pass: &Pass, slot: usize, ver: u8) -> Result<u64, Hazard> {
        let v = half(ver);
        self.seen.execute(pass, slot, |cell| cell[v])
    }

    /// Return the register.
    pub fn register(&self) -> &Register<[u64; 2]> {
        &self.seen
    }

    /// Reset `slot` (control plane).
    pub fn reset(&mut self, slot: usize) {
        self.seen.write(slot, [0; 2]);
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
        assert_eq!(b.apply(&clock.begin(0), 0, 0, 0b10, true, true), Ok(false));
        assert_eq!(b.apply(&clock.begin(0), 0, 1, 0b10, true, true), Ok(false));
        assert_eq!(b.register().read(0), Some([0b10, 0b10]));
        // A new use of version 1 resets only version 1.
        assert_eq!(b.apply(&clock.begin(0), 0, 1, 0b01, true, true), Ok(false));
        assert_eq!(b.register().read(0), Some([0b10, 0b01]));
        // Seen, or a count mismatch: nothing is written.
        assert_eq!(b.apply(&clock.begin(0), 0, 0, 0b10, false, false), Ok(true));
        assert_eq!(
            b.apply(&clock.begin(0), 0, 0, 0b01, false, false),
            Ok(false)
        );
        assert_eq!(b.register().read(0), Some([0b10, 0b01]));
    }

    #[test]
    fn a_second_access_in_one_pass_is_a_hazard() {
        let mut clock = PassClock::default();
        let mut b = BitmapChecker::new(1);
        let pass = clock.begin(0);
        b.apply(&pass, 0, 0, 0b10, true, true).unwrap();
        assert_eq!(b.probe(&pass, 0, 0), Err(Hazard::SecondAccess("seen")));
    }
}
