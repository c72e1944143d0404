//! Log lines on the packet path, rate-limited: a [`LogLimit`] lets at most a few lines of
//! one kind through per second, and the next line that gets through says how many were
//! left out. The switch daemon's log and the worker's lanes' log keep one per kind of
//! problem; their counters still count
//! every one. The limiter takes the time as an argument, so tests drive its clock.

use std::fmt;
use std::time::{Duration, Instant};

/// Lines of each kind of problem per [`WINDOW`].
pub const BURST: u32 = 5;
/// The window of [`BURST`].
pub const WINDOW: Duration = Duration::from_secs(1);

/// At most `burst` lines per `window`, counting the ones it holds back.
#[derive(Debug, Clone)]
pub struct LogLimit {
    burst: u32,
    window: Duration,
    window_start: Option<Instant>,
    lines: u32,
    suppressed: u64,
}

impl LogLimit {
    /// Allow `burst` lines in each `window`.
    pub const fn new(burst: u32, window: Duration) -> LogLimit {
        LogLimit {
            burst,
            window,
            window_start: None,
            lines: 0,
            suppressed: 0,
        }
    }

    /// Account for one problem at `now`. Return `Some(n)` if it may be logged, `n` being
    /// how many were held back since the last line, or `None` if it must not be.
    pub fn check(&mut self, now: Instant) -> Option<u64> {
        let fresh = self
            .window_start
            .is_none_or(|start| now.saturating_duration_since(start) >= self.window);
        if fresh {
            self.window_start = Some(now);
            self.lines = 0;
        }
        if self.lines < self.burst {
            self.lines += 1;
            Some(std::mem::take(&mut self.suppressed))
        } else {
            self.suppressed += 1;
            None
        }
    }
}

/// Prints nothing, or how many similar lines were held back.
pub struct Suppressed(pub u64);

impl fmt::Display for Suppressed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            0 => Ok(()),
            n => write!(f, " ({n} similar lines suppressed)"),
        }
    }
}

/// Check `limit` now, and only when lines of `level` are on for `target`, the module that
/// logs them (`module_path!()`); it reads the clock.
pub fn check(limit: &mut LogLimit, level: log::Level, target: &str) -> Option<u64> {
    if log::log_enabled!(target: target, level) {
        limit.check(Instant::now())
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_burst_per_window_then_the_count_of_what_was_held_back() {
        let t0 = Instant::now();
        let at = |ms: u64| t0 + Duration::from_millis(ms);
        let mut limit = LogLimit::new(3, Duration::from_secs(1));
        assert_eq!(limit.check(at(0)), Some(0));
        assert_eq!(limit.check(at(1)), Some(0));
        assert_eq!(limit.check(at(2)), Some(0));
        for ms in 3..103 {
            assert_eq!(limit.check(at(ms)), None);
        }
        // Still the first window.
        assert_eq!(limit.check(at(999)), None);
        // A new window: the first line tells what was held back, once.
        assert_eq!(limit.check(at(1000)), Some(101));
        assert_eq!(limit.check(at(1001)), Some(0));
        assert_eq!(limit.check(at(1002)), Some(0));
        assert_eq!(limit.check(at(1003)), None);
        // After a quiet spell, the count carries over to the next line.
        assert_eq!(limit.check(at(60_000)), Some(1));
    }

    #[test]
    fn a_clock_that_goes_back_stays_in_the_window() {
        let t0 = Instant::now() + Duration::from_secs(10);
        let mut limit = LogLimit::new(1, Duration::from_secs(1));
        assert_eq!(limit.check(t0), Some(0));
        assert_eq!(limit.check(t0 - Duration::from_secs(5)), None);
        assert_eq!(limit.check(t0 + Duration::from_secs(1)), Some(1));
    }

    #[test]
    fn a_zero_burst_logs_nothing_and_counts_everything() {
        let t0 = Instant::now();
        let mut limit = LogLimit::new(0, Duration::from_secs(1));
        for s in 0..5 {
            assert_eq!(limit.check(t0 + Duration::from_secs(s)), None);
        }
    }

    #[test]
    fn suppressed_counts_print_only_when_there_are_some() {
        assert_eq!(Suppressed(0).to_string(), "");
        assert_eq!(Suppressed(7).to_string(), " (7 similar lines suppressed)");
    }
}
