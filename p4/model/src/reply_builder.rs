//! `reply_builder.p4`: rewrites the packet into the switch's answer — Result, JoinReply,
//! ProbeReply, StatusReply or Abort — through `switchml_core::wire`'s `emit`, so the bytes are the
//! reference's by construction of the header layout, not by a second copy of it.
//!
//! Bitmaps are the 64-bit register words laid out as protocol.md §3.3 says: rank `r` at
//! bit `r mod 8` of byte `r / 8`, `ceil(world/8)` bytes, which is the word's little-endian
//! byte order.

use switchml_core::ranks::bitmap_len;
use switchml_core::wire::{
    AbortPacket, AbortReason, AbortRepr, DataKind, DataPacket, DataRepr, Flags, JoinFlags,
    JoinReplyPacket, JoinReplyRepr, ProbeReplyPacket, ProbeReplyRepr, StatusCounters, StatusFlags,
    StatusReplyPacket, StatusReplyRepr,
};

use crate::headers::DataHeader;
use crate::probe_handler::SlotReport;
use crate::run_tracker::Shape;

/// The answer builder; it knows the switch's epoch.
#[derive(Debug, Clone, Copy)]
pub struct ReplyBuilder {
    epoch: u32,
}

/// A Result's fields besides the values, which the processors already wrote.
#[derive(Debug, Clone, Copy)]
pub struct ResultFields {
    /// Destination rank (`RANK_ALL` for multicast).
    pub rank: u16,
    /// Flags.
    pub flags: Flags,
    /// The use's count.
    pub count: u16,
    /// The use's exponent.
    pub exp: u8,
}

fn bitmap(word: u64, world: u16) -> ([u8; 8], usize) {
    (word.to_le_bytes(), bitmap_len(world).min(8))
}

impl ReplyBuilder {
    /// Make a builder announcing `epoch`.
    pub fn new(epoch: u32) -> Self {
        ReplyBuilder { epoch }
    }

    /// Return the epoch.
    pub fn epoch(&self) -> u32 {
        self.epoch
    }

    /// Write the Result header answering contribution `d` of `job`; return its length.
    pub fn result(&self, out: &mut [u8], job: u16, d: &DataHeader, f: ResultFields) -> usize {
        let repr = DataRepr {
            kind: DataKind::Result,
            job,
            rank: f.rank,
            slot: d.slot,
            ver: d.ver,
            flags: f.flags,
            count: f.count,
            seq: d.seq,
            exp: f.exp,
            session: d.session,
        };
        let len = repr.buffer_len();
        repr.emit(&mut DataPacket::new_unchecked(&mut out[..len]));
        len
    }

    /// Write a JoinReply of run `session` answering the Join of `nonce`, whose lane shape
    /// (`lane_slots`, `count`) is the run's (the run tracker refused any other); return its
    /// length.
    #[allow(clippy::too_many_arguments)]
    pub fn join_reply(
        &self,
        out: &mut [u8],
        job: u16,
        rank: u16,
        world: u16,
        complete: bool,
        max_count: u16,
        slot_count: u16,
        session: u32,
        nonce: u32,
        shape: Shape,
        joined: u64,
    ) -> usize {
        let (bytes, n) = bitmap(joined, world);
        let repr = JoinReplyRepr {
            job,
            rank,
            world,
            shards: 0,
            flags: if complete {
                JoinFlags::COMPLETE
            } else {
                JoinFlags::default()
            },
            max_count,
            epoch: self.epoch,
            slot_count,
            session,
            nonce,
            lane_slots: shape.lane_slots,
            count: shape.count,
            joined: &bytes[..n],
        };
        let len = repr.buffer_len();
        repr.emit(&mut JoinReplyPacket::new_unchecked(&mut out[..len]));
        len
    }

    /// Write a ProbeReply about `slot` version `ver`; return its length.
    #[allow(clippy::too_many_arguments)]
    pub fn probe_reply(
        &self,
        out: &mut [u8],
        job: u16,
        rank: u16,
        slot: u16,
        ver: u8,
        report: SlotReport,
        world: u16,
    ) -> usize {
        let (bytes, n) = bitmap(report.seen, world);
        let repr = ProbeReplyRepr {
            job,
            rank,
            slot,
            ver,
            state: report.state,
            remaining: report.remaining,
            seq: report.seq,
            epoch: self.epoch,
            world,
            seen: &bytes[..n],
        };
        let len = repr.buffer_len();
        repr.emit(&mut ProbeReplyPacket::new_unchecked(&mut out[..len]));
        len
    }

    /// Write a StatusReply about `job`; return its length. The P4 program writes zero
    /// `counters` (see `status_handler.rs`).
    #[allow(clippy::too_many_arguments)]
    pub fn status_reply(
        &self,
        out: &mut [u8],
        job: u16,
        rank: u16,
        world: u16,
        flags: StatusFlags,
        slot_count: u16,
        counters: StatusCounters,
        joined: u64,
    ) -> usize {
        let (bytes, n) = bitmap(joined, world);
        let repr = StatusReplyRepr {
            job,
            rank,
            world,
            flags,
            shards: 0,
            slot_count,
            epoch: self.epoch,
            counters,
            joined: &bytes[..n],
        };
        let len = repr.buffer_len();
        repr.emit(&mut StatusReplyPacket::new_unchecked(&mut out[..len]));
        len
    }

    /// Write an Abort to `rank` of `job` naming run `session` (or 0); return its length.
    pub fn abort(
        &self,
        out: &mut [u8],
        job: u16,
        rank: u16,
        reason: AbortReason,
        detail: u16,
        session: u32,
    ) -> usize {
        let repr = AbortRepr {
            job,
            rank,
            reason,
            detail,
            epoch: self.epoch,
            session,
        };
        let len = repr.buffer_len();
        repr.emit(&mut AbortPacket::new_unchecked(&mut out[..len]));
        len
    }
}
