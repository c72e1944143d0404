//! The one place where smoltcp's time and the core's meet. Both count microseconds from an
//! origin the firmware picks (its boot); smoltcp's are signed, ours never go below zero.

use smoltcp::time::Instant as NetInstant;
use switchml_core::time::Instant;

/// Convert the core's instant to smoltcp's.
pub fn to_net(t: Instant) -> NetInstant {
    NetInstant::from_micros(i64::try_from(t.total_micros()).unwrap_or(i64::MAX))
}

/// Convert smoltcp's instant to the core's (before the origin: the origin).
pub fn from_net(t: NetInstant) -> Instant {
    Instant::from_micros(u64::try_from(t.total_micros()).unwrap_or(0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_clamp() {
        let t = Instant::from_micros(1_234_567);
        assert_eq!(from_net(to_net(t)), t);
        assert_eq!(from_net(NetInstant::from_micros(-5)), Instant::ZERO);
        assert_eq!(
            to_net(Instant::from_micros(u64::MAX)).total_micros(),
            i64::MAX
        );
    }
}
