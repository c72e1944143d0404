//! Where a new job's slots go: the lowest range of the pool that no job holds (first fit).
//! Every switch (the reference, the P4 model behind its control plane) places jobs the same
//! way, so a job set up in the same order lands on the same slots everywhere.

use super::ControlPlane;

/// Return the first slot of the lowest range of `slots` free slots in `switch`'s pool, or
/// `None` when no range that long is free. Allocation-free: the candidates are slot 0 and
/// the end of every job's range, each checked against every job (a switch holds few).
pub fn first_free_range<G: ControlPlane>(switch: &G, slots: u16) -> Option<u32> {
    let pool = u32::try_from(switch.pool_len()).unwrap_or(u32::MAX);
    let want = u32::from(slots);
    let range = |id| {
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
}
