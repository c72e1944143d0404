//! N dialect workers and the dialect switch in a small deterministic network (seeded) that
//! loses, duplicates and reorders datagrams: int32 sums are exact and float32 sums within
//! the quantization bound, over several jobs in a row.
//!
//! ```text
//!  worker 0 ─┐ FIFO, loss, duplicates   ┌─ replies: loss, duplicates, any order
//!  worker 1 ─┼──────────────────────▶ switch ──────────────────────────▶ workers
//!  worker 2 ─┘
//! ```
//!
//! Each worker's link to the switch keeps its order (a duplicate follows its original),
//! while everything else is reordered freely: packets of different workers, and replies.
//! The dialect needs that: without sequence numbers the switch takes a stale copy of
//! packet k that overtakes its sender's next use of the slot for a new contribution
//! (`a_stale_duplicate_is_taken_for_new` shows it), a limit of the original program that
//! protocol.md §8.5 describes.

use std::collections::BTreeMap;

use proptest::prelude::*;
use switchml_core::p4app::packet::HEADER_LEN;
use switchml_core::p4app::quant::block_exponent;
use switchml_core::p4app::{
    P4appConfig, P4appEvent, P4appSlot, P4appSwitch, P4appTensor, P4appVerdict, P4appWorker,
};
use switchml_core::splitmix::SplitMix64;
use switchml_core::time::{Duration, Instant};

const M: usize = 4;
const N: usize = 64;
const LEN: usize = HEADER_LEN + 4 * N;

/// SplitMix64: the network's only source of chance.
struct Rng(SplitMix64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0.next_u64()
    }

    /// True with probability `percent` / 100.
    fn chance(&mut self, percent: u8) -> bool {
        self.next() % 100 < u64::from(percent)
    }

    /// A delay of 50–1,050 µs.
    fn delay(&mut self) -> Duration {
        Duration::from_micros(50 + self.next() % 1000)
    }
}

/// Where a datagram goes.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
enum To {
    Switch(u16),
    Worker(usize),
}

struct Net {
    rng: Rng,
    loss: u8,
    dup: u8,
    /// (delivery time, sequence) → (destination, bytes).
    queue: BTreeMap<(Instant, u64), (To, Vec<u8>)>,
    seq: u64,
    /// The last delivery time on each worker's link to the switch (FIFO).
    last_up: Vec<Instant>,
}

impl Net {
    fn send(&mut self, now: Instant, to: To, bytes: &[u8]) {
        if self.rng.chance(self.loss) {
            return;
        }
        let copies = if self.rng.chance(self.dup) { 2 } else { 1 };
        let mut at = now + self.rng.delay();
        if let To::Switch(rank) = to {
            let last = &mut self.last_up[usize::from(rank)];
            at = at.max(*last);
            *last = at;
        }
        for _ in 0..copies {
            self.seq += 1;
            self.queue.insert((at, self.seq), (to, bytes.to_vec()));
        }
    }
}

/// One job's inputs: int32 or float32, one tensor per worker.
#[derive(Debug, Clone)]
enum Inputs {
    I32(Vec<Vec<i32>>),
    F32(Vec<Vec<f32>>),
}

/// Run the jobs to completion on a network; return every worker's outputs per job.
fn run(jobs: &[Inputs], workers: usize, seed: u64, loss: u8, dup: u8) -> Vec<Inputs> {
    let mut net = Net {
        rng: Rng(SplitMix64::new(seed)),
        loss,
        dup,
        queue: BTreeMap::new(),
        seq: 0,
        last_up: vec![Instant::ZERO; workers],
    };
    let mut slots = vec![P4appSlot::<1, N>::EMPTY; 2 * M];
    let mut sw = P4appSwitch::new(&mut slots);
    sw.reset(workers as u16).unwrap();
    let mut outputs = jobs.to_vec();
    let mut shift = (0u32, 0u32);
    let mut now = Instant::from_millis(1);
    for (j, out) in outputs.iter_mut().enumerate() {
        let mut ws: Vec<P4appWorker<'_, M>> = (0..workers)
            .map(|_| P4appWorker::resume(P4appConfig::new(workers as u16), shift.0, shift.1))
            .collect::<Result<_, _>>()
            .unwrap();
        match out {
            Inputs::I32(ts) => {
                for (w, t) in ws.iter_mut().zip(ts.iter_mut()) {
                    w.submit(P4appTensor::I32(t)).unwrap();
                }
            }
            Inputs::F32(ts) => {
                for (w, t) in ws.iter_mut().zip(ts.iter_mut()) {
                    w.submit(P4appTensor::F32(t)).unwrap();
                }
            }
        }
        let mut done = vec![false; workers];
        let mut buf = [0u8; LEN];
        let mut reply = [0u8; LEN];
        for step in 0.. {
            assert!(step < 200_000, "job {j} did not finish");
            for (r, w) in ws.iter_mut().enumerate() {
                while let Some(len) = w.poll_transmit(now, &mut buf) {
                    net.send(now, To::Switch(r as u16), &buf[..len]);
                }
                if let Some(P4appEvent::Done { job }) = w.poll_event() {
                    assert_eq!(job, j as u32);
                    done[r] = true;
                }
            }
            if done.iter().all(|d| *d) {
                break;
            }
            // Advance to the next delivery or timer.
            let next_timer = ws.iter().filter_map(|w| w.poll_timeout()).min();
            let next_packet = net.queue.keys().next().map(|k| k.0);
            now = match (next_timer, next_packet) {
                (Some(a), Some(b)) => a.min(b),
                (a, b) => a.or(b).expect("nothing to wait for"),
            }
            .max(now);
            while let Some(entry) = net.queue.first_entry() {
                if entry.key().0 > now {
                    break;
                }
                let (to, bytes) = entry.remove();
                match to {
                    To::Worker(r) => ws[r].handle_packet(now, &bytes),
                    To::Switch(rank) => match sw.process(rank, &bytes, &mut reply) {
                        P4appVerdict::Multicast { len } => {
                            for r in 0..workers {
                                net.send(now, To::Worker(r), &reply[..len]);
                            }
                        }
                        P4appVerdict::Unicast { rank, len } => {
                            net.send(now, To::Worker(usize::from(rank)), &reply[..len])
                        }
                        _ => {}
                    },
                }
            }
            ws.iter_mut().for_each(|w| w.handle_timeout(now));
        }
        shift = (ws[0].next_job(), ws[0].shift());
        assert!(ws.iter().all(|w| (w.next_job(), w.shift()) == shift));
    }
    outputs
}

fn inputs() -> impl Strategy<Value = (usize, Vec<Inputs>)> {
    (1usize..=4, 1usize..=3, any::<bool>()).prop_flat_map(|(workers, jobs, float)| {
        let job = (0usize..700).prop_flat_map(move |len| {
            if float {
                proptest::collection::vec(proptest::collection::vec(-1.0e6f32..1.0e6, len), workers)
                    .prop_map(Inputs::F32)
                    .boxed()
            } else {
                proptest::collection::vec(proptest::collection::vec(any::<i32>(), len), workers)
                    .prop_map(Inputs::I32)
                    .boxed()
            }
        });
        (Just(workers), proptest::collection::vec(job, jobs))
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn sums_are_exact_or_within_the_bound(
        (workers, jobs) in inputs(),
        seed in any::<u64>(),
        loss in 0u8..25,
        dup in 0u8..25,
    ) {
        let outputs = run(&jobs, workers, seed, loss, dup);
        for (input, output) in jobs.iter().zip(&outputs) {
            match (input, output) {
                (Inputs::I32(xs), Inputs::I32(ys)) => {
                    let exact: Vec<i32> = (0..xs[0].len())
                        .map(|i| xs.iter().fold(0i32, |s, x| s.wrapping_add(x[i])))
                        .collect();
                    for y in ys {
                        prop_assert_eq!(y, &exact);
                    }
                }
                (Inputs::F32(xs), Inputs::F32(ys)) => check_float(xs, ys, workers)?,
                _ => unreachable!(),
            }
        }
    }
}

/// Every element within half a unit of the scale (`n · 2^emax / INT32_MAX`, `emax` the
/// block's max exponent over workers) and half an ulp of `x · factor` per worker (the
/// product is taken in f32, as the original client does), plus half an ulp of the result.
fn check_float(xs: &[Vec<f32>], ys: &[Vec<f32>], workers: usize) -> Result<(), TestCaseError> {
    let n = workers as f64;
    for (b, start) in (0..xs[0].len()).step_by(N).enumerate() {
        let end = (start + N).min(xs[0].len());
        let emax = xs
            .iter()
            .map(|x| block_exponent(&x[start..end]).unwrap())
            .max()
            .unwrap();
        let unit = n * 2f64.powi(i32::from(emax)) / f64::from(i32::MAX);
        for i in start..end {
            let exact: f64 = xs.iter().map(|x| f64::from(x[i])).sum();
            let products: f64 = xs.iter().map(|x| f64::from(x[i]).abs()).sum();
            let bound = n * 0.5 * unit + (products + exact.abs()) / 16_777_216.0;
            for y in ys {
                prop_assert!(
                    (f64::from(y[i]) - exact).abs() <= bound,
                    "block {} element {}: {} vs {}",
                    b,
                    i,
                    y[i],
                    exact
                );
            }
        }
    }
    Ok(())
}

/// The limit the network model respects: two workers complete slot 0 set 0; rank 0 moves on
/// to set 1, and only then does a stale copy of its set-0 packet arrive. Its bit in set 0
/// was cleared by its set-1 packet, so the original program — and this model of it — adds
/// the copy to the stored result again; the next use of set 0 then completes early with a
/// wrong sum.
#[test]
fn a_stale_duplicate_is_taken_for_new() {
    use switchml_core::p4app::{P4appPacket, P4appRepr, P4appSize};
    let packet = |set: bool, value: i32| {
        let repr = P4appRepr {
            msg_type: 1,
            unused_bit: false,
            size: P4appSize::Elements64,
            job: 0,
            tsi: 0,
            set,
            slot: 0,
            e0: 0,
            e1: 0,
        };
        let mut b = vec![0u8; LEN];
        let mut p = P4appPacket::new_unchecked(&mut b[..]);
        repr.emit(&mut p);
        p.values_mut().iter_mut().for_each(|v| v.set(value));
        b
    };
    let mut slots = vec![P4appSlot::<1, N>::EMPTY; 1];
    let mut sw = P4appSwitch::new(&mut slots);
    sw.reset(2).unwrap();
    let mut out = [0u8; LEN];
    sw.process(0, &packet(false, 1), &mut out);
    assert!(matches!(
        sw.process(1, &packet(false, 2), &mut out),
        P4appVerdict::Multicast { .. }
    ));
    sw.process(0, &packet(true, 10), &mut out);
    // The stale copy: taken as a new contribution to the complete set.
    assert_eq!(
        sw.process(0, &packet(false, 1), &mut out),
        P4appVerdict::Consumed
    );
    // Rank 1's next use of set 0 completes it at once, with 1 + 2 + 1 + 5.
    sw.process(1, &packet(true, 20), &mut out);
    assert!(matches!(
        sw.process(1, &packet(false, 5), &mut out),
        P4appVerdict::Multicast { .. }
    ));
    assert_eq!(P4appPacket::new_unchecked(&out[..]).values()[0].get(), 9);
}

#[test]
fn a_lossy_run_of_three_workers_sums_exactly() {
    let xs: Vec<Vec<i32>> = (0..3)
        .map(|w| (0..1000).map(|i| i * 7 + w).collect())
        .collect();
    let outputs = run(&[Inputs::I32(xs.clone())], 3, 42, 20, 20);
    let Inputs::I32(ys) = &outputs[0] else {
        unreachable!()
    };
    for y in ys {
        for (i, v) in y.iter().enumerate() {
            assert_eq!(*v, xs.iter().map(|x| x[i]).sum::<i32>());
        }
    }
}
