//! The inputs of a worker sequence, decoded from fuzz bytes: the lane's configuration, the
//! tensors it is given, and what arrives from the network or the clock.
//!
//! Most inbound datagrams are well-formed and aimed at the worker (its job, its rank or
//! every rank), with fuzzed fields, because a worker drops anything else at the first
//! check. [`WorkerOp::Answer`] turns one of the worker's own outstanding Contributions
//! into a Result (optionally with one field off by one), which is what a switch sends and
//! what moves the stream forward.

use crate::checks::input::{Input, Output};

/// The lane set-up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Setup {
    /// World size, 1..=4.
    pub world: u16,
    /// This rank, below `world`.
    pub rank: u16,
    /// Window, 1..=5 (5 is above the worker's `SLOTS` and must be refused).
    pub window: u16,
    /// First job-relative slot, 0..=2.
    pub slot_lo: u16,
    /// Values per chunk, 1..=4.
    pub count: u16,
    /// Timeouts before the stall probe, 0..=3.
    pub retries: u16,
}

/// A tensor to submit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TensorSpec {
    /// 0 f32, 1 int32, 2 f16, 3 bf16.
    pub kind: u8,
    /// Average instead of sum.
    pub average: bool,
    /// One raw word per element (see `worker::tensor`).
    pub words: Vec<u32>,
}

/// One step of a worker sequence.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WorkerOp {
    /// A Result for one of the outstanding Contributions (`pick` among them), with
    /// `mutation` selecting a field to get wrong (most values: none).
    Answer {
        /// Which outstanding Contribution.
        pick: u8,
        /// 0..=8 one field off (seq ±1, ver, count ±1, slot, job, type, session), else
        /// none.
        mutation: u8,
        /// Exponent byte.
        exp: u8,
        /// Flag bits.
        flags: u8,
        /// Multicast rank instead of this rank.
        to_all: bool,
        /// Values (the first `count` are used).
        values: [i32; 4],
    },
    /// A Result with every field fuzzed.
    Result {
        /// Job-relative slot.
        slot: u16,
        /// Use number.
        seq: u32,
        /// Shadow version.
        ver: u8,
        /// Number of values.
        count: u16,
        /// Exponent byte.
        exp: u8,
        /// Flag bits.
        flags: u8,
        /// Rank selector: 0 this rank, 1 every rank, else another rank.
        rank: u8,
        /// Session selector: 0 the lane's session, else that one with these bits flipped.
        session: u8,
    },
    /// A JoinReply.
    JoinReply {
        /// 0 this world size, else that value.
        world: u8,
        /// The COMPLETE flag.
        complete: bool,
        /// It answers another process's Join: its nonce is not the lane's. Shares a byte with
        /// `complete` (0xFF: neither, 0xFE: both, 0xFD: only this, else only `complete`).
        foreign: bool,
        /// The switch's `max_count`.
        max_count: u16,
        /// 0 the epoch, else another.
        epoch: u8,
        /// Rank selector.
        rank: u8,
        /// The run's session: `SESSION` with these bits flipped.
        session: u8,
        /// The joined bitmap.
        bitmap: Vec<u8>,
    },
    /// A ProbeReply for the last Probe sent (or slot 0).
    ProbeReply {
        /// State byte.
        state: u8,
        /// Remaining.
        remaining: u16,
        /// 0 the probed use, else that far off.
        seq: u8,
        /// 0 the epoch, else another.
        epoch: u8,
        /// The seen bitmap.
        bitmap: Vec<u8>,
    },
    /// An Abort.
    Abort {
        /// Reason byte.
        reason: u8,
        /// Rank selector.
        rank: u8,
        /// Detail.
        detail: u16,
        /// 0 the epoch, else another.
        epoch: u8,
        /// Session selector: 0 the lane's session, 1 no session (0), 2 the lane's nonce (a
        /// refusal of its Join), else the lane's session with these bits flipped.
        session: u8,
    },
    /// The application is done with the job: `Worker::leave`.
    Leave,
    /// Any bytes.
    Raw(Vec<u8>),
    /// An earlier inbound datagram again (counted back from the latest).
    Replay(u8),
    /// Time passes by this many 4 µs ticks; then `handle_timeout`.
    Wait(u16),
    /// Time jumps to `poll_timeout()`; then `handle_timeout`.
    WaitForTimer,
    /// Another tensor is submitted.
    Submit(TensorSpec),
}

/// Decode the set-up, the initial tensors and the ops.
pub fn decode(bytes: &[u8]) -> (Setup, Vec<TensorSpec>, Vec<WorkerOp>) {
    let mut input = Input::new(bytes);
    let world = 1 + input.below(4) as u16;
    let setup = Setup {
        world,
        rank: input.below(usize::from(world)) as u16,
        window: 1 + input.below(5) as u16,
        slot_lo: input.below(3) as u16,
        count: 1 + input.below(4) as u16,
        retries: input.below(4) as u16,
    };
    let tensors = (0..input.below(4)).map(|_| tensor(&mut input)).collect();
    let mut ops = Vec::new();
    while !input.is_empty() {
        ops.push(match input.u8() % 16 {
            0..=5 => WorkerOp::Answer {
                pick: input.u8(),
                mutation: input.u8(),
                exp: input.u8(),
                flags: input.u8(),
                to_all: input.bool(),
                values: [input.i32(), input.i32(), input.i32(), input.i32()],
            },
            6 => WorkerOp::Result {
                slot: u16::from(input.u8() % 8),
                seq: u32::from(input.u8() % 8),
                ver: input.u8() % 2,
                count: u16::from(input.u8() % 6),
                exp: input.u8(),
                flags: input.u8(),
                rank: input.u8(),
                session: input.u8(),
            },
            7 => {
                let world = input.u8();
                let (complete, foreign) = match input.u8() {
                    0xFF => (false, false),
                    0xFE => (true, true),
                    0xFD => (false, true),
                    _ => (true, false),
                };
                WorkerOp::JoinReply {
                    world,
                    complete,
                    foreign,
                    max_count: input.u16(),
                    epoch: input.u8(),
                    rank: input.u8(),
                    session: input.u8(),
                    bitmap: input.bytes(3).to_vec(),
                }
            }
            8 => WorkerOp::ProbeReply {
                state: input.u8(),
                remaining: input.u16(),
                seq: input.u8(),
                epoch: input.u8(),
                bitmap: input.bytes(3).to_vec(),
            },
            9 => WorkerOp::Abort {
                reason: input.u8(),
                rank: input.u8(),
                detail: input.u16(),
                epoch: input.u8(),
                session: input.u8(),
            },
            10 => WorkerOp::Raw(input.bytes(40).to_vec()),
            11 => WorkerOp::Replay(input.u8()),
            12 => WorkerOp::Wait(input.u16()),
            13 => WorkerOp::Leave,
            14 => WorkerOp::WaitForTimer,
            _ => WorkerOp::Submit(tensor(&mut input)),
        });
    }
    (setup, tensors, ops)
}

fn tensor(input: &mut Input) -> TensorSpec {
    TensorSpec {
        kind: input.u8() % 4,
        average: input.bool(),
        words: (0..input.below(10)).map(|_| input.u32()).collect(),
    }
}

/// Encode a sequence so that [`decode`] gives it back (for seed corpora). Fields outside
/// the decoder's domains are folded into them.
pub fn encode(setup: &Setup, tensors: &[TensorSpec], ops: &[WorkerOp]) -> Vec<u8> {
    let mut out = Output::new();
    out.u8((setup.world - 1) as u8).u8(setup.rank as u8);
    out.u8((setup.window - 1) as u8).u8(setup.slot_lo as u8);
    out.u8((setup.count - 1) as u8).u8(setup.retries as u8);
    out.u8(tensors.len() as u8);
    for t in tensors {
        encode_tensor(&mut out, t);
    }
    for op in ops {
        match op {
            WorkerOp::Answer {
                pick,
                mutation,
                exp,
                flags,
                to_all,
                values,
            } => {
                out.u8(0)
                    .u8(*pick)
                    .u8(*mutation)
                    .u8(*exp)
                    .u8(*flags)
                    .bool(*to_all);
                for v in values {
                    out.i32(*v);
                }
            }
            WorkerOp::Result {
                slot,
                seq,
                ver,
                count,
                exp,
                flags,
                rank,
                session,
            } => {
                out.u8(6)
                    .u8(*slot as u8)
                    .u8(*seq as u8)
                    .u8(*ver)
                    .u8(*count as u8);
                out.u8(*exp).u8(*flags).u8(*rank).u8(*session);
            }
            WorkerOp::JoinReply {
                world,
                complete,
                foreign,
                max_count,
                epoch,
                rank,
                session,
                bitmap,
            } => {
                let kind = match (complete, foreign) {
                    (false, false) => 0xFF,
                    (true, true) => 0xFE,
                    (false, true) => 0xFD,
                    (true, false) => 0,
                };
                out.u8(7).u8(*world).u8(kind);
                out.u16(*max_count).u8(*epoch).u8(*rank).u8(*session);
                out.bytes(bitmap);
            }
            WorkerOp::ProbeReply {
                state,
                remaining,
                seq,
                epoch,
                bitmap,
            } => {
                out.u8(8).u8(*state).u16(*remaining).u8(*seq).u8(*epoch);
                out.bytes(bitmap);
            }
            WorkerOp::Abort {
                reason,
                rank,
                detail,
                epoch,
                session,
            } => {
                out.u8(9).u8(*reason).u8(*rank).u16(*detail).u8(*epoch);
                out.u8(*session);
            }
            WorkerOp::Leave => {
                out.u8(13);
            }
            WorkerOp::Raw(bytes) => {
                out.u8(10).bytes(bytes);
            }
            WorkerOp::Replay(back) => {
                out.u8(11).u8(*back);
            }
            WorkerOp::Wait(ticks) => {
                out.u8(12).u16(*ticks);
            }
            WorkerOp::WaitForTimer => {
                out.u8(14);
            }
            WorkerOp::Submit(t) => {
                out.u8(15);
                encode_tensor(&mut out, t);
            }
        }
    }
    out.into_bytes()
}

fn encode_tensor(out: &mut Output, t: &TensorSpec) {
    out.u8(t.kind).bool(t.average).u8(t.words.len() as u8);
    for w in &t.words {
        out.u32(*w);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encode_then_decode_gives_the_sequence_back() {
        let setup = Setup {
            world: 3,
            rank: 2,
            window: 5,
            slot_lo: 1,
            count: 4,
            retries: 2,
        };
        let tensors = vec![TensorSpec {
            kind: 2,
            average: true,
            words: vec![1, 0xFFFF_FFFF],
        }];
        let ops = vec![
            WorkerOp::Answer {
                pick: 3,
                mutation: 0xFF,
                exp: 130,
                flags: 1,
                to_all: true,
                values: [1, -2, 3, i32::MIN],
            },
            WorkerOp::Result {
                slot: 7,
                seq: 5,
                ver: 1,
                count: 5,
                exp: 9,
                flags: 2,
                rank: 1,
                session: 3,
            },
            WorkerOp::JoinReply {
                world: 0,
                complete: true,
                foreign: false,
                max_count: 256,
                epoch: 0,
                rank: 1,
                session: 0,
                bitmap: vec![7],
            },
            WorkerOp::JoinReply {
                world: 2,
                complete: false,
                foreign: true,
                max_count: 0,
                epoch: 1,
                rank: 0,
                session: 9,
                bitmap: vec![],
            },
            WorkerOp::JoinReply {
                world: 0,
                complete: true,
                foreign: true,
                max_count: 4,
                epoch: 0,
                rank: 0,
                session: 0,
                bitmap: vec![1],
            },
            WorkerOp::ProbeReply {
                state: 1,
                remaining: 2,
                seq: 0,
                epoch: 0,
                bitmap: vec![3],
            },
            WorkerOp::Abort {
                reason: 7,
                rank: 2,
                detail: 0xFFFF,
                epoch: 0,
                session: 1,
            },
            WorkerOp::Raw(vec![1, 2]),
            WorkerOp::Replay(1),
            WorkerOp::Wait(1000),
            WorkerOp::WaitForTimer,
            WorkerOp::Leave,
            WorkerOp::Submit(tensors[0].clone()),
        ];
        assert_eq!(
            decode(&encode(&setup, &tensors, &ops)),
            (setup, tensors, ops)
        );
    }
}
