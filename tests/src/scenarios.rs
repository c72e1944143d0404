//! Golden switch scenarios: datagrams in, what the reference switch sends out, byte for
//! byte. `tests/vectors/switch.txt` is rendered from [`all`] by the reference switch and
//! committed; the P4 model, BMv2, the RTL and firmware replay it with [`load`].
//!
//! Format (line based):
//!
//! ```text
//! [name]
//! meaning: one line of prose
//! setup: job=7 world=3 slot_lo=4 slot_count=8 key=81985529216486895 max_count=8 epoch=3735928559
//! in: 01 01 00 07 ...            a datagram to the switch
//! out: consumed                  absorbed into a slot
//! out: drop duplicate            dropped, with the reason's name
//! out: multicast 01 02 ...       sent to every rank of the job
//! out: unicast 2 01 11 ...       sent to rank 2 (the sender)
//! ```
//!
//! Every `in:` is followed by exactly one `out:`. The switch of every scenario has 16 slots
//! of `max_count` values, 64 ranks per job and starts empty but for the `setup` job.
//! `max_count` is [`MAX_COUNT`] (8) but in the `multi_pass_*` scenarios, whose switch holds
//! [`LARGE_MAX_COUNT`] (256) values a slot, so that a Contribution of more than 64 values
//! takes more than one pass of a P4 pipeline (p4/README.md, "The pipeline").

use switchml_core::switch::{DropReason, JobConfig, Slot, Switch, Verdict};
use switchml_core::wire::{
    AbortReason, AbortRepr, DataKind, DataRepr, Flags, JoinRepr, LeaveRepr, Message, ProbeRepr,
    StatusRepr,
};

/// The committed scenarios.
pub const SWITCH: &str = include_str!("../vectors/switch.txt");

/// Values per slot in the scenario switches (`max_count=8` on their `setup:` line).
pub const MAX_COUNT: usize = 8;
/// Values per slot in the `multi_pass_*` scenarios: what a P4 value register holds, 64 values
/// a pass over 4 passes.
pub const LARGE_MAX_COUNT: usize = 256;
/// Slots in every scenario switch.
pub const POOL: usize = 16;

/// What the switch does with one datagram.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Absorbed.
    Consumed,
    /// Dropped for the named reason.
    Drop(String),
    /// These bytes to every rank.
    Multicast(Vec<u8>),
    /// These bytes to one rank.
    Unicast(u16, Vec<u8>),
}

/// One scenario.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scenario {
    /// Unique name.
    pub name: String,
    /// One line of prose.
    pub meaning: String,
    /// The job registered before the first datagram.
    pub job: JobConfig,
    /// The switch's epoch.
    pub epoch: u32,
    /// Values per slot: [`MAX_COUNT`] or [`LARGE_MAX_COUNT`].
    pub max_count: u16,
    /// Datagrams in, and what comes out of each.
    pub steps: Vec<(Vec<u8>, Outcome)>,
}

/// The reference switch a scenario is rendered with: `max_count` is a const generic of the
/// reference, so one type per size.
pub enum ScenarioSwitch {
    /// [`MAX_COUNT`] values a slot.
    Small(Switch<'static, MAX_COUNT, 1, 2>),
    /// [`LARGE_MAX_COUNT`] values a slot.
    Large(Switch<'static, LARGE_MAX_COUNT, 1, 2>),
}

/// A fresh reference switch set up for `s`.
///
/// # Panics
/// If `s.max_count` is neither [`MAX_COUNT`] nor [`LARGE_MAX_COUNT`].
pub fn switch_for(s: &Scenario) -> ScenarioSwitch {
    match usize::from(s.max_count) {
        MAX_COUNT => {
            let pool = Box::leak(vec![Slot::IDLE; POOL].into_boxed_slice());
            let mut sw = Switch::new(pool, s.epoch);
            sw.add_job(s.job).expect("scenario job fits");
            ScenarioSwitch::Small(sw)
        }
        LARGE_MAX_COUNT => {
            let pool = Box::leak(vec![Slot::IDLE; POOL].into_boxed_slice());
            let mut sw = Switch::new(pool, s.epoch);
            sw.add_job(s.job).expect("scenario job fits");
            ScenarioSwitch::Large(sw)
        }
        other => panic!("[{}] max_count {other}: no such scenario switch", s.name),
    }
}

/// Run one datagram through `sw` and describe the outcome.
pub fn outcome(sw: &mut ScenarioSwitch, bytes: &[u8]) -> Outcome {
    match sw {
        ScenarioSwitch::Small(sw) => outcome_of(sw, bytes),
        ScenarioSwitch::Large(sw) => outcome_of(sw, bytes),
    }
}

fn outcome_of<const K: usize>(sw: &mut Switch<'static, K, 1, 2>, bytes: &[u8]) -> Outcome {
    let mut out = vec![0u8; Switch::<'static, K, 1, 2>::OUT_LEN];
    match sw.process(bytes, &mut out) {
        Verdict::Consumed => Outcome::Consumed,
        Verdict::Drop(r) => Outcome::Drop(r.name().to_string()),
        Verdict::Multicast { len, .. } => Outcome::Multicast(out[..len].to_vec()),
        Verdict::Unicast { rank, len, .. } => Outcome::Unicast(rank, out[..len].to_vec()),
        Verdict::Up { .. } => unreachable!("no scenario has a child switch"),
    }
}

fn emit(m: Message) -> Vec<u8> {
    let mut b = vec![0u8; m.buffer_len()];
    m.emit(&mut b).expect("scenario messages are valid");
    b
}

/// The key of the scenario job.
pub const KEY: u64 = 0x0123_4567_89AB_CDEF;

/// The nonce of the process of rank `r` (its `n`-th process from 0): readable in a dump.
const fn nonce(rank: u16, n: u32) -> u32 {
    0x1111_1111 * (rank as u32 + 1) + 0x0100_0000 * n
}

/// The session of the run that rank 0's first process opens in [`join_all`].
const SESSION: u32 = nonce(0, 0);

fn contribution(rank: u16, slot: u16, seq: u32, exp: u8, session: u32, values: &[i32]) -> Vec<u8> {
    let payload: Vec<u8> = values.iter().flat_map(|v| v.to_be_bytes()).collect();
    emit(Message::Data(
        DataRepr {
            kind: DataKind::Contribution,
            job: 7,
            rank,
            slot,
            ver: (seq & 1) as u8,
            flags: Flags::default(),
            count: values.len() as u16,
            seq,
            exp,
            session,
        },
        &payload,
    ))
}

/// A Join of `rank`'s process `nonce` with `key`, for a lane of `slot_count` slots from
/// `slot_lo` and chunks of `count` values, believing in `world` ranks; its rank has as many
/// such lanes as the job's 8 slots hold.
fn join_with(
    rank: u16,
    world: u16,
    (slot_lo, slot_count, count): (u16, u16, u16),
    nonce: u32,
    key: u64,
) -> Vec<u8> {
    let lanes = 8u16.checked_div(slot_count).unwrap_or(1).max(1);
    join_lanes(rank, world, (slot_lo, slot_count, count), lanes, nonce, key)
}

/// A Join as [`join_with`], of a rank with `lanes` lanes.
fn join_lanes(
    rank: u16,
    world: u16,
    (slot_lo, slot_count, count): (u16, u16, u16),
    lanes: u16,
    nonce: u32,
    key: u64,
) -> Vec<u8> {
    emit(Message::Join(
        JoinRepr {
            job: 7,
            rank,
            world,
            slot_lo,
            slot_count,
            count,
            lanes,
            nonce,
            cookie: 0,
            tag: [0; 16],
        }
        .sign(key),
    ))
}

/// A Join of `rank`'s first process, with the job's key.
fn join(rank: u16, world: u16, slot_lo: u16, slot_count: u16, count: u16) -> Vec<u8> {
    join_with(
        rank,
        world,
        (slot_lo, slot_count, count),
        nonce(rank, 0),
        KEY,
    )
}

/// Ranks 0, 1, 2 join with the whole slot range and chunks of 8: the run opens with
/// [`SESSION`] and the last Join completes it.
fn join_all() -> Vec<Vec<u8>> {
    (0..3).map(|rank| join(rank, 3, 0, 8, 8)).collect()
}

fn probe(rank: u16, slot: u16, ver: u8, seq: u32, session: u32) -> Vec<u8> {
    emit(Message::Probe(ProbeRepr {
        job: 7,
        rank,
        slot,
        ver,
        seq,
        session,
        flags: switchml_core::wire::ProbeFlags::NONE,
    }))
}

fn abort(rank: u16, detail: u16, session: u32) -> Vec<u8> {
    emit(Message::Abort(AbortRepr {
        job: 7,
        rank,
        reason: AbortReason::WorkerFailed,
        detail,
        epoch: 0,
        session,
    }))
}

fn leave(rank: u16, session: u32) -> Vec<u8> {
    emit(Message::Leave(LeaveRepr {
        job: 7,
        rank,
        session,
    }))
}

fn status(job: u16) -> Vec<u8> {
    emit(Message::Status(
        StatusRepr {
            job,
            rank: 0xFFFF,
            nonce: 1,
            cookie: 0,
            tag: [0; 16],
        }
        .sign(KEY),
    ))
}

/// `join_all()` and then `steps`.
fn joined(steps: Vec<Vec<u8>>) -> Vec<Vec<u8>> {
    join_all().into_iter().chain(steps).collect()
}

/// The scenarios, as datagrams in; outcomes are filled in by the reference switch.
pub fn inputs() -> Vec<(&'static str, &'static str, Vec<Vec<u8>>)> {
    let s = SESSION;
    let c = |rank, slot, seq, values: &[i32]| contribution(rank, slot, seq, 0, s, values);
    let mut foreign = c(0, 0, 0, &[1]);
    foreign[3] = 8;
    let mut bad_ver = c(0, 0, 1, &[1]);
    bad_ver[8] = 0;
    let mut result = c(0, 0, 0, &[1]);
    result[1] = 0x02;
    let lane = (0, 8, 8);
    // Flag bits this version does not know, alone and beside RETRANSMIT (byte 9).
    let flagged = |rank, flags: u8| {
        let mut b = c(rank, 2, 0, &[i32::from(rank) + 1]);
        b[9] = flags;
        b
    };
    let restarted = nonce(1, 1);
    // The second run, which the restarted process opens: its nonce plus the run before.
    let second = restarted + 1;
    vec![
        ("three_ranks_complete", "Every rank joins; three contributions to slot 1 use 0; the last multicasts the sum and the max exponent",
         joined(vec![contribution(0, 1, 0, 130, s, &[1, 2, 3, 4]), contribution(2, 1, 0, 140, s, &[10, 20, 30, 40]),
              contribution(1, 1, 0, 135, s, &[100, -200, i32::MAX / 3, -4])])),
        ("duplicate_then_retransmission", "A duplicate to an incomplete use is dropped; after completion a resend gets the result unicast",
         joined(vec![c(0, 2, 4, &[5]), c(0, 2, 4, &[5]), c(1, 2, 4, &[6]), c(2, 2, 4, &[7]), c(1, 2, 4, &[6])])),
        ("next_use_and_stale_copy", "Uses 0, 1, 2 of slot 3; a delayed copy of use 0 arrives during use 2 and is stale",
         joined(vec![c(0, 3, 0, &[1]), c(1, 3, 0, &[1]), c(2, 3, 0, &[1]),
              c(0, 3, 1, &[2]), c(1, 3, 1, &[2]), c(2, 3, 1, &[2]),
              c(0, 3, 2, &[3]), c(0, 3, 0, &[1]), c(1, 3, 2, &[3]),
              c(2, 3, 2, &[3]), c(2, 3, 1, &[2])])),
        ("int32_overflow", "The sum of slot 0 overflows int32: the result wraps and carries OVERFLOW",
         joined(vec![c(0, 0, 0, &[i32::MAX, 1]), c(1, 0, 0, &[1, 1]), c(2, 0, 0, &[0, 1])])),
        ("priming", "Header-only priming contributions: the result carries only the max exponent",
         joined(vec![contribution(0, 5, 0, 128, s, &[]), contribution(1, 5, 0, 131, s, &[]), contribution(2, 5, 0, 0, s, &[])])),
        ("rejected_contributions", "Contributions the switch must drop, each for its reason",
         joined(vec![vec![1, 2, 3], foreign, c(3, 0, 0, &[1]), c(0, 8, 0, &[1]),
              c(0, 0, 0, &[1; 9]), bad_ver, result, vec![1, 0x7f, 0, 7, 0, 0],
              c(0, 6, 0, &[1, 2]), c(1, 6, 0, &[1])])),
        ("wrong_session", "Messages of no run or of another run: dropped as bad_session (a Probe is told session_ended); only the run's session is counted",
         vec![c(0, 1, 0, &[1]), join(0, 3, 0, 8, 8), join(1, 3, 0, 8, 8), join(2, 3, 0, 8, 8),
              contribution(0, 1, 0, 0, s ^ 1, &[1]), contribution(0, 1, 0, 0, 0, &[1]),
              contribution(0, 1, 0, 0, nonce(1, 0), &[1]), c(0, 1, 0, &[1]),
              probe(0, 1, 0, 0, s ^ 1), abort(1, 0xFFFF, s ^ 1), leave(2, s ^ 1),
              c(1, 1, 0, &[2]), c(2, 1, 0, &[3])]),
        ("join_rendezvous", "Ranks 2, 0, 1 join lanes of 4 slots; the last join multicasts COMPLETE; a resend is answered; bad joins are refused",
         vec![join(2, 3, 0, 4, 8), join(0, 3, 0, 4, 8), join(1, 3, 4, 4, 8), join(2, 3, 0, 4, 8),
              join(3, 3, 0, 4, 8), join(0, 4, 0, 4, 8), join(0, 3, 4, 5, 8), join(0, 3, 0, 4, 9)]),
        ("join_shape", "A run agrees on its first Join's lane, chunk size and lanes per rank (2 lanes of 4 slots, chunks of 8): other shapes, misaligned lanes, a lane not among its Join's lanes and empty chunks are refused",
         vec![join(0, 3, 0, 4, 8), join(1, 3, 0, 8, 8), join(1, 3, 0, 4, 4), join(1, 3, 2, 4, 8),
              join(1, 3, 0, 4, 0), join_lanes(1, 3, (0, 4, 8), 1, nonce(1, 0), KEY),
              join_lanes(1, 3, (4, 4, 8), 1, nonce(1, 0), KEY), join(1, 3, 4, 4, 8),
              join(2, 3, 0, 4, 8)]),
        ("bad_key", "A Join with a wrong key is refused (bad_key) and opens no run; the right key opens it",
         vec![join_with(0, 3, lane, nonce(0, 0), KEY ^ 1), join_with(0, 3, lane, nonce(0, 0), KEY ^ (1 << 63)),
              join_with(0, 3, lane, nonce(0, 0), 0), c(0, 1, 0, &[1]), status(7),
              join(0, 3, 0, 8, 8), c(0, 1, 0, &[1]), status(7)]),
        ("rank_restarted", "Rank 1 joins again as a new process after the run completed: the run ends (rank_restarted, multicast); its next Join opens a new run (session: its nonce plus the one run before) in which the old session and the bare nonce are dropped",
         joined(vec![c(0, 1, 0, &[1]), c(1, 1, 0, &[2]), c(2, 1, 0, &[3]),
              join_with(1, 3, lane, restarted, KEY), c(0, 1, 1, &[4]),
              join_with(1, 3, lane, restarted, KEY), join_with(1, 3, lane, nonce(1, 2), KEY),
              join_with(0, 3, lane, nonce(0, 1), KEY), join_with(2, 3, lane, nonce(2, 1), KEY),
              contribution(0, 1, 0, 0, s, &[1]), contribution(0, 1, 0, 0, restarted, &[1]),
              contribution(0, 1, 0, 0, second, &[5]),
              contribution(1, 1, 0, 0, second, &[6]), contribution(2, 1, 0, 0, second, &[7]),
              status(7)])),
        ("same_processes_run_twice", "The same three processes run the job, leave, and join again: the new run's session is the opener's nonce plus the one run before, so the old run's uses of slot 1 read as idle and its session is dropped",
         joined(vec![c(0, 1, 0, &[1]), c(1, 1, 0, &[2]), c(2, 1, 0, &[3]),
              leave(0, s), leave(1, s), leave(2, s)].into_iter().chain(join_all())
              .chain([contribution(0, 1, 0, 0, s + 1, &[4]), c(1, 1, 0, &[5]),
                  contribution(1, 1, 0, 0, s + 1, &[5]), contribution(2, 1, 0, 0, s + 1, &[6]),
                  status(7)]).collect())),
        ("leave_ends_run", "Ranks leave one by one; the results stay served until the last Leave ends the run; then its session is dropped and a new Join opens a new run",
         joined(vec![c(0, 2, 0, &[1]), c(1, 2, 0, &[2]), c(2, 2, 0, &[3]),
              leave(0, s), leave(1, s), leave(1, s), c(2, 2, 0, &[3]), leave(2, s),
              c(2, 2, 0, &[3]), leave(2, s), probe(2, 2, 0, 0, s),
              join_with(0, 3, lane, nonce(0, 1), KEY), status(7)])),
        ("unknown_flags", "Contributions with flag bits this version does not know (0x80, 0x40 with RETRANSMIT): they are summed, the unknown bits are not copied into the Result, and a resend's answer carries only the flags the switch sets",
         joined(vec![flagged(0, 0x80), flagged(1, 0x42), flagged(2, 0x00), flagged(2, 0x82)])),
        ("congestion_mark", "One rank's Contribution carries CONGESTED (0x20, protocol.md 6.3): the switch ORs it into the multicast Result, and a resend's answer repeats it",
         joined(vec![flagged(0, 0x00), flagged(1, 0x20), flagged(2, 0x00), flagged(2, 0x02)])),
        ("probe_and_status", "A probe names the ranks seen in slot 4; a Status reports joins and counters",
         vec![join(1, 3, 0, 8, 8), contribution(0, 4, 6, 0, nonce(1, 0), &[1]), contribution(2, 4, 6, 0, nonce(1, 0), &[1]),
              probe(0, 4, 0, 6, nonce(1, 0)), probe(0, 4, 1, 7, nonce(1, 0)), probe(0, 9, 1, 7, nonce(1, 0)),
              status(7), status(9)]),
        ("worker_abort", "A worker's Abort is passed on to the job unchanged and ends the run; one from an unknown rank is dropped",
         joined(vec![abort(5, 2, s), c(0, 0, 0, &[1]), abort(1, 2, s), c(1, 0, 0, &[1]), abort(1, 2, s),
              join(2, 3, 0, 8, 8)])),
    ]
}

/// `k` values of rank `rank`: distinct in every position and rank, both signs, readable.
fn ramp(rank: u16, k: usize) -> Vec<i32> {
    (0..k as i32)
        .map(|i| {
            let v = 1000 * i + i32::from(rank) + 1;
            if i % 2 == 0 {
                v
            } else {
                -v
            }
        })
        .collect()
}

/// The scenarios whose Contributions carry more than 64 values, on a switch of
/// [`LARGE_MAX_COUNT`] values a slot: a P4 pipeline adds 64 values a pass and recirculates
/// for the next 64, so their Results (multicast, and unicast to a resend) are built over 2 to
/// 4 passes, the overflow flag in the last one.
#[rustfmt::skip]
pub fn multi_pass_inputs() -> Vec<(&'static str, &'static str, Vec<Vec<u8>>)> {
    let s = SESSION;
    let chunk = LARGE_MAX_COUNT as u16;
    let join_large = || -> Vec<Vec<u8>> { (0..3).map(|r| join(r, 3, 0, 8, chunk)).collect() };
    let with = |steps: Vec<Vec<u8>>| join_large().into_iter().chain(steps).collect();
    let c = |rank, slot, seq, exp, values: &[i32]| contribution(rank, slot, seq, exp, s, values);
    let mut overflow: Vec<Vec<i32>> = (0..3).map(|r| ramp(r, 256)).collect();
    overflow[0][255] = i32::MAX;
    overflow[1][255] = 1;
    overflow[2][255] = 1;
    vec![
        ("multi_pass_k65", "Chunks of 256 agreed; three ranks contribute 65 values to slot 1: the sum takes 2 passes of 64 and is multicast",
         with(vec![c(0, 1, 0, 130, &ramp(0, 65)), c(1, 1, 0, 131, &ramp(1, 65)), c(2, 1, 0, 129, &ramp(2, 65))])),
        ("multi_pass_k100", "100 values to slot 2 (2 passes): a duplicate before completion is dropped, the multicast Result carries all 100 sums, a resend after it is answered by unicast from the stored 100",
         with(vec![c(0, 2, 0, 128, &ramp(0, 100)), c(0, 2, 0, 128, &ramp(0, 100)), c(1, 2, 0, 140, &ramp(1, 100)),
              c(2, 2, 0, 135, &ramp(2, 100)), c(1, 2, 0, 140, &ramp(1, 100))])),
        ("multi_pass_k256", "256 values to slot 3 (4 passes), the last value overflowing int32: the Result wraps it and carries OVERFLOW, set in the last pass; a resend is answered with all 256; the next use of the slot starts clean",
         with(vec![c(2, 3, 0, 133, &overflow[2]), c(0, 3, 0, 134, &overflow[0]), c(1, 3, 0, 132, &overflow[1]),
              c(0, 3, 0, 134, &overflow[0]),
              c(0, 3, 1, 128, &ramp(0, 256)), c(1, 3, 1, 128, &ramp(1, 256)), c(2, 3, 1, 128, &ramp(2, 256))])),
    ]
}

/// Every scenario, with outcomes from the reference switch.
pub fn all() -> Vec<Scenario> {
    let small = inputs().into_iter().map(|i| (i, MAX_COUNT));
    let large = multi_pass_inputs()
        .into_iter()
        .map(|i| (i, LARGE_MAX_COUNT));
    small
        .chain(large)
        .map(|((name, meaning, ins), max_count)| {
            let mut s = Scenario {
                name: name.into(),
                meaning: meaning.into(),
                job: JobConfig {
                    id: 7,
                    world: 3,
                    slot_lo: 4,
                    slot_count: 8,
                    key: KEY,
                },
                epoch: 0xDEAD_BEEF,
                max_count: max_count as u16,
                steps: Vec::new(),
            };
            let mut sw = switch_for(&s);
            s.steps = ins
                .into_iter()
                .map(|b| {
                    let o = outcome(&mut sw, &b);
                    (b, o)
                })
                .collect();
            s
        })
        .collect()
}

fn hex(b: &[u8]) -> String {
    b.iter()
        .map(|x| format!("{x:02x}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Write scenarios in the file format.
pub fn render(scenarios: &[Scenario]) -> String {
    let mut t = String::from(
        "# Golden switch scenarios, rendered by the reference switch (core/src/switch).\n\
         # Format: tests/src/scenarios.rs. Regenerate: UPDATE_VECTORS=1 cargo test -p switchml-tests --test switch_vectors\n",
    );
    for s in scenarios {
        let j = s.job;
        t += &format!(
            "\n[{}]\nmeaning: {}\nsetup: job={} world={} slot_lo={} slot_count={} key={} max_count={} epoch={}\n",
            s.name, s.meaning, j.id, j.world, j.slot_lo, j.slot_count, j.key, s.max_count, s.epoch
        );
        for (input, out) in &s.steps {
            t += &format!("in: {}\n", hex(input));
            t += &match out {
                Outcome::Consumed => "out: consumed\n".to_string(),
                Outcome::Drop(r) => format!("out: drop {r}\n"),
                Outcome::Multicast(b) => format!("out: multicast {}\n", hex(b)),
                Outcome::Unicast(rank, b) => format!("out: unicast {rank} {}\n", hex(b)),
            };
        }
    }
    t
}

fn unhex(s: &str) -> Result<Vec<u8>, String> {
    s.split_whitespace()
        .map(|h| u8::from_str_radix(h, 16).map_err(|e| format!("bad hex `{h}`: {e}")))
        .collect()
}

/// Parse the file format; errors name the line.
pub fn load(text: &str) -> Result<Vec<Scenario>, String> {
    let mut out: Vec<Scenario> = Vec::new();
    let mut pending: Option<Vec<u8>> = None;
    for (n, line) in text.lines().enumerate() {
        let err = |m: String| format!("line {}: {m}", n + 1);
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            out.push(Scenario {
                name: name.into(),
                meaning: String::new(),
                job: JobConfig {
                    id: 0,
                    world: 0,
                    slot_lo: 0,
                    slot_count: 0,
                    key: 0,
                },
                epoch: 0,
                max_count: MAX_COUNT as u16,
                steps: Vec::new(),
            });
            continue;
        }
        let s = out
            .last_mut()
            .ok_or_else(|| err("text before the first [scenario]".into()))?;
        let (key, rest) = line
            .split_once(": ")
            .ok_or_else(|| err("expected `key: value`".into()))?;
        match key {
            "meaning" => s.meaning = rest.into(),
            "setup" => {
                for kv in rest.split_whitespace() {
                    let (k, v) = kv
                        .split_once('=')
                        .ok_or_else(|| err(format!("bad `{kv}`")))?;
                    let v: u64 = v
                        .parse()
                        .map_err(|_| err(format!("bad number in `{kv}`")))?;
                    match k {
                        "job" => s.job.id = v as u16,
                        "world" => s.job.world = v as u16,
                        "slot_lo" => s.job.slot_lo = v as u32,
                        "slot_count" => s.job.slot_count = v as u16,
                        "key" => s.job.key = v,
                        "epoch" => s.epoch = v as u32,
                        "max_count" => s.max_count = v as u16,
                        _ => return Err(err(format!("unknown setup key `{k}`"))),
                    }
                }
            }
            "in" => pending = Some(unhex(rest).map_err(err)?),
            "out" => {
                let input = pending
                    .take()
                    .ok_or_else(|| err("`out:` without `in:`".into()))?;
                let (verb, tail) = rest.split_once(' ').unwrap_or((rest, ""));
                let o = match verb {
                    "consumed" => Outcome::Consumed,
                    "drop" => Outcome::Drop(tail.into()),
                    "multicast" => Outcome::Multicast(unhex(tail).map_err(err)?),
                    "unicast" => {
                        let (rank, bytes) = tail.split_once(' ').unwrap_or((tail, ""));
                        let rank = rank
                            .parse()
                            .map_err(|_| err(format!("bad rank `{rank}`")))?;
                        Outcome::Unicast(rank, unhex(bytes).map_err(err)?)
                    }
                    _ => return Err(err(format!("unknown outcome `{verb}`"))),
                };
                s.steps.push((input, o));
            }
            _ => return Err(err(format!("unknown key `{key}`"))),
        }
    }
    Ok(out)
}

/// Every drop reason's name appears in some scenario (coverage check for the file).
pub fn reasons_covered(scenarios: &[Scenario]) -> Vec<&'static str> {
    DropReason::ALL
        .iter()
        .map(|r| r.name())
        .filter(|name| {
            scenarios.iter().any(|s| {
                s.steps
                    .iter()
                    .any(|(_, o)| *o == Outcome::Drop(name.to_string()))
            })
        })
        .collect()
}
