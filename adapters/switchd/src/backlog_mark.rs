//! The daemon's congestion signal (issue 29): its socket's send backlog, the bytes its
//! Results still hold in the egress queues toward the workers
//! ([`switchml_udp::backlog::send_backlog`], which says why that queue), read before each
//! batch and compared with one threshold (`switchml switch --mark-backlog BYTES`).
//!
//! The rule is DCTCP's: mark while the instantaneous queue is above one threshold K. It
//! reacts within a batch, keeps no average, and a controller that counts the marked
//! fraction (ATP, DCTCP) gets the queue's excess from it. The daemon counts the batches it
//! handled while above (`congested_batches`); the switch marks what it counts during them.

/// Whether the backlog is above the threshold, sample by sample (no state between them:
/// DCTCP's instantaneous rule).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BacklogMark {
    threshold: usize,
}

impl BacklogMark {
    /// Mark while more than `threshold` bytes are queued.
    pub fn new(threshold: usize) -> BacklogMark {
        BacklogMark { threshold }
    }

    /// Take a sample of `queued` bytes; return whether to mark until the next.
    pub fn sample(&self, queued: usize) -> bool {
        queued > self.threshold
    }

    /// Return the threshold in bytes.
    pub fn threshold(&self) -> usize {
        self.threshold
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn it_marks_while_the_backlog_is_above_the_threshold_and_stops_when_it_drains() {
        let m = BacklogMark::new(64 << 10);
        assert!(!m.sample(0));
        assert!(!m.sample(64 << 10), "at the threshold is not above it");
        assert!(m.sample((64 << 10) + 1));
        assert!(!m.sample(1000));
        assert_eq!(m.threshold(), 64 << 10);
    }
}
