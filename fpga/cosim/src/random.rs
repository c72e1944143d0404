//! Seeded random packet sequences: whole runs (every rank joins with the job's key, rounds
//! of Contributions on every slot, ranks leave), interleaved at random across jobs, slots
//! and ranks (so in any order), with duplicates and resends of earlier packets, junk bytes,
//! packets with one byte changed, foreign jobs, wrong sessions, ranks, slots, counts and
//! versions, uses skipped ahead, Probes good and bad, Status, switch-only and unknown
//! types, wrong keys, restarted ranks (a new process ends a complete run), Aborts, and the
//! control plane's job restarts and run ends.

use switchml_core::switch::{JobConfig, Verdict};
use switchml_core::wire::{AbortReason, AbortRepr, JoinRepr, LeaveRepr, Message, StatusRepr};
use switchml_tests::sim::Rng;

use crate::session::Session;

/// The jobs, one a table entry of the RTL: a few ranks, a lone rank, 64 ranks (the widest
/// bitmap), three ranks on 8 slots; job 8 is never registered.
fn jobs(rng: &mut Rng) -> [JobConfig; 4] {
    let job = |id, world, slot_lo, slot_count, key| JobConfig {
        id,
        world,
        slot_lo,
        slot_count,
        key,
    };
    [
        job(7, rng.between(2, 5) as u16, 2, 4, 0x5EC2_E700_0000_0007),
        job(9, 1, 0, 2, 0),
        job(11, 64, 8, 2, u64::MAX),
        job(13, 3, 12, 8, 13),
    ]
}
const FOREIGN: u16 = 8;

fn emit(m: Message) -> Vec<u8> {
    let mut b = vec![0u8; m.buffer_len()];
    let _ = m.emit(&mut b);
    b
}

/// A Contribution's bytes (any field values, valid or not).
#[allow(clippy::too_many_arguments)]
fn contribution(
    job: u16,
    rank: u16,
    slot: u16,
    seq: u32,
    flags: u8,
    exp: u8,
    session: u32,
    values: &[i32],
) -> Vec<u8> {
    let mut b = vec![1, 1];
    b.extend(job.to_be_bytes());
    b.extend(rank.to_be_bytes());
    b.extend(slot.to_be_bytes());
    b.extend([(seq & 1) as u8, flags]);
    b.extend((values.len() as u16).to_be_bytes());
    b.extend(seq.to_be_bytes());
    b.extend([exp, 0, 0, 0]);
    b.extend(session.to_be_bytes());
    for v in values {
        b.extend(v.to_be_bytes());
    }
    b
}

fn probe(job: u16, rank: u16, slot: u16, ver: u8, seq: u32, session: u32) -> Vec<u8> {
    let mut b = vec![1, 0x12];
    b.extend(job.to_be_bytes());
    b.extend(rank.to_be_bytes());
    b.extend(slot.to_be_bytes());
    b.extend([ver, 0, 0, 0]);
    b.extend(seq.to_be_bytes());
    b.extend(session.to_be_bytes());
    b
}

/// One slot's stream: the use being sent, its count, and the ranks that sent it.
#[derive(Clone)]
struct SlotStream {
    seq: u32,
    count: Option<u16>,
    sent: Vec<bool>,
}

/// The generator's view of the workers.
struct Workers<const K: usize> {
    rng: Rng,
    jobs: [JobConfig; 4],
    generation: Vec<Vec<u8>>,
    streams: Vec<Vec<SlotStream>>,
    history: Vec<Vec<u8>>,
}

impl<const K: usize> Workers<K> {
    fn chance(&mut self, percent: u64) -> bool {
        self.rng.between(0, 99) < percent
    }

    fn pick(&mut self, n: usize) -> usize {
        self.rng.between(0, n as u64 - 1) as usize
    }

    fn nonce(&self, j: usize, rank: u16) -> u32 {
        let g = self.generation[j][usize::from(rank)];
        (u32::from(self.jobs[j].id) << 24) | (u32::from(g) << 16) | (u32::from(rank) + 1)
    }

    fn join(&mut self, j: usize, rank: u16, key: u64, world: u16) -> Vec<u8> {
        let c = self.jobs[j];
        emit(Message::Join(
            JoinRepr {
                job: c.id,
                rank,
                world,
                slot_lo: 0,
                slot_count: c.slot_count,
                lanes: 1,
                count: K as u16,
                nonce: self.nonce(j, rank),
                cookie: 0,
                tag: [0; 16],
            }
            .sign(key),
        ))
    }

    fn value(&mut self) -> i32 {
        match self.rng.between(0, 9) {
            0 => i32::MAX - self.rng.between(0, 3) as i32,
            1 => i32::MIN + self.rng.between(0, 3) as i32,
            _ => self.rng.between(0, 2000) as i32 - 1000,
        }
    }

    fn reset_streams(&mut self, j: usize) {
        let world = usize::from(self.jobs[j].world);
        for s in &mut self.streams[j] {
            *s = SlotStream {
                seq: 0,
                count: None,
                sent: vec![false; world],
            };
        }
    }
}

/// Feed `packets` packets of the sequence of `seed` to a new session (`stall_seed`: the
/// harness's back-pressure; 0 for none).
pub fn sequence<const K: usize>(seed: u64, packets: usize, stall_seed: u64) -> Session<K> {
    let mut rng = Rng::new(seed);
    let jobs = jobs(&mut rng);
    let mut s = Session::<K>::new(0xE90C, &jobs, stall_seed);
    let mut w = Workers::<K> {
        rng,
        jobs,
        generation: jobs.iter().map(|c| vec![0; usize::from(c.world)]).collect(),
        streams: jobs
            .iter()
            .map(|c| {
                vec![
                    SlotStream {
                        seq: 0,
                        count: None,
                        sent: vec![]
                    };
                    usize::from(c.slot_count)
                ]
            })
            .collect(),
        history: Vec::new(),
    };
    for j in 0..jobs.len() {
        w.reset_streams(j);
    }
    let mut fed = 0;
    while fed < packets {
        // Job 11's 64 ranks make every run change 128 control packets: pick it less.
        let j = [0, 0, 0, 1, 2, 3, 3, 3][w.pick(8)];
        let c = jobs[j];
        let session = s.reference().job(c.id).map_or(0, |job| job.session());
        let mut batch: Vec<Vec<u8>> = Vec::new();
        let roll = w.rng.between(0, 99);
        if session == 0 && roll < 60 {
            // Every rank joins (in a random order), opening a run.
            let mut ranks: Vec<u16> = (0..c.world).collect();
            for i in (1..ranks.len()).rev() {
                let k = w.pick(i + 1);
                ranks.swap(i, k);
            }
            for r in ranks {
                batch.push(w.join(j, r, c.key, c.world));
            }
            w.reset_streams(j);
        } else if roll < 60 {
            let slot = w.pick(usize::from(c.slot_count));
            let stream = w.streams[j][slot].clone();
            let missing: Vec<u16> = (0..c.world)
                .filter(|&r| !stream.sent[usize::from(r)])
                .collect();
            let rank = if !missing.is_empty() && w.chance(92) {
                missing[w.pick(missing.len())]
            } else {
                w.pick(usize::from(c.world)) as u16
            };
            let count = match stream.count {
                Some(n) if w.chance(97) => n,
                _ => match w.rng.between(0, 9) {
                    0 => 0,
                    1 => w.rng.between(1, K as u64) as u16,
                    _ => K as u16,
                },
            };
            let mut seq = stream.seq;
            if w.chance(3) {
                seq = seq.wrapping_add(w.rng.between(1, 3) as u32);
            }
            let mut flags = if w.chance(10) { 2 } else { 0 };
            if w.chance(15) {
                // Carried flags (non-finite kinds §5.4, CONGESTED §6.3), and now and then bits a
                // flat switch ignores.
                flags |= w.rng.between(0, 255) as u8 & if w.chance(50) { 0x3C } else { 0xFD };
            }
            let exp = w.rng.between(0, 255) as u8;
            let values: Vec<i32> = (0..count).map(|_| w.value()).collect();
            let sess = if w.chance(97) {
                session
            } else {
                w.rng.next_u64() as u32 & 0xFF
            };
            let p = contribution(c.id, rank, slot as u16, seq, flags, exp, sess, &values);
            let v = s.packet(&p);
            fed += 1;
            let st = &mut w.streams[j][slot];
            if matches!(v, Verdict::Consumed | Verdict::Multicast { .. }) {
                st.count = Some(count);
                st.sent[usize::from(rank)] = true;
            }
            if matches!(v, Verdict::Multicast { .. }) {
                st.seq = seq.wrapping_add(1);
                st.count = None;
                st.sent.iter_mut().for_each(|b| *b = false);
            }
            if w.chance(15) {
                // Resent at once: the same slot version twice in a row in the pipeline.
                let mut again = p.clone();
                again[9] |= 2;
                batch.push(again);
            }
            w.history.push(p);
        } else if roll < 75 && !w.history.is_empty() {
            // Duplicates, resends and reordering: earlier packets again.
            for _ in 0..w.rng.between(1, 3) {
                let i = w.history.len() - 1 - w.pick(w.history.len().min(200));
                let mut p = w.history[i].clone();
                if p.len() >= 24 && p[1] == 1 && w.chance(50) {
                    p[9] |= 2;
                }
                batch.push(p);
            }
        } else if roll < 80 {
            // Junk: random bytes, often with a valid version and a data-path type.
            let n = w.rng.between(1, 80) as usize;
            let mut p: Vec<u8> = (0..n).map(|_| w.rng.next_u64() as u8).collect();
            if w.chance(60) {
                p[0] = 1;
            }
            if p.len() > 1 && w.chance(50) {
                p[1] = [0x01, 0x12, 0x02, 0x13, 0x11, 0x16, 0x42, 0x00][w.pick(8)];
            }
            batch.push(p);
        } else if roll < 85 && !w.history.is_empty() {
            // One byte changed.
            let i = w.history.len() - 1 - w.pick(w.history.len().min(50));
            let mut p = w.history[i].clone();
            let at = w.pick(p.len());
            p[at] = w.rng.next_u64() as u8;
            batch.push(p);
        } else if roll < 88 {
            // Foreign job, or a field out of range.
            let (job, rank, slot) = match w.rng.between(0, 2) {
                0 => (FOREIGN, 0, 0),
                1 => (c.id, c.world + w.rng.between(0, 2) as u16, 0),
                _ => (c.id, 0, c.slot_count + w.rng.between(0, 2) as u16),
            };
            let n = if w.chance(30) { K + 1 } else { 1 };
            let values: Vec<i32> = (0..n).map(|_| 1).collect();
            batch.push(contribution(job, rank, slot, 0, 0, 0, session, &values));
        } else if roll < 94 {
            // Probes, mostly good.
            let slot = w.pick(usize::from(c.slot_count) + 1) as u16;
            let rank = w.pick(usize::from(c.world) + 1) as u16;
            let job = if w.chance(10) { FOREIGN } else { c.id };
            let sess = if w.chance(90) {
                session
            } else {
                w.rng.next_u64() as u32
            };
            let ver = w.rng.between(0, 1) as u8;
            batch.push(probe(job, rank, slot, ver, 0, sess));
        } else if roll < 96 {
            let status = StatusRepr {
                job: c.id,
                rank: 0,
                nonce: 1,
                cookie: 0,
                tag: [0; 16],
            };
            batch.push(emit(Message::Status(status.sign(c.key))));
        } else if roll < 98 {
            // Joins that fail, resend, or restart a rank.
            let rank = w.pick(usize::from(c.world)) as u16;
            match w.rng.between(0, 3) {
                0 => batch.push(w.join(j, rank, c.key ^ 1, c.world)),
                1 => batch.push(w.join(j, rank, c.key, c.world + 1)),
                2 => batch.push(w.join(j, rank, c.key, c.world)),
                _ => {
                    w.generation[j][usize::from(rank)] += 1;
                    batch.push(w.join(j, rank, c.key, c.world));
                }
            }
        } else if roll < 99 && (c.world < 64 || w.chance(10)) {
            // The run ends: every rank leaves, or one gives up.
            if w.chance(50) {
                for rank in 0..c.world {
                    batch.push(emit(Message::Leave(LeaveRepr {
                        job: c.id,
                        rank,
                        session,
                    })));
                }
            } else {
                batch.push(emit(Message::Abort(AbortRepr {
                    job: c.id,
                    rank: 0,
                    reason: AbortReason::WorkerFailed,
                    detail: 1,
                    epoch: 0,
                    session,
                })));
            }
        } else if roll >= 99 {
            match w.rng.between(0, 2) {
                0 => s.restart_job(c.id),
                1 => s.end_run(c.id, false),
                _ => s.end_run(c.id, true),
            }
        }
        for p in batch {
            if fed < packets {
                s.packet(&p);
                w.history.push(p);
                fed += 1;
            }
        }
        if w.history.len() > 400 {
            w.history.drain(..200);
        }
    }
    s
}
