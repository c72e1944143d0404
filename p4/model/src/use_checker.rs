//! `use_checker.p4`: the per-version use number `seq[v][s]` and the session of the run that
//! began it (protocol.md §4 step 1, §4.1).
//!
//! This is what the paper's scoreboard lacks: a delayed network copy of an old use finds a
//! newer number here and is dropped as `Stale` before it can touch any other register. The
//! "newer" test is serial-number arithmetic: `p.seq − seq` read as a signed 32-bit number
//! is positive. The first register of the pipeline after the run check, so its verdict
//! gates all the others.
//!
//! Each cell is tagged with the session of its use. A packet reaches this register only
//! once the run check admitted its session, which is never 0; so tag 0 means "no use since
//! the job was set up", and a tag other than the packet's means a use of an earlier run,
//! which counts as idle: a new run needs no reset of the pool.

use crate::register::{Hazard, Pass, Register};

/// One cell: the session of the use held (0: none yet) and its use number.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SeqCell {
    /// The session of the run whose use this is; 0 before the first use.
    pub session: u32,
    /// The use number held.
    pub seq: u32,
}

impl SeqCell {
    /// Return whether any use began since the job was set up.
    pub fn used(&self) -> bool {
        self.session != 0
    }
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

    /// Check (and on a new use, record) use `seq` of run `session` at version `index`.
    pub fn apply(
        &mut self,
        pass: &Pass,
        index: usize,
        session: u32,
        seq: u32,
    ) -> Result<Use, Hazard> {
        self.seq.execute(pass, index, |cell| {
            if cell.session != session || (seq.wrapping_sub(cell.seq) as i32) > 0 {
                *cell = SeqCell { session, seq };
                Use::Begin
            } else if seq == cell.seq {
                Use::Current
            } else {
                Use::Stale
            }
        })
    }

    /// Read version `index` for a Probe of run `session`: the use number, if the version
    /// holds a use of that run (otherwise it reads as idle).
    pub fn probe(
        &mut self,
        pass: &Pass,
        index: usize,
        session: u32,
    ) -> Result<Option<u32>, Hazard> {
        self.seq.execute(pass, index, |cell| {
            (cell.session == session).then_some(cell.seq)
        })
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
        let mut at = |u: &mut UseChecker, seq| u.apply(&clock.begin(0), 0, 7, seq).unwrap();
        assert_eq!(at(&mut u, u32::MAX - 1), Use::Begin);
        assert_eq!(at(&mut u, u32::MAX - 1), Use::Current);
        assert_eq!(at(&mut u, 1), Use::Begin);
        assert_eq!(at(&mut u, u32::MAX), Use::Stale);
        assert_eq!(u.register().read(0), Some(SeqCell { session: 7, seq: 1 }));
        assert_eq!(u.register().read(1), Some(SeqCell::default()));
    }

    #[test]
    fn a_use_of_another_run_counts_as_idle() {
        let mut clock = PassClock::default();
        let mut u = UseChecker::new(1);
        assert_eq!(u.apply(&clock.begin(0), 0, 7, 5), Ok(Use::Begin));
        assert_eq!(u.probe(&clock.begin(0), 0, 7), Ok(Some(5)));
        assert_eq!(u.probe(&clock.begin(0), 0, 8), Ok(None));
        // An older use number of the next run begins a use all the same.
        assert_eq!(u.apply(&clock.begin(0), 0, 8, 4), Ok(Use::Begin));
        assert_eq!(u.register().read(0), Some(SeqCell { session: 8, seq: 4 }));
        assert_eq!(u.apply(&clock.begin(0), 0, 8, 3), Ok(Use::Stale));
    }
}
