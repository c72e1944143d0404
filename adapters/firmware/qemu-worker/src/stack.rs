//! The stack's high-water mark, by painting: fill the free RAM below the stack pointer with
//! a pattern at boot, and at the end find the lowest word the stack overwrote.

use core::ptr::{addr_of, read_volatile, write_volatile};

const PAINT: u32 = 0x5EC2_E7A1;

/// Bytes below the current stack pointer left unpainted (the painting loop's own frame).
const MARGIN: usize = 256;

extern "C" {
    /// The end of the statics (cortex-m-rt's link.x): the lowest address the stack may
    /// grow down to.
    static __sheap: u32;
    /// The top of the stack (cortex-m-rt's link.x: the end of RAM).
    static _stack_start: u32;
}

fn bottom() -> usize {
    // Only the symbol's address is taken, never its value.
    addr_of!(__sheap) as usize
}

fn top() -> usize {
    addr_of!(_stack_start) as usize
}

/// Paint the free stack. Call it first thing, before deep calls.
pub fn paint() {
    let sp = cortex_m::register::msp::read() as usize;
    let mut addr = (bottom() + 3) & !3;
    while addr + 4 <= sp - MARGIN {
        // SAFETY: [bottom, sp - MARGIN) is RAM that neither a static nor a live stack frame
        // uses: the statics end at `__sheap`, and the stack lies above `sp`.
        unsafe { write_volatile(addr as *mut u32, PAINT) };
        addr += 4;
    }
}

/// Return the most stack used since [`paint`], in bytes.
pub fn high_water() -> usize {
    let mut addr = (bottom() + 3) & !3;
    // SAFETY: [bottom, top) is RAM; reading words of it has no side effect.
    while addr < top() && unsafe { read_volatile(addr as *const u32) } == PAINT {
        addr += 4;
    }
    top() - addr
}
