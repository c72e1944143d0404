//! `processor.p4`: one value register and its actions; the pipeline has
//! [`VALUES_PER_PASS`](crate::VALUES_PER_PASS) of them (`processors.rs`).
//!
//! The first contribution of a use loads its value, later ones add with wrapping int32
//! arithmetic (protocol.md §4 step 5), and a resend to a completed use reads. The action
//! returns the new value, which the packet carries out as the running sum; whether the
//! addition overflowed follows from the old value, the addend and the sum, so one returned
//! value is enough, as on Tofino.

use crate::register::{Hazard, Pass, Register};

/// What a value-holding register does with a packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Update {
    /// First contribution of a use: overwrite.
    Load,
    /// Later contribution: accumulate.
    Add,
    /// Answer to a resend: read only.
    Read,
}

/// One processor: register `value`, one cell per slot version and pass.
#[derive(Debug, Clone)]
pub struct Processor {
    value: Register<i32>,
}

impl Processor {
    /// Make the register for `cells` (slot version, pass) cells.
    pub fn new(cells: usize) -> Self {
        Processor {
            value: Register::new("value", cells, 0),
        }
    }

    /// Apply `update` with addend `x` to cell `index`; return the value held after it and
    /// whether an addition overflowed.
    pub fn apply(
        &mut self,
        pass: &Pass,
        index: usize,
        update: Update,
        x: i32,
    ) -> Result<(i32, bool), Hazard> {
        let sum = self.value.execute(pass, index, |cell| {
            match update {
                Update::Load => *cell = x,
                Update::Add => *cell = cell.wrapping_add(x),
                Update::Read => {}
            }
            *cell
        })?;
        // Signed overflow: both operands have the sign the result lacks.
        let old = sum.wrapping_sub(x);
        let overflow = update == Update::Add && ((old ^ sum) & (x ^ sum)) < 0;
        Ok((sum, overflow))
    }

    /// Return the register.
    pub fn register(&self) -> &Register<i32> {
        &self.value
    }

    /// Zero cell `index` (control plane).
    pub fn reset(&mut self, index: usize) {
        self.value.write(index, 0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::register::PassClock;

    #[test]
    fn load_add_read_and_overflow_both_ways() {
        let mut clock = PassClock::default();
        let mut p = Processor::new(1);
        let mut go = |u, x| p.apply(&clock.begin(0), 0, u, x).unwrap();
        assert_eq!(go(Update::Load, i32::MAX), (i32::MAX, false));
        assert_eq!(go(Update::Add, 1), (i32::MIN, true));
        assert_eq!(go(Update::Add, -1), (i32::MAX, true));
        assert_eq!(go(Update::Add, -5), (i32::MAX - 5, false));
        assert_eq!(go(Update::Read, 77), (i32::MAX - 5, false));
        assert_eq!(go(Update::Load, -3), (-3, false));
    }
}
