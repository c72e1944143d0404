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
use switchml_core::wire::{
    DataKind, DataRepr, Flags, JoinRepr, LeaveRepr, Message, ProbeFlags, ProbeRepr, StatusRepr,
};
use switchml_tests::scenarios::{outcome, switch_for, Scenario, KEY, LARGE_MAX_COUNT};

/// The bed's name (and stem of its replay files).
pub const NAME: &str = "multi_pass_four_ranks";
const JOB: u16 = 7;
const RANKS: u16 = 4;

/// The nonce of rank `r`'s process; rank 0's first Join opens the run with it.
const fn nonce(r: u16) -> u32 {
    0x2222_2222 * (r as u32 + 1)
}
const SESSION: u32 = nonce(0);

fn bytes(m: Message) -> Vec<u8> {
    let mut b = vec![0u8; m.buffer_len()];
    // Every message here is built valid; an emit error would leave zeros, which the
    // reference then drops as Malformed and the bed's checks would show.
    let _ = m.emit(&mut b);
    b
}

/// Rank `r`'s `k` values for a use: distinct per rank and position.
fn values(r: u16, k: usize) -> Vec<i32> {
    (0..k as i32).map(|i| 1000 * i32::from(r) + i).collect()
}

fn contribution(rank: u16, slot: u16, values: &[i32]) -> Vec<u8> {
    let payload: Vec<u8> = values.iter().flat_map(|v| v.to_be_bytes()).collect();
    let repr = DataRepr {
        kind: DataKind::Contribution,
        job: JOB,
        rank,
        slot,
        ver: 0,
        flags: Flags::default(),
        count: values.len() as u16,
        seq: 0,
        exp: 128 + rank as u8,
        session: SESSION,
    };
    bytes(Message::Data(repr, &payload))
}

/// Rank `r`'s Contribution of its `k` values to `slot`.
fn c(r: u16, slot: u16, k: usize) -> Vec<u8> {
    contribution(r, slot, &values(r, k))
}

/// A Probe for use 0 of `slot`. Without `ProbeFlags::RESULT`: the programs answer a Probe
/// with a ProbeReply only (the reference refuses the flag unless it offers PROBE_RESULTS).
fn probe(rank: u16, slot: u16) -> Vec<u8> {
    bytes(Message::Probe(ProbeRepr {
        job: JOB,
        rank,
        slot,
        ver: 0,
        seq: 0,
        session: SESSION,
        flags: ProbeFlags::NONE,
    }))
}

/// The datagrams of the bed, in order.
fn inputs() -> Vec<Vec<u8>> {
    let join = |rank| {
        bytes(Message::Join(JoinRepr {
            job: JOB,
            rank,
            world: RANKS,
            slot_lo: 0,
            slot_count: 8,
            count: LARGE_MAX_COUNT as u16,
            lanes: 1,
            nonce: nonce(rank),
            key: KEY,
        }))
    };
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
    steps.push(contribution(0, 2, &overflow));
    steps.push(c(2, 2, 256));
    steps.extend(uses(3, 17, &[1, 2, 3]));
    steps.extend([probe(1, 3), c(0, 3, 17)]);
    steps.extend(uses(4, 16, &[0, 1, 2, 3, 3]));
    for rank in [1, 2] {
        steps.push(bytes(Message::Status(StatusRepr { job: JOB, rank })));
    }
    for rank in [2, 0, 3, 1] {
        steps.push(bytes(Message::Leave(LeaveRepr {
            job: JOB,
            rank,
            session: SESSION,
        })));
    }
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
