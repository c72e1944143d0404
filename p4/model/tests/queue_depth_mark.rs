//! `CONGESTED` from queue depth (protocol.md §6.3, `congestion_marker.p4`): on the test bed,
//! as frames, a Result that leaves by a port whose egress queue is deeper than the
//! threshold is marked, that copy only, and nothing else changes; and workers whose
//! Results come marked that way halve their windows and still get exact sums.
//!
//! ```text
//!   job 7, ranks 0-3 at hosts 0-3 (switch ports 0-3); threshold 16
//!   port 0: depth 0    port 1: depth 17 (deep)    port 2: depth 16    port 3: depth 5
//! ```

use std::collections::VecDeque;

use switchml_core::quant::Op;
use switchml_core::switch::JobConfig;
use switchml_core::time::{Duration, Instant};
use switchml_core::wire::data::Flags;
use switchml_core::worker::{Config, CongestionControl, Event};
use switchml_p4model::headers::TRANSPORT_LEN;
use switchml_p4model::{Config as ModelConfig, Pipeline, MAX_COUNT};
use switchml_p4model_harness::testbed::{self, datagrams, host, Bed, BedJob, KEY, SWITCH};
use switchml_tests::harness::{self as sim_harness, sim_config};
use switchml_tests::sim::{Buf, SimWorker};

const JOB: u16 = 7;
const THRESHOLD: u32 = 16;
const DEEP_PORT: u16 = 1;
/// The depth each host port's queue reports: one port above the threshold, one at it.
const DEPTHS: [(u16, u32); 4] = [(0, 0), (DEEP_PORT, 17), (2, 16), (3, 5)];
/// The flag byte's place in a frame.
const FLAGS_AT: usize = TRANSPORT_LEN + 9;

/// The nonce of rank `r`'s process; rank 0's Join opens the run, so it is the session.
const fn nonce(r: u16) -> u32 {
    0x3333_0000 + r as u32 + 1
}
const SESSION: u32 = nonce(0);

/// Every message type the switch answers with, to every port: Joins (JoinReplies, the
/// last one to every rank), a use of slot 0 (its Result to every rank), resends of it
/// from ranks 1 and 2 (a Result each, unicast), a Probe (ProbeReply) and an Abort (to every
/// rank).
fn traffic() -> Vec<Vec<u8>> {
    let mut steps: Vec<Vec<u8>> = (0..4)
        .map(|r| datagrams::join(JOB, r, 4, (4, 16), nonce(r), KEY))
        .collect();
    let use_of = |r| datagrams::contribution(JOB, r, 0, SESSION, &datagrams::values(r, 16));
    steps.extend((0..4).map(use_of));
    steps.extend([use_of(1), use_of(2)]);
    steps.push(datagrams::probe(JOB, 1, 0, SESSION));
    steps.push(datagrams::abort(JOB, 3, SESSION));
    steps
}

/// Every frame the switch sends for [`traffic`], with its port, step by step.
fn sent(p: &mut Pipeline) -> Vec<Vec<(u16, Vec<u8>)>> {
    traffic()
        .iter()
        .map(|d| {
            let (port, frame) = testbed::frame(d);
            testbed::answers(p, port, &frame)
        })
        .collect()
}

/// The test bed with `threshold` and [`DEPTHS`].
fn marking(threshold: u32) -> Pipeline {
    let mut p = testbed::pipeline();
    p.set_congestion_threshold(threshold);
    for (port, depth) in DEPTHS {
        p.set_queue_depth(port, depth);
    }
    p
}

fn is_result(frame: &[u8]) -> bool {
    frame.get(TRANSPORT_LEN + 1) == Some(&0x02)
}

#[test]
fn only_the_results_leaving_by_the_deep_port_are_marked_and_nothing_else_changes() {
    let plain = sent(&mut testbed::pipeline());
    let marked = sent(&mut marking(THRESHOLD));
    assert_eq!(plain.len(), marked.len());
    let mut results_marked = 0;
    let mut results_unmarked = 0;
    for (step, (a, b)) in plain.iter().zip(&marked).enumerate() {
        let ports = |s: &[(u16, Vec<u8>)]| s.iter().map(|(p, _)| *p).collect::<Vec<_>>();
        assert_eq!(ports(a), ports(b), "step {step}");
        for ((port, want), (_, got)) in a.iter().zip(b) {
            assert_eq!(want.len(), got.len(), "step {step} port {port}");
            if is_result(want) && *port == DEEP_PORT {
                // The copy to the deep port: CONGESTED added to its flags, every other byte
                // (the values, the IPv4 checksum: UDP's is 0) the same.
                assert_eq!(
                    got[FLAGS_AT],
                    want[FLAGS_AT] | Flags::CONGESTED.0,
                    "step {step}"
                );
                assert_eq!(want[FLAGS_AT] & Flags::CONGESTED.0, 0, "step {step}");
                assert_eq!(got[..FLAGS_AT], want[..FLAGS_AT], "step {step}");
                assert_eq!(got[FLAGS_AT + 1..], want[FLAGS_AT + 1..], "step {step}");
                results_marked += 1;
            } else {
                // Every other copy, of a Result (a shallow port, one at the threshold) or of
                // anything else (to the deep port too), as it was.
                assert_eq!(got, want, "step {step} port {port}");
                results_unmarked += usize::from(is_result(want));
            }
        }
    }
    // The multicast Result's copy to port 1 and rank 1's resend's Result; the multicast's
    // three other copies and rank 2's resend's Result (port 2, at the threshold).
    assert_eq!((results_marked, results_unmarked), (2, 4));
    // The Probe's answer and the Abort reached the deep port, and were not marked.
    assert!(marked
        .iter()
        .flatten()
        .any(|(p, f)| *p == DEEP_PORT && f[TRANSPORT_LEN + 1] == 0x13));
    assert!(marked
        .iter()
        .flatten()
        .any(|(p, f)| *p == DEEP_PORT && f[TRANSPORT_LEN + 1] == 0x14));
}

#[test]
fn threshold_zero_or_above_every_queue_marks_nothing() {
    let plain = sent(&mut testbed::pipeline());
    for threshold in [0, 17, u32::MAX] {
        assert_eq!(
            sent(&mut marking(threshold)),
            plain,
            "threshold {threshold}"
        );
    }
}

// ---------------------------------------------------------------------------------------

/// One-way delay of every datagram.
const DELAY: Duration = Duration::from_micros(50);

/// Where a datagram in flight goes.
enum To {
    /// The switch, from rank `r`'s host.
    Switch(u16),
    /// Rank `r`'s worker.
    Rank(u16),
}

/// Workers at the test bed's hosts, driven through the model as frames: every datagram
/// takes [`DELAY`] each way (so in flight they stay in order), the switch answers at once,
/// a multicast leaves as one copy per replica (marked by its own port's depth).
struct Framed {
    now: Instant,
    switch: Pipeline,
    ranks: Vec<SimWorker>,
    in_flight: VecDeque<(Instant, To, Vec<u8>)>,
    done: Vec<Option<Buf>>,
}

impl Framed {
    fn new(switch: Pipeline, lane: Config) -> Self {
        let ranks = (0..lane.world)
            .map(|rank| {
                let c = Config {
                    rank,
                    nonce: nonce(rank),
                    ..lane
                };
                SimWorker::new(c).expect("a valid lane")
            })
            .collect();
        Framed {
            now: Instant::ZERO,
            switch,
            ranks,
            in_flight: VecDeque::new(),
            done: vec![None; usize::from(lane.world)],
        }
    }

    /// Advance to the next arrival or timer and handle everything due; false if nothing is
    /// left to happen.
    fn step(&mut self) -> bool {
        let mut buf = vec![0u8; 2048];
        for (r, w) in self.ranks.iter_mut().enumerate() {
            while let Some(len) = w.poll_transmit(self.now, &mut buf) {
                let at = self.now + DELAY;
                self.in_flight
                    .push_back((at, To::Switch(r as u16), buf[..len].to_vec()));
            }
        }
        let timers = self.ranks.iter().filter_map(|w| w.poll_timeout()).min();
        let arrival = self.in_flight.front().map(|(at, ..)| *at);
        let Some(next) = [timers, arrival].into_iter().flatten().min() else {
            return false;
        };
        self.now = self.now.max(next);
        while self
            .in_flight
            .front()
            .is_some_and(|(at, ..)| *at <= self.now)
        {
            let Some((_, to, bytes)) = self.in_flight.pop_front() else {
                break;
            };
            match to {
                To::Switch(r) => {
                    let frame = testbed::frame_between(&host(r), &SWITCH, &bytes);
                    for (port, out) in testbed::answers(&mut self.switch, host(r).port, &frame) {
                        let at = self.now + DELAY;
                        let datagram = out[TRANSPORT_LEN..].to_vec();
                        self.in_flight.push_back((at, To::Rank(port), datagram));
                    }
                }
                To::Rank(r) => self.ranks[usize::from(r)].handle_packet(self.now, &bytes),
            }
        }
        for (r, w) in self.ranks.iter_mut().enumerate() {
            if w.poll_timeout().is_some_and(|t| t <= self.now) {
                w.handle_timeout(self.now);
            }
            while let Some(e) = w.poll_event() {
                match e {
                    Event::Done { buf, result, .. } => {
                        if let Err(e) = result {
                            panic!("rank {r}: {e:?}");
                        }
                        self.done[r] = Some(buf);
                    }
                    Event::Failed(e) => panic!("rank {r}: {e:?}"),
                    _ => {}
                }
            }
        }
        true
    }
}

/// Four ranks of one lane, 8 slots, chunks of 16, the congestion controller on, an int32
/// tensor of 1,024 elements each (64 uses a rank); rank 1's port is deep the whole time.
#[test]
fn workers_behind_a_deep_queue_halve_their_windows_and_get_exact_sums() {
    const WORLD: u16 = 4;
    const WINDOW: u16 = 8;
    let job = JobConfig {
        id: sim_harness::JOB,
        world: WORLD,
        slot_lo: 0,
        slot_count: WINDOW,
        key: sim_harness::KEY,
    };
    let bed = Bed {
        config: ModelConfig {
            slots: usize::from(WINDOW),
            jobs: 1,
            workers: usize::from(WORLD),
            epoch: testbed::EPOCH,
            max_count: MAX_COUNT,
            switch: SWITCH,
        },
        jobs: vec![BedJob::at_hosts(job)],
    };
    let mut switch = bed.pipeline();
    switch.set_congestion_threshold(THRESHOLD);
    for (port, depth) in DEPTHS {
        switch.set_queue_depth(port, depth);
    }
    let lane = Config {
        congestion: CongestionControl::DEFAULT_ON,
        ..sim_config(WORLD, WINDOW, 16)
    };
    let mut sim = Framed::new(switch, lane);
    let inputs: Vec<Vec<i32>> = (0..WORLD)
        .map(|r| {
            (0..1024)
                .map(|i| (i * 7 + i32::from(r) * 1000) % 5001 - 2500)
                .collect()
        })
        .collect();
    for (r, x) in inputs.iter().enumerate() {
        let now = sim.now;
        sim.ranks[r]
            .submit(now, Buf::I32(x.clone()), Op::Sum)
            .expect("submitted");
    }
    let mut steps = 0;
    while sim.done.iter().any(Option::is_none) && steps < 200_000 && sim.step() {
        steps += 1;
    }
    let sum: Vec<i32> = (0..1024)
        .map(|i| inputs.iter().map(|x| x[i]).sum())
        .collect();
    for (r, got) in sim.done.iter().enumerate() {
        assert_eq!(got.as_ref(), Some(&Buf::I32(sum.clone())), "rank {r}");
    }
    for (r, w) in sim.ranks.iter().enumerate() {
        let decreases = w.stats().cwnd_mark_decreases;
        if r == usize::from(DEEP_PORT) {
            assert!(decreases > 0, "rank {r}: no decrease on marks");
        } else {
            assert_eq!(decreases, 0, "rank {r}: its Results were not marked");
        }
    }
}
