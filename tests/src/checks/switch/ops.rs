//! The operations of a switch sequence, decoded from fuzz bytes, and the datagrams they
//! stand for.
//!
//! The domains are small on purpose — 3 job ids (one unknown), ranks up to one past the
//! world, slots up to one past the job's range, use numbers near 0 or near a wrap-around,
//! counts up to one past `K`, 3 process nonces, sessions that are 0 or those of a job's first
//! [`RUNS`] runs, keys that are the job's or one bit off — so that random sequences open
//! runs, collide on the same slot version and use, and restart ranks all the time. A run's
//! session is the nonce of the Join that opened it plus the job's runs before
//! (protocol.md §4.1), so a message of the small session domain often names the job's
//! current run, or its previous one. [`SwitchOp::Replay`] sends an earlier datagram again
//! byte for byte: the network's duplicates and the workers' retransmissions.

use switchml_core::wire::{
    AbortReason, AbortRepr, DataKind, DataRepr, Flags, JoinRepr, LeaveRepr, Message, ProbeRepr,
};

use crate::checks::input::{Input, Output};

/// Values per slot of the switch under test: small, so counts often reach it.
pub const K: usize = 4;

/// The job ids the sequence talks to: two registered jobs and one the switch never knew.
pub const JOB_IDS: [u16; 3] = [10, 11, 12];

/// The keys of the jobs of [`JOB_IDS`] (the last one is not registered: any key).
pub const KEYS: [u64; 3] = [0x0123_4567_89AB_CDEF, 0xFEDC_BA98_7654_3210, 0];

/// The process nonces Joins carry: the smallest, the top bit alone, the largest.
pub const NONCES: [u32; 3] = [1, 0x8000_0000, 0xFFFF_FFFF];

/// How many runs of a job [`SESSIONS`] can name.
pub const RUNS: usize = 4;

/// The sessions messages carry: no run, or a run one of [`NONCES`] opened after 0 to
/// `RUNS - 1` runs of its job (nonce-major: `1 + RUNS·n + r`).
pub const SESSIONS: [u32; 1 + NONCES.len() * RUNS] = {
    let mut s = [0; 1 + NONCES.len() * RUNS];
    let mut i = 0;
    while i < NONCES.len() * RUNS {
        s[1 + i] = session_of(NONCES[i / RUNS], (i % RUNS) as u64);
        i += 1;
    }
    s
};

/// The session of a run opened by a Join with `nonce` after `runs_before` runs of its job:
/// the nonce plus the runs before, wrapping, and 1 where that is 0 (protocol.md §4.1).
pub const fn session_of(nonce: u32, runs_before: u64) -> u32 {
    match nonce.wrapping_add(runs_before as u32) {
        0 => 1,
        s => s,
    }
}

/// One step of a switch sequence.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SwitchOp {
    /// A Contribution. `ver` is `seq & 1` unless `bad_ver`.
    Contribute {
        /// Index into [`JOB_IDS`].
        job: u8,
        /// Sender.
        rank: u16,
        /// Job-relative slot.
        slot: u16,
        /// Use number.
        seq: u32,
        /// Send the wrong shadow version.
        bad_ver: bool,
        /// Exponent byte.
        exp: u8,
        /// Set the RETRANSMIT flag.
        retransmit: bool,
        /// The run it names (one of [`SESSIONS`]).
        session: u32,
        /// The values (their number is the count).
        values: Vec<i32>,
    },
    /// A Join.
    Join {
        /// Index into [`JOB_IDS`].
        job: u8,
        /// Sender.
        rank: u16,
        /// The world size the sender believes in.
        world: u16,
        /// Its slot range.
        slot_lo: u16,
        /// Its slot range.
        slot_count: u16,
        /// Its chunk size.
        count: u16,
        /// Its rank's number of lanes, 1..=4.
        lanes: u16,
        /// Its process (one of [`NONCES`]).
        nonce: u32,
        /// 0: the job's key; 1: bit 0 flipped; 2: bit 63 flipped; 3: key 0 (or 1 if that is
        /// the job's).
        key: u8,
    },
    /// A Probe.
    Probe {
        /// Index into [`JOB_IDS`].
        job: u8,
        /// Sender.
        rank: u16,
        /// Job-relative slot.
        slot: u16,
        /// Version asked about.
        ver: u8,
        /// The use waited for.
        seq: u32,
        /// The run it names (one of [`SESSIONS`]).
        session: u32,
    },
    /// An Abort from a worker.
    Abort {
        /// Index into [`JOB_IDS`].
        job: u8,
        /// Sender.
        rank: u16,
        /// Reason byte.
        reason: u8,
        /// Detail.
        detail: u16,
        /// The run it names (one of [`SESSIONS`]).
        session: u32,
    },
    /// A Leave.
    Leave {
        /// Index into [`JOB_IDS`].
        job: u8,
        /// Sender.
        rank: u16,
        /// The run it names (one of [`SESSIONS`]).
        session: u32,
    },
    /// Any bytes at all.
    Raw(Vec<u8>),
    /// Send the datagram of an earlier op again (index counted back from the latest).
    Replay(u8),
    /// Control plane: remove job 0 and add it again (its slots reset).
    RestartJob,
}

/// A rank near the world: in range, one past, or the multicast rank.
fn rank(input: &mut Input) -> u16 {
    match input.u8() {
        0xFF => 0xFFFF,
        b => u16::from(b % 5),
    }
}

/// A use number near 0, or near where the 32-bit numbering wraps and the signed
/// comparison flips.
fn seq(input: &mut Input) -> u32 {
    let b = input.u8();
    let small = u32::from(b & 0x0F);
    match b >> 6 {
        0 | 1 => small,
        2 => small.wrapping_sub(8),
        _ => 0x8000_0000u32.wrapping_add(small).wrapping_sub(8),
    }
}

/// A session: 0 or one of [`SESSIONS`].
fn session(input: &mut Input) -> u32 {
    SESSIONS[input.below(SESSIONS.len())]
}

/// The selector byte of `session` (a value outside [`SESSIONS`] folds to 0).
fn session_byte(session: u32) -> u8 {
    SESSIONS.iter().position(|&s| s == session).unwrap_or(0) as u8
}

/// A key choice: mostly the job's key, so that Joins open runs.
fn key(input: &mut Input) -> u8 {
    match input.u8() % 8 {
        0..=4 => 0,
        b => b - 4,
    }
}

/// Return the key a Join of `job` carries for key choice `key`.
pub fn key_of(job: u8, key: u8) -> u64 {
    let right = KEYS[usize::from(job) % KEYS.len()];
    match key % 4 {
        0 => right,
        1 => right ^ 1,
        2 => right ^ (1 << 63),
        _ => u64::from(right == 0),
    }
}

/// Decode a sequence: each op is a selector byte and its fields, until the bytes run out.
pub fn decode_ops(bytes: &[u8]) -> Vec<SwitchOp> {
    let mut input = Input::new(bytes);
    let mut ops = Vec::new();
    while !input.is_empty() {
        let op = match input.u8() % 16 {
            0..=6 => SwitchOp::Contribute {
                job: input.u8() % 3,
                rank: rank(&mut input),
                slot: u16::from(input.u8() % 4),
                seq: seq(&mut input),
                bad_ver: input.u8() == 0xFF,
                exp: input.u8(),
                retransmit: input.bool(),
                session: session(&mut input),
                values: {
                    let n = input.below(K + 2);
                    (0..n).map(|_| input.i32()).collect()
                },
            },
            7 | 8 => {
                let (job, rank, world) = (input.u8() % 3, rank(&mut input), input.u8() % 5);
                // The slot_lo byte's bits 2-3 say how many lanes fewer than 4 the rank has:
                // inputs from before the Join had `lanes` (bits 2-3 clear) keep their meaning.
                let lane_byte = input.u8();
                SwitchOp::Join {
                    job,
                    rank,
                    world: u16::from(world),
                    slot_lo: u16::from(lane_byte % 4),
                    slot_count: u16::from(input.u8() % 5),
                    count: input.u16() % (K as u16 + 2),
                    lanes: 4 - u16::from(lane_byte >> 2 & 3),
                    nonce: NONCES[input.below(NONCES.len())],
                    key: key(&mut input),
                }
            }
            9 => SwitchOp::Probe {
                job: input.u8() % 3,
                rank: rank(&mut input),
                slot: u16::from(input.u8() % 4),
                ver: input.u8() % 2,
                seq: seq(&mut input),
                session: session(&mut input),
            },
            10 => SwitchOp::Abort {
                job: input.u8() % 3,
                rank: rank(&mut input),
                reason: input.u8() % 14,
                detail: input.u16(),
                session: session(&mut input),
            },
            11 => SwitchOp::Leave {
                job: input.u8() % 3,
                rank: rank(&mut input),
                session: session(&mut input),
            },
            12 => SwitchOp::Raw(input.bytes(64).to_vec()),
            13 | 14 => SwitchOp::Replay(input.u8()),
            _ => SwitchOp::RestartJob,
        };
        ops.push(op);
    }
    ops
}

/// Encode ops so that [`decode_ops`] gives them back (for seed corpora). Fields outside the
/// decoder's domains are folded into them.
pub fn encode_ops(ops: &[SwitchOp]) -> Vec<u8> {
    let mut out = Output::new();
    let rank_byte = |r: u16| if r == 0xFFFF { 0xFF } else { (r % 5) as u8 };
    let seq_byte = |s: u32| {
        if s < 16 {
            s as u8
        } else if s >= 0xFFFF_FFF8 {
            0x80 | (s.wrapping_add(8) & 0x0F) as u8
        } else {
            0xC0 | (s.wrapping_sub(0x7FFF_FFF8) & 0x0F) as u8
        }
    };
    for op in ops {
        match op {
            SwitchOp::Contribute {
                job,
                rank,
                slot,
                seq,
                bad_ver,
                exp,
                retransmit,
                session,
                values,
            } => {
                out.u8(0).u8(*job).u8(rank_byte(*rank)).u8(*slot as u8);
                out.u8(seq_byte(*seq)).u8(if *bad_ver { 0xFF } else { 0 });
                out.u8(*exp).bool(*retransmit).u8(session_byte(*session));
                out.u8(values.len() as u8);
                for v in values {
                    out.i32(*v);
                }
            }
            SwitchOp::Join {
                job,
                rank,
                world,
                slot_lo,
                slot_count,
                count,
                lanes,
                nonce,
                key,
            } => {
                out.u8(7).u8(*job).u8(rank_byte(*rank)).u8(*world as u8);
                let fewer = 4u16.saturating_sub(*lanes) & 3;
                out.u8((*slot_lo | fewer << 2) as u8);
                out.u8(*slot_count as u8).u16(*count);
                let nonce = NONCES.iter().position(|n| n == nonce).unwrap_or(0);
                let key = match key % 4 {
                    0 => 0,
                    k => k + 4,
                };
                out.u8(nonce as u8).u8(key);
            }
            SwitchOp::Probe {
                job,
                rank,
                slot,
                ver,
                seq,
                session,
            } => {
                out.u8(9).u8(*job).u8(rank_byte(*rank)).u8(*slot as u8);
                out.u8(*ver).u8(seq_byte(*seq)).u8(session_byte(*session));
            }
            SwitchOp::Abort {
                job,
                rank,
                reason,
                detail,
                session,
            } => {
                out.u8(10)
                    .u8(*job)
                    .u8(rank_byte(*rank))
                    .u8(*reason)
                    .u16(*detail)
                    .u8(session_byte(*session));
            }
            SwitchOp::Leave { job, rank, session } => {
                out.u8(11)
                    .u8(*job)
                    .u8(rank_byte(*rank))
                    .u8(session_byte(*session));
            }
            SwitchOp::Raw(bytes) => {
                out.u8(12).bytes(&bytes[..bytes.len().min(64)]);
            }
            SwitchOp::Replay(back) => {
                out.u8(13).u8(*back);
            }
            SwitchOp::RestartJob => {
                out.u8(15);
            }
        }
    }
    out.into_bytes()
}

/// Return the job id an op's job index stands for.
pub fn job_id(job: u8) -> u16 {
    JOB_IDS[usize::from(job) % JOB_IDS.len()]
}

/// Write the datagram for `op` (not `Replay` or `RestartJob`) into `buf`.
pub fn datagram(op: &SwitchOp, buf: &mut Vec<u8>) {
    buf.clear();
    let msg = match op {
        SwitchOp::Contribute {
            job,
            rank,
            slot,
            seq,
            bad_ver,
            exp,
            retransmit,
            session,
            values,
        } => {
            let mut payload = Vec::with_capacity(4 * values.len());
            for v in values {
                payload.extend_from_slice(&v.to_be_bytes());
            }
            let repr = DataRepr {
                kind: DataKind::Contribution,
                job: job_id(*job),
                rank: *rank,
                slot: *slot,
                ver: (*seq & 1) as u8 ^ u8::from(*bad_ver),
                flags: if *retransmit {
                    Flags::RETRANSMIT
                } else {
                    Flags::default()
                },
                count: values.len() as u16,
                seq: *seq,
                exp: *exp,
                session: *session,
            };
            return emit(&Message::Data(repr, &payload), buf);
        }
        SwitchOp::Join {
            job,
            rank,
            world,
            slot_lo,
            slot_count,
            count,
            lanes,
            nonce,
            key,
        } => Message::Join(
            JoinRepr {
                job: job_id(*job),
                rank: *rank,
                world: *world,
                slot_lo: *slot_lo,
                slot_count: *slot_count,
                count: *count,
                lanes: (*lanes).max(1),
                nonce: (*nonce).max(1),
                cookie: 0,
                tag: [0; 16],
            }
            .sign(key_of(*job, *key)),
        ),
        SwitchOp::Probe {
            job,
            rank,
            slot,
            ver,
            seq,
            session,
        } => Message::Probe(ProbeRepr {
            job: job_id(*job),
            rank: *rank,
            slot: *slot,
            ver: *ver & 1,
            seq: *seq,
            session: *session,
            flags: switchml_core::wire::ProbeFlags::NONE,
        }),
        SwitchOp::Abort {
            job,
            rank,
            reason,
            detail,
            session,
        } => Message::Abort(AbortRepr {
            job: job_id(*job),
            rank: *rank,
            reason: AbortReason::from(*reason),
            detail: *detail,
            epoch: 0,
            session: *session,
        }),
        SwitchOp::Leave { job, rank, session } => Message::Leave(LeaveRepr {
            job: job_id(*job),
            rank: *rank,
            session: *session,
        }),
        SwitchOp::Raw(bytes) => {
            buf.extend_from_slice(bytes);
            return;
        }
        SwitchOp::Replay(_) | SwitchOp::RestartJob => return,
    };
    emit(&msg, buf);
}

/// One step of a sequence as the switch sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step<'a> {
    /// This datagram arrives.
    Send(&'a [u8]),
    /// The control plane restarts the first job ([`SwitchOp::RestartJob`]).
    RestartJob,
}

/// Play `ops` step by step: each op's datagram, or a job restart. A [`SwitchOp::Replay`]
/// sends an earlier datagram again byte for byte (the `back`-th latest, modulo the number
/// sent, at most 256 back); before the first datagram it does nothing.
pub fn play(ops: &[SwitchOp], mut step: impl FnMut(Step<'_>)) {
    let mut history: Vec<Vec<u8>> = Vec::new();
    let mut bytes = Vec::new();
    for op in ops {
        match op {
            SwitchOp::RestartJob => {
                step(Step::RestartJob);
                continue;
            }
            SwitchOp::Replay(back) => {
                let n = history.len();
                if n == 0 {
                    continue;
                }
                bytes.clone_from(&history[n - 1 - usize::from(*back) % n.min(256)]);
            }
            op => datagram(op, &mut bytes),
        }
        step(Step::Send(&bytes));
        history.push(bytes.clone());
    }
}

fn emit(msg: &Message, buf: &mut Vec<u8>) {
    buf.resize(msg.buffer_len(), 0);
    let len = msg.emit(buf).expect("ops build valid messages");
    buf.truncate(len);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encode_then_decode_gives_the_ops_back() {
        let ops = vec![
            SwitchOp::Contribute {
                job: 1,
                rank: 2,
                slot: 3,
                seq: 0xFFFF_FFFE,
                bad_ver: true,
                exp: 130,
                retransmit: true,
                session: NONCES[2],
                values: vec![1, -1, i32::MIN],
            },
            SwitchOp::Contribute {
                job: 0,
                rank: 0xFFFF,
                slot: 0,
                seq: 0x8000_0001,
                bad_ver: false,
                exp: 0,
                retransmit: false,
                session: 0,
                values: vec![],
            },
            SwitchOp::Join {
                job: 2,
                rank: 4,
                world: 3,
                slot_lo: 1,
                slot_count: 2,
                count: 5,
                lanes: 3,
                nonce: NONCES[1],
                key: 2,
            },
            SwitchOp::Join {
                job: 0,
                rank: 0,
                world: 3,
                slot_lo: 0,
                slot_count: 3,
                count: 4,
                lanes: 1,
                nonce: NONCES[0],
                key: 0,
            },
            SwitchOp::Probe {
                job: 0,
                rank: 1,
                slot: 2,
                ver: 1,
                seq: 7,
                session: NONCES[1],
            },
            SwitchOp::Abort {
                job: 0,
                rank: 1,
                reason: 13,
                detail: 0xFFFF,
                session: NONCES[0],
            },
            SwitchOp::Leave {
                job: 1,
                rank: 0xFFFF,
                session: NONCES[2],
            },
            SwitchOp::Raw(vec![1, 2, 3]),
            SwitchOp::Replay(2),
            SwitchOp::RestartJob,
        ];
        assert_eq!(decode_ops(&encode_ops(&ops)), ops);
    }
}
