//! Non-finite inputs travel flagged, and every rank writes the same non-finite values over
//! the flagged chunks (protocol.md §5.4), as Gloo hands an Inf on one rank to every rank:
//!
//! ```text
//!   rank 0 ──▶ ┌────────────────────┐ ◀── rank 2
//!              │ switch (job 3,     │
//!   rank 1 ──▶ │ 2 slots, 3 ranks)  │
//!              └────────────────────┘
//! ```

extern crate std;
use std::vec::Vec;

use half::{bf16, f16};

use super::one_switch_tests::{self, all_reduce, Outcome, TestSwitch};
use super::*;
use crate::quant::Elements;
use crate::switch::Slot;
use crate::wire::Flags;

const WORLD: usize = 3;

/// The switch and a worker for each rank, with tensors of type `B`.
fn setup<B: Tensor>(pool: &mut [Slot<8, 1>; 2]) -> ([Worker<B, 2, 2>; WORLD], TestSwitch<'_>) {
    one_switch_tests::setup(pool)
}

const OK: Option<Result<(), TensorError>> = Some(Ok(()));

/// The buffers of a run in which every rank succeeded.
fn done<B>(o: Outcome<B, WORLD>) -> [B; WORLD] {
    assert_eq!(o.results, [OK; WORLD]);
    o.bufs.map(|b| b.unwrap())
}

/// Chunks of 2: chunk 0 has +∞ at rank 0; chunk 1 is finite; chunk 2 −∞ at rank 1; chunk
/// 3 a NaN at rank 2; chunk 4 +∞ at rank 0 and −∞ at rank 1 (IEEE: NaN); chunk 5 +∞ at
/// two ranks and finite values elsewhere.
#[test]
fn every_rank_writes_the_ieee_value_over_each_flagged_chunk_and_the_rest_is_exact() {
    let inf = f32::INFINITY;
    let mut x = [[
        1.0f32, 2.0, 0.5, -1.5, 3.0, 4.0, 1.0, 1.0, 2.0, 2.0, 1.0, 8.0,
    ]; WORLD];
    x[0][1] = inf;
    x[1][4] = -inf;
    x[2][7] = f32::NAN;
    (x[0][8], x[1][9]) = (inf, -inf);
    (x[0][10], x[2][11]) = (inf, inf);
    let mut pool = [Slot::IDLE; 2];
    let (mut w, mut s) = setup::<[f32; 12]>(&mut pool);
    let o = all_reduce((&mut w, &mut s), x, Op::Sum);
    let sent = o.sent.clone();
    let nan = f32::NAN.to_bits();
    let want = [
        inf.to_bits(),
        inf.to_bits(),
        1.5f32.to_bits(),
        (-4.5f32).to_bits(),
        (-inf).to_bits(),
        (-inf).to_bits(),
        nan,
        nan,
        nan,
        nan,
        inf.to_bits(),
        inf.to_bits(),
    ];
    for y in done(o) {
        assert_eq!(y.map(f32::to_bits), want, "{y:?}");
    }
    // What went on the wire: each rank flagged exactly its own kinds, the bad value as 0.
    let flags_of = |rank: u16, chunk: u16| {
        sent.iter()
            // Chunk j rides slot j mod 2, after that slot's priming use (seq 0).
            .filter(|(r, _)| {
                r.rank == rank && r.slot == chunk % 2 && r.seq == 1 + u32::from(chunk / 2)
            })
            .map(|(r, v)| (r.flags.and(Flags::NON_FINITE), v.clone()))
            .next()
            .unwrap()
    };
    assert_eq!(flags_of(0, 0).0, Flags::POS_INF);
    assert_eq!(flags_of(0, 0).1[4..8], [0; 4]);
    assert_eq!(flags_of(1, 0).0, Flags::default());
    assert_eq!(flags_of(1, 2).0, Flags::NEG_INF);
    assert_eq!(flags_of(2, 3).0, Flags::NAN);
    assert_eq!(flags_of(0, 4).0, Flags::POS_INF);
    assert_eq!(flags_of(1, 4).0, Flags::NEG_INF);
}

#[test]
fn an_inf_leaves_the_block_exponent_and_its_neighbours_alone() {
    // Rank 0's chunk 0 is [3.0, +∞]: its exponent must be that of 3.0, so that the 3.0
    // keeps its precision on the wire (an Inf taken as the block's maximum would scale it
    // to 0) — and the next tensor, all finite, sums exactly.
    let finite = [[3.0f32, 1.0], [0.25, 0.5], [0.125, 0.75]];
    let mut x = finite;
    x[0][1] = f32::INFINITY;
    let mut pool = [Slot::IDLE; 2];
    let (mut w, mut s) = setup::<[f32; 2]>(&mut pool);
    let o = all_reduce((&mut w, &mut s), x, Op::Sum);
    let (r, values) = o.sent.iter().find(|(r, _)| r.rank == 0).unwrap().clone();
    assert_eq!(r.flags, Flags::POS_INF);
    // The switch's maximum exponent is 3.0's (e = 2): 3.0 quantizes to 3 · 2^(31−2−2).
    let q = i32::from_be_bytes(values[..4].try_into().unwrap());
    assert_eq!(q, 3 << 27);
    assert!(done(o).iter().all(|y| *y == [f32::INFINITY; 2]));
    let y = done(all_reduce((&mut w, &mut s), finite, Op::Sum));
    assert!(y.iter().all(|y| *y == [3.375, 2.25]), "{y:?}");
}

#[test]
fn half_types_carry_their_own_infinities_and_nan() {
    let mut h = [[f16::ONE; 4]; WORLD];
    h[1][0] = f16::NEG_INFINITY;
    h[2][3] = f16::NAN;
    let mut pool = [Slot::IDLE; 2];
    let (mut w, mut s) = setup::<[f16; 4]>(&mut pool);
    for y in done(all_reduce((&mut w, &mut s), h, Op::Average)) {
        let bits = y.map(f16::to_bits);
        assert_eq!(bits, [0xfc00, 0xfc00, 0x7e00, 0x7e00], "{y:?}");
    }
    let mut b16 = [[bf16::ONE; 2]; WORLD];
    b16[2][1] = bf16::INFINITY;
    let mut pool = [Slot::IDLE; 2];
    let (mut w, mut s) = setup::<[bf16; 2]>(&mut pool);
    let y = done(all_reduce((&mut w, &mut s), b16, Op::Sum));
    assert!(y.iter().all(|y| *y == [bf16::INFINITY; 2]), "{y:?}");
}

#[test]
fn an_int32_tensor_ignores_non_finite_flags() {
    // No worker flags an int32 chunk; a Result that says otherwise (a peer's bug) leaves
    // the exact integer sum in place.
    let mut t = [5i32, -7];
    let mut e = Elements::I32(&mut t[..]);
    e.fill_non_finite(
        0..2,
        crate::quant::NonFiniteKinds {
            nan: true,
            ..Default::default()
        },
    );
    assert_eq!(t, [5, -7]);
}

/// GradScaler's step, in Rust terms: unscale, look for a non-finite gradient, and skip the
/// step and halve the scale on every rank alike, or step and keep it.
#[test]
fn a_gradscaler_skips_the_same_step_on_every_rank() {
    struct Scaler {
        scale: f32,
        steps: u32,
    }
    impl Scaler {
        fn update(&mut self, grads: &[f32]) {
            let found_inf = grads.iter().any(|g| !(g / self.scale).is_finite());
            if found_inf {
                self.scale *= 0.5;
            } else {
                self.steps += 1;
            }
        }
    }
    let mut scalers: Vec<Scaler> = (0..WORLD)
        .map(|_| Scaler {
            scale: 65536.0,
            steps: 0,
        })
        .collect();
    let mut pool = [Slot::IDLE; 2];
    let (mut w, mut s) = setup::<[f32; 6]>(&mut pool);
    for step in 0..3 {
        let mut g = [[0.5f32; 6]; WORLD];
        if step == 1 {
            g[2][5] = f32::INFINITY; // one rank's fp16 gradient overflowed
        }
        let g = done(all_reduce((&mut w, &mut s), g, Op::Average));
        for (s, g) in scalers.iter_mut().zip(&g) {
            s.update(g);
        }
    }
    for s in &scalers {
        assert_eq!((s.steps, s.scale), (2, 32768.0));
    }
}
