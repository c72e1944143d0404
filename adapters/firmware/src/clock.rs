//! Where the firmware's time comes from.
//!
//! The worker and smoltcp both need a monotonic clock in microseconds. A board offers one
//! of two things:
//!
//! - a free-running counter (a timer peripheral, a NIC's counter, a cycle counter): wrap
//!   it in [`TickClock`], which extends its 32 bits to 64 as long as it is read at least
//!   once per wrap;
//! - only a way to wait (an `embedded_hal::delay::DelayNs`): [`DelayClock`] makes a clock
//!   of it by waiting a fixed step at every reading and counting the steps. It counts the
//!   waiting and not the work between readings, so it runs slow: timers fire late, never
//!   early, which costs throughput after a loss but never correctness.

use embedded_hal::delay::DelayNs;
use switchml_core::time::Instant;

/// A monotonic clock: each reading is at or after the previous one.
pub trait Clock {
    /// Return the time since the clock's origin.
    fn now(&mut self) -> Instant;
}

/// A free-running counter that counts up at [`TickSource::HZ`] and wraps at 2^32.
pub trait TickSource {
    /// Ticks per second.
    const HZ: u32;
    /// Return the current count.
    fn ticks(&mut self) -> u32;
}

/// A [`Clock`] over a wrapping 32-bit [`TickSource`]; its origin is its creation.
pub struct TickClock<T> {
    source: T,
    last: u32,
    total: u64,
}

impl<T: TickSource> TickClock<T> {
    /// Start counting from the source's current count.
    pub fn new(mut source: T) -> Self {
        let last = source.ticks();
        TickClock {
            source,
            last,
            total: 0,
        }
    }

    /// Return the tick source.
    pub fn source(&mut self) -> &mut T {
        &mut self.source
    }
}

impl<T: TickSource> Clock for TickClock<T> {
    fn now(&mut self) -> Instant {
        let t = self.source.ticks();
        self.total += u64::from(t.wrapping_sub(self.last));
        self.last = t;
        let hz = u64::from(T::HZ);
        Instant::from_micros(self.total / hz * 1_000_000 + self.total % hz * 1_000_000 / hz)
    }
}

/// A [`Clock`] for a board that only offers a delay: every reading first waits `step`
/// microseconds, then counts them.
pub struct DelayClock<D> {
    delay: D,
    step_us: u32,
    now: Instant,
}

impl<D: DelayNs> DelayClock<D> {
    /// A clock that advances by `step_us` microseconds (at least 1) per reading.
    pub fn new(delay: D, step_us: u32) -> Self {
        DelayClock {
            delay,
            step_us: step_us.max(1),
            now: Instant::ZERO,
        }
    }
}

impl<D: DelayNs> Clock for DelayClock<D> {
    fn now(&mut self) -> Instant {
        self.delay.delay_us(self.step_us);
        self.now += switchml_core::time::Duration::from_micros(u64::from(self.step_us));
        self.now
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Counter(u32);
    impl TickSource for Counter {
        const HZ: u32 = 25_000_000;
        fn ticks(&mut self) -> u32 {
            self.0
        }
    }

    #[test]
    fn tick_clock_extends_across_wraps() {
        let mut clock = TickClock::new(Counter(u32::MAX - 24));
        assert_eq!(clock.now(), Instant::ZERO);
        clock.source().0 = 25; // 50 ticks later, across the wrap: 2 µs
        assert_eq!(clock.now(), Instant::from_micros(2));
        for _ in 0..3 {
            // three wraps of 2^32 ticks, read at every half
            clock.source().0 = clock.source().0.wrapping_add(1 << 31);
            clock.now();
            clock.source().0 = clock.source().0.wrapping_add(1 << 31);
            clock.now();
        }
        let ticks = 50 + 3 * (1u64 << 32);
        assert_eq!(clock.now().total_micros(), ticks / 25);
    }

    #[derive(Default)]
    struct Waits(u64);
    impl DelayNs for Waits {
        fn delay_ns(&mut self, ns: u32) {
            self.0 += u64::from(ns);
        }
    }

    #[test]
    fn delay_clock_counts_its_waits() {
        let mut clock = DelayClock::new(Waits::default(), 50);
        assert_eq!(clock.now(), Instant::from_micros(50));
        assert_eq!(clock.now(), Instant::from_micros(100));
        assert_eq!(clock.delay.0, 100_000);
    }
}
