//! Registers and counters that obey the hardware's access rule.
//!
//! On Tofino a register array sits in one stage and its `RegisterAction` runs at most once
//! per packet per pass: one read-modify-write, whatever the index. State that needs a second
//! access takes another pass (a recirculation). The model keeps that rule: every access to a
//! [`Register`] goes through [`Register::execute`] with the current [`Pass`], and a second
//! access in the same pass is refused with [`Hazard::SecondAccess`] instead of silently
//! succeeding. Only the pipeline can start a pass, so a control cannot dodge the check.
//!
//! The control plane reads and writes cells with [`Register::read`] and
//! [`Register::write`], outside any pass, as BfRt or `simple_switch_CLI` would.

/// One trip of a packet through the ingress pipeline.
#[derive(Debug)]
pub struct Pass {
    id: u64,
    index: u8,
}

impl Pass {
    /// Return which pass of its packet this is (0 = first, then recirculations).
    pub fn index(&self) -> u8 {
        self.index
    }
}

/// Hands out passes with ids that never repeat.
#[derive(Debug, Clone, Default)]
pub(crate) struct PassClock {
    last: u64,
}

impl PassClock {
    /// Start pass `index` of a packet.
    pub(crate) fn begin(&mut self, index: u8) -> Pass {
        self.last += 1;
        Pass {
            id: self.last,
            index,
        }
    }
}

/// A register access the hardware could not perform: a model bug, never an input's fault.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hazard {
    /// The named register was accessed a second time in one pass.
    SecondAccess(&'static str),
    /// The named register was indexed past its end.
    Index(&'static str),
}

/// A register array: `len` cells of `T`, one read-modify-write per pass.
#[derive(Debug, Clone)]
pub struct Register<T> {
    name: &'static str,
    cells: Box<[T]>,
    last_pass: u64,
}

impl<T: Copy> Register<T> {
    /// Make a register of `len` cells, each `init`.
    pub fn new(name: &'static str, len: usize, init: T) -> Self {
        Register {
            name,
            cells: vec![init; len].into_boxed_slice(),
            last_pass: 0,
        }
    }

    /// Return the register's name in the P4 program.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// Return the number of cells.
    pub fn len(&self) -> usize {
        self.cells.len()
    }

    /// Return whether the register has no cells.
    pub fn is_empty(&self) -> bool {
        self.cells.is_empty()
    }

    /// Run one `RegisterAction` on cell `index`: `action` gets the cell (inout) and returns
    /// the action's output. Refused if this register already ran in `pass`.
    pub fn execute<R>(
        &mut self,
        pass: &Pass,
        index: usize,
        action: impl FnOnce(&mut T) -> R,
    ) -> Result<R, Hazard> {
        if self.last_pass == pass.id {
            return Err(Hazard::SecondAccess(self.name));
        }
        let cell = self.cells.get_mut(index).ok_or(Hazard::Index(self.name))?;
        self.last_pass = pass.id;
        Ok(action(cell))
    }

    /// Return cell `index` (control plane).
    pub fn read(&self, index: usize) -> Option<T> {
        self.cells.get(index).copied()
    }

    /// Set cell `index`; return false past the end (control plane).
    pub fn write(&mut self, index: usize, value: T) -> bool {
        match self.cells.get_mut(index) {
            Some(cell) => {
                *cell = value;
                true
            }
            None => false,
        }
    }
}

/// A packet counter array (P4 `counter`/`Counter`): the data plane only counts, the control
/// plane reads.
#[derive(Debug, Clone)]
pub struct Counter {
    name: &'static str,
    cells: Box<[u64]>,
}

impl Counter {
    /// Make a counter array of `len` cells.
    pub fn new(name: &'static str, len: usize) -> Self {
        Counter {
            name,
            cells: vec![0; len].into_boxed_slice(),
        }
    }

    /// Return the counter's name in the P4 program.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// Count one packet at `index` (ignored past the end, as a table miss would be).
    pub fn count(&mut self, index: usize) {
        if let Some(c) = self.cells.get_mut(index) {
            *c += 1;
        }
    }

    /// Return the packets counted at `index`.
    pub fn read(&self, index: usize) -> u64 {
        self.cells.get(index).copied().unwrap_or(0)
    }

    /// Zero cell `index` (control plane).
    pub fn clear(&mut self, index: usize) {
        if let Some(c) = self.cells.get_mut(index) {
            *c = 0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_access_in_one_pass_is_refused_and_changes_nothing() {
        let mut clock = PassClock::default();
        let mut r = Register::new("seq", 4, 0u32);
        let pass = clock.begin(0);
        assert_eq!(r.execute(&pass, 1, |v| *v += 5), Ok(()));
        assert_eq!(
            r.execute(&pass, 2, |v| *v += 1),
            Err(Hazard::SecondAccess("seq"))
        );
        assert_eq!((r.read(1), r.read(2)), (Some(5), Some(0)));
        let next = clock.begin(1);
        assert_eq!(next.index(), 1);
        assert_eq!(
            r.execute(&next, 1, |v| {
                *v += 1;
                *v
            }),
            Ok(6)
        );
    }

    #[test]
    fn out_of_range_indices_are_hazards_and_do_not_use_up_the_pass() {
        let mut clock = PassClock::default();
        let mut r = Register::new("count", 2, 0u16);
        let pass = clock.begin(0);
        assert_eq!(r.execute(&pass, 2, |_| ()), Err(Hazard::Index("count")));
        assert_eq!(r.execute(&pass, 0, |v| *v = 3), Ok(()));
        assert!(!r.write(2, 1));
        assert!(r.write(1, 9));
        assert_eq!(r.read(1), Some(9));
    }

    #[test]
    fn counters_count_and_clear() {
        let mut c = Counter::new("drops", 3);
        c.count(1);
        c.count(1);
        c.count(7);
        assert_eq!((c.read(0), c.read(1), c.read(7)), (0, 2, 0));
        c.clear(1);
        assert_eq!(c.read(1), 0);
    }
}
