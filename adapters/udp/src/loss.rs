//! Loss injection, like SwitchML's `drop_simulator.p4`: each datagram the daemon receives,
//! and each copy it sends, is dropped with probability `rate`, from a seeded generator so
//! that a run can be repeated.

use switchml_core::splitmix::SplitMix64;

/// A seeded Bernoulli dropper (SplitMix64 underneath).
#[derive(Debug, Clone)]
pub struct LossInjector {
    draws: SplitMix64,
    /// Drop threshold on 53-bit uniform draws.
    threshold: u64,
}

impl LossInjector {
    /// Drop with probability `rate` (clamped to 0..=1), drawing from `seed`.
    pub fn new(rate: f64, seed: u64) -> LossInjector {
        let rate = if rate.is_nan() {
            0.0
        } else {
            rate.clamp(0.0, 1.0)
        };
        LossInjector {
            draws: SplitMix64::new(seed),
            threshold: (rate * (1u64 << 53) as f64) as u64,
        }
    }

    /// Return whether to drop the next datagram.
    pub fn lose(&mut self) -> bool {
        self.threshold > 0 && (self.draws.next_u64() >> 11) < self.threshold
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rate_is_respected_and_seeded() {
        let mut a = LossInjector::new(0.05, 42);
        let lost = (0..100_000).filter(|_| a.lose()).count();
        assert!((4_000..6_000).contains(&lost), "{lost}");
        let mut b = LossInjector::new(0.05, 42);
        let mut c = LossInjector::new(0.05, 42);
        assert!((0..1000).all(|_| b.lose() == c.lose()));
        let mut never = LossInjector::new(0.0, 1);
        assert!((0..1000).all(|_| !never.lose()));
        let mut always = LossInjector::new(1.0, 1);
        assert!((0..1000).all(|_| always.lose()));
    }
}
