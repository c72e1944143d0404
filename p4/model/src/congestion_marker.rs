//! `congestion_marker.p4` (egress): mark a Result `CONGESTED` when the egress queue of the
//! port it leaves by was deep (protocol.md §6.3), as ATP's switch marks what its queues
//! delay. The depth is the traffic manager's at enqueue (`enq_qdepth`: packets on BMv2,
//! 80-byte cells on Tofino 1), which the model takes from [`EgressQueues`]; the threshold is
//! table `congestion_threshold`'s default action parameter (`set_threshold`), control-plane
//! state, 0 (never) by default.
//!
//! Only a data Result is marked, copy by copy: each replica of a multicast Result by the
//! depth of its own port. The bit is outside the values, so every rank still takes the
//! same sum; a marked rank halves its own window, and since a use completes only when every
//! rank has sent it, that paces the whole job. The slot version's flags register is not
//! touched: a stored Result sent again is marked by the depth it leaves by then.

use switchml_core::wire::data::{DataPacket, Flags};
use switchml_core::wire::{self, MessageType};

/// The largest depth `enq_qdepth` reports: a 19-bit field on both targets.
pub const MAX_DEPTH: u32 = (1 << 19) - 1;

/// The egress marker and its one piece of state, table `congestion_threshold`.
#[derive(Debug, Clone, Copy, Default)]
pub struct CongestionMarker {
    /// The `set_threshold` action's `depth` (bit<19>): mark above it; 0 never marks.
    threshold: u32,
}

impl CongestionMarker {
    /// Set table `congestion_threshold`'s default action to `set_threshold(depth)`. A depth
    /// past [`MAX_DEPTH`] is taken as [`MAX_DEPTH`]: no queue reports more, so both never
    /// mark.
    pub fn set_threshold(&mut self, depth: u32) {
        self.threshold = depth.min(MAX_DEPTH);
    }

    /// Return the threshold (0: never mark).
    pub fn threshold(&self) -> u32 {
        self.threshold
    }

    /// Whether a copy enqueued at depth `enq_qdepth` is marked.
    pub fn deep(&self, enq_qdepth: u32) -> bool {
        self.threshold != 0 && enq_qdepth.min(MAX_DEPTH) > self.threshold
    }

    /// The egress control on one copy of an answer: OR `CONGESTED` into `datagram`'s flags
    /// if it is a Result and its queue was deeper than the threshold; anything else is left
    /// as it is.
    pub fn apply(&self, enq_qdepth: u32, datagram: &mut [u8]) {
        if !self.deep(enq_qdepth) {
            return;
        }
        if !matches!(wire::peek(datagram), Ok((MessageType::Result, _, _))) {
            return;
        }
        if let Ok(mut result) = DataPacket::new_checked(datagram) {
            let flags = result.flags().with(Flags::CONGESTED);
            result.set_flags(flags);
        }
    }
}

/// The traffic manager's egress queues as the egress sees them: each port's depth when a
/// packet is enqueued to it (`enq_qdepth`). The model has no time and no queues of its
/// own, so the depth of a port is whatever whoever drives it last set (0 until then).
#[derive(Debug, Clone, Default)]
pub struct EgressQueues {
    depths: Vec<u32>,
}

impl EgressQueues {
    /// Say that packets enqueued to `port` from now on find `depth` ahead of them.
    pub fn set_depth(&mut self, port: u16, depth: u32) {
        let i = usize::from(port);
        if i >= self.depths.len() {
            self.depths.resize(i + 1, 0);
        }
        self.depths[i] = depth.min(MAX_DEPTH);
    }

    /// Return the depth a packet enqueued to `port` finds.
    pub fn depth(&self, port: u16) -> u32 {
        self.depths.get(usize::from(port)).copied().unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use switchml_core::wire::data::{DataKind, DataRepr, HEADER_LEN};

    fn message(kind: DataKind) -> Vec<u8> {
        let r = DataRepr {
            kind,
            job: 7,
            rank: 0xFFFF,
            slot: 1,
            ver: 1,
            flags: Flags::NAN,
            count: 2,
            seq: 3,
            exp: 4,
            session: 5,
        };
        let mut b = vec![0u8; HEADER_LEN + 8];
        r.emit(&mut DataPacket::new_unchecked(&mut b[..]));
        b
    }

    fn flags(b: &[u8]) -> Flags {
        DataPacket::new_unchecked(b).flags()
    }

    #[test]
    fn a_result_above_the_threshold_is_marked_and_keeps_its_other_flags() {
        let mut m = CongestionMarker::default();
        m.set_threshold(16);
        let mut r = message(DataKind::Result);
        let before = r.clone();
        m.apply(17, &mut r);
        assert_eq!(flags(&r), Flags::NAN.with(Flags::CONGESTED));
        assert_eq!(r[..9], before[..9]);
        assert_eq!(r[10..], before[10..]);
    }

    #[test]
    fn at_or_below_the_threshold_or_at_threshold_zero_nothing_is_marked() {
        let mut m = CongestionMarker::default();
        for (threshold, depth) in [(16, 16), (16, 0), (0, MAX_DEPTH), (0, 1)] {
            m.set_threshold(threshold);
            let mut r = message(DataKind::Result);
            m.apply(depth, &mut r);
            assert_eq!(r, message(DataKind::Result), "{threshold} {depth}");
        }
    }

    #[test]
    fn a_contribution_is_never_marked() {
        let mut m = CongestionMarker::default();
        m.set_threshold(1);
        let mut c = message(DataKind::Contribution);
        m.apply(MAX_DEPTH, &mut c);
        assert_eq!(c, message(DataKind::Contribution));
    }

    #[test]
    fn a_threshold_past_the_field_never_marks() {
        let mut m = CongestionMarker::default();
        m.set_threshold(u32::MAX);
        assert_eq!(m.threshold(), MAX_DEPTH);
        assert!(!m.deep(u32::MAX));
    }

    #[test]
    fn queues_read_zero_until_set() {
        let mut q = EgressQueues::default();
        assert_eq!(q.depth(3), 0);
        q.set_depth(3, 40);
        assert_eq!((q.depth(3), q.depth(2), q.depth(400)), (40, 0, 0));
    }
}
