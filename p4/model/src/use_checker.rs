//! `use_checker.p4`: the per-version use number `seq[v][s]` (protocol.md §4 step 1).
//!
//! This is what the paper's scoreboard lacks: a delayed network copy of an old use finds a
//! newer number here and is dropped as `Stale` before it can touch any other register. The
//! "newer" test is serial-number arithmetic: `p.seq − seq` read as a signed 32-bit number
//! is positive. The first register of the pipeline, so its verdict gates all the others.

use crate::register::{Hazard, Pass, Register};

/// One cell: whether any use began since the job was set up, and the use held.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SeqCell {
    /// A use has begun.
    pub used: bool,
    /// The use number held.
    pub seq: u32,
}

/// What the use check decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Use {
    /// The packet begins a new use: every other register of the version resets.
    Begin,
    /// The packet belongs to the use held.
    Current,
    /// The packet belongs to an older use.
    Stale,
}

/// The use checker: register `seq`, one cell per slot version.
#[derive(Debug, Clone)]
pub struct UseChecker {
    seq: Register<SeqCell>,
}

impl UseChecker {
    /// Make the register for `versions` slot versions.
    pub fn new(versions: usize) -> Self {
        UseChecker {
            seq: Register::new("seq", versions, SeqCell::default()),
        }
    }

    /// Check (and on a new use, record) use `seq` of version `index`.
    pub fn apply(&mut self, pass: &Pass, index: usize, seq: u32) -> Result<Use, Hazard> {
        self.seq.execute(pass, index, |cell| {
            if !cell.used || (seq.wrapping_sub(cell.seq) as i32) > 0 {
                *cell = SeqCell { used: true, seq };
                Use::Begin
            } else if seq == cell.seq {
                Use::Current
            } else {
                Use::Stale
            }
        })
    }

    /// Read version `index` for a Probe.
    pub fn probe(&mut self, pass: &Pass, index: usize) -> Result<SeqCell, Hazard> {
        self.seq.execute(pass, index, |cell| *cell)
    }

    /// Return the register.
    pub fn register(&self) -> &Register<SeqCell> {
        &self.seq
    }

    /// Reset version `index` to idle (control plane).
    pub fn reset(&mut self, index: usize) {
        self.seq.write(index, SeqCell::default());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::register::PassClock;

    #[test]
    fn newer_uses_begin_older_ones_are_stale_across_the_wrap() {
        let mut clock = PassClock::default();
        let mut u = UseChecker::new(2);
        let mut at = |u: &mut UseChecker, seq| u.apply(&clock.begin(0), 0, seq).unwrap();
        assert_eq!(at(&mut u, u32::MAX - 1), Use::Begin);
        assert_eq!(at(&mut u, u32::MAX - 1), Use::Current);
        assert_eq!(at(&mut u, 1), Use::Begin);
        assert_eq!(at(&mut u, u32::MAX), Use::Stale);
        assert_eq!(u.register().read(0), Some(SeqCell { used: true, seq: 1 }));
        assert_eq!(u.register().read(1), Some(SeqCell::default()));
    }
}
