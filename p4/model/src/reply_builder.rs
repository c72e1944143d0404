//! `reply_builder.p4`: rewrites the packet into the switch's answer — Result, JoinReply,
//! ProbeReply, StatusReply or Abort — through `switchml_core::wire`'s `emit`, so the bytes are the
//! reference's by construction of the header layout, not by a second copy of it.
//!
//! Bitmaps are the 64-bit register words laid out as protocol.md §3.3 says: rank `r` at
//! bit `r mod 8` of byte `r / 8`, `ceil(world/8)` bytes, which is the word's little-endian
//! byte order. At a child switch (§7) the word holds members and the bitmap is the whole
//! job's: `rank_lo / 8` zero bytes, then the word shifted left by `rank_lo mod 8` (9 bytes),
//! then zero bytes up to `ceil(world/8)` (at most 128): three header stacks whose validity,
//! not whose contents, depends on the job ([`Members`]).

use switchml_core::ranks::bitmap_len;
use switchml_core::switch::ParentLink;
use switchml_core::wire::{
    AbortPacket, AbortReason, AbortRepr, DataKind, DataPacket, DataRepr, Flags, JoinFlags,
    JoinPacket, JoinReplyPacket, JoinReplyRepr, JoinRepr, ProbeReplyPacket, ProbeReplyRepr,
    StatusCounters, StatusFlags, StatusReplyPacket, StatusReplyRepr, MAX_BITMAP_LEN,
};

use crate::headers::{DataHeader, JoinHeader};
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

/// A bitmap of members as the registers hold it, and where member 0 sits on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Members {
    /// Bit `i`: member `i`.
    pub word: u64,
    /// The global rank of member 0 (0 but at a child).
    pub rank_lo: u16,
}

impl Members {
    /// Members of a job whose member 0 is rank `rank_lo`.
    pub fn new(word: u64, rank_lo: u16) -> Self {
        Members { word, rank_lo }
    }
}

/// Lay `m` out as the bitmap of a job of `world` ranks: lead, body and tail bytes.
fn bitmap(m: Members, world: u16) -> ([u8; MAX_BITMAP_LEN], usize) {
    let mut bytes = [0u8; MAX_BITMAP_LEN];
    let len = bitmap_len(world).min(MAX_BITMAP_LEN);
    let lead = usize::from(m.rank_lo / 8);
    let body = (u128::from(m.word) << (m.rank_lo % 8)).to_le_bytes();
    for (b, v) in bytes.iter_mut().skip(lead).zip(&body[..9]) {
        *b = *v;
    }
    (bytes, len)
}

/// Write a data header of `kind` for `job`'s run `session`, about the use of `d`.
fn data(
    out: &mut [u8],
    kind: DataKind,
    job: u16,
    session: u32,
    d: &DataHeader,
    f: ResultFields,
) -> usize {
    let repr = DataRepr {
        kind,
        job,
        rank: f.rank,
        slot: d.slot,
        ver: d.ver,
        flags: f.flags,
        count: f.count,
        seq: d.seq,
        exp: f.exp,
        session,
    };
    let len = repr.buffer_len();
    repr.emit(&mut DataPacket::new_unchecked(&mut out[..len]));
    len
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
        data(out, DataKind::Result, job, d.session, d, f)
    }

    /// Write the header of a child's Contribution to its parent (protocol.md §7) for the
    /// use contribution `d` completed or resent: the parent's job and run `session`, this
    /// child's member index as rank (`f.rank`); return its length.
    pub fn up(
        &self,
        out: &mut [u8],
        link: &ParentLink,
        session: u32,
        d: &DataHeader,
        f: ResultFields,
    ) -> usize {
        data(out, DataKind::Contribution, link.job, session, d, f)
    }

    /// Write a child's Join to its parent (protocol.md §7): the lane of Join `j`, the
    /// parent's job and world, this child's member index, and the child run's `session`
    /// as nonce, cookie and tag zero for the controller to fill in (`controller.rs`);
    /// return its length.
    pub fn join_up(
        &self,
        out: &mut [u8],
        link: &ParentLink,
        j: &JoinHeader,
        session: u32,
    ) -> usize {
        let repr = JoinRepr {
            job: link.job,
            rank: link.member,
            world: link.members,
            slot_lo: j.slot_lo,
            slot_count: j.slot_count,
            count: j.count,
            lanes: j.lanes,
            nonce: session,
            cookie: 0,
            tag: [0; 16],
        };
        let len = repr.buffer_len();
        repr.emit(&mut JoinPacket::new_unchecked(&mut out[..len]));
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
        joined: Members,
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
        rank_lo: u16,
        session: u32,
    ) -> usize {
        let (bytes, n) = bitmap(Members::new(report.seen, rank_lo), world);
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
            session,
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
        joined: Members,
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
