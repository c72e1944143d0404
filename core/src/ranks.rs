//! Sets of ranks: the switch's seen and joined bitmaps, and the worker's "who is missing".
//!
//! A `RankSet<WORDS>` holds ranks `0..64·WORDS`. On the wire (JoinReply, ProbeReply) a set
//! is `ceil(world/8)` bytes, rank `r` at bit `r mod 8` of byte `r / 8` (docs/protocol.md §3.3).

/// The largest world size the protocol carries: 128 bitmap bytes.
pub const MAX_WORLD: usize = 1024;

/// Bytes of a wire bitmap for `world` ranks.
pub const fn bitmap_len(world: u16) -> usize {
    (world as usize).div_ceil(8)
}

/// A fixed-capacity set of ranks `0..64·WORDS`.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct RankSet<const WORDS: usize> {
    words: [u64; WORDS],
}

/// A rank set big enough for any world the protocol allows.
pub type WorldSet = RankSet<{ MAX_WORLD / 64 }>;

impl<const WORDS: usize> Default for RankSet<WORDS> {
    fn default() -> Self {
        Self::EMPTY
    }
}

impl<const WORDS: usize> RankSet<WORDS> {
    /// The number of ranks a set can hold.
    pub const CAPACITY: usize = 64 * WORDS;
    /// The empty set.
    pub const EMPTY: Self = RankSet { words: [0; WORDS] };

    /// The set `{0, 1, …, world−1}` (clamped to the capacity).
    pub fn all(world: u16) -> Self {
        let mut set = Self::EMPTY;
        let n = (world as usize).min(Self::CAPACITY);
        for (i, word) in set.words.iter_mut().enumerate() {
            let lo = i * 64;
            if n >= lo + 64 {
                *word = u64::MAX;
            } else if n > lo {
                *word = (1u64 << (n - lo)) - 1;
            }
        }
        set
    }

    /// Return whether `rank` is in the set (false beyond the capacity).
    pub fn contains(&self, rank: u16) -> bool {
        let r = rank as usize;
        self.words
            .get(r / 64)
            .is_some_and(|w| w & (1u64 << (r % 64)) != 0)
    }

    /// Add `rank`; return whether it was absent. Ranks beyond the capacity are ignored.
    pub fn insert(&mut self, rank: u16) -> bool {
        let r = rank as usize;
        match self.words.get_mut(r / 64) {
            Some(w) => {
                let bit = 1u64 << (r % 64);
                let absent = *w & bit == 0;
                *w |= bit;
                absent
            }
            None => false,
        }
    }

    /// Remove `rank`.
    pub fn remove(&mut self, rank: u16) {
        let r = rank as usize;
        if let Some(w) = self.words.get_mut(r / 64) {
            *w &= !(1u64 << (r % 64));
        }
    }

    /// Return the number of ranks in the set.
    pub fn len(&self) -> usize {
        self.words.iter().map(|w| w.count_ones() as usize).sum()
    }

    /// Return whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.words.iter().all(|&w| w == 0)
    }

    /// Return the ranks of `0..world` that are not in the set.
    pub fn complement_within(&self, world: u16) -> Self {
        let mut out = Self::all(world);
        for (o, w) in out.words.iter_mut().zip(self.words.iter()) {
            *o &= !w;
        }
        out
    }

    /// Iterate over the ranks in the set, in increasing order.
    pub fn iter(&self) -> impl Iterator<Item = u16> + '_ {
        (0..Self::CAPACITY)
            .filter(move |&r| self.words[r / 64] & (1u64 << (r % 64)) != 0)
            .map(|r| r as u16)
    }

    /// Write the set as a wire bitmap of `out.len()` bytes (ranks beyond it are left out).
    pub fn write_bitmap(&self, out: &mut [u8]) {
        for (i, byte) in out.iter_mut().enumerate() {
            let word = self.words.get(i / 8).copied().unwrap_or(0);
            *byte = (word >> ((i % 8) * 8)) as u8;
        }
    }

    /// Read a wire bitmap (bytes beyond the capacity are ignored).
    pub fn from_bitmap(bytes: &[u8]) -> Self {
        let mut set = Self::EMPTY;
        for (i, &byte) in bytes.iter().enumerate() {
            if let Some(w) = set.words.get_mut(i / 8) {
                *w |= (byte as u64) << ((i % 8) * 8);
            }
        }
        set
    }
}

impl<const WORDS: usize> core::fmt::Debug for RankSet<WORDS> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_set().entries(self.iter()).finish()
    }
}

/// Ranks as a comma-separated list, for error messages: `3, 5, 17`.
impl<const WORDS: usize> core::fmt::Display for RankSet<WORDS> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        for (i, r) in self.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{r}")?;
        }
        Ok(())
    }
}

#[cfg(feature = "defmt")]
impl<const WORDS: usize> defmt::Format for RankSet<WORDS> {
    fn format(&self, f: defmt::Formatter) {
        defmt::write!(f, "{=[?]:x}", self.words[..]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bitmap_layout_matches_the_spec() {
        let mut s = RankSet::<2>::EMPTY;
        s.insert(0);
        s.insert(9);
        s.insert(70);
        let mut bytes = [0u8; 9];
        s.write_bitmap(&mut bytes);
        assert_eq!(bytes, [0x01, 0x02, 0, 0, 0, 0, 0, 0, 0x40]);
        assert_eq!(RankSet::<2>::from_bitmap(&bytes), s);
    }

    #[test]
    fn all_and_complement() {
        let all = RankSet::<2>::all(70);
        assert_eq!(all.len(), 70);
        assert!(all.contains(69) && !all.contains(70));
        let mut seen = RankSet::<2>::EMPTY;
        seen.insert(1);
        seen.insert(68);
        let missing = seen.complement_within(70);
        assert_eq!(missing.len(), 68);
        assert!(!missing.contains(1) && missing.contains(0) && !missing.contains(68));
        assert_eq!(RankSet::<1>::all(64).len(), 64);
        assert_eq!(RankSet::<1>::all(500).len(), 64);
    }

    #[test]
    fn out_of_capacity_ranks_are_ignored() {
        let mut s = RankSet::<1>::EMPTY;
        assert!(!s.insert(64));
        assert!(!s.contains(64));
        s.remove(1000);
        assert!(s.is_empty());
        assert!(s.insert(3));
        assert!(!s.insert(3));
        assert_eq!(s.iter().collect::<heapless::Vec<u16, 4>>(), [3]);
    }
}
