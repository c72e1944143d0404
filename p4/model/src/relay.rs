//! `relay.p4`: what a child switch (protocol.md §7) knows of a use it sent up, register
//! `relay`, one cell per slot version: whether the version holds the parent's Result
//! (`relayed`) and, until it does, how many resends of the use came in.
//!
//! A new use resets the cell. A resend to a use complete here whose parent's Result has
//! not come back sends the partial sum up again for one resend in `n` (the child's ranks;
//! the first, the `n + 1`-th, …) and is consumed otherwise; Tofino has no divider, so the
//! cell counts resends modulo `n` (a compare with the job's world, which a stateful ALU
//! makes) where the reference keeps a wrapping 16-bit count and takes it modulo `n`: the
//! two agree until one use has had 65,536 resends. A Result from the parent for the use
//! sets `relayed` once; the same Result again finds it set (a duplicate).
//!
//! Flat and parent jobs reset the cell with every use and read nothing else of it.

use crate::register::{Hazard, Pass, Register};

/// One cell.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RelayCell {
    /// The version holds the parent's Result (its values, exponent and flag).
    pub relayed: bool,
    /// Resends since the use began, modulo the child's world.
    pub resends: u16,
}

/// What a Contribution learned of the cell.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RelayRead {
    /// The version holds the parent's Result.
    pub relayed: bool,
    /// This resend is the one in `n` that goes up again.
    pub ask: bool,
}

/// The relay: register `relay`.
#[derive(Debug, Clone)]
pub struct Relay {
    relay: Register<RelayCell>,
}

impl Relay {
    /// Make the register for `versions` slot versions.
    pub fn new(versions: usize) -> Self {
        Relay {
            relay: Register::new("relay", versions, RelayCell::default()),
        }
    }

    /// A Contribution to version `index`: reset on a new use (`begin`); count a resend
    /// (`resend`: the use is complete and the count matches) of a child of `world` ranks
    /// while the parent's Result is not here.
    pub fn apply(
        &mut self,
        pass: &Pass,
        index: usize,
        begin: bool,
        resend: bool,
        world: u16,
    ) -> Result<RelayRead, Hazard> {
        self.relay.execute(pass, index, |cell| {
            if begin {
                *cell = RelayCell::default();
            }
            let ask = resend && !cell.relayed && cell.resends == 0;
            if resend && !cell.relayed {
                cell.resends = if cell.resends + 1 >= world {
                    0
                } else {
                    cell.resends + 1
                };
            }
            RelayRead {
                relayed: cell.relayed,
                ask,
            }
        })
    }

    /// A Result from the parent for the use version `index` holds, complete and of the
    /// same count (`matches`): mark it relayed; return whether it already was.
    pub fn store(&mut self, pass: &Pass, index: usize, matches: bool) -> Result<bool, Hazard> {
        self.relay.execute(pass, index, |cell| {
            let was = cell.relayed;
            if matches {
                cell.relayed = true;
            }
            was
        })
    }

    /// Return the register.
    pub fn register(&self) -> &Register<RelayCell> {
        &self.relay
    }

    /// Reset version `index` (control plane).
    pub fn reset(&mut self, index: usize) {
        self.relay.write(index, RelayCell::default());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::register::PassClock;

    #[test]
    fn one_resend_in_n_goes_up_until_the_parent_answers() {
        let mut clock = PassClock::default();
        let mut r = Relay::new(2);
        let mut asks = Vec::new();
        for i in 0..7 {
            let pass = clock.begin(0);
            let read = r.apply(&pass, 1, i == 0, i > 0, 3).unwrap();
            asks.push(read.ask);
        }
        assert_eq!(asks, [false, true, false, false, true, false, false]);
        let pass = clock.begin(0);
        assert!(!r.store(&pass, 1, true).unwrap());
        let pass = clock.begin(0);
        assert!(r.store(&pass, 1, true).unwrap(), "a duplicate");
        let pass = clock.begin(0);
        let read = r.apply(&pass, 1, false, true, 3).unwrap();
        assert!(read.relayed && !read.ask);
    }
}
