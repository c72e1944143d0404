//! `overflow_flag.p4`: whether any addition into a use overflowed int32 (protocol.md §5.2,
//! the `OVERFLOW` flag). The packet gathers its own overflows over its value passes and
//! this register takes them in its last value pass (pass 0 for a header-only packet).

use crate::processor::Update;
use crate::register::{Hazard, Pass, Register};

/// The overflow flag: register `overflow`, one cell per slot version.
#[derive(Debug, Clone)]
pub struct OverflowFlag {
    overflow: Register<bool>,
}

impl OverflowFlag {
    /// Make the register for `versions` slot versions.
    pub fn new(versions: usize) -> Self {
        OverflowFlag {
            overflow: Register::new("overflow", versions, false),
        }
    }

    /// Load, OR in, or read the packet's overflow `o` at version `index`; return the flag.
    pub fn apply(
        &mut self,
        pass: &Pass,
        index: usize,
        update: Update,
        o: bool,
    ) -> Result<bool, Hazard> {
        self.overflow.execute(pass, index, |cell| {
            match update {
                Update::Load => *cell = o,
                Update::Add => *cell |= o,
                Update::Read => {}
            }
            *cell
        })
    }

    /// Return the register.
    pub fn register(&self) -> &Register<bool> {
        &self.overflow
    }

    /// Reset version `index` (control plane).
    pub fn reset(&mut self, index: usize) {
        self.overflow.write(index, false);
    }
}
