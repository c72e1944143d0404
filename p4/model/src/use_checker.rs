//! `use_checker.p4`: the per-version use number `seq[v][s]` and the session of the run that
//! began it (protocol.md §4 step 1, §4.1).
//!
//! This is what the paper's scoreboard lacks: a delayed network copy of an old use finds a
//! newer number here and is dropped as `Stale` before it can touch any other register. The
//! "newer" test is serial-number arithmetic: `p.seq − seq` read as a signed 32-bit number
//! is positive. The first register of the pipeline after the run check, so its verdict
//! gates all the others.
//!
//! Each version is tagged with the session of its use. A packet reaches these registers
//! only once the run check admitted its session, which is never 0; so tag 0 means "no use
//! since the job was set up", and a tag other than the packet's means a use of an earlier
//! run, which counts as idle: a new run needs no reset of the pool.
//!
//! Two registers, as in `tna/use_checker.p4` (a Tofino stateful ALU returns one word):
//! `use_session` (the tag) a stage before `seq` (the use number). `seq`'s action compares
//! twice, all a Tofino 1 stateful ALU can: it takes the packet's number if the version holds
//! another run's use or an older one of this run, and returns the number held before; begin,
//! current and stale are told apart from that number after the register.

use crate::register::{Hazard, Pass, Register};

/// A version's use as the control plane reads it: the session of the run whose use it holds
/// (register `use_session`) and the use number (register `seq`).
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

/// The use checker: registers `use_session` and `seq`, one cell per slot version each.
#[derive(Debug, Clone)]
pub struct UseChecker {
    use_session: Register<u32>,
    seq: Register<u32>,
}

impl UseChecker {
    /// Make the registers for `versions` slot versions.
    pub fn new(versions: usize) -> Self {
        UseChecker {
            use_session: Register::new("use_session", versions, 0),
            seq: Register::new("seq", versions, 0),
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
        // tag_use: whether the version holds a use of this run; it will after this packet.
        let in_session = self.use_session.execute(pass, index, |tag| {
            let same = *tag == session;
            *tag = session;
            same
        })?;
        // check_use: the number held before; this one taken if newer or of another run.
        let held = self.seq.execute(pass, index, |value| {
            let held = *value;
            if !in_session || (seq.wrapping_sub(*value) as i32) > 0 {
                *value = seq;
            }
            held
        })?;
        // How far this use is ahead of the one held (the sign bit set: behind).
        let ahead = seq.wrapping_sub(held);
        Ok(if !in_session {
            Use::Begin
        } else if ahead == 0 {
            Use::Current
        } else if ahead >> 31 == 0 {
            Use::Begin
        } else {
            Use::Stale
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
        let in_session = self
            .use_session
            .execute(pass, index, |tag| *tag == session)?;
        let held = self.seq.execute(pass, index, |value| *value)?;
        Ok(in_session.then_some(held))
    }

    /// Return version `index` (control plane).
    pub fn read(&self, index: usize) -> Option<SeqCell> {
        Some(SeqCell {
            session: self.use_session.read(index)?,
            seq: self.seq.read(index)?,
        })
    }

    /// Reset version `index` to idle (control plane).
    pub fn reset(&mut self, index: usize) {
        self.use_session.write(index, 0);
        self.seq.write(index, 0);
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
        assert_eq!(u.read(0), Some(SeqCell { session: 7, seq: 1 }));
        assert_eq!(u.read(1), Some(SeqCell::default()));
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
        assert_eq!(u.read(0), Some(SeqCell { session: 8, seq: 4 }));
        assert_eq!(u.apply(&clock.begin(0), 0, 8, 3), Ok(Use::Stale));
    }

    #[test]
    fn each_register_runs_once_per_pass() {
        let mut clock = PassClock::default();
        let mut u = UseChecker::new(1);
        let pass = clock.begin(0);
        u.apply(&pass, 0, 7, 1).unwrap();
        assert_eq!(
            u.probe(&pass, 0, 7),
            Err(Hazard::SecondAccess("use_session"))
        );
    }
}
