//! A float sum beyond the element type's range is an overflow, reported like int32's, not
//! an infinity handed back as a result (protocol.md §5.2):
//!
//! ```text
//!   worker (rank 0 of 2) ──▶ switch (job 3, 2 slots) ◀── worker (rank 1 of 2)
//! ```

use super::*;
use crate::switch::{JobConfig, Slot, Switch, Verdict};

type FloatWorker<'a> = Worker<&'a mut [f32], 2, 2>;

/// Run both workers through the switch until each hands its tensor back.
fn all_reduce(w: &mut [FloatWorker<'_>; 2]) -> [Option<Result<(), TensorError>>; 2] {
    let mut pool = [Slot::<8, 1>::IDLE; 2];
    let mut s: Switch<'_, 8, 1, 1> = Switch::new(&mut pool, 1);
    s.add_job(JobConfig {
        id: 3,
        world: 2,
        slot_lo: 0,
        slot_count: 2,
        key: 0,
    })
    .unwrap();
    let (mut buf, mut out) = ([0u8; 64], [0u8; 512]);
    let mut results = [None, None];
    for t in 0..1000 {
        let now = Instant::from_millis(t);
        for i in 0..2 {
            if w[i].poll_timeout().is_some_and(|d| d <= now) {
                w[i].handle_timeout(now);
            }
            while let Some(len) = w[i].poll_transmit(now, &mut buf) {
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
                if let Event::Done { result, .. } = e {
                    results[i] = Some(result);
                }
            }
        }
        if results.iter().all(Option::is_some) {
            break;
        }
    }
    results
}

#[test]
fn a_float_sum_beyond_f32_is_an_overflow_naming_its_first_element() {
    let cfg = |rank| Config {
        window: 2,
        count: 2,
        ..Config::new(3, rank, 2)
    };
    let input = [1.0f32, 2.0, 0.5, 3e38, -3e38, 0.25, 3e38, 1.0];
    let (mut a, mut b) = (input, input);
    b[6] = -1.0;
    let mut w = [
        FloatWorker::new(cfg(0)).unwrap(),
        FloatWorker::new(cfg(1)).unwrap(),
    ];
    w[0].submit(Instant::ZERO, &mut a[..], Op::Sum).unwrap();
    w[1].submit(Instant::ZERO, &mut b[..], Op::Sum).unwrap();
    let overflow = Err(TensorError::Overflow {
        index: 3,
        element: crate::quant::ElementType::F32,
    });
    assert_eq!(all_reduce(&mut w), [Some(overflow), Some(overflow)]);
    assert!(w.iter().all(|w| w.failure().is_none() && w.is_idle()));
    for y in [a, b] {
        assert_eq!(y[3..5], [f32::INFINITY, f32::NEG_INFINITY]);
        assert_eq!(y[..2], [2.0, 4.0]);
        assert!(y[2].is_finite() && y[5].is_finite());
        assert!((y[6] - 3e38).abs() < 1e32, "{}", y[6]);
    }
}
