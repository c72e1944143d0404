//! A child switch's link to its parent (protocol.md §7): where a job sits in a tree
//! ([`Tier`]), what a child knows of its parent ([`ParentLink`]), and the messages it sends
//! up. Apart from the rest of `tier.rs` (the switch's handling of what comes down), so that
//! the job table and the switch's data path can name these without naming that code.

use crate::switch::pool::{self, SlotVersion};
use crate::switch::verdict::{DropReason, Verdict};
use crate::wire::{DataKind, DataPacket, DataRepr, Flags, JoinPacket, JoinRepr};

/// Where a job sits in a tree of switches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Tier {
    /// An ordinary job: its ranks are workers, its Results go to them.
    #[default]
    Flat,
    /// The parent of child switches: its ranks are children, and a Contribution's
    /// `OVERFLOW` flag (a child's partial sum overflowed) is carried into the Result.
    Parent,
    /// A child: its ranks are a range of the whole job's, its sums go to the parent.
    Child(ParentLink),
}

/// What a child switch's job knows of the whole job and of its parent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct ParentLink {
    /// Ranks in the whole job: the world size the workers state and quantize with.
    pub world: u16,
    /// The first global rank served here: member `i` of the child's job is rank
    /// `rank_lo + i` (the job's `world` says how many).
    pub rank_lo: u16,
    /// The parent's job id.
    pub job: u16,
    /// This child's rank in the parent's job.
    pub member: u16,
    /// The parent job's world size: the number of children.
    pub members: u16,
    /// The parent job's key, for this child's Join there.
    pub key: u64,
}

impl ParentLink {
    /// Write this child's Join to the parent, for the lane of the worker Join `j`, with
    /// the child's run's session as its nonce; return its length.
    /// The Join carries a tag under the parent job's key and no cookie: the endpoint in
    /// front puts in the parent's cookie and signs again (§4.2), as a P4 switch's controller
    /// does.
    pub(crate) fn emit_join(&self, j: &JoinRepr, session: u32, out: &mut [u8]) -> Option<usize> {
        let repr = JoinRepr {
            job: self.job,
            rank: self.member,
            world: self.members,
            nonce: session,
            cookie: 0,
            ..*j
        }
        .sign(self.key);
        let len = repr.buffer_len();
        repr.emit(&mut JoinPacket::new_unchecked(out.get_mut(..len)?));
        Some(len)
    }

    /// Write this child's Contribution to the parent for use `p` (slot, seq, ver), carrying
    /// the partial sum `values` and exponent `exp` of the parent's run `session`.
    pub(crate) fn emit_contribution(
        &self,
        p: &DataRepr,
        session: u32,
        exp: u8,
        flags: Flags,
        values: &[i32],
        out: &mut [u8],
    ) -> Option<usize> {
        let repr = DataRepr {
            kind: DataKind::Contribution,
            job: self.job,
            rank: self.member,
            flags,
            count: u16::try_from(values.len()).ok()?,
            exp,
            session,
            ..*p
        };
        let len = repr.buffer_len();
        let mut packet = DataPacket::new_unchecked(out.get_mut(..len)?);
        repr.emit(&mut packet);
        pool::store(values, packet.values_mut());
        Some(len)
    }
}

/// Send the use `sv` holds, which answers contribution `p`, up to the parent's run
/// `session` (0: the child has not joined it yet, and sends nothing).
pub(crate) fn up<const K: usize, const WORDS: usize>(
    link: &ParentLink,
    session: u32,
    sv: &SlotVersion<K, WORDS>,
    p: &DataRepr,
    flags: Flags,
    out: &mut [u8],
) -> Verdict {
    if session == 0 {
        return Verdict::Consumed;
    }
    let flags = flags.with(sv.flags);
    match link.emit_contribution(p, session, sv.exp, flags, sv.values(), out) {
        Some(len) => Verdict::Up { job: link.job, len },
        None => Verdict::Drop(DropReason::OutputTooSmall),
    }
}
