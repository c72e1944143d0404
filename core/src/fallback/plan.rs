//! How the ranks agree, at the switch-to-ring transition, on what each tensor near the
//! failure becomes: every rank must end with the same result for the same tensor.
//!
//! Ranks need not fail on the same tensor: the switch may have multicast a tensor's last
//! Result just before it stopped, reaching one rank and not another, and a rank with
//! tensors in flight (`allreduce_async`) may have finished some and not others. So at the
//! transition every rank sends every other (an all-gather over the ring) a
//! [`Record`](super::Record): the first tensor it has not finished, how many it has
//! submitted, which of those failed, and which finished results it still holds. From the
//! same records every rank computes the same [`Plan`]: a tensor that some rank finished
//! through the switch is *adopted* — the lowest rank that holds its result passes it around
//! the ring, so every rank ends with the switch's result, bit for bit; a tensor that no
//! rank finished is all-reduced over the ring from every rank's copy of its input.
//!
//! Why a rank holds what is needed: a rank finishes tensor `T` through the switch only once
//! every rank has contributed all of `T`, so a rank that has not finished tensor `L < T` has
//! `L ..= T` in flight at once; a rank keeps the results of as many finished tensors as it
//! ever had in flight (one, for blocking all-reduces), and the ranks run the same program.

use super::RecordView;

/// What every rank does with one tensor near the failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Step {
    /// Rank `root` finished it through the switch and passes its result around.
    Adopt {
        /// The tensor.
        tensor: u64,
        /// The lowest rank that holds its result.
        root: u16,
    },
    /// No rank finished it: all-reduce it over the ring from the inputs.
    Reduce {
        /// The tensor.
        tensor: u64,
    },
}

/// Why the ranks cannot agree on a tensor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Unagreed {
    /// The tensor.
    pub tensor: u64,
    /// A rank that finished it through the switch.
    pub rank: u16,
}

impl core::fmt::Display for Unagreed {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(
            f,
            "tensor {} finished through the switch at rank {}, but no rank kept its result \
             (more tensors in flight at some rank than at the others), so the ranks cannot \
             agree on it",
            self.tensor, self.rank
        )
    }
}

/// The plan every rank computes from the same records (indexed by rank): the steps, in
/// tensor order, for the tensors that some rank finished and some did not, and those in
/// between. A rank's own failed tensors past the plan ([`Plan::after`]) are all-reduced
/// over the ring after it, in order, as every later tensor is.
#[derive(Debug, Clone, Copy)]
pub struct Plan<'r, 'a> {
    records: &'r [RecordView<'a>],
    /// The first tensor some rank has not finished.
    lo: u64,
    /// The last tensor some rank finished + 1.
    hi: u64,
}

impl<'r, 'a> Plan<'r, 'a> {
    /// Plan from every rank's record, indexed by rank.
    pub fn new(records: &'r [RecordView<'a>]) -> Plan<'r, 'a> {
        let lo = records
            .iter()
            .map(|r| r.first_incomplete)
            .min()
            .unwrap_or(0);
        let hi = records.iter().map(|r| r.finished_end()).max().unwrap_or(0);
        Plan { records, lo, hi }
    }

    /// Return the steps, in tensor order; a tensor the ranks cannot agree on is an error
    /// (and the caller runs no step: collect them first).
    pub fn steps(&self) -> impl Iterator<Item = Result<Step, Unagreed>> + 'r {
        let records = self.records;
        (self.lo..self.hi).map(move |tensor| {
            let holder = records.iter().position(|r| r.held.contains(tensor));
            let finisher = records.iter().position(|r| r.finished(tensor));
            match (holder, finisher) {
                (Some(root), _) => Ok(Step::Adopt {
                    tensor,
                    root: rank_of(root),
                }),
                (None, None) => Ok(Step::Reduce { tensor }),
                (None, Some(rank)) => Err(Unagreed {
                    tensor,
                    rank: rank_of(rank),
                }),
            }
        })
    }

    /// Return `mine`'s failed tensors that no step covers: all-reduced over the ring after
    /// the plan, in the order listed.
    pub fn after<'m>(&self, mine: &RecordView<'m>) -> impl Iterator<Item = u64> + 'm {
        let end = if self.lo < self.hi { self.hi } else { 0 };
        mine.failed.iter().filter(move |&t| t >= end)
    }
}

/// A record's index as a rank (the ring has at most `u16::MAX + 1` ranks).
fn rank_of(index: usize) -> u16 {
    u16::try_from(index).unwrap_or(u16::MAX)
}

#[cfg(test)]
mod tests {
    use super::super::Record;
    use super::*;

    /// Encode a record into `buf` and view it.
    fn rec<'b>(
        buf: &'b mut [u8; 128],
        first_incomplete: u64,
        next: u64,
        failed: &[u64],
        held: &[u64],
    ) -> RecordView<'b> {
        let r = Record {
            first_incomplete,
            next,
            failed,
            held,
        };
        let n = r.emit(&mut buf[..]).unwrap();
        RecordView::parse(&buf[..n]).unwrap()
    }

    fn steps(records: &[RecordView<'_>]) -> Result<heapless::Vec<Step, 8>, Unagreed> {
        Plan::new(records).steps().collect()
    }

    #[test]
    fn every_rank_failing_on_the_same_tensor_plans_nothing() {
        let (mut a, mut b) = ([0; 128], [0; 128]);
        let records = [rec(&mut a, 5, 6, &[5], &[4]), rec(&mut b, 5, 6, &[5], &[4])];
        assert_eq!(steps(&records).unwrap(), []);
        let plan = Plan::new(&records);
        assert!(plan.after(&records[0]).eq([5]));
    }

    #[test]
    fn a_rank_ahead_gives_its_switch_result_to_the_others() {
        // Rank 1 got tensor 5's last Result, rank 0 did not; rank 1 failed on 6.
        let (mut a, mut b) = ([0; 128], [0; 128]);
        let records = [rec(&mut a, 5, 6, &[5], &[4]), rec(&mut b, 6, 7, &[6], &[5])];
        assert_eq!(
            steps(&records).unwrap(),
            [Step::Adopt { tensor: 5, root: 1 }]
        );
        let plan = Plan::new(&records);
        assert!(plan.after(&records[0]).eq([]));
        assert!(plan.after(&records[1]).eq([6]));
    }

    #[test]
    fn out_of_order_finishes_adopt_and_reduce_in_tensor_order() {
        // In flight 2..5: rank 0 finished 3, rank 1 finished 2 and 4.
        let (mut a, mut b) = ([0; 128], [0; 128]);
        let records = [
            rec(&mut a, 2, 5, &[2, 4], &[3]),
            rec(&mut b, 3, 5, &[3], &[2, 4]),
        ];
        assert_eq!(
            steps(&records).unwrap(),
            [
                Step::Adopt { tensor: 2, root: 1 },
                Step::Adopt { tensor: 3, root: 0 },
                Step::Adopt { tensor: 4, root: 1 },
            ]
        );
        let records = [
            rec(&mut a, 2, 5, &[2, 3], &[4]),
            rec(&mut b, 2, 5, &[2, 3, 4], &[]),
        ];
        assert_eq!(
            steps(&records).unwrap(),
            [
                Step::Reduce { tensor: 2 },
                Step::Reduce { tensor: 3 },
                Step::Adopt { tensor: 4, root: 0 },
            ]
        );
    }

    #[test]
    fn a_finished_tensor_nobody_holds_is_an_error_naming_it() {
        let (mut a, mut b) = ([0; 128], [0; 128]);
        let records = [rec(&mut a, 5, 6, &[5], &[]), rec(&mut b, 6, 7, &[6], &[])];
        let e = steps(&records).unwrap_err();
        assert_eq!(e, Unagreed { tensor: 5, rank: 1 });
        let mut text = heapless::String::<256>::new();
        core::fmt::write(&mut text, format_args!("{e}")).unwrap();
        assert!(text.starts_with("tensor 5 finished through the switch at rank 1,"));
    }

    #[test]
    fn no_records_plan_nothing() {
        assert_eq!(steps(&[]).unwrap(), []);
    }
}
