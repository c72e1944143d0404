//! The protocol core driven by hand: two core `Worker`s (one lane each) and the core's
//! reference `Switch` exchanging bytes in a loop. No sockets, threads or clocks: the loop
//! carries every datagram at once and moves time straight to the next timer, which is all
//! an adapter does (`switchml-worker` does it with UDP sockets, a thread per lane and the OS
//! clock). protocol.md §7 describes the worker's loop, §4 the switch's decisions.
//!
//! `cargo run -p switchml-examples --example sans_io`

use switchml_core::quant::Op;
use switchml_core::switch::{JobConfig, Slot, Switch, Verdict};
use switchml_core::time::{Duration, Instant};
use switchml_core::worker::{Config, Event, Worker};

/// Values per slot and per packet.
const COUNT: usize = 64;
/// Slots of the job, all driven by each rank's one lane.
const SLOTS: u16 = 8;
const WORLD: u16 = 2;
const JOB: u16 = 1;
const KEY: u64 = 0x005E_C2E7;

/// A worker over `Vec<f32>` tensors, with room for 8 slots and 4 queued tensors.
type Lane = Worker<Vec<f32>, 8, 4>;

pub fn main() -> Result<(), Box<dyn std::error::Error>> {
    // The switch: a pool of slots (64 values, one 64-rank bitmap word, one job) and job 1.
    let mut pool = vec![Slot::<COUNT, 1>::IDLE; usize::from(SLOTS)];
    let mut switch = Switch::<COUNT, 1, 1>::new(&mut pool, 0xE0C4);
    let job = JobConfig {
        id: JOB,
        world: WORLD,
        slot_lo: 0,
        slot_count: SLOTS,
        key: KEY,
    };
    switch.add_job(job).map_err(|e| format!("add job: {e:?}"))?;

    // One worker per rank; each process has its own nonce (protocol.md §4.1).
    let mut workers = Vec::new();
    for rank in 0..WORLD {
        let config = Config {
            window: SLOTS,
            count: COUNT as u16,
            key: KEY,
            nonce: u32::from(rank) + 1,
            ..Config::new(JOB, rank, WORLD)
        };
        workers.push(Lane::new(config).map_err(|e| format!("rank {rank}: {e:?}"))?);
    }
    let mut now = Instant::from_micros(0);
    for (rank, w) in workers.iter_mut().enumerate() {
        let x: Vec<f32> = (0..1000)
            .map(|i| (i as f32 + 0.25) * (rank as f32 + 1.0))
            .collect();
        w.submit(now, x, Op::Sum)
            .map_err(|e| format!("submit: {}", e.kind))?;
    }

    let mut results: Vec<Option<Vec<f32>>> = vec![None; usize::from(WORLD)];
    let (mut datagram, mut answer) = ([0u8; 2048], [0u8; 2048]);
    let mut exchanged = 0u64;
    for _ in 0..100_000 {
        // Carry every datagram the workers have to the switch, and its answers back at
        // once: a multicast to every rank, a unicast to the sender.
        let mut moved = true;
        while moved {
            moved = false;
            for from in 0..workers.len() {
                while let Some(len) = workers[from].poll_transmit(now, &mut datagram) {
                    moved = true;
                    exchanged += 1;
                    let (to, len) = match switch.process(&datagram[..len], &mut answer) {
                        Verdict::Multicast { len, .. } => (0..workers.len(), len),
                        Verdict::Unicast { len, .. } => (from..from + 1, len),
                        Verdict::Consumed | Verdict::Drop(_) | Verdict::Up { .. } => continue,
                    };
                    for w in &mut workers[to] {
                        w.handle_packet(now, &answer[..len]);
                    }
                }
            }
        }
        // What the workers have to say: joins, finished tensors, failures.
        for (rank, w) in workers.iter_mut().enumerate() {
            while let Some(event) = w.poll_event() {
                match event {
                    Event::Joined { epoch } => println!("rank {rank}: joined (epoch {epoch:#x})"),
                    Event::Done { buf, result, .. } => {
                        result.map_err(|e| format!("rank {rank}: {e:?}"))?;
                        results[rank] = Some(buf);
                    }
                    Event::Failed(e) => return Err(format!("rank {rank}: {e}").into()),
                    // Only a sharded switch moves lanes; this one is a single shard.
                    Event::Redirected { shard, .. } => {
                        return Err(format!("rank {rank}: moved to shard {shard}").into())
                    }
                }
            }
        }
        if results.iter().all(Option::is_some) {
            break;
        }
        // Nothing left to carry: time jumps to the earliest timer.
        let next = workers.iter().filter_map(|w| w.poll_timeout()).min();
        now = next.unwrap_or(now + Duration::from_millis(1)).max(now);
        for w in &mut workers {
            if w.poll_timeout().is_some_and(|t| t <= now) {
                w.handle_timeout(now);
            }
        }
    }

    let results: Vec<Vec<f32>> = results
        .into_iter()
        .map(|r| r.ok_or("unfinished"))
        .collect::<Result<_, _>>()?;
    assert_eq!(results[0], results[1], "every rank gets the same sum");
    for (i, &v) in results[0].iter().enumerate() {
        let exact = (i as f64 + 0.25) * 3.0;
        assert!(
            (f64::from(v) - exact).abs() <= exact * 1e-6,
            "element {i}: {v} vs {exact}"
        );
    }
    println!(
        "2 ranks summed {} floats in {exchanged} datagrams over {} µs of protocol time; the switch received {}",
        results[0].len(),
        now.total_micros(),
        switch.counters().received
    );
    Ok(())
}
