//! Submit one 1 Mi-element f32 tensor to a worker and drive it to completion through the
//! reference switch (world 1, no loss): the whole of a rank's CPU path in one process, for
//! counting instructions (docs/benchmarks.md, "One read of the tensor before sending").
//!
//! `cargo run --release -p switchml-core --example submit_drive -- [plain|cached]`: `plain`
//! submits the slice as it is (the NaN/∞ check at submit, each chunk's exponent scanned as
//! it is sent); `cached` gives it an exponent cache ([`WithExponents`]), so that one pass at
//! submit does both.

use switchml_core::quant::{Op, Tensor, WithExponents};
use switchml_core::switch::{JobConfig, Slot, Switch, Verdict};
use switchml_core::time::Instant;
use switchml_core::worker::{Config, Event, Worker};

/// Elements in the tensor.
const LEN: usize = 1 << 20;
/// Values per chunk.
const COUNT: usize = 256;
/// Slots of the lane.
const WINDOW: usize = 64;

/// Gradient-like values: signs and magnitudes that change from element to element and from
/// chunk to chunk (so chunks have different exponents), and every 97th one zero.
fn gradient(len: usize) -> Vec<f32> {
    (0..len)
        .map(|i| {
            let hash = (i as u32).wrapping_mul(0x9e37_79b9) >> 8;
            let unit = hash as f32 / (1 << 24) as f32 - 0.5;
            let scale = (1u32 << (i / COUNT % 13)) as f32 * 1e-4;
            if i % 97 == 0 {
                0.0
            } else {
                unit * scale
            }
        })
        .collect()
}

/// Join, submit `tensor`, and pass datagrams between the worker and the switch until it is
/// done; return the number of datagrams the worker sent.
#[inline(never)]
fn drive<B: Tensor>(tensor: B) -> u64 {
    let mut pool = vec![Slot::<COUNT, 1>::IDLE; WINDOW];
    let mut switch = Switch::<COUNT, 1, 1>::new(&mut pool, 1);
    let job = JobConfig {
        id: 1,
        world: 1,
        slot_lo: 0,
        slot_count: WINDOW as u16,
        key: 0,
    };
    switch.add_job(job).expect("a valid job");
    let config = Config {
        window: WINDOW as u16,
        count: COUNT as u16,
        ..Config::new(1, 0, 1)
    };
    let mut worker = Worker::<B, WINDOW, 1>::new(config).expect("a valid configuration");
    let now = Instant::ZERO;
    let (mut buf, mut out) = (vec![0u8; config.max_datagram()], vec![0u8; 2048]);
    let mut tensor = Some(tensor);
    loop {
        while let Some(len) = worker.poll_transmit(now, &mut buf) {
            if let Verdict::Multicast { len, .. } | Verdict::Unicast { len, .. } =
                switch.process(&buf[..len], &mut out)
            {
                worker.handle_packet(now, &out[..len]);
            }
        }
        match worker.poll_event() {
            Some(Event::Joined { .. }) => {
                let t = tensor.take().expect("one tensor");
                if worker.submit(now, t, Op::Sum).is_err() {
                    panic!("the tensor is refused");
                }
            }
            Some(Event::Done { result, .. }) => {
                result.expect("no overflow");
                return worker.stats().sent;
            }
            Some(_) => panic!("an unexpected event"),
            None => panic!("stuck: nothing to send and no event"),
        }
    }
}

fn main() {
    let mode = std::env::args().nth(1).unwrap_or_else(|| "cached".into());
    let mut data = gradient(LEN);
    let sent = match mode.as_str() {
        "plain" => drive(&mut data[..]),
        "cached" => drive(WithExponents {
            tensor: &mut data[..],
            exponents: vec![0u8; LEN.div_ceil(COUNT)],
        }),
        _ => panic!("usage: submit_drive [plain|cached]"),
    };
    // World 1: the sum is the tensor itself, quantized and back.
    let checksum: f64 = data.iter().map(|&x| f64::from(x)).sum();
    println!("{mode}: {sent} datagrams, checksum {checksum:.6}");
}
