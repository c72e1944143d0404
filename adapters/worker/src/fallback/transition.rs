//! The switch-to-ring transition: every tensor in flight ends, the ranks agree on each
//! (the core's [`switchml_core::fallback::Plan`]), and each is adopted from a rank that
//! finished it through the switch or reduced over the ring from the inputs.

use super::{Mode, State};
use crate::error::Error;
use switchml_core::fallback::{Plan, Record, RecordView, Step};
use switchml_core::quant::Op;
use switchml_ring::Values;

impl State {
    /// Leave the switch for the ring: agree with every rank on the tensors in flight
    /// ([`Plan`]), finish them, and send every later tensor to the ring.
    pub(super) fn transition(&mut self, reason: &str) -> Result<(), Error> {
        let first = self.inflight.keys().next().copied().unwrap_or(self.next);
        log::warn!(
            "rank {}: FALLBACK to the host ring all-reduce from tensor {first} on: {reason}; \
             every later tensor goes over the ring too (fallback stats: fallbacks, fallback_tensors)",
            self.ring.rank
        );
        self.mode = Mode::Ring;
        self.stats.active = true;
        self.stats.fallbacks += 1;
        self.stats.reason = Some(reason.to_string());
        // Every tensor in flight ends (the lanes' own failure detection bounds the wait).
        for e in self.inflight.values_mut() {
            if let (None, Some(sub)) = (e.finished, &e.submission) {
                let ok = matches!(sub.wait(None), Some(Ok(())));
                let result = sub.peek_owner(Values::of_owner).flatten();
                match (ok, result) {
                    (true, Some(v)) => {
                        e.values = v;
                        e.finished = Some(true);
                    }
                    _ => e.finished = Some(false),
                }
            }
        }
        let failed: Vec<u64> = self
            .inflight
            .iter()
            .filter(|(_, e)| e.finished != Some(true))
            .map(|(&n, _)| n)
            .collect();
        let mut held: Vec<u64> = self.history.iter().map(|(n, _)| *n).collect();
        held.extend(
            self.inflight
                .iter()
                .filter(|(_, e)| e.finished == Some(true))
                .map(|(&n, _)| n),
        );
        let mine = Record {
            first_incomplete: failed.first().copied().unwrap_or(self.next),
            next: self.next,
            failed: &failed,
            held: &held,
        };
        let mut encoded = vec![0u8; mine.buffer_len()];
        mine.emit(&mut encoded)
            .map_err(|e| Error::Config(format!("fallback: this rank's record: {e}")))?;
        let all = self.ring.allgather(encoded)?;
        let records = all
            .iter()
            .enumerate()
            .map(|(rank, bytes)| {
                RecordView::parse(bytes).map_err(|_| {
                    Error::Config(format!("fallback: rank {rank}'s record is malformed"))
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        let mine = records[usize::from(self.ring.rank)];
        let plan = Plan::new(&records);
        let steps = plan
            .steps()
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| Error::Config(format!("fallback: {e}")))?;
        // This rank's own failed tensors past the plan: over the ring after it, in order.
        let rest: Vec<u64> = plan.after(&mine).collect();
        for step in steps {
            self.run(step, &mine)?;
        }
        for n in rest {
            self.run(Step::Reduce { tensor: n }, &mine)?;
        }
        self.inflight.clear();
        self.history.clear();
        Ok(())
    }

    /// Do one step of the plan; a tensor this rank had failed gets its result recovered.
    fn run(&mut self, step: Step, mine: &RecordView<'_>) -> Result<(), Error> {
        let (n, adopt_from) = match step {
            Step::Adopt { tensor, root } => (tensor, Some(root)),
            Step::Reduce { tensor } => (tensor, None),
        };
        let held = self
            .history
            .iter()
            .find(|(t, _)| *t == n)
            .map(|(_, v)| v.clone());
        let mut v = match (held, self.inflight.get(&n)) {
            (Some(v), _) => v,
            (None, Some(e)) => e.values.clone(),
            (None, None) => {
                return Err(Error::Config(format!(
                    "fallback: tensor {n} is neither in flight nor held at rank {}",
                    self.ring.rank
                )))
            }
        };
        let outcome = match adopt_from {
            Some(root) => {
                if root != self.ring.rank && !mine.finished(n) {
                    self.stats.adopted += 1;
                }
                self.ring.broadcast(n, root, &mut v).map_err(Error::from)
            }
            // The copy is of the input: the ring applies the tensor's op to it.
            None => {
                let op = self.inflight.get(&n).map_or(Op::Sum, |e| e.op);
                self.reduce(n, &mut v, op)
            }
        };
        match outcome {
            Err(e @ Error::Overflow { .. }) => {
                self.recovered.insert(n, Err(e));
            }
            Err(e) => return Err(e),
            Ok(()) if mine.failed.contains(n) => {
                self.recovered.insert(n, Ok(v));
            }
            Ok(()) => {}
        }
        Ok(())
    }
}
