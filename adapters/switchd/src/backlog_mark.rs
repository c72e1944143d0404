//! The daemon's congestion signal (issue 29): its socket's send backlog, the bytes its
//! Results still hold in the egress queues toward the workers
//! ([`switchml_udp::backlog::send_backlog`], which says why that queue), read before each
//! batch and compared with one threshold (`switchml switch --mark-backlog BYTES`).
//!
//! The rule is DCTCP's: mark while the instantaneous queue is above one threshold K. It
//! reacts within a batch, keeps no average, and a controller that counts the marked
//! fraction (ATP, DCTCP) gets the queue's excess from it. The daemon counts the batches it
//! handled while above (`congested_batches`); the switch marks what it counts during them
//! (`Endpoint::set_congested`, protocol.md §6.3), and the daemon counts the Results that
//! went out marked (`results_marked`).

use switchml_core::wire;

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

/// Whether `bytes`, a multicast from the switch, is a Result marked `CONGESTED` (§6.3);
/// a control multicast (JoinReply, Abort) is not a Result.
pub(crate) fn carries_mark(bytes: &[u8]) -> bool {
    let result = wire::peek(bytes).is_ok_and(|(t, _, _)| t == wire::MessageType::Result);
    result
        && wire::DataPacket::new_checked(bytes)
            .is_ok_and(|p| p.flags().contains(wire::Flags::CONGESTED))
}

#[cfg(test)]
mod tests {
    use super::*;
    use wire::{DataKind, DataPacket, DataRepr, Flags};

    fn message(kind: DataKind, flags: Flags) -> Vec<u8> {
        let repr = DataRepr {
            kind,
            job: 1,
            rank: wire::RANK_ALL,
            slot: 3,
            ver: 0,
            flags,
            count: 4,
            seq: 1,
            exp: 127,
            session: 9,
        };
        let mut bytes = vec![0u8; repr.buffer_len()];
        repr.emit(&mut DataPacket::new_unchecked(&mut bytes[..]));
        bytes
    }

    #[test]
    fn only_a_result_with_the_congested_bit_counts_as_marked() {
        let marked = Flags::CONGESTED.with(Flags::OVERFLOW);
        assert!(carries_mark(&message(DataKind::Result, marked)));
        assert!(!carries_mark(&message(DataKind::Result, Flags::OVERFLOW)));
        assert!(!carries_mark(&message(DataKind::Contribution, marked)));
        assert!(!carries_mark(&[0u8; 3]));
    }

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
