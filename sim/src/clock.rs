//! Simulated time, and its conversion to the core's time at the edge.
//!
//! The simulator keeps time in nanoseconds ([`Nanos`]): a 1,114-byte frame takes 89 ns at
//! 100 Gb/s, so microseconds would be far too coarse. The core's [`Instant`] counts
//! microseconds. A worker is told `floor(ns / 1000)` µs, so it sees at most 999 ns less
//! than the true time; a deadline it asks for, `t` µs, is scheduled at exactly `t·1000` ns,
//! where the floor gives back `t` again, so a timer is never handled before it is due and
//! never more than the rounding late. The only effect of the rounding is on the round
//! trips the worker measures (a few µs here, each off by under 1 µs), which feed only its
//! retransmission timeout, and that is floored at `rto` (1 ms in every experiment).

use switchml_core::time::Instant;

/// Simulated nanoseconds since the start of the run.
pub type Nanos = u64;

/// Return the core's instant for simulated time `ns` (rounded down to the microsecond).
pub fn to_core(ns: Nanos) -> Instant {
    Instant::from_micros(ns / 1000)
}

/// Return the simulated time of the core's instant `t`.
pub fn from_core(t: Instant) -> Nanos {
    t.total_micros().saturating_mul(1000)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_deadline_converted_back_is_due_at_once_and_not_before() {
        let deadline = Instant::from_micros(1234);
        let ns = from_core(deadline);
        assert_eq!(to_core(ns), deadline);
        assert!(to_core(ns - 1) < deadline);
        assert_eq!(to_core(ns + 999), deadline);
    }
}
