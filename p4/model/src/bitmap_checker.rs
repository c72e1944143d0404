//! `bitmap_checker.p4`: the seen bitmaps of both versions of a slot in one register cell,
//! so that one action can add the rank to `seen[v]` and remove it from `seen[1−v]`
//! (protocol.md §4 step 5), as the original's pair register does.
//!
//! The countdown comes after this register and the hardware cannot go back to it. So the
//! bit is set whenever it was clear and the count matched, before the pipeline knows
//! whether the use is already complete. In that rare case (a late copy of a completed use
//! from a rank that has moved on) the next step recirculates the packet once and
//! [`BitmapChecker::undo`] restores both bits: the reference never touches the bitmaps when
//! it answers a completed use.

use crate::register::{Hazard, Pass, Register};

/// What the bitmap checker saw and did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SeenBits {
    /// The rank's bit was set in `seen[v]` (after a new use's reset).
    pub seen: bool,
    /// The rank's bit was set in `seen[1−v]`.
    pub other: bool,
    /// The bits were written (set in `v`, cleared in `1−v`).
    pub wrote: bool,
}

/// The bitmap checker: register `seen`, one cell (both versions) per slot.
#[derive(Debug, Clone)]
pub struct BitmapChecker {
    seen: Register<[u64; 2]>,
}

fn halves(ver: u8) -> (usize, usize) {
    let v = usize::from(ver & 1);
    (v, 1 - v)
}

impl BitmapChecker {
    /// Make the register for `slots` slots.
    pub fn new(slots: usize) -> Self {
        BitmapChecker {
            seen: Register::new("seen", slots, [0; 2]),
        }
    }

    /// Check rank `bit` in version `ver` of `slot`; set it (and clear it in the other
    /// version) if it was clear and the count matched. A new use clears `seen[v]` first.
    pub fn apply(
        &mut self,
        pass: &Pass,
        slot: usize,
        ver: u8,
        bit: u64,
        begin: bool,
        count_ok: bool,
    ) -> Result<SeenBits, Hazard> {
        let (v, o) = halves(ver);
        self.seen.execute(pass, slot, |cell| {
            if begin {
                cell[v] = 0;
            }
            let seen = cell[v] & bit != 0;
            let other = cell[o] & bit != 0;
            let wrote = count_ok && !seen;
            if wrote {
                cell[v] |= bit;
                cell[o] &= !bit;
            }
            SeenBits { seen, other, wrote }
        })
    }

    /// Undo an [`apply`](Self::apply) that wrote: clear the bit in `v`, restore it in `1−v`.
    pub fn undo(
        &mut self,
        pass: &Pass,
        slot: usize,
        ver: u8,
        bit: u64,
        other: bool,
    ) -> Result<(), Hazard> {
        let (v, o) = halves(ver);
        self.seen.execute(pass, slot, |cell| {
            cell[v] &= !bit;
            if other {
                cell[o] |= bit;
            }
        })
    }

    /// Read `seen[ver]` of `slot` for a Probe.
    pub fn probe(&mut self, pass: &Pass, slot: usize, ver: u8) -> Result<u64, Hazard> {
        let (v, _) = halves(ver);
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
    fn set_moves_the_bit_between_versions_and_undo_moves_it_back() {
        let mut clock = PassClock::default();
        let mut b = BitmapChecker::new(1);
        let r = b.apply(&clock.begin(0), 0, 0, 0b10, true, true).unwrap();
        assert_eq!((r.seen, r.other, r.wrote), (false, false, true));
        let r = b.apply(&clock.begin(0), 0, 1, 0b10, true, true).unwrap();
        assert_eq!((r.seen, r.other, r.wrote), (false, true, true));
        assert_eq!(b.register().read(0), Some([0, 0b10]));
        b.undo(&clock.begin(1), 0, 1, 0b10, true).unwrap();
        assert_eq!(b.register().read(0), Some([0b10, 0]));
        let r = b.apply(&clock.begin(0), 0, 0, 0b10, false, false).unwrap();
        assert_eq!((r.seen, r.wrote), (true, false));
        let r = b.apply(&clock.begin(0), 0, 0, 0b01, false, false).unwrap();
        assert_eq!((r.seen, r.wrote), (false, false));
        assert_eq!(b.register().read(0), Some([0b10, 0]));
    }
}
