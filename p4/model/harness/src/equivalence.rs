//! Feed one packet sequence to the model and to the reference switch and say where they
//! differ: verdict, answer bytes, what each owes a parent after it (`poll_up`, protocol.md
//! §7), switch counters, job counters, each job's run (session, lane shape, joined
//! bitmap), and every register of every slot version of every job.
//! Between packets the control plane may act on both alike ([`Step`]): restart a job
//! (remove it and add it again), end its run with Abort `Shutdown`, or end it silently as
//! an idle run's is.
//!
//! The reference's `K` (values per slot) is a parameter, [`MAX_COUNT`] unless said; the
//! model is set up with the same largest count (`Config::max_count`), so that counts just
//! above it (`CountTooLarge`) are cheap to reach.
//!
//! It lives in the harness library, not in a test, so that the model's property tests and the
//! `model_vs_reference` fuzz target ([`fuzz`]) run the very same check.

use switchml_core::ranks::RankSet;
use switchml_core::switch::{
    Counters, JobConfig, JobCounters, JobError, Slot, Switch, Tier, Verdict as CoreVerdict,
};
use switchml_core::wire::AbortReason;
use switchml_tests::checks::model::{self, ControlOp, ModelStep};
use switchml_tests::checks::switch;

use switchml_p4model::aggregator::to_core;
use switchml_p4model::pipeline::{Config, Pipeline, Verdict};
use switchml_p4model::udp_sender::SwitchAddr;
use switchml_p4model::{MAX_COUNT, OUT_LEN};

/// Job table size of the reference built here.
pub const JOBS: usize = 4;
/// The reference switch the model is compared with: same `max_count`, 64 ranks per job.
pub type Reference<'a> = Switch<'a, { MAX_COUNT as usize }, 1, JOBS>;
/// Its slot type.
pub type RefSlot = Slot<{ MAX_COUNT as usize }, 1>;

/// One step of a sequence fed to both switches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step<'p> {
    /// This datagram arrives.
    Packet(&'p [u8]),
    /// The control plane removes job `id` and adds it again as it was set up.
    RestartJob(u16),
    /// The control plane ends job `id`'s run because the switch stops (Abort `Shutdown`).
    ShutdownRun(u16),
    /// The endpoint ends job `id`'s run for being idle (no word to its ranks).
    EndRun(u16),
}

/// What both switches are set up with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Setup {
    /// Pool slots.
    pub slots: usize,
    /// Epoch announced by both.
    pub epoch: u32,
    /// Jobs, added in order (the model registers ranks at their rank ports).
    pub jobs: Vec<JobConfig>,
    /// The tier of each job named here (protocol.md §7); the others are flat.
    pub tiers: Vec<(u16, Tier)>,
}

impl Setup {
    /// Return job `id`'s tier.
    pub fn tier(&self, id: u16) -> Tier {
        self.tiers
            .iter()
            .find(|(j, _)| *j == id)
            .map_or(Tier::Flat, |(_, t)| *t)
    }
}

/// Where the two switches differ.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mismatch {
    /// Adding a job gave different answers.
    Setup {
        /// The job.
        job: u16,
        /// The model's answer.
        model: Result<(), JobError>,
        /// The reference's answer.
        reference: Result<(), JobError>,
    },
    /// Packet `packet` (0-based) got different verdicts.
    Verdict {
        /// Its index.
        packet: usize,
        /// The model's verdict.
        model: CoreVerdict,
        /// The reference's.
        reference: CoreVerdict,
    },
    /// Packet `packet` got different answer bytes.
    Bytes {
        /// Its index.
        packet: usize,
        /// The model's answer.
        model: Vec<u8>,
        /// The reference's.
        reference: Vec<u8>,
    },
    /// Ending job `job`'s run from the control plane (`shutdown_run`) before packet
    /// `packet` gave different answers.
    Shutdown {
        /// The job.
        job: u16,
        /// Before which packet.
        packet: usize,
        /// The model's verdict.
        model: Option<CoreVerdict>,
        /// The reference's.
        reference: Option<CoreVerdict>,
    },
    /// A liveness sweep of job `job`'s run (protocol.md §4.3) before packet `packet` gave
    /// different answers.
    Sweep {
        /// The job.
        job: u16,
        /// Before which packet.
        packet: usize,
        /// The model's verdict.
        model: Option<CoreVerdict>,
        /// The reference's.
        reference: Option<CoreVerdict>,
    },
    /// After packet `packet` (or a `shutdown_run` before it), what the switches owed a
    /// parent (`poll_up`, protocol.md §7) differed.
    PollUp {
        /// The packet's index (the next packet's, after a `shutdown_run`).
        packet: usize,
        /// The model's verdict.
        model: Option<CoreVerdict>,
        /// The reference's.
        reference: Option<CoreVerdict>,
    },
    /// Ending job `job`'s idle run (`end_run`) before packet `packet` gave different
    /// answers (whether it had a run).
    EndRun {
        /// The job.
        job: u16,
        /// Before which packet.
        packet: usize,
        /// The model's answer.
        model: bool,
        /// The reference's.
        reference: bool,
    },
    /// Removing and adding job `job` again before packet `packet` gave different answers.
    RestartJob {
        /// The job.
        job: u16,
        /// Before which packet.
        packet: usize,
        /// The model's answer.
        model: Result<(), JobError>,
        /// The reference's.
        reference: Result<(), JobError>,
    },
    /// The model hit a register hazard on packet `packet`.
    Fault {
        /// Its index.
        packet: usize,
    },
    /// The switch-wide counters differ after packet `packet`.
    Counters {
        /// Its index.
        packet: usize,
        /// The model's.
        model: Box<Counters>,
        /// The reference's.
        reference: Box<Counters>,
    },
    /// A job's counters differ.
    JobCounters {
        /// The job.
        job: u16,
        /// The model's.
        model: Box<JobCounters>,
        /// The reference's.
        reference: Box<JobCounters>,
    },
    /// A job's state differs: its run or a register of a slot version.
    State {
        /// The job.
        job: u16,
        /// The slot (job-relative), or `u16::MAX` for the run.
        slot: u16,
        /// The version.
        ver: u8,
        /// Which field.
        field: &'static str,
    },
}

/// The model and the reference side by side, with an output buffer each.
pub struct Pair<'a, const K: usize = { MAX_COUNT as usize }> {
    /// The model.
    pub model: Pipeline,
    /// The reference switch: `K` values a slot (the model's `max_count`), 64 ranks a job.
    pub reference: Switch<'a, K, 1, JOBS>,
    jobs: Vec<(JobConfig, Tier)>,
    model_out: Vec<u8>,
    reference_out: Vec<u8>,
    fed: usize,
    last: Option<CoreVerdict>,
    up: Option<(CoreVerdict, Vec<u8>)>,
}

fn word(set: &RankSet<1>) -> u64 {
    let mut b = [0u8; 8];
    set.write_bitmap(&mut b);
    u64::from_le_bytes(b)
}

impl<'a, const K: usize> Pair<'a, K> {
    /// Set both switches up; the reference runs over `pool` (`setup.slots` slots).
    pub fn new(setup: &Setup, pool: &'a mut [Slot<K, 1>]) -> Result<Self, Mismatch> {
        let mut reference = Switch::<K, 1, JOBS>::new(pool, setup.epoch);
        let workers = setup
            .jobs
            .iter()
            .map(|j| usize::from(j.world))
            .sum::<usize>();
        let mut model = Pipeline::new(Config {
            slots: setup.slots,
            jobs: JOBS,
            workers: workers.max(1),
            epoch: setup.epoch,
            max_count: u16::try_from(K).unwrap_or(u16::MAX).min(MAX_COUNT),
            switch: SwitchAddr::default(),
        });
        let mut jobs = Vec::new();
        for &job in &setup.jobs {
            let tier = setup.tier(job.id);
            let r = reference.add_tiered_job(job, tier);
            let m = model
                .add_tiered_job_with_rank_ports(job, tier)
                .map_err(|e| match e {
                    switchml_p4model::ControlError::Job(e) => e,
                    switchml_p4model::ControlError::Worker(_) => JobError::TableFull(0),
                });
            if m != r {
                return Err(Mismatch::Setup {
                    job: job.id,
                    model: m,
                    reference: r,
                });
            }
            if r.is_ok() {
                jobs.push((job, tier));
            }
        }
        let out_len = OUT_LEN.max(Switch::<K, 1, JOBS>::OUT_LEN);
        Ok(Pair {
            model,
            reference,
            jobs,
            model_out: vec![0; out_len],
            reference_out: vec![0; out_len],
            fed: 0,
            last: None,
            up: None,
        })
    }

    /// Give both switches `packet`; compare verdicts, answers and switch counters.
    pub fn feed(&mut self, packet: &[u8]) -> Result<(), Mismatch> {
        let at = self.fed;
        self.fed += 1;
        let m = self.model.process_datagram(packet, &mut self.model_out);
        if matches!(m, Verdict::Fault(_)) {
            return Err(Mismatch::Fault { packet: at });
        }
        let m = to_core(m);
        let r = self.reference.process(packet, &mut self.reference_out);
        self.last = Some(r);
        if m != r {
            return Err(Mismatch::Verdict {
                packet: at,
                model: m,
                reference: r,
            });
        }
        if let CoreVerdict::Unicast { len, .. }
        | CoreVerdict::Multicast { len, .. }
        | CoreVerdict::Up { len, .. } = r
        {
            self.same_bytes(at, len)?;
        }
        self.poll_up(at)?;
        let (mc, rc) = (self.model.counters(), *self.reference.counters());
        if mc != rc {
            return Err(Mismatch::Counters {
                packet: at,
                model: Box::new(mc),
                reference: Box::new(rc),
            });
        }
        Ok(())
    }

    /// Compare the first `len` bytes both switches wrote (for packet `at`).
    fn same_bytes(&self, at: usize, len: usize) -> Result<(), Mismatch> {
        let (mb, rb) = (&self.model_out[..len], &self.reference_out[..len]);
        if mb != rb {
            return Err(Mismatch::Bytes {
                packet: at,
                model: mb.to_vec(),
                reference: rb.to_vec(),
            });
        }
        Ok(())
    }

    /// Collect what both switches owe a parent (`poll_up`, protocol.md §7), as adapters
    /// do after every packet and `shutdown_run`; compare verdicts and bytes. `at`: the
    /// packet it follows.
    fn poll_up(&mut self, at: usize) -> Result<(), Mismatch> {
        let m = self.model.poll_up(&mut self.model_out).map(to_core);
        let r = self.reference.poll_up(&mut self.reference_out);
        let differs = |model, reference| Mismatch::PollUp {
            packet: at,
            model,
            reference,
        };
        self.up = None;
        match (m, r) {
            (None, None) => Ok(()),
            (Some(mv @ CoreVerdict::Up { len, .. }), Some(rv)) if mv == rv => {
                self.same_bytes(at, len)?;
                self.up = Some((rv, self.reference_out[..len].to_vec()));
                Ok(())
            }
            (m, r) => Err(differs(m, r)),
        }
    }

    /// End job `id`'s run from the control plane in both switches (the reference's
    /// `Switch::shutdown_run`); compare the verdicts and the Aborts.
    pub fn shutdown_run(&mut self, id: u16) -> Result<(), Mismatch> {
        let m = self
            .model
            .shutdown_run(id, AbortReason::Shutdown, &mut self.model_out)
            .map(to_core);
        let r = self
            .reference
            .shutdown_run(id, AbortReason::Shutdown, &mut self.reference_out);
        self.same_control_abort(id, m, r, false)
    }

    /// One liveness sweep of job `id`'s run in both switches (the reference's
    /// `Switch::sweep`, the controller's in the model); compare the verdicts and the Aborts.
    pub fn sweep(&mut self, id: u16) -> Result<(), Mismatch> {
        let m = self.model.sweep(id, &mut self.model_out).map(to_core);
        let r = self.reference.sweep(id, &mut self.reference_out);
        if r.is_some() {
            self.last = r;
        }
        self.same_control_abort(id, m, r, true)
    }

    /// Compare what the control plane made each switch write for job `id` (`m`, `r`; a
    /// `sweep`, else a shutdown): the same Abort multicast, or nothing; then what each
    /// owes a parent.
    fn same_control_abort(
        &mut self,
        job: u16,
        m: Option<CoreVerdict>,
        r: Option<CoreVerdict>,
        sweep: bool,
    ) -> Result<(), Mismatch> {
        let packet = self.fed;
        let differs = |model, reference| match sweep {
            true => Mismatch::Sweep {
                job,
                packet,
                model,
                reference,
            },
            false => Mismatch::Shutdown {
                job,
                packet,
                model,
                reference,
            },
        };
        match (m, r) {
            (
                Some(CoreVerdict::Multicast { len, .. }),
                Some(CoreVerdict::Multicast { len: l, .. }),
            ) if len == l => {
                self.same_bytes(self.fed, len)?;
                self.poll_up(self.fed)
            }
            (None, None) => self.poll_up(self.fed),
            (m, r) => Err(differs(m, r)),
        }
    }

    /// End job `id`'s run for being idle in both switches (the reference's
    /// `Switch::end_run`, as the endpoint does it); compare whether each had one.
    pub fn end_run(&mut self, id: u16) -> Result<(), Mismatch> {
        let (model, reference) = (self.model.end_run(id), self.reference.end_run(id));
        if model != reference {
            return Err(Mismatch::EndRun {
                job: id,
                packet: self.fed,
                model,
                reference,
            });
        }
        Ok(())
    }

    /// Remove job `id` from both switches and add it again as it was set up (its slots,
    /// run and counters start afresh); compare the answers.
    pub fn restart_job(&mut self, id: u16) -> Result<(), Mismatch> {
        let Some((config, tier)) = self.jobs.iter().copied().find(|(j, _)| j.id == id) else {
            return Ok(());
        };
        let model = self.model.remove_job(id).map(drop).and_then(|()| {
            self.model
                .add_tiered_job_with_rank_ports(config, tier)
                .map_err(|_| JobError::TableFull(0))
        });
        let reference = self
            .reference
            .remove_job(id)
            .and_then(|_| self.reference.add_tiered_job(config, tier));
        if model != reference {
            return Err(Mismatch::RestartJob {
                job: id,
                packet: self.fed,
                model,
                reference,
            });
        }
        Ok(())
    }

    /// Take one step in both switches.
    pub fn step(&mut self, step: Step<'_>) -> Result<(), Mismatch> {
        match step {
            Step::Packet(p) => self.feed(p),
            Step::RestartJob(id) => self.restart_job(id),
            Step::ShutdownRun(id) => self.shutdown_run(id),
            Step::EndRun(id) => self.end_run(id),
        }
    }

    /// Compare job counters, runs and every slot version of every job.
    pub fn compare_state(&self) -> Result<(), Mismatch> {
        for id in self.jobs.iter().map(|(j, _)| j.id) {
            let (Some(m), Some(r)) = (self.model.job(id), self.reference.job(id)) else {
                continue;
            };
            if m.counters != *r.counters() {
                return Err(Mismatch::JobCounters {
                    job: id,
                    model: Box::new(m.counters),
                    reference: Box::new(*r.counters()),
                });
            }
            let differs = |slot, ver, field| {
                Err(Mismatch::State {
                    job: id,
                    slot,
                    ver,
                    field,
                })
            };
            let run = [
                (m.session == r.session(), "session"),
                (m.lane_slots == r.lane_slots(), "lane_slots"),
                (m.joined == word(r.joined()), "joined"),
            ];
            if let Some((_, field)) = run.into_iter().find(|(ok, _)| !ok) {
                return differs(u16::MAX, 0, field);
            }
            for slot in 0..m.config.slot_count {
                for ver in 0..2u8 {
                    let (Some(ms), Some(rs)) = (
                        self.model.slot_version(id, slot, ver),
                        self.reference.slot(id, slot).map(|s| s.version(ver)),
                    ) else {
                        return differs(slot, ver, "missing");
                    };
                    let complete = ms.seq.used() && ms.remaining == 0;
                    let checks = [
                        (rs.in_session(ms.seq.session) == ms.seq.used(), "session"),
                        (ms.seq.seq == rs.seq(), "seq"),
                        (ms.seen == word(rs.seen()), "seen"),
                        (ms.remaining == rs.remaining(), "remaining"),
                        (complete == rs.is_complete(), "complete"),
                        (ms.exp == rs.exp(), "exp"),
                        (ms.flags == rs.flags().0, "flags"),
                        (ms.values() == rs.values(), "values"),
                        (ms.relayed == rs.relayed(), "relayed"),
                    ];
                    if let Some((_, field)) = checks.into_iter().find(|(ok, _)| !ok) {
                        return differs(slot, ver, field);
                    }
                }
            }
        }
        Ok(())
    }

    /// Return the reference's verdict on the last packet fed (the model's too, if `feed`
    /// returned `Ok`) and the reference's answer bytes (empty unless it answered).
    pub fn last(&self) -> Option<(CoreVerdict, &[u8])> {
        let v = self.last?;
        let len = match v {
            CoreVerdict::Unicast { len, .. }
            | CoreVerdict::Multicast { len, .. }
            | CoreVerdict::Up { len, .. } => len,
            _ => 0,
        };
        Some((v, &self.reference_out[..len]))
    }

    /// Return what the reference owed a parent after the last packet or `shutdown_run`
    /// (the model owed the same, if that returned `Ok`), with its bytes.
    pub fn last_up(&self) -> Option<(CoreVerdict, &[u8])> {
        self.up.as_ref().map(|(v, b)| (*v, &b[..]))
    }

    /// Return the number of packets fed.
    pub fn fed(&self) -> usize {
        self.fed
    }
}

/// Run `packets` through both switches set up with `setup`; compare after every packet and
/// the whole state at the end.
pub fn run<'p>(setup: &Setup, packets: impl IntoIterator<Item = &'p [u8]>) -> Result<(), Mismatch> {
    run_steps::<{ MAX_COUNT as usize }>(setup, packets.into_iter().map(Step::Packet))
}

/// Take `steps` in both switches set up with `setup`, the reference holding `K` values a
/// slot and the model taking counts up to `K` too; compare after every step and the whole
/// state at the end.
pub fn run_steps<'p, const K: usize>(
    setup: &Setup,
    steps: impl IntoIterator<Item = Step<'p>>,
) -> Result<(), Mismatch> {
    let mut pool = vec![Slot::<K, 1>::IDLE; setup.slots];
    let mut pair = Pair::<K>::new(setup, &mut pool)?;
    for step in steps {
        pair.step(step)?;
    }
    pair.compare_state()
}

/// The steps of a `switch_sequence` input as the model comparison takes them
/// (`switchml_tests::checks::model::steps`), control-plane actions on job `job`.
pub fn model_steps(steps: &[ModelStep], job: u16) -> impl Iterator<Item = Step<'_>> {
    steps.iter().map(move |s| match s {
        ModelStep::Send(p) => Step::Packet(p),
        ModelStep::Control(ControlOp::RestartJob) => Step::RestartJob(job),
        ModelStep::Control(ControlOp::ShutdownRun) => Step::ShutdownRun(job),
        ModelStep::Control(ControlOp::EndRun) => Step::EndRun(job),
    })
}

/// The set-up [`fuzz`] uses: job 7 of 3 ranks on slots 2..6 (key 0x77) and job 9 of 1 rank
/// on slot 0 (key 0), in a pool of 8 slots.
pub fn fuzz_setup() -> Setup {
    Setup {
        slots: 8,
        epoch: 0xF022,
        jobs: vec![
            JobConfig {
                id: 7,
                world: 3,
                slot_lo: 2,
                slot_count: 4,
                key: 0x77,
            },
            JobConfig {
                id: 9,
                world: 1,
                slot_lo: 0,
                slot_count: 1,
                key: 0,
            },
        ],
        tiers: Vec::new(),
    }
}

/// The fuzz entry: `data` is a sequence of packets, each a big-endian u16 length (taken
/// modulo 1,100) and that many bytes (fewer at the end).
pub fn fuzz(data: &[u8]) -> Result<(), Mismatch> {
    let mut packets = Vec::new();
    let mut rest = data;
    while let [hi, lo, tail @ ..] = rest {
        let len = usize::from(u16::from_be_bytes([*hi, *lo])) % 1100;
        let (p, next) = tail.split_at(len.min(tail.len()));
        packets.push(p);
        rest = next;
    }
    run(&fuzz_setup(), packets)
}

/// What the `model_vs_reference` fuzz target and the corpus replay run: a `switch_sequence`
/// input's steps ([`model::steps`]) in both switches set up with [`switch::JOBS`] in
/// [`model::SLOTS`] slots, the reference holding [`switch::K`] values a slot; panics on a
/// mismatch.
pub fn check_switch_sequence(data: &[u8]) {
    let setup = Setup {
        slots: model::SLOTS,
        epoch: switch::EPOCH,
        jobs: switch::JOBS.to_vec(),
        tiers: Vec::new(),
    };
    let job = switch::JOBS[0].id;
    model::check_model(data, |steps| {
        run_steps::<{ switch::K }>(&setup, model_steps(steps, job))
    });
}
