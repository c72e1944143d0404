//! N workers and one reference switch in memory, with no loss: the harness of the tests
//! that look at what an all-reduce gives every rank (`overflow_tests`, `non_finite_tests`).
//!
//! ```text
//!   rank 0 ──▶ ┌──────────────────────────┐
//!     ⋮        │ switch (job 3, 2 slots)  │ ──▶ every rank
//!   rank N−1 ▶ └──────────────────────────┘
//! ```

extern crate std;
use std::vec::Vec;

use super::*;
use crate::switch::{JobConfig, Slot, Switch, Verdict};
use crate::wire::{DataKind, DataPacket, DataRepr};

/// The switch of the tests: chunks of up to 8 values, ranks in one word.
pub(super) type TestSwitch<'a> = Switch<'a, 8, 1, 1>;

/// A lane of 2 slots and chunks of 2 values, rank `rank` of `world`.
pub(super) fn cfg(rank: u16, world: usize) -> Config {
    Config {
        window: 2,
        count: 2,
        ..Config::new(3, rank, world as u16)
    }
}

/// The job's switch, on `pool`, and a worker for each of `N` ranks.
pub(super) fn setup<B: Tensor, const N: usize>(
    pool: &mut [Slot<8, 1>; 2],
) -> ([Worker<B, 2, 2>; N], TestSwitch<'_>) {
    setup_with(pool, NonFinitePolicy::Propagate)
}

/// [`setup`] with workers of the `non_finite` policy.
pub(super) fn setup_with<B: Tensor, const N: usize>(
    pool: &mut [Slot<8, 1>; 2],
    non_finite: NonFinitePolicy,
) -> ([Worker<B, 2, 2>; N], TestSwitch<'_>) {
    let mut s = Switch::new(pool, 1);
    s.add_job(JobConfig {
        id: 3,
        world: N as u16,
        slot_lo: 0,
        slot_count: 2,
        key: 0,
    })
    .unwrap();
    let config = |r: usize| Config {
        non_finite,
        ..cfg(r as u16, N)
    };
    let workers = core::array::from_fn(|r| Worker::new(config(r)).unwrap());
    (workers, s)
}

/// What one all-reduce gave: each rank's outcome and buffer, and every Contribution that
/// carried values.
pub(super) struct Outcome<B, const N: usize> {
    pub(super) results: [Option<Result<(), TensorError>>; N],
    pub(super) bufs: [Option<B>; N],
    pub(super) sent: Vec<(DataRepr, Vec<u8>)>,
}

/// Submit `inputs` (rank `i`'s at worker `i`) and run every worker through the switch
/// until each hands its tensor back.
pub(super) fn all_reduce<B: Tensor, const N: usize>(
    (w, s): (&mut [Worker<B, 2, 2>; N], &mut TestSwitch<'_>),
    inputs: [B; N],
    op: Op,
) -> Outcome<B, N> {
    for (w, t) in w.iter_mut().zip(inputs) {
        assert!(w.submit(Instant::ZERO, t, op).is_ok());
    }
    let (mut buf, mut out) = ([0u8; 64], [0u8; 512]);
    let mut o = Outcome {
        results: [const { None }; N],
        bufs: core::array::from_fn(|_| None),
        sent: Vec::new(),
    };
    for t in 0..1000 {
        let now = Instant::from_millis(t);
        for i in 0..N {
            if w[i].poll_timeout().is_some_and(|d| d <= now) {
                w[i].handle_timeout(now);
            }
            while let Some(len) = w[i].poll_transmit(now, &mut buf) {
                let packet = DataPacket::new_unchecked(&buf[..len]);
                if let Ok(r) = DataRepr::parse(&packet) {
                    if r.kind == DataKind::Contribution && r.count > 0 {
                        o.sent.push((r, buf[24..len].to_vec()));
                    }
                }
                match s.process(&buf[..len], &mut out) {
                    Verdict::Multicast { len, .. } => {
                        w.iter_mut().for_each(|w| w.handle_packet(now, &out[..len]))
                    }
                    Verdict::Unicast { rank, len, .. } => {
                        w[usize::from(rank)].handle_packet(now, &out[..len])
                    }
                    _ => {}
                }
            }
            while let Some(e) = w[i].poll_event() {
                if let Event::Done { result, buf, .. } = e {
                    o.results[i] = Some(result);
                    o.bufs[i] = Some(buf);
                }
            }
        }
        if o.results.iter().all(Option::is_some) {
            break;
        }
    }
    o
}
