//! `bitmap_checker.p4`: the seen bitmaps of both versions of a slot in one register cell,
//! as the original's pair register. Only `seen[v]` changes: a new use resets it and a
//! counted contribution sets the rank's bit; `seen[1−v]` is left alone (protocol.md §4,
//! "Why `seen[1−v]` is not cleared").
//!
//! The countdown comes after this register and the hardware cannot go back to it. So the
//! bit is set whenever it was clear and the count matched, before the pipeline knows
//! whether the use is already complete. In that rare case (a late copy of a completed use
//! from a rank that has moved on) the next step recirculates the packet once and
//! [`BitmapChecker::undo`] clears the bit again: the reference never touches the bitmaps
//! when it answers a completed use.

use crate::register::{Hazard, Pass, Register};

/// What the bitmap checker saw and did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SeenBits {
    /// The rank's bit was set in `seen[v]` (after a new use's reset).
    pub seen: bool,
    /// The bit was written (set in `seen[v]`).
    pub wrote: bool,
}

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
    /// matched. A new use clears `seen[v]` first.
    pub fn apply(
        &mut self,
        pass: &Pass,
        slot: usize,
        ver: u8,
        bit: u64,
        begin: bool,
        count_ok: bool,
    ) -> Result<SeenBits, Hazard> {
        let v = half(ver);
        self.seen.execute(pass, slot, |cell| {
            if begin {
                cell[v] = 0;
            }
            let seen = cell[v] & bit != 0;
            let wrote = count_ok && !seen;
            if wrote {
                cell[v] |= bit;
            }
            SeenBits { seen, wrote }
        })
    }

    /// Undo an [`apply`](Self::apply) that wrote: clear the bit in `seen[v]` again.
    pub fn undo(&mut self, pass: &Pass, slot: usize, ver: u8, bit: u64) -> Result<(), Hazard> {
        let v = half(ver);
        self.seen.execute(pass, slot, |cell| cell[v] &= !bit)
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
    fn set_touches_only_its_version_and_undo_clears_it() {
        let mut clock = PassClock::default();
        let mut b = BitmapChecker::new(1);
        let r = b.apply(&clock.begin(0), 0, 0, 0b10, true, true).unwrap();
        assert_eq!((r.seen, r.wrote), (false, true));
        let r = b.apply(&clock.begin(0), 0, 1, 0b10, true, true).unwrap();
        assert_eq!((r.seen, r.wrote), (false, true));
        assert_eq!(b.register().read(0), Some([0b10, 0b10]));
        b.undo(&clock.begin(1), 0, 1, 0b10).unwrap();
        assert_eq!(b.register().read(0), Some([0b10, 0]));
        let r = b.apply(&clock.begin(0), 0, 0, 0b10, false, false).unwrap();
        assert_eq!((r.seen, r.wrote), (true, false));
        let r = b.apply(&clock.begin(0), 0, 0, 0b01, false, false).unwrap();
        assert_eq!((r.seen, r.wrote), (false, false));
        assert_eq!(b.register().read(0), Some([0b10, 0]));
    }
}
