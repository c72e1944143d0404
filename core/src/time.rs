//! Time as the core sees it: microseconds since an origin the caller picks.
//!
//! The core never reads a clock. Adapters convert their clock at the edge (one small file,
//! e.g. `std::time::Instant` minus a start instant) and pass [`Instant`]s in.

use core::ops::{Add, AddAssign, Sub};

/// A point in time, in microseconds since an origin chosen by the caller.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Instant {
    micros: u64,
}

/// A span of time, in microseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Duration {
    micros: u64,
}

impl Instant {
    /// The origin.
    pub const ZERO: Instant = Instant { micros: 0 };

    /// Make an instant from microseconds since the origin.
    pub const fn from_micros(micros: u64) -> Self {
        Instant { micros }
    }

    /// Make an instant from milliseconds since the origin.
    pub const fn from_millis(millis: u64) -> Self {
        Instant {
            micros: millis.saturating_mul(1000),
        }
    }

    /// Return the microseconds since the origin.
    pub const fn total_micros(self) -> u64 {
        self.micros
    }

    /// Return the time from `earlier` to `self`, or zero if `earlier` is later.
    pub const fn saturating_duration_since(self, earlier: Instant) -> Duration {
        Duration {
            micros: self.micros.saturating_sub(earlier.micros),
        }
    }
}

impl Duration {
    /// No time at all.
    pub const ZERO: Duration = Duration { micros: 0 };

    /// Make a duration from microseconds.
    pub const fn from_micros(micros: u64) -> Self {
        Duration { micros }
    }

    /// Make a duration from milliseconds.
    pub const fn from_millis(millis: u64) -> Self {
        Duration {
            micros: millis.saturating_mul(1000),
        }
    }

    /// Make a duration from seconds.
    pub const fn from_secs(secs: u64) -> Self {
        Duration {
            micros: secs.saturating_mul(1_000_000),
        }
    }

    /// Return the duration in microseconds.
    pub const fn total_micros(self) -> u64 {
        self.micros
    }

    /// Return the duration in whole milliseconds.
    pub const fn total_millis(self) -> u64 {
        self.micros / 1000
    }

    /// Double the duration, saturating, but never beyond `max`.
    pub fn doubled_up_to(self, max: Duration) -> Duration {
        Duration {
            micros: self.micros.saturating_mul(2).min(max.micros),
        }
    }
}

impl Add<Duration> for Instant {
    type Output = Instant;
    fn add(self, rhs: Duration) -> Instant {
        Instant {
            micros: self.micros.saturating_add(rhs.micros),
        }
    }
}

impl AddAssign<Duration> for Instant {
    fn add_assign(&mut self, rhs: Duration) {
        *self = *self + rhs;
    }
}

impl Sub<Instant> for Instant {
    type Output = Duration;
    fn sub(self, rhs: Instant) -> Duration {
        self.saturating_duration_since(rhs)
    }
}

impl Add for Duration {
    type Output = Duration;
    fn add(self, rhs: Duration) -> Duration {
        Duration {
            micros: self.micros.saturating_add(rhs.micros),
        }
    }
}

impl core::fmt::Display for Duration {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "{}.{:03} ms", self.micros / 1000, self.micros % 1000)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arithmetic_saturates_instead_of_panicking() {
        let t = Instant::from_micros(u64::MAX - 1) + Duration::from_secs(1);
        assert_eq!(t.total_micros(), u64::MAX);
        assert_eq!(Instant::ZERO - Instant::from_millis(5), Duration::ZERO);
        assert_eq!(
            Duration::from_millis(40).doubled_up_to(Duration::from_millis(50)),
            Duration::from_millis(50)
        );
        assert_eq!(Duration::from_micros(1500).to_string_for_test(), "1.500 ms");
    }

    trait ForTest {
        fn to_string_for_test(&self) -> heapless::String<32>;
    }
    impl ForTest for Duration {
        fn to_string_for_test(&self) -> heapless::String<32> {
            use core::fmt::Write;
            let mut s = heapless::String::new();
            write!(s, "{self}").unwrap();
            s
        }
    }
}
