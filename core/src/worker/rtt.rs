//! The retransmission timeout from measured round trips (RFC 6298's estimator, with Karn's
//! rule: only uses that were never resent give samples).
//!
//! A slot's "round trip" is the time from sending a contribution to receiving the slot's
//! result, which includes waiting for the slowest rank and any queueing on the way. A fixed
//! timeout shorter than that resends packets that were only waiting, and on a shaped link
//! those resends steal bandwidth from the real traffic; one much longer makes real losses
//! slow to recover. The estimate keeps the timeout just above what the job actually sees,
//! never below the configured floor.

use crate::time::Duration;

/// Smoothed round-trip time and its variation.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct RttEstimator {
    srtt: Option<Duration>,
    rttvar: Duration,
}

impl RttEstimator {
    /// Take one sample.
    pub(crate) fn sample(&mut self, rtt: Duration) {
        let r = rtt.total_micros();
        match self.srtt {
            None => {
                self.srtt = Some(rtt);
                self.rttvar = Duration::from_micros(r / 2);
            }
            Some(srtt) => {
                let s = srtt.total_micros();
                let var = self.rttvar.total_micros();
                self.rttvar = Duration::from_micros((3 * var + s.abs_diff(r)) / 4);
                self.srtt = Some(Duration::from_micros((7 * s + r) / 8));
            }
        }
    }

    /// Return the timeout for a fresh use: `srtt + 4·rttvar` within `[floor, ceiling]`, or
    /// `floor` before the first sample.
    pub(crate) fn rto(&self, floor: Duration, ceiling: Duration) -> Duration {
        match self.srtt {
            None => floor,
            Some(srtt) => (srtt + Duration::from_micros(4 * self.rttvar.total_micros()))
                .max(floor)
                .min(ceiling.max(floor)),
        }
    }

    /// Return the smoothed round-trip time, if any sample came.
    pub(crate) fn srtt(&self) -> Option<Duration> {
        self.srtt
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: fn(u64) -> Duration = Duration::from_millis;

    #[test]
    fn follows_the_round_trips_within_its_bounds() {
        let mut e = RttEstimator::default();
        assert_eq!(e.rto(MS(5), MS(200)), MS(5));
        e.sample(MS(20));
        // srtt 20, rttvar 10: 20 + 40.
        assert_eq!(e.rto(MS(5), MS(200)), MS(60));
        for _ in 0..50 {
            e.sample(MS(20));
        }
        assert!(e.rto(MS(5), MS(200)) < MS(21), "{}", e.rto(MS(5), MS(200)));
        assert_eq!(e.rto(MS(30), MS(200)), MS(30), "never below the floor");
        e.sample(MS(1000));
        assert_eq!(e.rto(MS(5), MS(200)), MS(200), "never above the ceiling");
        assert!(e.srtt().unwrap() > MS(100));
    }
}
