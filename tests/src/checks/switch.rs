//! The switch check: any sequence of datagrams into the reference switch
//! ([`switchml_core::switch::Switch`]) keeps the aggregation correct.
//!
//! The switch is the one component every worker trusts: a wrong sum it multicasts is a
//! wrong gradient at every rank, silently. So the check drives it with hostile sequences —
//! contributions on colliding slots, versions and use numbers (wrapping ones too), exact
//! replays of earlier datagrams (network duplicates, worker retransmissions), joins with
//! right and wrong keys and with new processes of a rank, probes, aborts, leaves, messages
//! of no run or an ended one, junk, and a control-plane restart of a job — and after every
//! datagram holds it to protocol.md §4 and §4.1 against a shadow model ([`model`]) that
//! keeps each job's run and records, per (slot, version, use), which ranks were counted
//! with which values:
//!
//! - **no double count**: the switch never counts a rank twice in one use;
//! - **no early completion**: a use completes (Result multicast) only when every rank
//!   `0..world` has been counted exactly once;
//! - **the right sum**: a Result's values are the wrapping sum of exactly one contribution
//!   per rank, its exponent their maximum, OVERFLOW set iff an addition in arrival order
//!   overflowed; a unicast answer to a resend repeats it byte for byte with RETRANSMIT;
//! - **only the run's messages count**: a Contribution, Probe, Abort or Leave whose session
//!   is not the job's current run changes nothing (dropped as `BadSession`, or a Probe told
//!   `SessionEnded`); a Join without the job's key opens no run (`BadKey`); a run opens
//!   with the session of its first Join's nonce plus the job's runs before, and ends on a
//!   worker's Abort, on the Leave of the last rank that joined, or when a rank of the
//!   complete run joins as a new process (`RankRestarted`, multicast); a use of an earlier
//!   run counts as idle;
//! - **the right decisions**: every datagram gets the verdict §4 prescribes (drops by the
//!   right reason, Join/Probe/Status answers and refusals with the right fields: an answer
//!   to a Join names its nonce, a refusal in its session field);
//! - **counters add up**: `received = consumed + multicast + unicast + drops`, each
//!   switch-wide and per-job counter equals the checker's own tally;
//! - **state within bounds**: `remaining ≤ world`, `seen ⊆ 0..world` and `seen` only holds
//!   counted ranks, `|seen| + remaining ≤ world`, `count ≤ K`, and the slot's held use,
//!   sum, exponent and overflow flag equal the model's.

mod control;
mod model;
mod ops;

pub use ops::{
    datagram, decode_ops, encode_ops, job_id, key_of, play, session_of, Step, SwitchOp, JOB_IDS, K,
    KEYS, NONCES, RUNS, SESSIONS,
};

use std::collections::BTreeSet;

use model::{JobModel, UseModel};
use switchml_core::switch::{Counters, DropReason, JobConfig, Slot, Switch, Verdict};
use switchml_core::wire::{self, DataKind, DataRepr, Message, MessageType, RANK_ALL};

/// The epoch the switch under test announces.
pub const EPOCH: u32 = 0x5EED_0001;

/// The switch under test: `K` values per slot, 64 ranks, 2 jobs.
type TestSwitch<'a> = Switch<'a, K, 1, 2>;

/// The jobs: a 3-rank job on pool slots 0..3 and a 1-rank job on 3..5.
pub const JOBS: [JobConfig; 2] = [
    JobConfig {
        id: JOB_IDS[0],
        world: 3,
        slot_lo: 0,
        slot_count: 3,
        key: KEYS[0],
    },
    JobConfig {
        id: JOB_IDS[1],
        world: 1,
        slot_lo: 3,
        slot_count: 2,
        key: KEYS[1],
    },
];

/// Decode fuzz bytes into ops and check them.
pub fn check_switch(bytes: &[u8]) {
    check_switch_sequence(&decode_ops(bytes));
}

/// Run `ops` through a fresh switch and check every invariant after every step.
///
/// This check found the one protocol bug the fuzzer has found so far: with the paper's
/// clearing of `seen[1−v]`, a rank that skipped ahead to use `u+1` and then resent use `u`
/// was counted twice (protocol.md §4, "Why `seen[1−v]` is not cleared"; the reproducer is
/// `fuzz/regressions/switch_sequence/double-count-after-skipping-ahead`).
pub fn check_switch_sequence(ops: &[SwitchOp]) {
    let mut pool = vec![Slot::<K, 1>::IDLE; 5];
    let mut switch = TestSwitch::new(&mut pool, EPOCH);
    for job in JOBS {
        switch.add_job(job).expect("the test jobs fit");
    }
    let mut checker = Checker {
        switch,
        jobs: JOBS.iter().map(JobModel::new).collect(),
        counters: Counters::default(),
        out: vec![0; TestSwitch::OUT_LEN],
    };
    play(ops, |step| match step {
        Step::Send(bytes) => checker.step(bytes),
        Step::RestartJob => checker.restart_job(),
    });
}

/// What §4 says happens to a datagram.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    Drop(DropReason),
    Consumed,
    /// The use completes: Result multicast.
    Complete,
    /// A resend to a completed use: the stored Result unicast.
    Resend,
}

fn outcome(v: Verdict) -> Outcome {
    match v {
        Verdict::Drop(r) => Outcome::Drop(r),
        Verdict::Consumed => Outcome::Consumed,
        Verdict::Multicast { .. } => Outcome::Complete,
        Verdict::Unicast { .. } => Outcome::Resend,
        Verdict::Up { .. } => unreachable!("no job here is a child's"),
    }
}

/// Where in the switch a failure is, for messages (formatted only when one fails).
struct At {
    job: u16,
    slot: u16,
    ver: u8,
    seq: Option<u32>,
}

impl std::fmt::Display for At {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "job {} slot {} version {}",
            self.job, self.slot, self.ver
        )?;
        match self.seq {
            Some(seq) => write!(f, " use {seq}"),
            None => Ok(()),
        }
    }
}

struct Checker<'a> {
    switch: TestSwitch<'a>,
    jobs: Vec<JobModel>,
    counters: Counters,
    out: Vec<u8>,
}

impl Checker<'_> {
    fn step(&mut self, bytes: &[u8]) {
        let verdict = self.switch.process(bytes, &mut self.out);
        let c = &mut self.counters;
        c.received += 1;
        let reply = match verdict {
            Verdict::Drop(reason) => {
                let i = DropReason::ALL.iter().position(|&r| r == reason).unwrap();
                c.dropped[i] += 1;
                Vec::new()
            }
            Verdict::Consumed => {
                c.consumed += 1;
                Vec::new()
            }
            Verdict::Up { .. } => unreachable!("no job here is a child's"),
            Verdict::Multicast { len, .. } | Verdict::Unicast { len, .. } => {
                if matches!(verdict, Verdict::Multicast { .. }) {
                    c.multicast += 1;
                } else {
                    c.unicast += 1;
                }
                assert!(len <= self.out.len(), "{verdict:?} past OUT_LEN");
                self.out[..len].to_vec()
            }
        };
        self.expect(bytes, verdict, &reply);
        self.check_counters();
        self.check_state();
    }

    fn find(&self, id: u16) -> Option<usize> {
        self.jobs.iter().position(|j| j.id == id)
    }

    /// Check the verdict and the answer for one datagram against §4, and update the model.
    fn expect(&mut self, bytes: &[u8], verdict: Verdict, reply: &[u8]) {
        let unexpected = Verdict::Drop(DropReason::UnexpectedType);
        match Message::parse(bytes) {
            Err(_) => {
                let kind = wire::peek(bytes).map(|(k, _, _)| k);
                let only_sent_by_the_switch = matches!(
                    kind,
                    Ok(MessageType::Result
                        | MessageType::JoinReply
                        | MessageType::ProbeReply
                        | MessageType::StatusReply
                        | MessageType::Cookie)
                );
                let want = if only_sent_by_the_switch {
                    unexpected
                } else {
                    Verdict::Drop(DropReason::Malformed)
                };
                assert_eq!(verdict, want, "datagram {bytes:02x?} does not parse");
            }
            Ok(Message::Unknown { .. }) => {
                assert_eq!(verdict, Verdict::Drop(DropReason::UnknownType));
            }
            Ok(Message::Data(r, _)) if r.kind == DataKind::Result => {
                assert_eq!(verdict, unexpected);
            }
            // A Cookie comes only from a parent, and this switch has no tiers (§4.2, §7).
            Ok(
                Message::JoinReply(_)
                | Message::ProbeReply(_)
                | Message::StatusReply(_)
                | Message::Cookie(_),
            ) => {
                assert_eq!(verdict, unexpected);
            }
            Ok(Message::Status(q)) => self.status(&q, verdict, reply),
            Ok(Message::Data(p, payload)) => self.contribution(&p, payload, verdict, reply),
            Ok(Message::Join(j)) => self.join(&j, verdict, reply),
            Ok(Message::Probe(p)) => self.probe(&p, verdict, reply),
            Ok(Message::Abort(a)) => self.abort(&a, bytes, verdict, reply),
            Ok(Message::Leave(l)) => self.leave(&l, verdict),
        }
    }

    /// protocol.md §4, classification and steps 1–6.
    fn contribution(&mut self, p: &DataRepr, payload: &[u8], verdict: Verdict, reply: &[u8]) {
        let Some(ji) = self.find(p.job) else {
            assert_eq!(verdict, Verdict::Drop(DropReason::UnknownJob), "{p:?}");
            return;
        };
        let job = &mut self.jobs[ji];
        if job.run_of(p.session).is_none() {
            let run = job.run.as_ref().map(|r| r.session);
            let want = Verdict::Drop(DropReason::BadSession);
            assert_eq!(verdict, want, "{p:?} names no run (the job's: {run:?})");
            job.counters.unauthorized += 1;
            return;
        }
        let world = job.world;
        let mut reasons = Vec::new();
        if p.rank >= world {
            reasons.push(DropReason::UnknownRank);
        }
        if p.slot >= job.slot_count {
            reasons.push(DropReason::SlotRange);
        }
        if usize::from(p.count) > K {
            reasons.push(DropReason::CountTooLarge);
        }
        if u32::from(p.ver) != p.seq & 1 {
            reasons.push(DropReason::BadVersion);
        }
        if !reasons.is_empty() {
            match verdict {
                Verdict::Drop(r) if reasons.contains(&r) => job.counters.rejected += 1,
                other => panic!("{p:?} must be dropped for one of {reasons:?}, got {other:?}"),
            }
            return;
        }
        let values: Vec<i32> = payload
            .chunks_exact(4)
            .map(|b| i32::from_be_bytes([b[0], b[1], b[2], b[3]]))
            .collect();
        let (slot, ver) = (usize::from(p.slot), usize::from(p.ver));
        let held = &mut job.uses[slot][ver];
        // 1. Use check: a version that is idle, holds a use of an earlier run, or holds an
        // older use begins this one.
        let begins = held
            .as_ref()
            .is_none_or(|u| u.session != p.session || (p.seq.wrapping_sub(u.seq) as i32) > 0);
        let mut current = match held {
            Some(u) if !begins => u.clone(),
            _ => UseModel::begin(p.session, p.seq, p.count),
        };
        let complete = current.ranks.len() == usize::from(world);
        let want = if p.seq != current.seq {
            Outcome::Drop(DropReason::Stale)
        } else if complete && p.count == current.count {
            Outcome::Resend
        } else if complete {
            // Another count is no resend: a short datagram never draws the stored values.
            Outcome::Drop(DropReason::CountMismatch)
        } else if current.has(p.rank) {
            Outcome::Drop(DropReason::Duplicate)
        } else if p.count != current.count {
            Outcome::Drop(DropReason::CountMismatch)
        } else if current.ranks.len() + 1 == usize::from(world) {
            Outcome::Complete
        } else {
            Outcome::Consumed
        };
        let got = outcome(verdict);
        let at = At {
            job: p.job,
            slot: p.slot,
            ver: p.ver,
            seq: Some(current.seq),
        };
        if matches!(got, Outcome::Consumed | Outcome::Complete) {
            assert!(
                !current.has(p.rank),
                "double count: rank {} counted again in {at} (already counted: {:?})",
                p.rank,
                current.ranks
            );
        }
        if got == Outcome::Complete {
            assert!(
                current.ranks.len() + 1 == usize::from(world),
                "{at} completed before every rank contributed once: counted {:?} and {}, world {world}",
                current.ranks,
                p.rank
            );
        }
        assert_eq!(
            got, want,
            "verdict for {p:?} in {at} (counted {:?})",
            current.ranks
        );
        match want {
            Outcome::Drop(DropReason::Stale) => job.counters.stale += 1,
            Outcome::Drop(DropReason::Duplicate) => job.counters.duplicates += 1,
            Outcome::Drop(_) => job.counters.rejected += 1,
            Outcome::Resend => {
                job.counters.retransmit_replies += 1;
                let want_verdict = Verdict::Unicast {
                    job: p.job,
                    rank: p.rank,
                    len: reply.len(),
                };
                assert_eq!(verdict, want_verdict);
                let stored = current.result(p.job, p.slot, p.rank);
                assert_eq!(reply, &stored[..], "the stored result of {at}, resent");
            }
            Outcome::Consumed | Outcome::Complete => {
                current.add(p.rank, &values, p.exp);
                job.counters.contributions += 1;
                if want == Outcome::Complete {
                    job.counters.completions += 1;
                    job.counters.overflows += u64::from(current.overflow);
                    let len = reply.len();
                    assert_eq!(verdict, Verdict::Multicast { job: p.job, len });
                    let result = current.result(p.job, p.slot, RANK_ALL);
                    assert_eq!(
                        reply,
                        &result[..],
                        "the Result of {at} is not the sum of one contribution per rank"
                    );
                }
                *held = Some(current);
            }
        }
    }

    /// Remove the first job and add it again: its slots and counters start afresh.
    fn restart_job(&mut self) {
        let config = JOBS[0];
        let old = self.switch.remove_job(config.id).expect("the job is there");
        assert_eq!(
            old.counters(),
            &self.jobs[0].counters,
            "counters at removal"
        );
        assert!(self.switch.job(config.id).is_none());
        self.switch.add_job(config).expect("the job fits again");
        assert!(!self.switch.job(config.id).expect("added").has_run());
        self.jobs[0] = JobModel::new(&config);
    }

    fn check_counters(&self) {
        let c = self.switch.counters();
        assert_eq!(c, &self.counters, "switch-wide counters");
        assert_eq!(
            c.received,
            c.consumed + c.multicast + c.unicast + c.total_drops(),
            "received = consumed + multicast + unicast + drops"
        );
        for job in &self.jobs {
            let got = self.switch.job(job.id).expect("registered");
            assert_eq!(got.counters(), &job.counters, "counters of job {}", job.id);
            let session = job.run.as_ref().map_or(0, |r| r.session);
            assert_eq!(got.session(), session, "the run of job {}", job.id);
            let got_joined: BTreeSet<u16> = got.joined().iter().collect();
            let id = job.id;
            assert_eq!(got_joined, job.joined(), "the ranks in the run of job {id}");
            let lane = job.run.as_ref().map_or(0, |r| r.lane_slots);
            assert_eq!(
                got.lane_slots(),
                lane,
                "the lane of the run of job {}",
                job.id
            );
        }
    }

    fn check_state(&self) {
        for job in &self.jobs {
            let world = job.world;
            for (s, held) in job.uses.iter().enumerate() {
                let slot = self.switch.slot(job.id, s as u16).expect("in range");
                for (v, model) in held.iter().enumerate() {
                    let sv = slot.version(v as u8);
                    let at = At {
                        job: job.id,
                        slot: s as u16,
                        ver: v as u8,
                        seq: None,
                    };
                    assert!(sv.remaining() <= world, "{at}: remaining > world");
                    assert!(sv.seen().iter().all(|r| r < world), "{at}: seen ⊄ 0..world");
                    let seen = sv.seen().len();
                    assert!(
                        seen + usize::from(sv.remaining()) <= usize::from(world),
                        "{at}"
                    );
                    assert!(sv.values().len() <= K, "{at}: count > K");
                    let Some(u) = model else {
                        assert!(!sv.is_complete() && sv.seen().is_empty(), "{at}: not idle");
                        continue;
                    };
                    assert!(
                        sv.seen().iter().all(|r| u.has(r)),
                        "{at}: seen an uncounted rank"
                    );
                    assert!(
                        sv.in_session(u.session),
                        "{at}: not of session {}",
                        u.session
                    );
                    let remaining = world - u.ranks.len() as u16;
                    let got = (sv.seq(), sv.remaining(), sv.exp(), sv.overflowed());
                    assert_eq!(got, (u.seq, remaining, u.exp, u.overflow), "{at}");
                    assert_eq!(sv.values().len(), usize::from(u.count), "{at}: count");
                    if !u.ranks.is_empty() {
                        assert_eq!(sv.values(), &u.sum[..], "{at}: running sum");
                    }
                }
            }
        }
    }
}
