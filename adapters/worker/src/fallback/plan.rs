//! How the ranks agree, at the switch-to-ring transition, on what each tensor near the
//! failure becomes: every rank must end with the same result for the same tensor.
//!
//! Ranks need not fail on the same tensor: the switch may have multicast a tensor's last
//! Result just before it stopped, reaching one rank and not another, and a rank with
//! tensors in flight (`allreduce_async`) may have finished some and not others. So at the
//! transition every rank sends every other (an all-gather over the ring) a [`Record`]: the
//! first tensor it has not finished, how many it has submitted, which of those failed, and
//! which finished results it still holds. From the same records every rank computes the
//! same [`plan`]: a tensor that some rank finished through the switch is *adopted* — the
//! lowest rank that holds its result passes it around the ring, so every rank ends with
//! the switch's result, bit for bit; a tensor that no rank finished is all-reduced over
//! the ring from every rank's copy of its input.
//!
//! Why a rank holds what is needed: a rank finishes tensor `T` through the switch only once
//! every rank has contributed all of `T`, so a rank that has not finished tensor `L < T` has
//! `L ..= T` in flight at once; a rank keeps the results of as many finished tensors as it
//! ever had in flight (one, for blocking all-reduces), and the ranks run the same program.

use crate::error::Error;

/// One rank's tensors at the transition.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Record {
    /// The first tensor this rank has not finished through the switch.
    pub first_incomplete: u64,
    /// How many tensors it has submitted.
    pub next: u64,
    /// The submitted tensors, from `first_incomplete` on, that did not finish.
    pub failed: Vec<u64>,
    /// The finished tensors whose results it holds.
    pub held: Vec<u64>,
}

/// What every rank does with one tensor near the failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Step {
    /// Rank `root` finished it through the switch and passes its result around.
    Adopt { tensor: u64, root: u16 },
    /// No rank finished it: all-reduce it over the ring from the inputs.
    Reduce { tensor: u64 },
}

impl Record {
    /// Return whether this rank finished `tensor` through the switch.
    pub(crate) fn finished(&self, tensor: u64) -> bool {
        tensor < self.next && !self.failed.contains(&tensor)
    }

    /// Return the last tensor this rank finished + 1 (0 if none).
    fn finished_end(&self) -> u64 {
        (0..self.next)
            .rev()
            .find(|&t| self.finished(t))
            .map_or(0, |t| t + 1)
    }

    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(24 + 8 * (self.failed.len() + self.held.len()));
        out.extend(self.first_incomplete.to_le_bytes());
        out.extend(self.next.to_le_bytes());
        for list in [&self.failed, &self.held] {
            out.extend((list.len() as u32).to_le_bytes());
            list.iter().for_each(|t| out.extend(t.to_le_bytes()));
        }
        out
    }

    pub(crate) fn decode(bytes: &[u8]) -> Option<Record> {
        let mut at = 0;
        let mut take = |n: usize| -> Option<u64> {
            let b = bytes.get(at..at + n)?;
            at += n;
            let mut w = [0u8; 8];
            w[..n].copy_from_slice(b);
            Some(u64::from_le_bytes(w))
        };
        let first_incomplete = take(8)?;
        let next = take(8)?;
        let mut lists = [Vec::new(), Vec::new()];
        for list in &mut lists {
            let n = take(4)?;
            for _ in 0..n {
                list.push(take(8)?);
            }
        }
        let [failed, held] = lists;
        Some(Record {
            first_incomplete,
            next,
            failed,
            held,
        })
    }
}

/// The steps, in tensor order, for the tensors that some rank finished and some did not,
/// and those in between. A rank's own failed tensors past the plan are all-reduced over
/// the ring after it, in order, as every later tensor is.
pub(crate) fn plan(records: &[Record]) -> Result<Vec<Step>, Error> {
    let lo = records
        .iter()
        .map(|r| r.first_incomplete)
        .min()
        .unwrap_or(0);
    let hi = records.iter().map(Record::finished_end).max().unwrap_or(0);
    (lo..hi)
        .map(|tensor| {
            let holder = records.iter().position(|r| r.held.contains(&tensor));
            let finisher = records.iter().position(|r| r.finished(tensor));
            match (holder, finisher) {
                (Some(root), _) => Ok(Step::Adopt {
                    tensor,
                    root: root as u16,
                }),
                (None, None) => Ok(Step::Reduce { tensor }),
                (None, Some(rank)) => Err(Error::Config(format!(
                    "fallback: tensor {tensor} finished through the switch at rank {rank}, \
                     but no rank kept its result (more tensors in flight at some rank than \
                     at the others), so the ranks cannot agree on it"
                ))),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(first_incomplete: u64, next: u64, failed: &[u64], held: &[u64]) -> Record {
        Record {
            first_incomplete,
            next,
            failed: failed.to_vec(),
            held: held.to_vec(),
        }
    }

    #[test]
    fn records_round_trip() {
        let r = rec(4, 9, &[4, 6], &[3, 5]);
        assert_eq!(Record::decode(&r.encode()), Some(r));
        assert_eq!(Record::decode(&[1, 2, 3]), None);
    }

    #[test]
    fn every_rank_failing_on_the_same_tensor_plans_nothing() {
        let r = rec(5, 6, &[5], &[4]);
        assert_eq!(plan(&[r.clone(), r]).unwrap(), []);
    }

    #[test]
    fn a_rank_ahead_gives_its_switch_result_to_the_others() {
        // Rank 1 got tensor 5's last Result, rank 0 did not; rank 1 failed on 6.
        let steps = plan(&[rec(5, 6, &[5], &[4]), rec(6, 7, &[6], &[5])]).unwrap();
        assert_eq!(steps, [Step::Adopt { tensor: 5, root: 1 }]);
    }

    #[test]
    fn out_of_order_finishes_adopt_and_reduce_in_tensor_order() {
        // In flight 2..5: rank 0 finished 3, rank 1 finished 2 and 4.
        let steps = plan(&[rec(2, 5, &[2, 4], &[3]), rec(3, 5, &[3], &[2, 4])]).unwrap();
        assert_eq!(
            steps,
            [
                Step::Adopt { tensor: 2, root: 1 },
                Step::Adopt { tensor: 3, root: 0 },
                Step::Adopt { tensor: 4, root: 1 },
            ]
        );
        let steps = plan(&[rec(2, 5, &[2, 3], &[4]), rec(2, 5, &[2, 3, 4], &[])]).unwrap();
        assert_eq!(
            steps,
            [
                Step::Reduce { tensor: 2 },
                Step::Reduce { tensor: 3 },
                Step::Adopt { tensor: 4, root: 0 },
            ]
        );
    }

    #[test]
    fn a_finished_tensor_nobody_holds_is_an_error_naming_it() {
        let e = plan(&[rec(5, 6, &[5], &[]), rec(6, 7, &[6], &[])]).unwrap_err();
        assert!(e.to_string().contains("tensor 5 finished"), "{e}");
    }
}
