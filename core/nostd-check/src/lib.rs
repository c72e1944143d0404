//! Proof that `switchml-core` is `no_std` for real: this crate is built for
//! `thumbv7em-none-eabihf` (a Cortex-M4F, no `std` available) by the test command, with and
//! without the `defmt` feature. A host build with `--no-default-features` would not prove
//! it: a dependency could pull in `std` silently, and only a bare-metal target refuses it.
//!
//! The functions instantiate the generic switch and worker with firmware-sized parameters
//! so that all of their code is compiled for the target, not just type-checked.
#![no_std]
#![forbid(unsafe_code)]

use switchml_core::p4app::{
    P4appConfig, P4appSlot, P4appSwitch, P4appTensor, P4appVerdict, P4appWorker,
};
use switchml_core::quant::Op;
use switchml_core::switch::{Endpoint, JobConfig, Route, Slot, Switch, Verdict};
use switchml_core::time::{Duration, Instant};
use switchml_core::worker::{Config, Event, Worker};

/// A firmware-sized switch: 64 values per slot, 64 ranks, 2 jobs.
pub type FirmwareSwitch<'a> = Switch<'a, 64, 1, 2>;

/// Aggregate one datagram on a switch over `pool`.
pub fn aggregate(pool: &mut [Slot<64, 1>], packet: &[u8], out: &mut [u8]) -> Verdict {
    let mut switch = FirmwareSwitch::new(pool, 1);
    let job = JobConfig {
        id: 1,
        world: 4,
        slot_lo: 0,
        slot_count: 8,
        key: 0,
    };
    if switch.add_job(job).is_err() {
        return Verdict::Consumed;
    }
    switch.process(packet, out)
}

/// Serve one datagram from `from` through the endpoint (generic over its switch) over a
/// firmware switch; return how many destinations the answer has.
pub fn serve(pool: &mut [Slot<64, 1>], from: u32, packet: &[u8], out: &mut [u8]) -> usize {
    let switch = FirmwareSwitch::new(pool, 1);
    let mut endpoint: Endpoint<u32, [Route<u32>; 8], FirmwareSwitch<'_>, 2> =
        Endpoint::new(switch, Duration::from_secs(60));
    let job = JobConfig {
        id: 1,
        world: 4,
        slot_lo: 0,
        slot_count: 8,
        key: 0,
    };
    if endpoint.add_job(job, [None; 8]).is_err() {
        return 0;
    }
    let now = Instant::from_millis(1);
    let t = endpoint.handle(now, from, packet, out);
    let sent = endpoint.destinations(&t, &from).count();
    endpoint.handle_timeout(now);
    sent + usize::from(endpoint.shutdown(out).is_some())
}

/// Run one worker through a submit, a packet, a timeout and its polls.
pub fn drive_worker(tensor: &mut [f32], packet: &[u8], tx: &mut [u8]) -> usize {
    let config = Config {
        window: 8,
        count: 64,
        ..Config::new(1, 0, 4)
    };
    let Ok(mut worker) = Worker::<&mut [f32], 8, 2>::new(config) else {
        return 0;
    };
    let now = Instant::from_millis(1);
    let _ = worker.submit(now, tensor, Op::Sum);
    worker.handle_packet(now, packet);
    worker.handle_timeout(now);
    let mut sent = 0;
    while let Some(len) = worker.poll_transmit(now, tx) {
        sent += len;
    }
    while let Some(event) = worker.poll_event() {
        if let Event::Failed(_) = event {
            break;
        }
    }
    sent + worker
        .poll_timeout()
        .map_or(0, |t| t.total_micros() as usize)
}

/// The p4app dialect's switch (issue 28), firmware-sized: 32 ranks, 64 values a slot.
pub fn aggregate_p4app(slots: &mut [P4appSlot<1, 64>], packet: &[u8], out: &mut [u8]) -> bool {
    let mut switch = P4appSwitch::new(slots);
    if switch.reset(4).is_err() {
        return false;
    }
    !matches!(switch.process(0, packet, out), P4appVerdict::Drop(_))
}

/// The p4app dialect's worker through a submit, a packet, a timeout and its polls.
pub fn drive_p4app_worker(tensor: &mut [f32], packet: &[u8], tx: &mut [u8]) -> usize {
    let Ok(mut worker) = P4appWorker::<'_, 8>::new(P4appConfig::new(4)) else {
        return 0;
    };
    let now = Instant::from_millis(1);
    if worker.submit(P4appTensor::F32(tensor)).is_err() {
        return 0;
    }
    worker.handle_packet(now, packet);
    worker.handle_timeout(now);
    let mut sent = 0;
    while let Some(len) = worker.poll_transmit(now, tx) {
        sent += len;
    }
    while worker.poll_event().is_some() {}
    sent
}
