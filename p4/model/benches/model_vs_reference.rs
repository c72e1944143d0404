//! Packets per second of the P4 model against the reference switch, on the same stream: the
//! ranks' Joins, then Contributions (4 ranks, 64 slots, uses cycling through both versions),
//! in one run.
//!
//! ```text
//! cargo bench -p switchml-p4model --bench model_vs_reference
//! ```

use std::hint::black_box;
use std::time::{Duration, Instant};

use switchml_core::switch::{JobConfig, Verdict};
use switchml_core::wire::{DataKind, DataPacket, DataRepr, Flags, JoinPacket, JoinRepr};
use switchml_p4model::{Pipeline, OUT_LEN};
use switchml_p4model_harness::equivalence::{RefSlot, Reference};

const WORLD: u16 = 4;
const SLOTS: u16 = 64;
const USES: u32 = 8;
const KEY: u64 = 0x005E_C2E7;
/// The run's session: the nonce of rank 0, whose Join opens it.
const SESSION: u32 = 0x0100;

fn job() -> JobConfig {
    JobConfig {
        id: 7,
        world: WORLD,
        slot_lo: 0,
        slot_count: SLOTS,
        key: KEY,
    }
}

/// Every rank's Join, then its contribution to every use of every slot, in arrival order.
fn stream(count: u16) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    for rank in 0..WORLD {
        let repr = JoinRepr {
            job: 7,
            rank,
            world: WORLD,
            slot_lo: 0,
            slot_count: SLOTS,
            count,
            lanes: 1,
            nonce: SESSION + u32::from(rank),
            cookie: 0,
            tag: [0; 16],
        }
        .sign(KEY);
        let mut b = vec![0u8; repr.buffer_len()];
        repr.emit(&mut JoinPacket::new_unchecked(&mut b[..]));
        out.push(b);
    }
    for seq in 0..USES {
        for slot in 0..SLOTS {
            for rank in 0..WORLD {
                let repr = DataRepr {
                    kind: DataKind::Contribution,
                    job: 7,
                    rank,
                    slot,
                    ver: (seq & 1) as u8,
                    flags: Flags::default(),
                    count,
                    seq,
                    exp: 130,
                    session: SESSION,
                };
                let mut b = vec![0u8; repr.buffer_len()];
                let mut p = DataPacket::new_unchecked(&mut b[..]);
                repr.emit(&mut p);
                for (i, v) in p.values_mut().chunks_exact_mut(4).enumerate() {
                    v.copy_from_slice(&((i as i32) * i32::from(rank + 1)).to_be_bytes());
                }
                out.push(b);
            }
        }
    }
    out
}

/// Run the stream once through `switch`; return the time taken and the multicasts seen
/// (a check that uses completed).
fn once<S>(
    switch: &mut S,
    packets: &[Vec<u8>],
    out: &mut [u8],
    process: impl Fn(&mut S, &[u8], &mut [u8]) -> Verdict,
) -> (Duration, u64) {
    let mut multicasts = 0;
    let start = Instant::now();
    for p in packets {
        if let Verdict::Multicast { .. } = process(switch, black_box(p), out) {
            multicasts += 1;
        }
    }
    (start.elapsed(), multicasts)
}

/// Packets per second over repeated fresh runs until `budget` is spent.
fn rate(budget: Duration, packets: usize, mut run: impl FnMut() -> (Duration, u64)) -> f64 {
    let (mut spent, mut done) = (Duration::ZERO, 0u64);
    while spent < budget {
        let (t, multicasts) = run();
        assert_eq!(
            multicasts,
            u64::from(SLOTS) * u64::from(USES) + 1,
            "the last Join completes the run, and every use completes"
        );
        spent += t;
        done += packets as u64;
    }
    done as f64 / spent.as_secs_f64()
}

fn main() {
    let budget = Duration::from_millis(
        std::env::var("BENCH_MS")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(1500),
    );
    println!("model_vs_reference: {WORLD} ranks, {SLOTS} slots, {USES} uses per slot");
    for count in [1u16, 64, 256] {
        let packets = stream(count);
        let mut out = vec![0u8; OUT_LEN];
        let model = rate(budget, packets.len(), || {
            let mut m =
                Pipeline::with_rank_ports(usize::from(SLOTS), &[job()], 1).expect("job fits");
            once(&mut m, &packets, &mut out, |s, p, o| {
                switchml_core::switch::Aggregator::process(s, p, o)
            })
        });
        let mut pool = vec![RefSlot::IDLE; usize::from(SLOTS)];
        let reference = rate(budget, packets.len(), || {
            let mut r = Reference::new(&mut pool, 1);
            r.add_job(job()).expect("job fits");
            once(&mut r, &packets, &mut out, |s, p, o| s.process(p, o))
        });
        println!(
            "count {count:>3}: model {:>10.0} pkt/s, reference {:>10.0} pkt/s, model/reference = {:.3}",
            model,
            reference,
            model / reference
        );
    }
}
