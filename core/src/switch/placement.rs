//! Where a job's slots go: the lowest range of the pool that no job holds (first fit).
//! Every switch (the reference, the P4 model behind its control plane) places jobs the same
//! way, so a job set up in the same order lands on the same slots everywhere.
//!
//! Jobs never share slots, so a job's range is also its bound on the data it has in flight
//! (every rank's `lanes × window` fits in it): on links that two jobs share, each gets
//! bandwidth in proportion to its slots when the queue is common. A [`PoolShare`] is how an
//! operator sets that proportion, and keeps a job that asked for the whole pool from
//! leaving none to the next: the job's range becomes its share of the pool.

use super::ControlPlane;

/// Return the first slot of the lowest range of `slots` free slots in `switch`'s pool, or
/// `None` when no range that long is free. Allocation-free: the candidates are slot 0 and
/// the end of every job's range, each checked against every job (a switch holds few).
pub fn first_free_range<G: ControlPlane>(switch: &G, slots: u16) -> Option<u32> {
    lowest_free(switch, slots, None)
}

/// A job's share of the slot pool, 1 to 100 per cent (`switchml job share ID PERCENT`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PoolShare(u8);

impl PoolShare {
    /// A share of `percent` of the pool; `None` unless 1 ≤ `percent` ≤ 100.
    pub const fn new(percent: u8) -> Option<PoolShare> {
        match percent {
            1..=100 => Some(PoolShare(percent)),
            _ => None,
        }
    }

    /// Return the share in per cent.
    pub const fn percent(self) -> u8 {
        self.0
    }

    /// Return the slots this share is of a pool of `pool_len` slots: rounded down, at least
    /// one (a job with no slot could never run), at most `u16::MAX` (a job's count field).
    pub fn slots_of(self, pool_len: usize) -> u16 {
        let slots = pool_len.saturating_mul(usize::from(self.0)) / 100;
        u16::try_from(slots.max(1)).unwrap_or(u16::MAX)
    }
}

/// Return where job `id` goes when it is given `share` of `switch`'s pool: its first slot
/// and slot count, the range being the lowest free one of that length, with the job's own
/// current range counted as free (the job moves there); `None` when no range that long is
/// free. The caller moves the job, between its runs: a run's ranks address its slots.
pub fn place_share<G: ControlPlane>(switch: &G, id: u16, share: PoolShare) -> Option<(u32, u16)> {
    let slots = share.slots_of(switch.pool_len());
    lowest_free(switch, slots, Some(id)).map(|lo| (lo, slots))
}

/// The first slot of the lowest range of `slots` slots that no job but `moving` holds.
fn lowest_free<G: ControlPlane>(switch: &G, slots: u16, moving: Option<u16>) -> Option<u32> {
    let pool = u32::try_from(switch.pool_len()).unwrap_or(u32::MAX);
    let want = u32::from(slots);
    let range = |id| {
        if Some(id) == moving {
            return None;
        }
        switch.job_snapshot(id).map(|j| {
            (
                j.config.slot_lo,
                j.config.slot_lo + u32::from(j.config.slot_count),
            )
        })
    };
    let fits = |lo: u32| {
        lo.checked_add(want).is_some_and(|hi| hi <= pool)
            && switch
                .job_ids()
                .filter_map(range)
                .all(|(jlo, jhi)| lo + want <= jlo || jhi <= lo)
    };
    core::iter::once(0)
        .chain(switch.job_ids().filter_map(range).map(|(_, hi)| hi))
        .filter(|&lo| fits(lo))
        .min()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::switch::{JobConfig, Slot, Switch};

    fn job(id: u16, slot_lo: u32, slot_count: u16) -> JobConfig {
        JobConfig {
            id,
            world: 2,
            slot_lo,
            slot_count,
            key: 0,
        }
    }

    #[test]
    fn a_job_takes_the_lowest_gap_that_holds_it() {
        let mut pool = [Slot::<4, 1>::IDLE; 100];
        let mut s: Switch<'_, 4, 1, 4> = Switch::new(&mut pool, 1);
        assert_eq!(first_free_range(&s, 40), Some(0));
        s.install_job(job(1, 0, 40)).unwrap();
        s.install_job(job(2, 60, 20)).unwrap();
        // A gap of 20 at 40..60, 20 more at 80..100.
        assert_eq!(first_free_range(&s, 20), Some(40));
        assert_eq!(first_free_range(&s, 21), None);
        s.uninstall_job(1).unwrap();
        assert_eq!(first_free_range(&s, 60), Some(0));
        assert_eq!(first_free_range(&s, 61), None);
        assert_eq!(first_free_range(&s, 0), Some(0));
    }

    #[test]
    fn a_share_is_its_percentage_of_the_pool_rounded_down() {
        assert_eq!(PoolShare::new(0), None);
        assert_eq!(PoolShare::new(101), None);
        let quarter = PoolShare::new(25).unwrap();
        assert_eq!(quarter.percent(), 25);
        assert_eq!(quarter.slots_of(256), 64);
        assert_eq!(quarter.slots_of(255), 63);
        // Never no slot at all, never more than a job's count can say.
        assert_eq!(PoolShare::new(1).unwrap().slots_of(10), 1);
        assert_eq!(PoolShare::new(100).unwrap().slots_of(1 << 20), u16::MAX);
    }

    #[test]
    fn a_shared_job_moves_to_the_lowest_range_its_share_fits_counting_its_own_as_free() {
        let mut pool = [Slot::<4, 1>::IDLE; 100];
        let mut s: Switch<'_, 4, 1, 4> = Switch::new(&mut pool, 1);
        // Job 1 asked for the whole pool: nothing is left for another.
        s.install_job(job(1, 0, 100)).unwrap();
        assert_eq!(first_free_range(&s, 1), None);
        // Given half, it stays at slot 0 (its own range counts as free) and leaves half.
        let half = PoolShare::new(50).unwrap();
        assert_eq!(place_share(&s, 1, half), Some((0, 50)));
        s.uninstall_job(1).unwrap();
        s.install_job(job(1, 0, 50)).unwrap();
        assert_eq!(first_free_range(&s, 50), Some(50));
        s.install_job(job(2, 50, 50)).unwrap();
        // Job 2 cut to 30%: it may not move into job 1's range, so it stays at 50.
        assert_eq!(
            place_share(&s, 2, PoolShare::new(30).unwrap()),
            Some((50, 30))
        );
        // Job 1 cannot grow past job 2; a share that fits nowhere is refused.
        assert_eq!(place_share(&s, 1, PoolShare::new(60).unwrap()), None);
        assert_eq!(
            place_share(&s, 1, PoolShare::new(40).unwrap()),
            Some((0, 40))
        );
        // A job that is not there is placed like a new one: here, no room is left.
        assert_eq!(place_share(&s, 9, PoolShare::new(10).unwrap()), None);
    }
}
