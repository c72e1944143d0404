//! Forged datagrams, deterministic from a seed: every message type with its fields chosen to
//! look real (the job's ranks, slots and chunk size) or to be as costly as possible (huge
//! slot ranges and counts), sessions and keys made up, cut and padded copies, random bytes,
//! datagrams longer than any message, and replays of real-looking traffic with its session
//! rewritten.

use switchml_core::wire::{
    AbortReason, AbortRepr, DataKind, DataRepr, Flags, JoinFlags, JoinPacket, JoinReplyRepr,
    JoinRepr, LeaveRepr, Message, ProbeReplyRepr, ProbeRepr, SlotState, StatusCounters,
    StatusFlags, StatusReplyRepr, StatusRepr,
};

use super::fate::{Target, LONGEST};
use super::mix;

/// A job id no switch in these tests serves.
pub const FOREIGN_JOB: u16 = 999;

/// SplitMix64.
pub struct Rng(u64);

impl Rng {
    /// Start from `seed`.
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    /// Return the next 64 random bits.
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(1);
        mix(self.0)
    }

    /// Return a number in `0..n` (`n > 0`).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    /// Return one of `choices`.
    pub fn pick<T: Copy>(&mut self, choices: &[T]) -> T {
        choices[self.below(choices.len() as u64) as usize]
    }

    /// Return `len` random bytes.
    pub fn bytes(&mut self, len: usize) -> Vec<u8> {
        (0..len).map(|_| self.next() as u8).collect()
    }
}

/// Every kind of forgery [`Forger::any`] makes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Random bytes of random length.
    Random,
    /// Version 1, any type byte, a random body.
    Noise,
    /// A Contribution that looks like a rank's, in a made-up session.
    Contribution,
    /// A Join with a wrong key and plausible fields.
    Join,
    /// A Join with a wrong key and the largest slot range and count there are.
    ExpensiveJoin,
    /// A Probe in a made-up session.
    Probe,
    /// An Abort in a made-up session.
    Abort,
    /// A Leave in a made-up session.
    Leave,
    /// A Status.
    Status,
    /// A Result, JoinReply, ProbeReply or StatusReply: only the switch sends those.
    SwitchOnly,
    /// A type this protocol version does not have.
    UnknownType,
    /// A well-formed forgery cut short or with bytes after its end.
    Cut,
    /// Longer than any message (sometimes a Contribution whose count says so).
    Oversized,
    /// A recorded datagram with its session rewritten.
    Replay,
}

impl Kind {
    /// The mix [`Forger::any`] draws from: mostly real-looking messages.
    pub const MIX: [Kind; 20] = [
        Kind::Random,
        Kind::Noise,
        Kind::Contribution,
        Kind::Contribution,
        Kind::Contribution,
        Kind::Join,
        Kind::Join,
        Kind::ExpensiveJoin,
        Kind::Probe,
        Kind::Abort,
        Kind::Abort,
        Kind::Leave,
        Kind::Status,
        Kind::SwitchOnly,
        Kind::UnknownType,
        Kind::Cut,
        Kind::Cut,
        Kind::Oversized,
        Kind::Replay,
        Kind::Replay,
    ];
}

/// Makes forgeries against some jobs (and, one time in eight, a job the switch lacks).
pub struct Forger {
    /// The randomness.
    pub rng: Rng,
    targets: Vec<Target>,
    replays: Vec<Vec<u8>>,
}

/// Write `m` into a new buffer.
pub fn bytes_of(m: &Message<'_>) -> Vec<u8> {
    let mut b = vec![0u8; m.buffer_len()];
    m.emit(&mut b).expect("a forgery the wire can write");
    b
}

/// A plain Contribution (no flags, no exponent) for use `seq` of `slot`, in `session`:
/// `values` are the big-endian int32s, `4·count` bytes.
pub fn contribution(
    job: u16,
    rank: u16,
    slot: u16,
    seq: u32,
    session: u32,
    values: &[u8],
) -> Vec<u8> {
    let repr = DataRepr {
        kind: DataKind::Contribution,
        job,
        rank,
        slot,
        ver: (seq & 1) as u8,
        flags: Flags::default(),
        count: (values.len() / 4) as u16,
        seq,
        exp: 0,
        session,
    };
    bytes_of(&Message::Data(repr, values))
}

impl Forger {
    /// Forge against `targets`, from `seed`; `replays`: datagrams for [`Kind::Replay`].
    pub fn new(targets: &[Target], seed: u64, replays: Vec<Vec<u8>>) -> Forger {
        Forger {
            rng: Rng::new(seed),
            targets: targets.to_vec(),
            replays,
        }
    }

    /// Return a job to forge for: one of the targets, or one time in eight a foreign job.
    pub fn target(&mut self) -> Target {
        if self.targets.is_empty() || self.rng.below(8) == 0 {
            return Target {
                job: FOREIGN_JOB,
                world: 4,
                slots: 64,
                key: 0,
            };
        }
        self.targets[self.rng.below(self.targets.len() as u64) as usize]
    }

    /// Return a made-up session: 0, 1, a small number or any.
    pub fn session(&mut self) -> u32 {
        match self.rng.below(4) {
            0 => 0,
            1 => 1,
            2 => self.rng.below(1000) as u32,
            _ => self.rng.next() as u32,
        }
    }

    /// Return a key that is not `t`'s: 0, one bit off, or any.
    pub fn wrong_key(&mut self, t: &Target) -> u64 {
        let k = match self.rng.below(3) {
            0 => 0,
            1 => t.key ^ (1 << self.rng.below(64)),
            _ => self.rng.next(),
        };
        if k == t.key {
            k ^ 1
        } else {
            k
        }
    }

    /// Return a rank: one of the job's, or just past it, or the largest.
    fn rank(&mut self, t: &Target) -> u16 {
        match self.rng.below(8) {
            0 => t.world,
            1 => u16::MAX,
            _ => self.rng.below(u64::from(t.world)) as u16,
        }
    }

    /// Forge one datagram of a kind drawn from [`Kind::MIX`].
    pub fn any(&mut self) -> Vec<u8> {
        let kind = self.rng.pick(&Kind::MIX);
        self.forge(kind)
    }

    /// Forge one datagram of `kind`.
    pub fn forge(&mut self, kind: Kind) -> Vec<u8> {
        let t = self.target();
        match kind {
            Kind::Random => {
                let len = self.rng.below(600) as usize;
                self.rng.bytes(len)
            }
            Kind::Noise => {
                let len = 6 + self.rng.below(80) as usize;
                let mut b = self.rng.bytes(len);
                b[0] = 1;
                b[1] = self
                    .rng
                    .pick(&[0x01, 0x02, 0x10, 0x11, 0x12, 0x14, 0x15, 0x17, 0x42]);
                b
            }
            Kind::Contribution => {
                let count = self.rng.pick(&[64, 64, 64, 0, 1, 1024]);
                let seq = self.rng.below(64) as u32;
                self.contribution(&t, count, seq)
            }
            Kind::Join => {
                let lane = self.rng.pick(&[8, 16, 32]);
                let repr = JoinRepr {
                    job: t.job,
                    rank: self.rank(&t),
                    world: self.rng.pick(&[t.world, t.world, t.world + 1]),
                    slot_lo: lane * self.rng.below(4) as u16,
                    slot_count: lane,
                    count: self.rng.pick(&[64, 64, 32, 0]),
                    lanes: 4,
                    nonce: self.rng.next() as u32 | 1,
                    cookie: 0,
                    tag: [0; 16],
                }
                .sign(self.wrong_key(&t));
                bytes_of(&Message::Join(repr))
            }
            Kind::ExpensiveJoin => {
                let nonce = self.rng.next() as u32 | 1;
                let repr = JoinRepr {
                    job: t.job,
                    rank: self.rank(&t),
                    world: self.rng.pick(&[t.world, u16::MAX]),
                    slot_lo: self.rng.pick(&[0, 0, u16::MAX, 32768]),
                    slot_count: self.rng.pick(&[u16::MAX, 32768, t.slots]),
                    count: self.rng.pick(&[u16::MAX, 16370, 1024]),
                    lanes: u16::MAX,
                    nonce: self.rng.pick(&[u32::MAX, nonce]),
                    cookie: 0,
                    tag: [0; 16],
                }
                .sign(self.wrong_key(&t));
                let mut b = bytes_of(&Message::Join(repr));
                if self.rng.below(4) == 0 {
                    // Nonce 0: not a Join (the wire cannot write one).
                    JoinPacket::new_unchecked(&mut b[..]).set_nonce(0);
                }
                b
            }
            Kind::Probe => {
                let seq = self.rng.below(64) as u32;
                let repr = ProbeRepr {
                    job: t.job,
                    rank: self.rank(&t),
                    slot: self.rng.below(u64::from(t.slots) + 2) as u16,
                    ver: (seq & 1) as u8,
                    seq,
                    session: self.session(),
                    flags: switchml_core::wire::ProbeFlags::NONE,
                };
                bytes_of(&Message::Probe(repr))
            }
            Kind::Abort => {
                let epoch = self.rng.next() as u32;
                let repr = AbortRepr {
                    job: t.job,
                    rank: self.rank(&t),
                    reason: AbortReason::from(self.rng.below(14) as u8),
                    detail: self.rng.pick(&[0, 1, 0xFFFF]),
                    epoch: self.rng.pick(&[0, epoch]),
                    session: self.session(),
                };
                bytes_of(&Message::Abort(repr))
            }
            Kind::Leave => {
                let repr = LeaveRepr {
                    job: t.job,
                    rank: self.rank(&t),
                    session: self.session(),
                };
                bytes_of(&Message::Leave(repr))
            }
            Kind::Status => {
                let repr = StatusRepr {
                    job: t.job,
                    rank: self.rank(&t),
                    nonce: (self.rng.next() as u32).max(1),
                    cookie: self.rng.next(),
                    tag: [0; 16],
                }
                .sign(self.rng.next());
                bytes_of(&Message::Status(repr))
            }
            Kind::SwitchOnly => self.switch_only(&t),
            Kind::UnknownType => {
                let mut b = self.contribution(&t, 1, 0);
                b[1] = self.rng.pick(&[0x00, 0x03, 0x0F, 0x19, 0x7F, 0xFF]);
                b
            }
            Kind::Cut => {
                let inner = self.rng.pick(&[
                    Kind::Contribution,
                    Kind::Join,
                    Kind::Probe,
                    Kind::Abort,
                    Kind::Leave,
                    Kind::Status,
                ]);
                let mut b = self.forge(inner);
                if self.rng.below(2) == 0 {
                    b.truncate(self.rng.below(b.len() as u64) as usize);
                } else {
                    let more = 1 + self.rng.below(8) as usize;
                    b.extend(self.rng.bytes(more));
                }
                b
            }
            Kind::Oversized => {
                if self.rng.below(2) == 0 {
                    let count = 1025 + self.rng.below(500) as u16;
                    self.contribution(&t, count, 0)
                } else {
                    let len = LONGEST + 1 + self.rng.below(2000) as usize;
                    self.rng.bytes(len)
                }
            }
            Kind::Replay => self.replay(),
        }
    }

    /// A Contribution of `count` values for use `seq` of a slot of `t`, in a made-up session.
    pub fn contribution(&mut self, t: &Target, count: u16, seq: u32) -> Vec<u8> {
        let repr = DataRepr {
            kind: DataKind::Contribution,
            job: t.job,
            rank: self.rank(t),
            slot: self.rng.below(u64::from(t.slots) + 2) as u16,
            ver: (seq & 1) as u8,
            flags: Flags(self.rng.below(4) as u8),
            count,
            seq,
            exp: self.rng.pick(&[0, 127, 140, 255]),
            session: self.session(),
        };
        let values = self.rng.bytes(4 * usize::from(count));
        bytes_of(&Message::Data(repr, &values))
    }

    fn switch_only(&mut self, t: &Target) -> Vec<u8> {
        let bitmap = [0xFFu8; 1];
        let epoch = self.rng.next() as u32;
        match self.rng.below(4) {
            0 => {
                let mut b = self.contribution(t, 2, 0);
                b[1] = 0x02;
                b
            }
            1 => bytes_of(&Message::JoinReply(JoinReplyRepr {
                job: t.job,
                rank: self.rank(t),
                world: t.world,
                flags: JoinFlags::COMPLETE,
                shards: 0,
                max_count: 1024,
                epoch,
                slot_count: t.slots,
                session: self.session(),
                nonce: self.rng.next() as u32,
                lane_slots: t.slots,
                count: 64,
                joined: &bitmap,
            })),
            2 => bytes_of(&Message::ProbeReply(ProbeReplyRepr {
                job: t.job,
                rank: self.rank(t),
                slot: 0,
                ver: 0,
                state: SlotState::Complete,
                remaining: 0,
                seq: 0,
                epoch,
                world: t.world,
                session: self.session(),
                seen: &bitmap,
            })),
            _ => bytes_of(&Message::StatusReply(StatusReplyRepr {
                job: t.job,
                rank: 0,
                world: t.world,
                flags: StatusFlags::ALL_JOINED,
                shards: 0,
                slot_count: t.slots,
                epoch,
                counters: StatusCounters::default(),
                joined: &bitmap,
            })),
        }
    }

    /// A recorded datagram whose session (or, for a Join, nonce) is rewritten.
    fn replay(&mut self) -> Vec<u8> {
        if self.replays.is_empty() {
            return self.forge(Kind::Contribution);
        }
        let i = self.rng.below(self.replays.len() as u64) as usize;
        let original = self.replays[i].clone();
        let session = self.session();
        match Message::parse(&original) {
            Ok(Message::Data(mut r, values)) => {
                r.session = session;
                if self.rng.below(4) == 0 {
                    r.flags = r.flags.with(Flags::RETRANSMIT);
                }
                bytes_of(&Message::Data(r, values))
            }
            Ok(Message::Join(mut j)) => {
                j.nonce = session | 1;
                bytes_of(&Message::Join(j))
            }
            Ok(Message::Leave(mut l)) => {
                l.session = session;
                bytes_of(&Message::Leave(l))
            }
            _ => original,
        }
    }
}
