//! The loud fallback: when the switch path cannot serve the job, the communicator
//! all-reduces over a host ring among the ranks instead ([`switchml_ring`]), and says so.
//!
//! It is on when a fallback address is configured ([`CommConfig::fallback`],
//! `SWITCHML_FALLBACK_ADDR`): the ranks meet there when they connect. It triggers when
//! joining the switch fails in a way the switch, not the configuration, is to blame for
//! (no such job, no room for it, unreachable, a join that never completes) and when a
//! tensor's switch path fails mid-job (a stalled slot, a restarted or stopped switch, a
//! peer that gave up). Once on the ring, a communicator stays there (sticky): a switch that
//! failed once is not trusted with the next tensor, and every rank must take the same path
//! for the same tensor.
//!
//! The tensor that failed, and any others in flight, are redone from a copy of their input
//! taken at submission (the switch path reduces in place), unless some rank finished them
//! through the switch: then that rank's result is adopted by all (the core's
//! [`switchml_core::fallback::Plan`]; the trigger, too, is the core's
//! [`switchml_core::fallback::falls_back`]).
//! The cost while on the switch: one copy of every tensor at submission and one of every
//! result at completion, and the results of as many tensors as were ever in flight at once.
//!
//! Loud: one `log::warn!` per switch-to-ring transition naming the failure (its rank, lane,
//! slot or missing ranks), and [`FallbackStats`] in the communicator.
//!
//! [`CommConfig::fallback`]: crate::CommConfig::fallback

mod transition;

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};

use switchml_core::fallback::Failure;
use switchml_core::quant::Op;

use switchml_ring::{Ring, Values};

use crate::config::CommConfig;
use crate::error::Error;
use crate::part::{Element, Submission};

/// What the fallback has done, for the communicator's stats.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FallbackStats {
    /// A fallback address is configured: the ranks met there and can fall back.
    pub enabled: bool,
    /// Tensors go through the host ring now.
    pub active: bool,
    /// Switch-to-ring transitions (0 or 1: the fallback is sticky).
    pub fallbacks: u64,
    /// Why the communicator fell back (or will, at its first tensor): the switch path's
    /// error.
    pub reason: Option<String>,
    /// Tensors all-reduced over the ring (redone from their inputs, or later).
    pub tensors: u64,
    /// Their bytes.
    pub bytes: u64,
    /// Tensors in flight at the transition that took another rank's switch result.
    pub adopted: u64,
    /// Connections to this rank's rendezvous or ring listener closed before they proved
    /// the job key: another job's, a stranger's, silent or malformed ones.
    pub refused: u64,
}

/// Return whether a failure of the switch path should send the job to the ring: the
/// core's rule ([`switchml_core::fallback::falls_back`]) over this library's errors.
pub(crate) fn falls_back(e: &Error) -> bool {
    switchml_core::fallback::falls_back(match e {
        Error::SwitchUnreachable { .. } => Failure::SwitchUnreachable,
        Error::LaneGone { .. } => Failure::LaneGone,
        Error::Timeout { .. } => Failure::TimedOut,
        Error::Worker { error, .. } => Failure::Worker(error),
        _ => Failure::Other,
    })
}

/// The fallback of one communicator.
pub(crate) struct Fallback {
    state: Mutex<State>,
}

enum Mode {
    /// Tensors go to the switch.
    Switch,
    /// The switch failed at connect; the transition runs at the first tensor.
    Failed(String),
    /// Tensors go through the ring.
    Ring,
}

struct Entry {
    /// The input (or, once finished, the result).
    values: Values,
    /// The lanes' work, for an `allreduce_async` tensor.
    submission: Option<Arc<Submission>>,
    /// Whether the switch path finished it, once known.
    finished: Option<bool>,
    /// The operation it was submitted with.
    op: Op,
}

struct State {
    ring: Ring,
    mode: Mode,
    /// The next tensor's number.
    next: u64,
    inflight: BTreeMap<u64, Entry>,
    /// Finished results kept for a transition, oldest first.
    history: VecDeque<(u64, Values)>,
    /// The most tensors ever in flight at once.
    most_inflight: usize,
    /// A buffer to reuse for the next input copy.
    spare: Option<Values>,
    /// Results the transition gave tensors in flight, until their caller takes them.
    recovered: BTreeMap<u64, Result<Values, Error>>,
    stats: FallbackStats,
}

impl Fallback {
    /// Meet the other ranks at the fallback address, if one is configured.
    pub(crate) fn open(config: &CommConfig) -> Result<Option<Arc<Fallback>>, Error> {
        let Some(at) = config.fallback else {
            return Ok(None);
        };
        if config.key == 0 {
            // Key 0 is everyone's: the handshake then keeps out other jobs, not strangers.
            log::warn!(
                "rank {}: the fallback ring at {at} runs without a job key \
                 (SWITCHML_JOB_KEY): anyone who can reach its ports can take a rank's place",
                config.rank
            );
        }
        let ring = Ring::connect(&config.ring(), at)?;
        let refused = ring.refused;
        log::info!(
            "rank {}: fallback ring ready (rendezvous at {at}): if the switch fails, tensors go over TCP among the ranks",
            config.rank
        );
        let state = State {
            ring,
            mode: Mode::Switch,
            next: 0,
            inflight: BTreeMap::new(),
            history: VecDeque::new(),
            most_inflight: 1,
            spare: None,
            recovered: BTreeMap::new(),
            stats: FallbackStats {
                enabled: true,
                refused,
                ..FallbackStats::default()
            },
        };
        Ok(Some(Arc::new(Fallback {
            state: Mutex::new(state),
        })))
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The switch could not be joined: fall back at the first tensor.
    pub(crate) fn switch_failed(&self, error: &Error) {
        let reason = format!("joining the switch failed: {error}");
        let mut s = self.lock();
        s.stats.reason = Some(reason.clone());
        s.mode = Mode::Failed(reason);
    }

    /// Return the stats.
    pub(crate) fn stats(&self) -> FallbackStats {
        self.lock().stats.clone()
    }

    /// All-reduce `data` through `switch`, or over the ring once the switch has failed.
    pub(crate) fn allreduce<T: Element>(
        &self,
        data: &mut [T],
        op: Op,
        switch: impl FnOnce(&mut [T]) -> Result<(), Error>,
    ) -> Result<(), Error> {
        let mut s = self.lock();
        if let Some(done) = s.ring_path(data, op) {
            return done;
        }
        let n = s.number();
        s.register(n, data, op);
        drop(s);
        let outcome = switch(data);
        let mut s = self.lock();
        match outcome {
            Ok(()) => {
                s.finish(n, |v| v.copy_from(T::elements(data)));
                Ok(())
            }
            Err(e) if falls_back(&e) => {
                s.mark(n, false);
                if let Err(ring) = s.transition(&e.to_string()) {
                    // The caller gets its input back, as after any refused tensor.
                    if let Some(entry) = s.inflight.remove(&n) {
                        entry.values.write_to(T::elements(data));
                    }
                    return Err(ring);
                }
                s.take_recovered(n, T::elements(data))
            }
            Err(e) => {
                s.inflight.remove(&n);
                Err(e)
            }
        }
    }

    /// Start an all-reduce of `data` through `switch`; once on the ring, do it now.
    /// Return its submission and, while the switch works on it, its number, which
    /// [`Fallback::finish_async`] takes with the outcome.
    pub(crate) fn allreduce_async<T: Element>(
        &self,
        mut data: Vec<T>,
        op: Op,
        switch: impl FnOnce(Vec<T>) -> Arc<Submission>,
    ) -> (Arc<Submission>, Option<u64>) {
        let mut s = self.lock();
        if let Some(done) = s.ring_path(&mut data, op) {
            let owner: Box<dyn std::any::Any + Send> = Box::new(data);
            let submission = match done {
                Ok(()) => Submission::new(0, Some(owner)),
                Err(e) => Submission::refused(e, Some(owner)),
            };
            return (submission, None);
        }
        let n = s.number();
        s.register(n, &mut data, op);
        drop(s);
        let submission = switch(data);
        let mut s = self.lock();
        if let Some(e) = s.inflight.get_mut(&n) {
            e.submission = Some(Arc::clone(&submission));
        }
        (submission, Some(n))
    }

    /// The switch path of `allreduce_async` tensor `n` ended with `outcome`; return its
    /// result, from the ring if need be.
    pub(crate) fn finish_async<T: Element>(
        &self,
        n: u64,
        outcome: Result<(), Error>,
        data: Result<Vec<T>, Error>,
    ) -> Result<Vec<T>, Error> {
        let mut data = data?;
        let mut s = self.lock();
        let switch_failed = matches!(s.mode, Mode::Switch | Mode::Failed(_))
            && matches!(&outcome, Err(e) if falls_back(e));
        if switch_failed {
            s.mark(n, false);
            let reason = outcome
                .as_ref()
                .err()
                .map(Error::to_string)
                .unwrap_or_default();
            s.transition(&reason)?;
        }
        if s.recovered.contains_key(&n) {
            s.take_recovered(n, T::elements(&mut data))?;
            return Ok(data);
        }
        match outcome {
            Ok(()) => {
                s.finish(n, |v| v.copy_from(T::elements(&mut data)));
                Ok(data)
            }
            Err(e) => {
                s.inflight.remove(&n);
                Err(e)
            }
        }
    }
}

impl State {
    fn number(&mut self) -> u64 {
        self.next += 1;
        self.next - 1
    }

    /// On the ring (after the transition, if it is due), all-reduce the next tensor there;
    /// `None` while the switch serves.
    fn ring_path<T: Element>(&mut self, data: &mut [T], op: Op) -> Option<Result<(), Error>> {
        if let Mode::Failed(reason) = &self.mode {
            // Before this tensor is numbered: no rank has it in flight yet.
            let reason = reason.clone();
            if let Err(e) = self.transition(&reason) {
                return Some(Err(e));
            }
        }
        if !matches!(self.mode, Mode::Ring) {
            return None;
        }
        let n = self.number();
        let mut v = self.copy(data);
        let outcome = self.reduce(n, &mut v, op);
        v.write_to(T::elements(data));
        self.spare = Some(v);
        Some(outcome)
    }

    /// Copy `data`, into the spare buffer if it fits.
    fn copy<T: Element>(&mut self, data: &mut [T]) -> Values {
        if let Some(mut v) = self.spare.take() {
            if v.copy_from(T::elements(data)) {
                return v;
            }
        }
        Values::copy_of(T::elements(data))
    }

    /// All-reduce tensor `n` over the ring, counted.
    fn reduce(&mut self, n: u64, v: &mut Values, op: Op) -> Result<(), Error> {
        self.stats.tensors += 1;
        self.stats.bytes += (v.len() * v.width()) as u64;
        Ok(self.ring.allreduce(n, v, op)?)
    }

    /// Keep a copy of tensor `n`'s input while the switch works on it.
    fn register<T: Element>(&mut self, n: u64, data: &mut [T], op: Op) {
        let values = self.copy(data);
        self.inflight.insert(
            n,
            Entry {
                values,
                submission: None,
                finished: None,
                op,
            },
        );
        self.most_inflight = self.most_inflight.max(self.inflight.len());
    }

    /// Record whether the switch path finished tensor `n`.
    fn mark(&mut self, n: u64, finished: bool) {
        if let Some(e) = self.inflight.get_mut(&n) {
            e.finished = Some(finished);
        }
    }

    /// Tensor `n` finished through the switch: keep its result (`copy` fills the entry's
    /// buffer) for a transition, as long as one may need it.
    fn finish(&mut self, n: u64, copy: impl FnOnce(&mut Values) -> bool) {
        let Some(mut e) = self.inflight.remove(&n) else {
            return;
        };
        if matches!(self.mode, Mode::Ring) || !copy(&mut e.values) {
            return;
        }
        self.history.push_back((n, e.values));
        let keep = self.most_inflight.min(crate::lane::QUEUE);
        while self.history.len() > keep {
            self.spare = self.history.pop_front().map(|(_, v)| v);
        }
    }

    /// Hand tensor `n`'s result from the transition to its caller.
    fn take_recovered(
        &mut self,
        n: u64,
        data: switchml_core::quant::Elements<'_>,
    ) -> Result<(), Error> {
        match self.recovered.remove(&n) {
            Some(Ok(v)) => {
                v.write_to(data);
                Ok(())
            }
            Some(Err(e)) => Err(e),
            None => Err(Error::Config(format!(
                "fallback: tensor {n} has no result from the ring"
            ))),
        }
    }
}
