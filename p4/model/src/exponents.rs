//! `exponents.p4`: the maximum biased exponent `exp[v][s]` of a use (protocol.md §4 step 5,
//! §5.3). A byte max needs no special case for "no exponent": that is 0, the smallest.

use crate::processor::Update;
use crate::register::{Hazard, Pass, Register};

/// The exponents control: register `exp`, one cell per slot version.
#[derive(Debug, Clone)]
pub struct Exponents {
    exp: Register<u8>,
}

impl Exponents {
    /// Make the register for `versions` slot versions.
    pub fn new(versions: usize) -> Self {
        Exponents {
            exp: Register::new("exp", versions, 0),
        }
    }

    /// Load, max in, or read exponent `e` at version `index`; return the exponent held.
    pub fn apply(
        &mut self,
        pass: &Pass,
        index: usize,
        update: Update,
        e: u8,
    ) -> Result<u8, Hazard> {
        self.exp.execute(pass, index, |cell| {
            match update {
                Update::Load => *cell = e,
                Update::Add => *cell = (*cell).max(e),
                Update::Read => {}
            }
            *cell
        })
    }

    /// Return the register.
    pub fn register(&self) -> &Register<u8> {
        &self.exp
    }

    /// Reset version `index` (control plane).
    pub fn reset(&mut self, index: usize) {
        self.exp.write(index, 0);
    }
}
