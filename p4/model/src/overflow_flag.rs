//! `overflow_flag.p4`: the Result's sticky flags of a use, in one OR register (protocol.md
//! §4, §5.4): `OVERFLOW` if any addition into the use overflowed int32 (or, at a parent, a
//! member's Contribution carried it), and the non-finite kinds (`POS_INF`, `NEG_INF`,
//! `NAN`) its Contributions carried. One register for all of them keeps the stateful ALU
//! count where the overflow flag alone had it. The packet gathers its own flags over its
//! value passes (the kinds from its header in pass 0, its overflows as its blocks are
//! added) and this register takes them in its last value pass (pass 0 for a header-only
//! packet).

use crate::processor::Update;
use crate::register::{Hazard, Pass, Register};

/// The flags register: register `flags`, one byte per slot version (the data message's
/// flag bits).
#[derive(Debug, Clone)]
pub struct OverflowFlag {
    flags: Register<u8>,
}

impl OverflowFlag {
    /// Make the register for `versions` slot versions.
    pub fn new(versions: usize) -> Self {
        OverflowFlag {
            flags: Register::new("flags", versions, 0),
        }
    }

    /// Load, OR in, or read the packet's flags `f` at version `index`; return the held
    /// flags.
    pub fn apply(
        &mut self,
        pass: &Pass,
        index: usize,
        update: Update,
        f: u8,
    ) -> Result<u8, Hazard> {
        self.flags.execute(pass, index, |cell| {
            match update {
                Update::Load => *cell = f,
                Update::Add => *cell |= f,
                Update::Read => {}
            }
            *cell
        })
    }

    /// Return the register.
    pub fn register(&self) -> &Register<u8> {
        &self.flags
    }

    /// Reset version `index` (control plane).
    pub fn reset(&mut self, index: usize) {
        self.flags.write(index, 0);
    }
}
