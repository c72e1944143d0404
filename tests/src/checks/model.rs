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
//! This crate cannot name the model: `switchml-p4model` depends on it (for the golden vector
//! loader). So the comparison is an argument, and the fuzz target and the corpus replay
//! (`tests/tests/fuzz_corpus.rs`) both pass `switchml_p4model::equivalence::run`, which does
//! the comparing. [`switch::SwitchOp::RestartJob`] sends nothing and is skipped: that
//! comparison has no job removal.

use std::fmt::Debug;

use crate::checks::switch::{self, Step};

/// Pool slots of both switches: exactly those of [`switch::JOBS`].
pub const SLOTS: usize = 5;

/// Decode fuzz bytes as a `switch_sequence` input and return the datagrams it sends, in
/// order, replays included.
pub fn datagrams(bytes: &[u8]) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    switch::play(&switch::decode_ops(bytes), |step| {
        if let Step::Send(datagram) = step {
            out.push(datagram.to_vec());
        }
    });
    out
}

/// Decode fuzz bytes and have `compare` run the datagrams through the model and the
/// reference; panic with its mismatch and the datagrams if it finds one.
pub fn check_model<E: Debug>(bytes: &[u8], compare: impl FnOnce(&[&[u8]]) -> Result<(), E>) {
    let datagrams = datagrams(bytes);
    let packets: Vec<&[u8]> = datagrams.iter().map(Vec::as_slice).collect();
    if let Err(mismatch) = compare(&packets) {
        let listing: String = packets
            .iter()
            .enumerate()
            .map(|(i, p)| format!("\n  {i}: {p:02x?}"))
            .collect();
        panic!("the P4 model and the reference switch differ: {mismatch:?}\ndatagrams:{listing}");
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
    #[should_panic(expected = "differ: \"verdict\"")]
    fn a_difference_fails_the_check() {
        let bytes = switch::encode_ops(&[contribution()]);
        check_model(&bytes, |packets| match packets {
            [_] => Err("verdict"),
            _ => Ok(()),
        });
    }
}
