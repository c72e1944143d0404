//! The worker check: arbitrary inbound datagrams and timeouts into the worker state
//! machine ([`switchml_core::worker::Worker`]) never make it send something it should not,
//! or report a tensor finished that is not.
//!
//! A worker lane (fuzzed world, rank, window, slot range, chunk size, retry budget) is
//! given a few tensors and then fed, in any order: Results answering its own outstanding
//! Contributions (some with one field wrong), Results with fuzzed fields, JoinReplies,
//! ProbeReplies, Aborts, junk, replays of earlier datagrams, time passing, and the
//! application's `leave`. After every
//! input the checker drains `poll_transmit` and `poll_event` and holds them to
//! protocol.md §5.3 and §6, using its own copy of the schedule (which use of which slot
//! carries which chunk of which tensor):
//!
//! - **no panic**, and every datagram it sends parses, for its job and rank;
//! - **nothing outside its window**: every Contribution has slot in
//!   `slot_lo..slot_lo + window`, `ver == seq & 1`, `count ≤ config.count`, and is the use
//!   the schedule says comes next on that slot (`seq` = results accepted there), with the
//!   chunk's count, the look-ahead exponent and the payload quantized with the exponent the
//!   previous Result brought, flagged with exactly the chunk's non-finite kinds (§5.4); a
//!   resend is the same bytes with RETRANSMIT, a first send never has it;
//! - **results are accepted only for the outstanding use** of a slot (same seq, ver, count),
//!   and no chunk is accepted twice;
//! - **no completion with missing chunks**: `Done` with `Ok` (or `Overflow`) only after a
//!   Result for every chunk of that tensor was accepted, `Overflow` iff one carried the
//!   flag or (under `NonFinitePolicy::Refuse`) a float sum came back beyond the element
//!   type's range (naming the first such chunk, or element), `Aborted` only after the
//!   stream failed;
//! - Contributions only after a JoinReply with COMPLETE arrived, no Join after data began,
//!   nothing but one Abort after a failure, `Joined` and `Failed` at most once;
//! - **the run's session and the job's credential** (protocol.md §4.1): every Join carries
//!   the configured key and nonce; while joining the lane takes a JoinReply only if it names
//!   the lane's nonce or is the COMPLETE of the session it already took (any other leaves
//!   it joining, counted as ignored, its epoch unread); every Contribution, Probe, Abort and
//!   Leave carries the session of the last JoinReply it took; a Result of another session
//!   is never accepted, and an Abort fails the lane only if it names the lane's non-zero
//!   session or, while joining, its nonce — never session 0;
//! - **leaving**: `leave` takes effect only on a running, idle lane, which then sends one
//!   Leave and nothing else, ever;
//! - **timers never in the past**: after `handle_timeout(now)`, `poll_timeout()` is later
//!   than `now` (or none).

mod ops;

pub use ops::{decode, encode, Setup, TensorSpec, WorkerOp};

use std::collections::{BTreeMap, BTreeSet};
use std::ops::Range;

use half::{bf16, f16};
use switchml_core::quant::{NonFiniteKinds, Op, Tensor, Unscale, NO_EXPONENT};
use switchml_core::time::{Duration, Instant};
use switchml_core::wire::{
    AbortReason, AbortRepr, DataKind, DataRepr, Flags, JoinFlags, JoinReplyRepr, Message,
    ProbeReplyRepr, SlotState, RANK_ALL,
};
use switchml_core::worker::{
    Config, ConfigError, Event, NonFinitePolicy, SubmitErrorKind, TensorError, WorkerError,
};

use crate::sim::Buf;

/// The job id of the lane under test.
pub const JOB: u16 = 7;
/// The switch epoch the well-formed replies carry.
pub const EPOCH: u32 = 0xE90C_0001;
/// The most slots the lane may drive (a window of 5 must be refused).
pub const SLOTS: usize = 4;
/// The most tensors queued at once.
pub const QUEUE: usize = 3;
/// The job key the lane is configured with.
pub const KEY: u64 = 0x9E37_79B9_7F4A_7C15;
/// The lane's process nonce.
pub const NONCE: u32 = 0x2545_F491;
/// The session of the well-formed JoinReplies (a fuzzed one flips some of its bits).
pub const SESSION: u32 = 0xC0FF_EE01;
/// The nonce of another process's Join, which a foreign JoinReply answers.
pub const OTHER_NONCE: u32 = NONCE ^ 0x8000_0001;

type TestWorker = switchml_core::worker::Worker<Buf, SLOTS, QUEUE>;

/// Decode fuzz bytes into a lane set-up, tensors and inputs, and check them.
pub fn check_worker(bytes: &[u8]) {
    let (setup, tensors, ops) = decode(bytes);
    check_worker_sequence(&setup, &tensors, &ops);
}

/// The lane configuration for `setup`: short timeouts, so that time matters.
pub fn config(setup: &Setup) -> Config {
    Config {
        slot_lo: setup.slot_lo,
        window: setup.window,
        count: setup.count,
        // This lane is one of its rank's lanes (a window of 0 is refused first).
        lanes: setup.slot_lo.checked_div(setup.window).unwrap_or(0) + 1,
        rto: Duration::from_millis(1),
        max_rto: Duration::from_millis(4),
        retries: setup.retries,
        join_interval: Duration::from_millis(2),
        join_timeout: Duration::from_millis(100),
        key: KEY,
        nonce: NONCE,
        // Both policies get fuzzed without a field of their own in the corpus' layout:
        // an odd retry budget refuses non-finite values.
        non_finite: if setup.retries % 2 == 1 {
            NonFinitePolicy::Refuse
        } else {
            NonFinitePolicy::Propagate
        },
        ..Config::new(JOB, setup.rank, setup.world)
    }
}

/// Run a lane through `tensors` and `ops` and check every invariant after every input,
/// liveness included.
pub fn check_worker_sequence(setup: &Setup, tensors: &[TensorSpec], ops: &[WorkerOp]) {
    check_worker_sequence_with(setup, tensors, ops, true);
}

/// Run a lane through `tensors` and `ops` and check every invariant after every input.
///
/// With `liveness`, also: while the stream runs and a use is outstanding, some timer is
/// armed (`poll_timeout()` is not `None`), so the lane cannot hang without failing. It
/// caught a slot that stalled while another slot was being probed losing its timer (fixed
/// in d81a55a; pinned by `worker_never_hangs_with_a_use_outstanding` in
/// `tests/tests/fuzz_corpus.rs`).
pub fn check_worker_sequence_with(
    setup: &Setup,
    tensors: &[TensorSpec],
    ops: &[WorkerOp],
    liveness: bool,
) {
    let config = config(setup);
    let worker = match TestWorker::new(config) {
        Ok(w) => w,
        Err(e) => {
            assert_eq!(e, ConfigError::Window, "{config:?}");
            assert!(usize::from(setup.window) > SLOTS, "{config:?} refused");
            return;
        }
    };
    assert!(
        usize::from(setup.window) <= SLOTS,
        "window over SLOTS accepted"
    );
    let window = usize::from(config.window);
    let mut c = Checker {
        worker,
        config,
        now: Instant::ZERO,
        schedule: vec![Vec::new(); window],
        accepted: vec![0; window],
        last_exp: vec![NO_EXPONENT; window],
        sent: vec![None; window],
        tensors: BTreeMap::new(),
        liveness,
        next_id: 0,
        rotation: 0,
        inbound: Vec::new(),
        complete_join_fed: false,
        first_epoch: None,
        contribution_sent: false,
        joined_event: false,
        failed_event: false,
        aborts_sent: 0,
        last_probe: None,
        session: 0,
        left: false,
        leave_sent: false,
        buf: vec![0; config.max_datagram()],
    };
    c.drain();
    for t in tensors {
        c.submit(t);
    }
    c.drain();
    for op in ops {
        c.apply(op);
        c.drain();
    }
}

/// One use of one lane slot, as the schedule of protocol.md §6 has it.
#[derive(Debug, Clone)]
struct Use {
    tensor: u64,
    chunk: u32,
    prime: bool,
    range: Range<usize>,
}

/// What the checker knows of a submitted tensor.
struct TensorModel {
    /// The submitted values (the worker overwrites its own copy as results come).
    input: Buf,
    op: Op,
    float: bool,
    chunks: u32,
    answered: BTreeSet<u32>,
    overflow: Option<usize>,
    done: bool,
}

struct Checker {
    worker: TestWorker,
    config: Config,
    now: Instant,
    /// Per lane slot, its uses in order; use `seq` is `schedule[slot][seq]`.
    schedule: Vec<Vec<Use>>,
    /// Per lane slot, Results accepted (= the seq of the outstanding use).
    accepted: Vec<usize>,
    /// Per lane slot, the exponent of the last accepted Result.
    last_exp: Vec<u8>,
    /// Per lane slot, the first transmission of the outstanding use.
    sent: Vec<Option<Vec<u8>>>,
    tensors: BTreeMap<u64, TensorModel>,
    /// Check that an outstanding use always has a timer.
    liveness: bool,
    next_id: u64,
    rotation: u32,
    inbound: Vec<Vec<u8>>,
    complete_join_fed: bool,
    /// The epoch of the first JoinReply or ProbeReply for this lane.
    first_epoch: Option<u32>,
    contribution_sent: bool,
    joined_event: bool,
    failed_event: bool,
    aborts_sent: u32,
    last_probe: Option<(u16, u8, u32)>,
    /// The session of the last JoinReply the lane took while joining (0 before).
    session: u32,
    /// Whether `leave` took effect.
    left: bool,
    /// Whether the Leave went out.
    leave_sent: bool,
    buf: Vec<u8>,
}

/// Build the tensor a spec describes.
fn tensor(spec: &TensorSpec) -> Buf {
    let float = |w: u32| -> f32 {
        if w >> 24 == 0xFF {
            f32::from_bits(w)
        } else {
            let mantissa = f32::from(w as u16 as i16);
            mantissa * 2f32.powi(((w >> 16) & 0x3F) as i32 - 40)
        }
    };
    let words = spec.words.iter().copied();
    match spec.kind % 4 {
        0 => Buf::F32(words.map(float).collect()),
        1 => Buf::I32(words.map(|w| w as i32).collect()),
        2 => Buf::F16(words.map(|w| f16::from_f32(float(w))).collect()),
        _ => Buf::Bf16(words.map(|w| bf16::from_f32(float(w))).collect()),
    }
}

/// The Contribution flags for a chunk holding `kinds` (protocol.md §5.4).
fn non_finite_flags(kinds: NonFiniteKinds) -> Flags {
    let bit = |set: bool, f: Flags| if set { f } else { Flags::default() };
    bit(kinds.pos_inf, Flags::POS_INF)
        .with(bit(kinds.neg_inf, Flags::NEG_INF))
        .with(bit(kinds.nan, Flags::NAN))
}

/// Return the index of the first NaN or infinity.
fn first_non_finite(buf: &Buf) -> Option<usize> {
    match buf {
        Buf::F32(x) => x.iter().position(|v| !v.is_finite()),
        Buf::I32(_) => None,
        Buf::F16(x) => x.iter().position(|v| !v.is_finite()),
        Buf::Bf16(x) => x.iter().position(|v| !v.is_finite()),
    }
}

/// The first of the summed `payload` values that dequantizes to ±∞ in `buf`'s element
/// type (protocol.md §5.2: a float overflow), one value at a time through the scalar
/// reference.
fn first_infinite(buf: &Buf, payload: &[u8], unscale: Unscale) -> Option<usize> {
    let mut sums = payload
        .chunks_exact(4)
        .map(|b| unscale.dequantize_value(i32::from_be_bytes([b[0], b[1], b[2], b[3]])));
    match buf {
        Buf::F32(_) => sums.position(f32::is_infinite),
        Buf::I32(_) => None,
        Buf::F16(_) => sums.position(|y| f16::from_f32(y).is_infinite()),
        Buf::Bf16(_) => sums.position(|y| bf16::from_f32(y).is_infinite()),
    }
}

impl Checker {
    fn submit(&mut self, spec: &TensorSpec) {
        let mut buf = tensor(spec);
        let input = buf.clone();
        let op = if spec.average { Op::Average } else { Op::Sum };
        let len = buf.elements().len();
        let float = !matches!(buf, Buf::I32(_));
        let room = self.next_id < QUEUE as u64
            || self
                .tensors
                .get(&(self.next_id - QUEUE as u64))
                .is_none_or(|t| t.done);
        let failed = self.worker.failure().copied();
        let non_finite = first_non_finite(&buf);
        let mut refusals = Vec::new();
        if failed.is_some() {
            refusals.push(SubmitErrorKind::Failed);
        }
        if !float && op == Op::Average {
            refusals.push(SubmitErrorKind::AverageOfIntegers);
        }
        if let (Some(index), NonFinitePolicy::Refuse) = (non_finite, self.config.non_finite) {
            let e = switchml_core::quant::NonFinite { index };
            refusals.push(SubmitErrorKind::NonFinite(e));
        }
        if !room {
            refusals.push(SubmitErrorKind::QueueFull);
        }
        let id = match self.worker.submit(self.now, buf, op) {
            Ok(id) => id,
            Err(e) => {
                assert!(
                    refusals.contains(&e.kind),
                    "{:?} not in {refusals:?}",
                    e.kind
                );
                return;
            }
        };
        assert!(
            refusals.is_empty(),
            "submit accepted, should be one of {refusals:?}"
        );
        assert_eq!(id.0, self.next_id, "tensor ids in submission order");
        let (count, window) = (usize::from(self.config.count), self.schedule.len());
        let chunks = len.div_ceil(count) as u32;
        let rotation = self.rotation as usize;
        for slot in 0..window {
            let mine = (0..chunks).filter(|j| (rotation + *j as usize) % window == slot);
            let range = |j: u32| j as usize * count..((j as usize + 1) * count).min(len);
            let mut first = true;
            for j in mine {
                if first && float {
                    self.schedule[slot].push(Use {
                        tensor: id.0,
                        chunk: j,
                        prime: true,
                        range: range(j),
                    });
                }
                first = false;
                self.schedule[slot].push(Use {
                    tensor: id.0,
                    chunk: j,
                    prime: false,
                    range: range(j),
                });
            }
        }
        self.rotation = ((rotation + chunks as usize) % window) as u32;
        self.next_id += 1;
        let model = TensorModel {
            input,
            op,
            float,
            chunks,
            answered: BTreeSet::new(),
            overflow: None,
            done: false,
        };
        self.tensors.insert(id.0, model);
    }

    fn drain(&mut self) {
        for _ in 0..10_000 {
            let Some(len) = self.worker.poll_transmit(self.now, &mut self.buf) else {
                break;
            };
            assert!(len <= self.buf.len(), "poll_transmit length {len}");
            let bytes = self.buf[..len].to_vec();
            self.on_transmit(&bytes);
        }
        while let Some(event) = self.worker.poll_event() {
            self.on_event(event);
        }
        let outstanding = self.sent.iter().position(Option::is_some);
        if let (true, true, Some(i)) = (self.liveness, self.worker.is_running(), outstanding) {
            assert!(
                self.worker.poll_timeout().is_some(),
                "slot {i} waits for a result with no timer armed: the lane hangs"
            );
        }
    }

    /// Return the lane slot of job-relative `slot`, if it is in the window.
    fn lane_slot(&self, slot: u16) -> Option<usize> {
        let i = usize::from(slot.checked_sub(self.config.slot_lo)?);
        (i < self.schedule.len()).then_some(i)
    }

    fn on_transmit(&mut self, bytes: &[u8]) {
        let msg = Message::parse(bytes).unwrap_or_else(|e| {
            panic!("worker sent bytes that do not parse ({e:?}): {bytes:02x?}")
        });
        let c = self.config;
        assert_eq!((msg.job(), msg.rank()), (c.job, c.rank), "{msg:?}");
        let failed = self.worker.failure().is_some();
        assert!(!self.leave_sent, "sent after its Leave: {msg:?}");
        let session = match &msg {
            Message::Data(p, _) => Some(p.session),
            Message::Probe(p) => Some(p.session),
            Message::Abort(a) => Some(a.session),
            Message::Leave(l) => Some(l.session),
            _ => None,
        };
        if let Some(session) = session {
            assert_eq!(session, self.session, "not the run joined: {msg:?}");
        }
        match msg {
            Message::Data(p, payload) if p.kind == DataKind::Contribution => {
                assert!(!failed, "Contribution after the stream failed: {p:?}");
                assert!(
                    self.complete_join_fed,
                    "Contribution before the job was complete"
                );
                self.contribution_sent = true;
                self.on_contribution(&p, payload, bytes);
            }
            Message::Join(j) => {
                assert!(!failed && !self.contribution_sent, "Join now: {j:?}");
                let want = (c.world, c.slot_lo, c.window, c.count, c.lanes, true, NONCE);
                let got = (
                    j.world,
                    j.slot_lo,
                    j.slot_count,
                    j.count,
                    j.lanes,
                    j.verify(KEY),
                    j.nonce,
                );
                assert_eq!(got, want, "{j:?}");
            }
            Message::Leave(l) => {
                assert!(self.left, "a Leave nobody asked for: {l:?}");
                self.leave_sent = true;
            }
            Message::Probe(p) => {
                assert!(!failed, "Probe after the stream failed");
                let i = self
                    .lane_slot(p.slot)
                    .expect("Probe for a slot outside the window");
                let seq = self.accepted[i] as u32;
                assert_eq!(
                    (p.seq, p.ver),
                    (seq, (seq & 1) as u8),
                    "{p:?}: not the stalled use"
                );
                self.last_probe = Some((p.slot, p.ver, p.seq));
            }
            Message::Abort(a) => {
                assert!(failed, "Abort before the stream failed: {a:?}");
                assert_eq!(a.reason, AbortReason::WorkerFailed, "{a:?}");
                self.aborts_sent += 1;
                assert_eq!(self.aborts_sent, 1, "a second Abort");
            }
            other => panic!("the worker sent {:?}: {other:?}", other.msg_type()),
        }
    }

    fn on_contribution(&mut self, p: &DataRepr, payload: &[u8], bytes: &[u8]) {
        let c = self.config;
        let Some(i) = self.lane_slot(p.slot) else {
            panic!(
                "Contribution outside the window {}+{}: {p:?}",
                c.slot_lo, c.window
            );
        };
        assert_eq!(u32::from(p.ver), p.seq & 1, "ver ≠ seq mod 2: {p:?}");
        assert!(p.count <= c.count, "count over config.count: {p:?}");
        let seq = self.accepted[i];
        assert_eq!(
            p.seq as usize, seq,
            "slot {i} sent use {} before the result of use {seq}",
            p.seq
        );
        let Some(u) = self.schedule[i].get(seq).cloned() else {
            panic!("slot {i} sent use {seq}, but nothing is scheduled there: {p:?}");
        };
        let want_count = if u.prime { 0 } else { u.range.len() };
        assert_eq!(usize::from(p.count), want_count, "count of {u:?}: {p:?}");
        let t = self.tensors.get_mut(&u.tensor).expect("scheduled tensor");
        let look_ahead = u.chunk + c.window as u32;
        let want_exp = if u.prime {
            t.input.elements().block_exponent(u.range.clone())
        } else if t.float && look_ahead < t.chunks {
            let next = look_ahead as usize * usize::from(c.count);
            let end = (next + usize::from(c.count)).min(t.input.elements().len());
            t.input.elements().block_exponent(next..end)
        } else {
            NO_EXPONENT
        };
        assert_eq!(p.exp, want_exp, "look-ahead exponent of {u:?}: {p:?}");
        let mut kinds = Flags::default();
        if !u.prime {
            let mut want = vec![0u8; payload.len()];
            let elements = t.input.elements();
            let k = elements.encode(u.range.clone(), c.world, self.last_exp[i], &mut want);
            kinds = non_finite_flags(k);
            assert_eq!(
                payload,
                &want[..],
                "payload of {u:?} (exp {})",
                self.last_exp[i]
            );
        }
        // protocol.md §5.4: exactly the kinds of non-finite value the chunk holds.
        assert_eq!(
            p.flags.and(Flags::NON_FINITE),
            kinds,
            "non-finite flags of {u:?}: {p:?}"
        );
        match &self.sent[i] {
            Some(first) => {
                assert!(
                    p.flags.contains(Flags::RETRANSMIT),
                    "resend without RETRANSMIT"
                );
                // The flags byte is the only one a resend may change.
                let flags = core::mem::offset_of!(switchml_core::wire::data::Header, flags);
                let same = first.len() == bytes.len()
                    && first
                        .iter()
                        .zip(bytes)
                        .enumerate()
                        .all(|(k, (a, b))| k == flags || a == b);
                assert!(
                    same,
                    "a resend differs from the first send: {first:02x?} vs {bytes:02x?}"
                );
            }
            None => {
                assert!(
                    !p.flags.contains(Flags::RETRANSMIT),
                    "first send with RETRANSMIT"
                );
                self.sent[i] = Some(bytes.to_vec());
            }
        }
    }

    fn on_event(&mut self, event: Event<Buf>) {
        match event {
            Event::Redirected { shard, shards } => {
                assert!(shards >= 2, "redirected by a switch of {shards} shards");
                let lane = self.worker.lane();
                assert_eq!(
                    shard,
                    switchml_core::shard::shard_of_lane(lane, shards),
                    "lane {lane} sent to the wrong shard"
                );
            }
            Event::Joined { epoch } => {
                assert!(!self.joined_event, "Joined twice");
                assert!(
                    self.complete_join_fed,
                    "Joined without a complete JoinReply"
                );
                let first = self.first_epoch;
                assert_eq!(
                    Some(epoch),
                    first,
                    "Joined with another epoch than the first seen"
                );
                self.joined_event = true;
            }
            Event::Failed(err) => {
                assert!(!self.failed_event, "Failed twice");
                assert_eq!(self.worker.failure(), Some(&err));
                assert!(
                    !matches!(err, WorkerError::BufferTooSmall { .. }),
                    "{err:?}"
                );
                self.failed_event = true;
            }
            Event::Done { id, result, .. } => {
                let failed = self.worker.failure().is_some();
                let Some(t) = self.tensors.get_mut(&id.0) else {
                    panic!("Done for unknown tensor {id:?}");
                };
                assert!(!t.done, "Done twice for {id:?}");
                t.done = true;
                let all = t.answered.len() as u32 == t.chunks;
                match result {
                    Ok(()) | Err(TensorError::Overflow { .. }) => {
                        assert!(
                            all,
                            "{id:?} done ({result:?}) with chunks {:?} of {} answered",
                            t.answered, t.chunks
                        );
                        let element = t.input.elements().element_type();
                        let want = t
                            .overflow
                            .map(|index| TensorError::Overflow { index, element });
                        assert_eq!(result.err(), want, "{id:?}: overflow report");
                    }
                    Err(TensorError::Aborted) => {
                        assert!(failed, "{id:?} aborted but the stream did not fail");
                    }
                }
            }
        }
    }

    fn apply(&mut self, op: &WorkerOp) {
        match op {
            WorkerOp::Answer {
                pick,
                mutation,
                exp,
                flags,
                to_all,
                values,
            } => {
                let open: Vec<usize> = (0..self.sent.len())
                    .filter(|&i| self.sent[i].is_some())
                    .collect();
                if open.is_empty() {
                    return;
                }
                let i = open[usize::from(*pick) % open.len()];
                let first = self.sent[i].clone().unwrap_or_default();
                let Ok(Message::Data(p, _)) = Message::parse(&first) else {
                    unreachable!("sent[] holds Contributions");
                };
                let mut r = DataRepr {
                    kind: DataKind::Result,
                    rank: if *to_all { RANK_ALL } else { self.config.rank },
                    flags: Flags(*flags),
                    exp: *exp,
                    ..p
                };
                match mutation {
                    0 => r.seq = r.seq.wrapping_add(1),
                    1 => r.seq = r.seq.wrapping_sub(1),
                    2 => r.ver ^= 1,
                    3 => r.count += 1,
                    4 => r.count = r.count.saturating_sub(1),
                    5 => r.slot = r.slot.wrapping_add(1),
                    6 => r.job = r.job.wrapping_add(1),
                    7 => r.kind = DataKind::Contribution,
                    8 => r.session = r.session.wrapping_add(1),
                    _ => {}
                }
                let mut payload: Vec<u8> = values.iter().flat_map(|v| v.to_be_bytes()).collect();
                payload.resize(4 * usize::from(r.count), 0);
                self.feed(&Message::Data(r, &payload));
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
                let payload = vec![0u8; 4 * usize::from(*count)];
                let r = DataRepr {
                    kind: DataKind::Result,
                    job: JOB,
                    rank: self.rank(*rank),
                    slot: slot.wrapping_add(self.config.slot_lo).wrapping_sub(1),
                    ver: *ver,
                    flags: Flags(*flags),
                    count: *count,
                    seq: *seq,
                    exp: *exp,
                    session: self.session ^ u32::from(*session),
                };
                self.feed(&Message::Data(r, &payload));
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
                let r = JoinReplyRepr {
                    job: JOB,
                    rank: self.rank(*rank),
                    world: if *world == 0 {
                        self.config.world
                    } else {
                        u16::from(*world % 6)
                    },
                    shards: 0,
                    flags: if *complete {
                        JoinFlags::COMPLETE
                    } else {
                        JoinFlags::default()
                    },
                    max_count: *max_count,
                    epoch: EPOCH ^ u32::from(*epoch),
                    slot_count: self.config.slot_lo + self.config.window,
                    session: SESSION ^ u32::from(*session),
                    nonce: if *foreign { OTHER_NONCE } else { NONCE },
                    lane_slots: self.config.window,
                    count: self.config.count,
                    joined: bitmap,
                };
                self.feed(&Message::JoinReply(r));
            }
            WorkerOp::ProbeReply {
                state,
                remaining,
                seq,
                epoch,
                bitmap,
            } => {
                let (slot, ver, probed) = self.last_probe.unwrap_or((self.config.slot_lo, 0, 0));
                let r = ProbeReplyRepr {
                    job: JOB,
                    rank: self.config.rank,
                    slot,
                    ver,
                    state: SlotState::from(*state % 4),
                    remaining: *remaining,
                    seq: probed.wrapping_add(u32::from(*seq)),
                    epoch: EPOCH ^ u32::from(*epoch),
                    world: self.config.world,
                    // Half of them name another run: the worker must ignore those.
                    session: if *state & 0x80 != 0 {
                        self.session ^ 1
                    } else {
                        self.session
                    },
                    seen: bitmap,
                };
                self.feed(&Message::ProbeReply(r));
            }
            WorkerOp::Abort {
                reason,
                rank,
                detail,
                epoch,
                session,
            } => {
                let a = AbortRepr {
                    job: JOB,
                    rank: self.rank(*rank),
                    reason: AbortReason::from(*reason % 14),
                    detail: *detail,
                    epoch: EPOCH ^ u32::from(*epoch),
                    session: match session {
                        0 => self.session,
                        1 => 0,
                        2 => NONCE,
                        s => self.session ^ u32::from(*s),
                    },
                };
                self.feed(&Message::Abort(a));
            }
            WorkerOp::Leave => {
                let takes = self.worker.is_running() && self.worker.is_idle();
                let was_running = self.worker.is_running();
                self.worker.leave();
                if takes {
                    assert!(!self.worker.is_running(), "still running after leave");
                    self.left = true;
                } else {
                    assert_eq!(self.worker.is_running(), was_running, "leave when busy");
                }
            }
            WorkerOp::Raw(bytes) => self.feed_bytes(bytes),
            WorkerOp::Replay(back) => {
                let n = self.inbound.len();
                if n > 0 {
                    let bytes = self.inbound[n - 1 - usize::from(*back) % n.min(64)].clone();
                    self.feed_bytes(&bytes);
                }
            }
            WorkerOp::Wait(ticks) => {
                self.now += Duration::from_micros(4 * u64::from(*ticks));
                self.timeout();
            }
            WorkerOp::WaitForTimer => {
                if let Some(at) = self.worker.poll_timeout() {
                    self.now = self.now.max(at);
                }
                self.timeout();
            }
            WorkerOp::Submit(spec) => self.submit(spec),
        }
    }

    /// Rank selector: 0 this rank, 1 every rank, else some rank (maybe this one).
    fn rank(&self, sel: u8) -> u16 {
        match sel {
            0 => self.config.rank,
            1 => RANK_ALL,
            s => u16::from(s % 5),
        }
    }

    fn timeout(&mut self) {
        self.worker.handle_timeout(self.now);
        if let Some(at) = self.worker.poll_timeout() {
            assert!(
                at > self.now,
                "poll_timeout {at:?} not after now {:?}",
                self.now
            );
        }
    }

    fn feed(&mut self, msg: &Message) {
        let mut bytes = vec![0u8; msg.buffer_len()];
        msg.emit(&mut bytes)
            .expect("the checker builds valid messages");
        self.feed_bytes(&bytes);
    }

    fn feed_bytes(&mut self, bytes: &[u8]) {
        let before = self.worker.stats().results;
        let ignored_before = self.worker.stats().ignored;
        let failed_before = self.worker.failure().is_some();
        let joining = !failed_before && !self.left && !self.worker.is_running();
        self.worker.handle_packet(self.now, bytes);
        self.inbound.push(bytes.to_vec());
        let failed = !failed_before && self.worker.failure().is_some();
        let msg = Message::parse(bytes);
        let me = |job: u16, rank: u16| job == JOB && (rank == self.config.rank || rank == RANK_ALL);
        if let (true, Ok(Message::Abort(a))) = (failed, &msg) {
            let admitted =
                (a.session != 0 && a.session == self.session) || (joining && a.session == NONCE);
            assert!(
                a.job == JOB && admitted,
                "failed on an Abort of another run: {a:?} (the lane's session {:#x}, joining: {joining})",
                self.session
            );
        }
        let epoch = match &msg {
            Ok(Message::JoinReply(r)) if me(r.job, r.rank) && joining => {
                // An answer to its own Join, or the completion of the run it took from one.
                let completes_mine = r.flags.contains(JoinFlags::COMPLETE)
                    && self.session != 0
                    && r.session == self.session;
                if r.nonce != NONCE && !completes_mine {
                    let ignored = self.worker.stats().ignored;
                    assert_eq!(ignored, ignored_before + 1, "took another's {r:?}");
                    assert!(!failed && !self.worker.is_running(), "took another's {r:?}");
                    return;
                }
                if r.flags.contains(JoinFlags::COMPLETE) {
                    self.complete_join_fed = true;
                }
                // Taken unless it failed the lane (epoch, world, max_count).
                if !failed {
                    self.session = r.session;
                }
                Some(r.epoch)
            }
            // Only a ProbeReply of the lane's run is taken (protocol.md §3.5, §4.2).
            Ok(Message::ProbeReply(r))
                if me(r.job, r.rank) && r.session != 0 && r.session == self.session =>
            {
                Some(r.epoch)
            }
            _ => None,
        };
        self.first_epoch = self.first_epoch.or(epoch);
        let after = self.worker.stats().results;
        if after == before {
            return;
        }
        assert_eq!(after, before + 1, "one datagram, one result");
        let Ok(Message::Data(r, payload)) = msg else {
            panic!("a result accepted from {:?}", msg.map(|m| m.msg_type()));
        };
        self.on_accepted(&r, payload);
    }

    fn on_accepted(&mut self, r: &DataRepr, payload: &[u8]) {
        let c = self.config;
        assert_eq!(
            r.kind,
            DataKind::Result,
            "a Contribution accepted as a result"
        );
        assert!(
            r.job == JOB && (r.rank == c.rank || r.rank == RANK_ALL),
            "{r:?}"
        );
        assert_eq!(
            r.session, self.session,
            "accepted a Result of another run: {r:?}"
        );
        let Some(i) = self.lane_slot(r.slot) else {
            panic!("accepted a Result outside the window: {r:?}");
        };
        let seq = self.accepted[i];
        let outstanding = (seq as u32, (seq & 1) as u8);
        assert_eq!(
            (r.seq, r.ver),
            outstanding,
            "accepted a Result not for the outstanding use"
        );
        assert!(
            self.sent[i].is_some(),
            "accepted a Result for a use never sent: {r:?}"
        );
        let u = self.schedule[i][seq].clone();
        let want_count = if u.prime { 0 } else { u.range.len() };
        assert_eq!(
            usize::from(r.count),
            want_count,
            "accepted a Result with the wrong count"
        );
        self.accepted[i] += 1;
        let exp = std::mem::replace(&mut self.last_exp[i], r.exp);
        self.sent[i] = None;
        if !u.prime {
            let t = self.tensors.get_mut(&u.tensor).expect("scheduled tensor");
            assert!(
                t.answered.insert(u.chunk),
                "chunk {} answered twice",
                u.chunk
            );
            let start = u.range.start;
            let flagged = r.flags.contains(Flags::OVERFLOW).then_some(start);
            let unscale = Unscale::new(c.world, exp, t.op);
            // A float chunk flagged non-finite is written as such, not dequantized (§5.4).
            let non_finite = t.float && r.flags.intersects(Flags::NON_FINITE);
            // A float sum beyond the range is an error only under Refuse (§5.2, §5.4).
            let beyond_range = first_infinite(&t.input, payload, unscale)
                .map(|j| start + j)
                .filter(|_| !non_finite && c.non_finite == NonFinitePolicy::Refuse);
            t.overflow = [t.overflow, flagged, beyond_range]
                .into_iter()
                .flatten()
                .min();
        }
    }
}
