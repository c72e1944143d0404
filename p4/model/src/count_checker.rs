//! `count_checker.p4`: the value count `count[v][s]` a use's first contribution fixes
//! (protocol.md §4 steps 1 and 4).
//!
//! It sits before the bitmap checker so that a contribution of the wrong size never sets a
//! seen bit, and it is the count a unicast answer carries, whatever the resend declared.

use crate::register::{Hazard, Pass, Register};

/// The count checker: register `count`, one cell per slot version.
#[derive(Debug, Clone)]
pub struct CountChecker {
    count: Register<u16>,
}

impl CountChecker {
    /// Make the register for `versions` slot versions.
    pub fn new(versions: usize) -> Self {
        CountChecker {
            count: Register::new("count", versions, 0),
        }
    }

    /// Record `count` if the packet begins a use; return the count the use holds.
    pub fn apply(
        &mut self,
        pass: &Pass,
        index: usize,
        begin: bool,
        count: u16,
    ) -> Result<u16, Hazard> {
        self.count.execute(pass, index, |cell| {
            if begin {
                *cell = count;
            }
            *cell
        })
    }

    /// Return the register.
    pub fn register(&self) -> &Register<u16> {
        &self.count
    }

    /// Reset version `index` (control plane).
    pub fn reset(&mut self, index: usize) {
        self.count.write(index, 0);
    }
}
