//! The reference side of a co-simulation: the reference switch (data path and control
//! plane), the script for the RTL, and what the RTL must answer.

use std::fmt::Write as _;

use switchml_core::switch::{DropReason, JobConfig, JobCounters, Slot, Switch, Verdict};
use switchml_core::wire::AbortReason;

use crate::{JOBS, SLOTS};

/// A data-path packet's verdict in the RTL's terms (`v_kind`, `v_reason`, `v_rank`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DataVerdict {
    /// 0 consumed, 1 dropped, 2 multicast, 3 unicast.
    pub kind: u8,
    /// The drop reason's counter index (dropped only).
    pub reason: u8,
    /// The destination rank (unicast only).
    pub rank: u16,
}

impl DataVerdict {
    /// The RTL's terms for the reference's verdict.
    pub fn of(v: Verdict) -> DataVerdict {
        let (kind, reason, rank) = match v {
            Verdict::Consumed => (0, 0, 0),
            Verdict::Drop(r) => (1, drop_index(r), 0),
            Verdict::Multicast { .. } => (2, 0, 0),
            Verdict::Unicast { rank, .. } => (3, 0, rank),
            // No job here is a child's (protocol.md §7); the RTL has no upward port.
            Verdict::Up { .. } => (4, 0, 0),
        };
        DataVerdict { kind, reason, rank }
    }

    /// Return whether `other` (from the RTL) says the same: the fields that mean something
    /// for this kind of verdict agree.
    pub fn agrees(&self, other: &DataVerdict) -> bool {
        self.kind == other.kind
            && (self.kind != 1 || self.reason == other.reason)
            && (self.kind != 3 || self.rank == other.rank)
    }

    /// Return whether the RTL sends an answer for it.
    pub fn answers(&self) -> bool {
        self.kind >= 2
    }
}

/// Return `r`'s counter index (protocol.md §3.8's order).
pub fn drop_index(r: DropReason) -> u8 {
    DropReason::ALL.iter().position(|x| *x == r).unwrap_or(0) as u8
}

/// An answer the data path sends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    /// To every rank of the job (else to `rank`).
    pub multicast: bool,
    /// The destination rank (unicast; for the RTL's copies of a multicast, the copy's).
    pub rank: u16,
    /// The copies sent: the job's world size for a multicast, else 1.
    pub copies: u16,
    /// The datagram.
    pub bytes: Vec<u8>,
}

/// What the RTL must do with the packets of a script.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Expected {
    /// Every packet fed, in order.
    pub inputs: Vec<Vec<u8>>,
    /// Per packet: `None` for one the RTL passes to the host, else its verdict and answer.
    pub outcomes: Vec<Option<(DataVerdict, Option<Answer>)>>,
    /// Per job table entry, what the data path added to the job's counters since the job
    /// was last installed, in sml_job_counters' order.
    pub job_counters: Vec<[u64; 9]>,
}

/// The counters of `c` the data path moves, in sml_job_counters' order.
pub fn data_path_counters(c: &JobCounters) -> [u64; 9] {
    [
        c.contributions,
        c.completions,
        c.retransmit_replies,
        c.duplicates,
        c.stale,
        c.rejected,
        c.probes,
        c.overflows,
        c.unauthorized,
    ]
}

/// Return whether the RTL passes `bytes` to the host (sml_type_demux's rule): version 1, a
/// whole prefix, and a control-plane type (Join, Abort, Status, Leave).
pub fn goes_to_host(bytes: &[u8]) -> bool {
    bytes.len() >= 6 && bytes[0] == 1 && matches!(bytes[1], 0x10 | 0x14 | 0x15 | 0x17)
}

/// The reference switch with `K` values a slot, the script for the RTL and the expectations.
pub struct Session<const K: usize> {
    reference: Switch<'static, K, 1, JOBS>,
    jobs: Vec<JobConfig>,
    image: Vec<[u32; 4]>,
    script: String,
    expected: Expected,
    out: Vec<u8>,
}

impl<const K: usize> Session<K> {
    /// Set up the reference and the RTL alike: epoch, `max_count = K`, then `jobs` (each
    /// takes the RTL job table entry of its position; its slots are made idle). `seed`
    /// drives the harness's random stalls (0: none).
    ///
    /// # Panics
    /// If a job is refused by the reference or there are more than [`JOBS`].
    pub fn new(epoch: u32, jobs: &[JobConfig], seed: u64) -> Self {
        assert!(jobs.len() <= JOBS, "the RTL holds {JOBS} jobs");
        let pool = Box::leak(vec![Slot::<K, 1>::IDLE; SLOTS].into_boxed_slice());
        let mut s = Session {
            reference: Switch::new(pool, epoch),
            jobs: jobs.to_vec(),
            // Nothing written yet: no entry matches, so the first sync writes them all.
            image: vec![[u32::MAX; 4]; jobs.len()],
            script: String::new(),
            expected: Expected {
                job_counters: vec![[0; 9]; jobs.len()],
                ..Expected::default()
            },
            out: vec![0; Switch::<K, 1, JOBS>::OUT_LEN],
        };
        let _ = writeln!(s.script, "seed {seed}");
        s.cfg(0x00, epoch);
        s.cfg(0x01, K as u32);
        for (i, job) in jobs.iter().enumerate() {
            s.reference
                .add_job(*job)
                .expect("the job fits the reference");
            s.clear(i);
        }
        s.sync();
        s
    }

    /// Return the reference switch (to read a job's session, as a worker learns it).
    pub fn reference(&self) -> &Switch<'static, K, 1, JOBS> {
        &self.reference
    }

    fn cfg(&mut self, addr: u8, data: u32) {
        let _ = writeln!(self.script, "cfg {addr:x} {data:x}");
    }

    /// Return job table entry `i`'s slots to idle and zero its counters, as installing
    /// the job does.
    fn clear(&mut self, i: usize) {
        let job = self.jobs[i];
        let _ = writeln!(self.script, "clear {} {}", job.slot_lo, job.slot_count);
        self.cfg(0x05, i as u32);
        self.expected.job_counters[i] = [0; 9];
    }

    /// Return the data path's counters of the job the packet names (entry, counters).
    fn counters_of(&self, bytes: &[u8]) -> Option<(usize, [u64; 9])> {
        let id = u16::from_be_bytes([*bytes.get(2)?, *bytes.get(3)?]);
        let i = self.jobs.iter().position(|j| j.id == id)?;
        let job = self.reference.job(id)?;
        Some((i, data_path_counters(job.counters())))
    }

    /// Write the job table entries that differ from the reference's jobs, as the host does
    /// after each control-plane step.
    fn sync(&mut self) {
        for i in 0..self.jobs.len() {
            let id = self.jobs[i].id;
            let entry = match self.reference.job(id) {
                Some(job) => {
                    let c = job.config();
                    [
                        1 << 31 | u32::from(id),
                        u32::from(c.world) << 16 | u32::from(c.slot_count),
                        c.slot_lo,
                        job.session(),
                    ]
                }
                None => [u32::from(id), 0, 0, 0],
            };
            for (w, &word) in entry.iter().enumerate() {
                if self.image[i][w] != word {
                    self.cfg(0x10 + 4 * i as u8 + w as u8, word);
                }
            }
            self.image[i] = entry;
        }
    }

    /// Feed one datagram (non-empty: AXI-Stream has no empty packet) to both.
    pub fn packet(&mut self, bytes: &[u8]) -> Verdict {
        assert!(!bytes.is_empty(), "AXI-Stream carries no empty packet");
        let mut line = String::with_capacity(5 + 2 * bytes.len());
        line.push_str("pkt ");
        for b in bytes {
            let _ = write!(line, "{b:02x}");
        }
        self.script.push_str(&line);
        self.script.push('\n');
        self.expected.inputs.push(bytes.to_vec());
        let before = self.counters_of(bytes);
        let verdict = self.reference.process(bytes, &mut self.out);
        if goes_to_host(bytes) {
            self.expected.outcomes.push(None);
            self.sync();
        } else {
            if let (Some((i, before)), Some((_, after))) = (before, self.counters_of(bytes)) {
                for (sum, (b, a)) in self.expected.job_counters[i]
                    .iter_mut()
                    .zip(before.iter().zip(&after))
                {
                    *sum += a - b;
                }
            }
            let v = DataVerdict::of(verdict);
            let answer = match verdict {
                Verdict::Multicast { job, len } => Some(Answer {
                    multicast: true,
                    rank: 0,
                    copies: self.reference.job(job).map_or(0, |j| j.config().world),
                    bytes: self.out[..len].to_vec(),
                }),
                Verdict::Unicast { rank, len, .. } => Some(Answer {
                    multicast: false,
                    rank,
                    copies: 1,
                    bytes: self.out[..len].to_vec(),
                }),
                _ => None,
            };
            self.expected.outcomes.push(Some((v, answer)));
        }
        verdict
    }

    /// The control plane removes job `id` and adds it again (its slots become idle).
    pub fn restart_job(&mut self, id: u16) {
        let Some(i) = self.jobs.iter().position(|j| j.id == id) else {
            return;
        };
        if self.reference.remove_job(id).is_ok() {
            self.reference
                .add_job(self.jobs[i])
                .expect("the job fits again");
            self.clear(i);
        }
        self.sync();
    }

    /// The control plane ends job `id`'s run: idle (`shutdown` false) or stopping (the
    /// host multicasts the Abort `Shutdown`; no data-path output).
    pub fn end_run(&mut self, id: u16, shutdown: bool) {
        if shutdown {
            let _ = self
                .reference
                .shutdown_run(id, AbortReason::Shutdown, &mut self.out);
        } else {
            self.reference.end_run(id);
        }
        self.sync();
    }

    /// A timing point: the harness drains the pipeline and writes the cycle count.
    pub fn mark(&mut self) {
        self.script.push_str("mark\n");
    }

    /// Return the answer the reference wrote for `verdict`, the last packet's.
    pub fn answer(&self, verdict: Verdict) -> &[u8] {
        match verdict {
            Verdict::Multicast { len, .. } | Verdict::Unicast { len, .. } => &self.out[..len],
            _ => &[],
        }
    }

    /// Return the script and the expectations.
    pub fn finish(mut self) -> (String, Expected) {
        self.script.push_str("end\n");
        (self.script, self.expected)
    }
}
