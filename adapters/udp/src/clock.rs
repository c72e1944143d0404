//! The edge between the OS clock and the core's clock.
//!
//! The core counts microseconds from an origin the caller picks ([`switchml_core::time`]);
//! here the origin is the moment a [`Clock`] is made. This is the only file that turns
//! `std::time` into core time and back.

use switchml_core::time::{Duration as CoreDuration, Instant as CoreInstant};

/// A monotonic clock reading core [`CoreInstant`]s.
#[derive(Debug, Clone, Copy)]
pub struct Clock {
    origin: std::time::Instant,
}

impl Clock {
    /// Start a clock whose origin is now.
    pub fn start() -> Clock {
        Clock {
            origin: std::time::Instant::now(),
        }
    }

    /// Return the current time.
    pub fn now(&self) -> CoreInstant {
        let micros = self.origin.elapsed().as_micros();
        CoreInstant::from_micros(u64::try_from(micros).unwrap_or(u64::MAX))
    }

    /// Return how long from `now` until `deadline` (zero if it has passed).
    pub fn until(&self, now: CoreInstant, deadline: CoreInstant) -> std::time::Duration {
        to_std(deadline.saturating_duration_since(now))
    }
}

/// Convert a core duration to a std one.
pub fn to_std(d: CoreDuration) -> std::time::Duration {
    std::time::Duration::from_micros(d.total_micros())
}

/// Convert a std duration to a core one (saturating).
pub fn to_core(d: std::time::Duration) -> CoreDuration {
    CoreDuration::from_micros(u64::try_from(d.as_micros()).unwrap_or(u64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conversions_round_trip_and_deadlines_in_the_past_are_zero() {
        let d = std::time::Duration::from_micros(1234);
        assert_eq!(to_std(to_core(d)), d);
        let clock = Clock::start();
        let now = clock.now();
        assert_eq!(
            clock.until(now, CoreInstant::ZERO),
            std::time::Duration::ZERO
        );
        let later = now + CoreDuration::from_millis(3);
        assert_eq!(clock.until(now, later), std::time::Duration::from_millis(3));
    }
}
