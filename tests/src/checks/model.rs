//! The model check: the P4 model (`switchml-p4model`) and the reference switch, fed the
//! same datagrams, must agree on everything — every verdict, every answer byte, the
//! counters after every datagram, and at the end every register of every slot version.
//!
//! The P4 programs can only be checked through their Rust twin, and the twin only against
//! the reference: a difference is a bug in one of the two (or in the spec both follow). The
//! datagrams are those of a `switch_sequence` input ([`switch::decode_ops`], [`switch::play`]),
//! so the two targets share their corpora and a reproducer of one runs in the other.
//! The switches are set up alike: the jobs of [`switch::JOBS`] in a pool of [`SLOTS`] slots,
//! announcing [`switch::EPOCH`].
//!
//! This crate cannot name the model's harness: `switchml-p4model-harness` depends on it (for
//! the golden vector loader). So the comparison is an argument, and the fuzz target and the
//! corpus replay (`tests/tests/fuzz_corpus.rs`) both call
//! `switchml_p4model_harness::equivalence::check_switch_sequence`,
//! which does the comparing. The reference holds [`switch::K`] values a slot and the model
//! takes counts up to as many, so counts one above (`CountTooLarge`) come often.
//!
//! [`switch::SwitchOp::RestartJob`] sends nothing; here it stands for the control plane's
//! three ways to act on the first job's run ([`ControlOp`]), in turn: the `n`-th
//! `RestartJob` of a sequence (from 0) removes the job and adds it again when `n mod 3` is
//! 0, ends its run with Abort `Shutdown` when 1, and ends it silently (an idle run, as the
//! endpoint does) when 2. The corpora of the two targets stay shared.

use std::fmt::Debug;

use crate::checks::switch::{self, Step};

/// Pool slots of both switches: exactly those of [`switch::JOBS`].
pub const SLOTS: usize = 5;

/// What the control plane does to the first job of [`switch::JOBS`] in the model
/// comparison.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ControlOp {
    /// Remove the job and add it again.
    RestartJob,
    /// End its run with Abort `Shutdown` (the switch stops).
    ShutdownRun,
    /// End its run without a word (it was idle).
    EndRun,
}

/// One step of the model comparison.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ModelStep {
    /// This datagram arrives.
    Send(Vec<u8>),
    /// The control plane acts.
    Control(ControlOp),
}

/// Decode fuzz bytes as a `switch_sequence` input and return its steps, in order, replays
/// included, each `RestartJob` standing for a [`ControlOp`] in turn.
pub fn steps(bytes: &[u8]) -> Vec<ModelStep> {
    const TURN: [ControlOp; 3] = [
        ControlOp::RestartJob,
        ControlOp::ShutdownRun,
        ControlOp::EndRun,
    ];
    let mut out = Vec::new();
    let mut controls = 0;
    switch::play(&switch::decode_ops(bytes), |step| match step {
        Step::Send(datagram) => out.push(ModelStep::Send(datagram.to_vec())),
        Step::RestartJob => {
            out.push(ModelStep::Control(TURN[controls % TURN.len()]));
            controls += 1;
        }
    });
    out
}

/// Decode fuzz bytes as a `switch_sequence` input and return the datagrams it sends, in
/// order, replays included.
pub fn datagrams(bytes: &[u8]) -> Vec<Vec<u8>> {
    steps(bytes)
        .into_iter()
        .filter_map(|s| match s {
            ModelStep::Send(datagram) => Some(datagram),
            ModelStep::Control(_) => None,
        })
        .collect()
}

/// Decode fuzz bytes and have `compare` take the steps in the model and the reference;
/// panic with its mismatch and the steps if it finds one.
pub fn check_model<E: Debug>(bytes: &[u8], compare: impl FnOnce(&[ModelStep]) -> Result<(), E>) {
    let steps = steps(bytes);
    if let Err(mismatch) = compare(&steps) {
        let listing: String = steps
            .iter()
            .enumerate()
            .map(|(i, s)| match s {
                ModelStep::Send(p) => format!("\n  {i}: {p:02x?}"),
                ModelStep::Control(c) => format!("\n  {i}: {c:?}"),
            })
            .collect();
        panic!("the P4 model and the reference switch differ: {mismatch:?}\nsteps:{listing}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checks::switch::SwitchOp;

    fn contribution() -> SwitchOp {
        SwitchOp::Contribute {
            job: 0,
            rank: 1,
            slot: 2,
            seq: 3,
            bad_ver: false,
            exp: 4,
            retransmit: false,
            session: 1,
            values: vec![5],
        }
    }

    #[test]
    fn the_datagrams_are_those_of_the_switch_sequence_without_restarts() {
        let ops = [contribution(), SwitchOp::RestartJob, SwitchOp::Replay(0)];
        let mut one = Vec::new();
        switch::datagram(&contribution(), &mut one);
        assert_eq!(datagrams(&switch::encode_ops(&ops)), vec![one.clone(), one]);
    }

    #[test]
    fn restarts_stand_for_the_three_control_plane_actions_in_turn() {
        let ops = vec![SwitchOp::RestartJob; 4];
        let controls: Vec<_> = steps(&switch::encode_ops(&ops))
            .into_iter()
            .map(|s| match s {
                ModelStep::Control(c) => c,
                ModelStep::Send(_) => panic!("a restart sends nothing"),
            })
            .collect();
        use ControlOp::*;
        assert_eq!(controls, [RestartJob, ShutdownRun, EndRun, RestartJob]);
    }

    #[test]
    #[should_panic(expected = "differ: \"verdict\"")]
    fn a_difference_fails_the_check() {
        let bytes = switch::encode_ops(&[contribution()]);
        check_model(&bytes, |steps| match steps {
            [_] => Err("verdict"),
            _ => Ok(()),
        });
    }
}
