//! The aggregator pool: slots × 2 shadow versions (protocol.md §4).
//!
//! The caller owns the storage (`&mut [Slot]`), so a firmware build can put it in a
//! `static` and a host build on the heap; nothing here allocates. The value kernels (load,
//! add, store: big-endian int32) run through `switchml_dispatch`, so that an x86-64 host
//! with AVX2 swaps bytes eight lanes wide (`vpshufb`) although the build is baseline.

use switchml_dispatch::dispatch;

use crate::ranks::RankSet;
use crate::wire::Flags;

/// One version of one slot: the state of one *use* of the slot.
#[derive(Clone)]
pub struct SlotVersion<const K: usize, const WORDS: usize> {
    /// Whether any use has begun since the job was set up.
    pub(crate) used: bool,
    /// The session of the job run whose use this version holds (protocol.md §4.1): a use
    /// of an earlier run counts as idle, so a new run needs no reset of the pool.
    pub(crate) session: u32,
    /// The use number this version holds.
    pub(crate) seq: u32,
    /// Ranks that contributed to this use.
    pub(crate) seen: RankSet<WORDS>,
    /// Contributions still missing; 0 = complete.
    pub(crate) remaining: u16,
    /// Maximum biased exponent over the contributions.
    pub(crate) exp: u8,
    /// The Result's sticky flags ([`Flags::STICKY`]): `OVERFLOW` if an addition
    /// overflowed int32, and the non-finite kinds ORed from the contributions (§5.4) —
    /// one OR register, as in the P4 programs.
    pub(crate) flags: Flags,
    /// Values per contribution, fixed by the use's first contribution.
    pub(crate) count: u16,
    /// A child switch's job (protocol.md §7): whether `values` hold the parent's Result
    /// (the final sum) rather than this switch's partial sum.
    pub(crate) relayed: bool,
    /// A child switch's job: resends of this use received while the parent's Result is
    /// awaited (one in `n` goes up again, §7).
    pub(crate) resends: u16,
    /// The running sum.
    pub(crate) values: [i32; K],
}

impl<const K: usize, const WORDS: usize> SlotVersion<K, WORDS> {
    /// A version no use has touched.
    pub const IDLE: Self = SlotVersion {
        used: false,
        session: 0,
        seq: 0,
        seen: RankSet::EMPTY,
        remaining: 0,
        exp: 0,
        flags: Flags(0),
        count: 0,
        relayed: false,
        resends: 0,
        values: [0; K],
    };

    /// Return whether the use held has every contribution (false when idle; the use may
    /// be of an earlier run of the job, see [`SlotVersion::in_session`]).
    pub fn is_complete(&self) -> bool {
        self.used && self.remaining == 0
    }

    /// Return the use number held.
    pub fn seq(&self) -> u32 {
        self.seq
    }

    /// Return the ranks seen for the use held.
    pub fn seen(&self) -> &RankSet<WORDS> {
        &self.seen
    }

    /// Return the number of contributions still missing.
    pub fn remaining(&self) -> u16 {
        self.remaining
    }

    /// Return the maximum exponent byte.
    pub fn exp(&self) -> u8 {
        self.exp
    }

    /// Return whether an addition overflowed.
    pub fn overflowed(&self) -> bool {
        self.flags.contains(Flags::OVERFLOW)
    }

    /// Return the flags the use's Result carries (`OVERFLOW` and the non-finite kinds).
    pub fn flags(&self) -> Flags {
        self.flags
    }

    /// Return whether a child switch holds its parent's Result for this use (§7).
    pub fn relayed(&self) -> bool {
        self.relayed
    }

    /// Return the aggregated values of the use held.
    pub fn values(&self) -> &[i32] {
        &self.values[..(self.count as usize).min(K)]
    }

    /// Return whether this version holds a use of the run with `session`.
    pub fn in_session(&self, session: u32) -> bool {
        self.used && self.session == session
    }

    /// Begin use `seq` of the run `session` for a job of `world` ranks with `count` values
    /// per contribution.
    pub(crate) fn begin(&mut self, session: u32, seq: u32, world: u16, count: u16) {
        self.used = true;
        self.session = session;
        self.seq = seq;
        self.seen = RankSet::EMPTY;
        self.remaining = world;
        self.exp = 0;
        self.flags = Flags(0);
        self.count = count;
        self.relayed = false;
        self.resends = 0;
    }
}

/// One aggregator slot: two shadow versions.
#[derive(Clone)]
pub struct Slot<const K: usize, const WORDS: usize> {
    pub(crate) versions: [SlotVersion<K, WORDS>; 2],
}

impl<const K: usize, const WORDS: usize> Slot<K, WORDS> {
    /// A slot no job has used.
    pub const IDLE: Self = Slot {
        versions: [SlotVersion::IDLE, SlotVersion::IDLE],
    };

    /// Return version `ver` (0 or 1; anything else reads as 1).
    pub fn version(&self, ver: u8) -> &SlotVersion<K, WORDS> {
        &self.versions[usize::from(ver & 1)]
    }
}

impl<const K: usize, const WORDS: usize> Default for Slot<K, WORDS> {
    fn default() -> Self {
        Self::IDLE
    }
}

/// Overwrite `dst` with the big-endian values in `src` (the first contribution of a use).
pub(crate) fn load(dst: &mut [i32], src: &[u8]) {
    dispatch(
        #[inline(always)]
        || {
            for (d, s) in dst.iter_mut().zip(src.chunks_exact(4)) {
                *d = i32::from_be_bytes([s[0], s[1], s[2], s[3]]);
            }
        },
    )
}

/// Add the big-endian values in `src` into `dst` with wrapping arithmetic; return whether
/// any addition overflowed. Branch-free so that it vectorizes.
pub(crate) fn accumulate(dst: &mut [i32], src: &[u8]) -> bool {
    dispatch(
        #[inline(always)]
        || {
            let mut overflow = 0i32;
            for (d, s) in dst.iter_mut().zip(src.chunks_exact(4)) {
                let x = i32::from_be_bytes([s[0], s[1], s[2], s[3]]);
                let r = d.wrapping_add(x);
                // Signed overflow: both operands have the sign the result lacks.
                overflow |= (*d ^ r) & (x ^ r);
                *d = r;
            }
            overflow < 0
        },
    )
}

/// Write `src` as big-endian values into `dst`.
pub(crate) fn store(src: &[i32], dst: &mut [u8]) {
    dispatch(
        #[inline(always)]
        || {
            for (s, d) in src.iter().zip(dst.chunks_exact_mut(4)) {
                d.copy_from_slice(&s.to_be_bytes());
            }
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accumulate_detects_overflow_both_ways() {
        let mut acc = [i32::MAX, i32::MIN, 5];
        let src: [u8; 12] = {
            let mut b = [0u8; 12];
            store(&[1, 0, -7], &mut b);
            b
        };
        assert!(accumulate(&mut acc, &src));
        assert_eq!(acc, [i32::MIN, i32::MIN, -2]);
        let mut acc = [i32::MIN, 3];
        let mut b = [0u8; 8];
        store(&[-1, 4], &mut b);
        assert!(accumulate(&mut acc, &b));
        assert_eq!(acc, [i32::MAX, 7]);
        let mut acc = [i32::MAX - 1, -5];
        store(&[1, -6], &mut b);
        assert!(!accumulate(&mut acc, &b));
        assert_eq!(acc, [i32::MAX, -11]);
    }

    #[test]
    fn load_and_store_are_big_endian() {
        let mut v = [0i32; 2];
        load(&mut v, &[0, 0, 1, 2, 0xff, 0xff, 0xff, 0xfe]);
        assert_eq!(v, [0x0102, -2]);
        let mut b = [0u8; 8];
        store(&v, &mut b);
        assert_eq!(b, [0, 0, 1, 2, 0xff, 0xff, 0xff, 0xfe]);
    }
}
