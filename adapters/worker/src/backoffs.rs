//! The congestion backoffs a rank's lanes pass each other (protocol.md §6.3, "A rank's
//! lanes are one flow"): the lanes share the rank's path to the switch, so when one halves
//! its window on a mark or a loss, the others halve theirs too.
//!
//! One counter per communicator holds every lane's own backoffs; each lane adds its new
//! ones and follows when the counter holds more than it has accounted for. A backoff
//! followed is not added, so two lanes cannot echo one.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// One lane's view of the rank's backoffs.
#[derive(Debug)]
pub(crate) struct LaneBackoffs {
    all: Arc<AtomicU64>,
    /// This lane's own backoffs added to `all` so far.
    told: u64,
    /// The backoffs in `all` this lane has accounted for: its own and those it followed.
    seen: u64,
}

impl LaneBackoffs {
    /// A lane's view of the counter `all` that the rank's lanes share.
    pub(crate) fn new(all: &Arc<AtomicU64>) -> LaneBackoffs {
        LaneBackoffs {
            all: Arc::clone(all),
            told: 0,
            seen: 0,
        }
    }

    /// `own`: this lane's backoffs so far (its marks and congestion losses). Return
    /// whether another lane backed off since the last call, which this one should follow.
    pub(crate) fn exchange(&mut self, own: u64) -> bool {
        if own > self.told {
            let new = own - self.told;
            self.told = own;
            self.seen += new;
            self.all.fetch_add(new, Ordering::Relaxed);
        }
        let all = self.all.load(Ordering::Relaxed);
        if all > self.seen {
            self.seen = all;
            return true;
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_backoff_reaches_every_other_lane_once_and_never_echoes() {
        let all = Arc::new(AtomicU64::new(0));
        let (mut a, mut b, mut c) = (
            LaneBackoffs::new(&all),
            LaneBackoffs::new(&all),
            LaneBackoffs::new(&all),
        );
        assert!(
            !a.exchange(0) && !b.exchange(0) && !c.exchange(0),
            "nothing yet"
        );
        // Lane a backs off: b and c follow, once; a does not follow itself.
        assert!(!a.exchange(1));
        assert!(b.exchange(0) && c.exchange(0));
        assert!(
            !a.exchange(1) && !b.exchange(0) && !c.exchange(0),
            "no echo"
        );
        // Two lanes back off at once: each follows the other's, the third follows once.
        assert!(!a.exchange(2));
        assert!(b.exchange(1), "b follows a's second");
        assert!(a.exchange(2), "a follows b's");
        assert!(c.exchange(0), "c follows both, once");
        assert!(!a.exchange(2) && !b.exchange(1) && !c.exchange(0));
        assert_eq!(all.load(Ordering::Relaxed), 3);
    }
}
