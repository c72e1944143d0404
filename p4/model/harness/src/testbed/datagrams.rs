//! The datagrams the model's own replay beds and tests send ([`super::multi_pass`],
//! [`super::tiered`]): valid messages of one job, built with the core's wire `Repr`s.

use switchml_core::wire::{
    AbortReason, AbortRepr, DataKind, DataRepr, Flags, JoinRepr, LeaveRepr, Message, ProbeFlags,
    ProbeRepr, StatusRepr, RANK_ALL,
};

fn bytes(m: Message) -> Vec<u8> {
    let mut b = vec![0u8; m.buffer_len()];
    // Every message here is built valid; an emit error would leave zeros, which the
    // reference then drops as Malformed and the beds' checks would show.
    let _ = m.emit(&mut b);
    b
}

/// Rank `r`'s `k` values for a use: distinct per rank and position.
pub fn values(r: u16, k: usize) -> Vec<i32> {
    (0..k as i32).map(|i| 1000 * i32::from(r) + i).collect()
}

/// A Join of `rank` to `job` believing in `world` ranks: one lane of `slot_count` slots from
/// 0, chunks of `count`, the process `nonce`.
pub fn join(
    job: u16,
    rank: u16,
    world: u16,
    (slot_count, count): (u16, u16),
    nonce: u32,
    key: u64,
) -> Vec<u8> {
    bytes(Message::Join(
        JoinRepr {
            job,
            rank,
            world,
            slot_lo: 0,
            slot_count,
            count,
            lanes: 1,
            nonce,
            cookie: 0,
            tag: [0; 16],
        }
        .sign(key),
    ))
}

/// A Contribution of `rank` to use 0 of `slot` of `job`'s run `session`.
pub fn contribution(job: u16, rank: u16, slot: u16, session: u32, values: &[i32]) -> Vec<u8> {
    let payload: Vec<u8> = values.iter().flat_map(|v| v.to_be_bytes()).collect();
    let repr = DataRepr {
        kind: DataKind::Contribution,
        job,
        rank,
        slot,
        ver: 0,
        flags: Flags::default(),
        count: values.len() as u16,
        seq: 0,
        exp: 128 + rank as u8,
        session,
    };
    bytes(Message::Data(repr, &payload))
}

/// A Probe for use 0 of `slot`. Without `ProbeFlags::RESULT`: the programs answer a Probe
/// with a ProbeReply only (the reference refuses the flag unless it offers PROBE_RESULTS).
pub fn probe(job: u16, rank: u16, slot: u16, session: u32) -> Vec<u8> {
    bytes(Message::Probe(ProbeRepr {
        job,
        rank,
        slot,
        ver: 0,
        seq: 0,
        session,
        flags: ProbeFlags::NONE,
    }))
}

/// A Status of `job` signed with `key`, its `rank` field (echoed, unchecked) naming the
/// sender.
pub fn status(job: u16, rank: u16, key: u64) -> Vec<u8> {
    let q = StatusRepr {
        job,
        rank,
        nonce: 1,
        cookie: 0,
        tag: [0; 16],
    };
    bytes(Message::Status(q.sign(key)))
}

/// `rank`'s Leave of `job`'s run `session`.
pub fn leave(job: u16, rank: u16, session: u32) -> Vec<u8> {
    bytes(Message::Leave(LeaveRepr { job, rank, session }))
}

/// `rank`'s Abort `WorkerFailed` of `job`'s run `session`, naming no rank.
pub fn abort(job: u16, rank: u16, session: u32) -> Vec<u8> {
    bytes(Message::Abort(AbortRepr {
        job,
        rank,
        reason: AbortReason::WorkerFailed,
        detail: RANK_ALL,
        epoch: 0,
        session,
    }))
}
