//! The bed of four ranks whose uses take several passes (issue 31): every resend, Probe and
//! Status that a multi-pass use draws comes from a rank other than 0 as well as from 0, so
//! a program that sends a later pass's answer anywhere but the port pass 0 came in on
//! (BMv2 zeroes `standard_metadata.ingress_port` on a recirculation) fails the replay. The
//! golden scenarios hid that: in them most resends came from rank 0, on port 0.
//!
//! ```text
//!   job 7, 4 ranks (hosts 0-3), slots 4..12 of 16, chunks of 256, epoch 0xDEADBEEF
//!   slot 0  k =  65   ranks 3 1 0 2, a resend from 1
//!   slot 1  k = 100   2, 2 again (duplicate), 0, 3 with 99 values (count mismatch), 3, 1;
//!                     a resend from 3, Probes from 3 and 2
//!   slot 2  k = 256   ranks 1 3 2 0, rank 0's last value overflows int32; a resend from 2
//!   slot 3  k =  17   ranks 1 2 3, a Probe from 1 while incomplete, 0
//!   slot 4  k =  16   (one pass) ranks 0-3, a resend from 3
//!   Status from 1 and 2, then every rank Leaves (the last Leave ends the run: 2 passes)
//! ```
//!
//! The outcomes are the reference switch's (`switchml_tests::scenarios::outcome`), so the
//! bed is a [`Scenario`] like the golden ones and goes through the same checks.

use switchml_core::switch::JobConfig;
use switchml_tests::scenarios::{outcome, switch_for, Scenario, KEY, LARGE_MAX_COUNT};

use super::datagrams::{contribution, join, leave, probe, status, values};

/// The bed's name (and stem of its replay files).
pub const NAME: &str = "multi_pass_four_ranks";
const JOB: u16 = 7;
const RANKS: u16 = 4;

/// The nonce of rank `r`'s process; rank 0's first Join opens the run with it.
const fn nonce(r: u16) -> u32 {
    0x2222_2222 * (r as u32 + 1)
}
const SESSION: u32 = nonce(0);

/// Rank `r`'s Contribution of its `k` values to `slot`.
fn c(r: u16, slot: u16, k: usize) -> Vec<u8> {
    contribution(JOB, r, slot, SESSION, &values(r, k))
}

/// The datagrams of the bed, in order.
fn inputs() -> Vec<Vec<u8>> {
    let shape = (8, LARGE_MAX_COUNT as u16);
    let join = |rank| join(JOB, rank, RANKS, shape, nonce(rank), KEY);
    let probe = |rank, slot| probe(JOB, rank, slot, SESSION);
    let mut overflow = values(0, 256);
    overflow[255] = i32::MAX;
    // Contributions of `ranks`, in order, of their `k` values to `slot`.
    let uses =
        |slot, k, ranks: &[u16]| -> Vec<Vec<u8>> { ranks.iter().map(|&r| c(r, slot, k)).collect() };
    let mut steps: Vec<Vec<u8>> = (0..RANKS).map(join).collect();
    steps.extend(uses(0, 65, &[3, 1, 0, 2, 1]));
    steps.extend(uses(1, 100, &[2, 2, 0]));
    steps.push(c(3, 1, 99));
    steps.extend(uses(1, 100, &[3, 1, 3]));
    steps.extend([probe(3, 1), probe(2, 1)]);
    steps.extend(uses(2, 256, &[1, 3, 2]));
    steps.push(contribution(JOB, 0, 2, SESSION, &overflow));
    steps.push(c(2, 2, 256));
    steps.extend(uses(3, 17, &[1, 2, 3]));
    steps.extend([probe(1, 3), c(0, 3, 17)]);
    steps.extend(uses(4, 16, &[0, 1, 2, 3, 3]));
    steps.extend([status(JOB, 1, KEY), status(JOB, 2, KEY)]);
    steps.extend([2, 0, 3, 1].map(|rank| leave(JOB, rank, SESSION)));
    steps
}

/// The bed as a scenario: its job, its steps and the reference switch's outcomes.
pub fn scenario() -> Scenario {
    let mut s = Scenario {
        name: NAME.into(),
        meaning: "Four ranks, uses of 65, 100, 256, 17 and 16 values: resends, Probes and \
                  Status from ranks other than 0 answered after several passes"
            .into(),
        job: JobConfig {
            id: JOB,
            world: RANKS,
            slot_lo: 4,
            slot_count: 8,
            key: KEY,
        },
        epoch: 0xDEAD_BEEF,
        max_count: LARGE_MAX_COUNT as u16,
        steps: Vec::new(),
    };
    let mut reference = switch_for(&s);
    s.steps = inputs()
        .into_iter()
        .map(|input| {
            let out = outcome(&mut reference, &input);
            (input, out)
        })
        .collect();
    s
}
