//! `workers_counter.p4`: the countdown `remaining[v][s]` of contributions still missing
//! (protocol.md §4 steps 1, 2 and 5).
//!
//! A new use starts it at the world size; a contribution that was neither already seen nor
//! of the wrong size counts down; zero means complete, and a contribution that finds zero
//! is a resend that gets the stored result back.

use crate::register::{Hazard, Pass, Register};

/// What the countdown said.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Countdown {
    /// The use was already complete when the packet arrived.
    pub complete: bool,
    /// The packet counted down.
    pub counted: bool,
    /// Contributions missing after the packet.
    pub remaining: u16,
}

/// The workers counter: register `remaining`, one cell per slot version.
#[derive(Debug, Clone)]
pub struct WorkersCounter {
    remaining: Register<u16>,
}

impl WorkersCounter {
    /// Make the register for `versions` slot versions.
    pub fn new(versions: usize) -> Self {
        WorkersCounter {
            remaining: Register::new("remaining", versions, 0),
        }
    }

    /// Count a contribution to version `index` of a job of `world` ranks, unless the use
    /// is complete, the rank was `seen` or the count is wrong.
    pub fn apply(
        &mut self,
        pass: &Pass,
        index: usize,
        begin: bool,
        world: u16,
        seen: bool,
        count_ok: bool,
    ) -> Result<Countdown, Hazard> {
        self.remaining.execute(pass, index, |cell| {
            if begin {
                *cell = world;
            }
            let complete = *cell == 0;
            let counted = !complete && !seen && count_ok;
            if counted {
                *cell -= 1;
            }
            Countdown {
                complete,
                counted,
                remaining: *cell,
            }
        })
    }

    /// Read version `index` for a Probe.
    pub fn probe(&mut self, pass: &Pass, index: usize) -> Result<u16, Hazard> {
        self.remaining.execute(pass, index, |cell| *cell)
    }

    /// Return the register.
    pub fn register(&self) -> &Register<u16> {
        &self.remaining
    }

    /// Reset version `index` (control plane).
    pub fn reset(&mut self, index: usize) {
        self.remaining.write(index, 0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::register::PassClock;

    #[test]
    fn counts_down_to_complete_and_then_holds() {
        let mut clock = PassClock::default();
        let mut w = WorkersCounter::new(1);
        let mut go = |begin, seen, ok| w.apply(&clock.begin(0), 0, begin, 2, seen, ok).unwrap();
        assert_eq!(go(true, false, true).remaining, 1);
        assert!(!go(false, true, true).counted);
        assert!(!go(false, false, false).counted);
        let last = go(false, false, true);
        assert_eq!(
            (last.complete, last.counted, last.remaining),
            (false, true, 0)
        );
        let after = go(false, false, true);
        assert_eq!((after.complete, after.counted), (true, false));
    }
}
