//! The quantization check: block floating point (protocol.md §5) on arbitrary floats.
//!
//! Invariants:
//!
//! - **non-finite input is always reported**: `check_finite_{f32,f16,bf16}` fail exactly
//!   when a NaN or ±∞ is present, naming the first one — the worker relies on this to refuse
//!   a tensor before anything is sent (§5.2), since one NaN would poison the job-wide sum;
//! - **exponents are right** (§5.1): for a finite block, the byte is 0 iff the block is all
//!   zeros, else `max|x| < 2^e` and `e` is the smallest such (clamped at −126); f16 and bf16
//!   blocks give the byte of their exact f32 values;
//! - **the fused scan is the two scans**: `finite_block_exponents_{f32,f16,bf16}` fail with
//!   the error of `check_finite_*` on the whole tensor, and otherwise write each chunk's
//!   `block_exponent_*` byte; on a failure exactly the chunks before the culprit's are
//!   written ([`check_fused_scan`]);
//! - **the sum cannot overflow**: with the job-wide maximum exponent, every `|q| ≤ L` and
//!   the `n`-way sum fits in int32, for `n` up to 1,024;
//! - **the error bound holds** whenever the input is finite: each element of the summed
//!   (or averaged) result is within `n` quantization units of the exact result, plus the
//!   final rounding to f32 (the tolerance of `core/src/quant/aggregate_tests.rs`); a result
//!   beyond the f32 range may only be ±∞ when the exact result is within the bound of it;
//! - **the fast paths are the reference**: the slice quantizers and dequantizers give the
//!   bits of `quantize_value` / `dequantize_value` for every input, NaN and ∞ included,
//!   and any exponent byte (not only the right one);
//! - **an overflow is never silent**: the slice dequantizers name the first value that
//!   came out ±∞ in their output type, and only when there is one (the worker reports it
//!   as the tensor's overflow, §5.2).

use half::{bf16, f16};
use switchml_core::quant::{
    block_exponent_bf16, block_exponent_f16, block_exponent_f32, check_finite_bf16,
    check_finite_f16, check_finite_f32, exponent_value, finite_block_exponents_bf16,
    finite_block_exponents_f16, finite_block_exponents_f32, NonFinite, Op, Scale, Unscale,
};

use crate::checks::input::Input;

/// `p = max(1, ⌈log₂ n⌉)` (protocol.md §5.2).
fn sum_bits(n: u16) -> i32 {
    f64::from(n).log2().ceil().max(1.0) as i32
}

/// The element type of one case.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// IEEE binary32.
    F32,
    /// IEEE binary16.
    F16,
    /// bfloat16.
    Bf16,
}

/// Decode one case from fuzz bytes and check it.
///
/// Layout: world byte(s), element type, op, block length, number of distinct blocks (the
/// `n` workers send them in turn), the blocks' raw bits, then an exponent byte and int32
/// sums for the raw fast-path comparison.
pub fn check_quant(bytes: &[u8]) {
    let mut input = Input::new(bytes);
    let b = input.u8();
    let world = if b & 0x80 != 0 {
        1 + input.u16() % 1024
    } else {
        1 + u16::from(b % 8)
    };
    let kind = match input.u8() % 3 {
        0 => Kind::F32,
        1 => Kind::F16,
        _ => Kind::Bf16,
    };
    let op = if input.bool() { Op::Average } else { Op::Sum };
    let len = input.below(17);
    let distinct = 1 + input.below(4);
    let blocks: Vec<Vec<f32>> = (0..distinct)
        .map(|_| match kind {
            Kind::F32 => (0..len).map(|_| f32::from_bits(input.u32())).collect(),
            Kind::F16 => (0..len)
                .map(|_| f16::from_bits(input.u16()).to_f32())
                .collect(),
            Kind::Bf16 => (0..len)
                .map(|_| bf16::from_bits(input.u16()).to_f32())
                .collect(),
        })
        .collect();
    let exp = input.u8();
    for block in &blocks {
        check_finite_reports(block, kind);
        check_fast_paths(block, kind, world, exp);
    }
    let tensor: Vec<f32> = blocks.concat();
    check_fused_scan(&tensor, kind, 1 + usize::from(exp % 8));
    let sums: Vec<i32> = (0..len).map(|_| input.i32()).collect();
    check_dequantize_paths(&sums, world, input.u8(), op);
    if blocks.iter().flatten().all(|x| x.is_finite()) {
        check_pipeline(&blocks, kind, world, op);
    }
}

/// `check_finite_*` fail iff a non-finite value is present, naming the first.
fn check_finite_reports(block: &[f32], kind: Kind) {
    let want = block
        .iter()
        .position(|x| !x.is_finite())
        .map(|index| NonFinite { index });
    let got = match kind {
        Kind::F32 => check_finite_f32(block),
        Kind::F16 => check_finite_f16(&to_f16(block)),
        Kind::Bf16 => check_finite_bf16(&to_bf16(block)),
    };
    assert_eq!(got.err(), want, "check_finite on {kind:?} {block:?}");
}

/// The fused scan of `tensor` (in element type `kind`, where values beyond the type's range
/// become ±∞) in chunks of `count` is the two scans it
/// replaces: the error of `check_finite_*` on the whole tensor, else the `block_exponent_*`
/// byte of every chunk, and on an error the bytes of exactly the chunks before the
/// culprit's. Bytes past the chunks are never written.
pub fn check_fused_scan(tensor: &[f32], kind: Kind, count: usize) {
    let chunks = tensor.len().div_ceil(count.max(1));
    let mut got = vec![0xa5u8; chunks + 1];
    let (result, want_err, want): (_, _, Vec<u8>) = match kind {
        Kind::F32 => (
            finite_block_exponents_f32(tensor, count, &mut got),
            check_finite_f32(tensor),
            tensor
                .chunks(count.max(1))
                .map(block_exponent_f32)
                .collect(),
        ),
        Kind::F16 => {
            let t = to_f16(tensor);
            (
                finite_block_exponents_f16(&t, count, &mut got),
                check_finite_f16(&t),
                t.chunks(count.max(1)).map(block_exponent_f16).collect(),
            )
        }
        Kind::Bf16 => {
            let t = to_bf16(tensor);
            (
                finite_block_exponents_bf16(&t, count, &mut got),
                check_finite_bf16(&t),
                t.chunks(count.max(1)).map(block_exponent_bf16).collect(),
            )
        }
    };
    let case = format!("{kind:?}, count {count}, {} elements", tensor.len());
    assert_eq!(result, want_err, "{case}");
    let written = match result {
        Ok(()) => chunks,
        Err(NonFinite { index }) => index / count.max(1),
    };
    assert_eq!(got[..written], want[..written], "{case}");
    assert!(
        got[written..].iter().all(|&b| b == 0xa5),
        "{case}: bytes past chunk {written} written: {got:?}"
    );
}

/// The exponent byte of the block in its own element type.
fn block_exponent(block: &[f32], kind: Kind) -> u8 {
    match kind {
        Kind::F32 => block_exponent_f32(block),
        Kind::F16 => block_exponent_f16(&to_f16(block)),
        Kind::Bf16 => block_exponent_bf16(&to_bf16(block)),
    }
}

fn to_f16(block: &[f32]) -> Vec<f16> {
    block.iter().map(|&x| f16::from_f32(x)).collect()
}

fn to_bf16(block: &[f32]) -> Vec<bf16> {
    block.iter().map(|&x| bf16::from_f32(x)).collect()
}

/// The slice quantizer of `kind` on `block`, as int32.
fn quantize(scale: &Scale, block: &[f32], kind: Kind) -> Vec<i32> {
    let mut payload = vec![0u8; 4 * block.len()];
    match kind {
        Kind::F32 => scale.quantize_f32(block, &mut payload),
        Kind::F16 => scale.quantize_f16(&to_f16(block), &mut payload),
        Kind::Bf16 => scale.quantize_bf16(&to_bf16(block), &mut payload),
    };
    payload
        .chunks_exact(4)
        .map(|b| i32::from_be_bytes([b[0], b[1], b[2], b[3]]))
        .collect()
}

/// Slice quantizers equal `quantize_value` and stay within ±L, for any values and exponent.
fn check_fast_paths(block: &[f32], kind: Kind, world: u16, exp: u8) {
    let scale = Scale::new(world, exp);
    let limit = scale.limit();
    // No exponent (an all-zero block everywhere): every q is 0, so the limit is 0 too.
    let want = if exp == 0 {
        0
    } else {
        (1 << (31 - sum_bits(world))) - 1
    };
    assert_eq!(limit, want, "L for n = {world}, exp {exp}");
    for (&x, q) in block.iter().zip(quantize(&scale, block, kind)) {
        assert_eq!(
            q,
            scale.quantize_value(x),
            "slice vs scalar: x = {x:e}, exp {exp}"
        );
        assert!(
            q.abs() <= limit,
            "|q| = |{q}| > L = {limit} for x = {x:e}, exp {exp}"
        );
    }
}

/// Slice dequantizers equal `dequantize_value` (rounded to f16/bf16), for any sums.
fn check_dequantize_paths(sums: &[i32], world: u16, exp: u8, op: Op) {
    let unscale = Unscale::new(world, exp, op);
    let payload: Vec<u8> = sums.iter().flat_map(|s| s.to_be_bytes()).collect();
    let mut y = vec![f32::NAN; sums.len()];
    let mut h = vec![f16::NAN; sums.len()];
    let mut b = vec![bf16::NAN; sums.len()];
    let overflow = [
        unscale.dequantize_f32(&payload, &mut y),
        unscale.dequantize_f16(&payload, &mut h),
        unscale.dequantize_bf16(&payload, &mut b),
    ];
    let first_infinite = [
        y.iter().position(|v| v.is_infinite()),
        h.iter().position(|v| v.is_infinite()),
        b.iter().position(|v| v.is_infinite()),
    ];
    assert_eq!(
        overflow, first_infinite,
        "overflow reports (f32, f16, bf16)"
    );
    for (i, &s) in sums.iter().enumerate() {
        let want = unscale.dequantize_value(s);
        assert_eq!(
            y[i].to_bits(),
            want.to_bits(),
            "f32 slice vs scalar, S = {s}"
        );
        let (wh, wb) = (f16::from_f32(want), bf16::from_f32(want));
        assert_eq!(h[i].to_bits(), wh.to_bits(), "f16 slice vs scalar, S = {s}");
        assert_eq!(
            b[i].to_bits(),
            wb.to_bits(),
            "bf16 slice vs scalar, S = {s}"
        );
    }
}

/// The whole §5 pipeline for `world` workers sending `blocks` in turn: exponents, the
/// switch's maximum, quantization, the int32 sum, dequantization, the error bound.
fn check_pipeline(blocks: &[Vec<f32>], kind: Kind, world: u16, op: Op) {
    let n = usize::from(world);
    let len = blocks[0].len();
    for block in blocks {
        check_exponent(block, block_exponent(block, kind));
    }
    let exp_max = blocks
        .iter()
        .map(|b| block_exponent(b, kind))
        .max()
        .unwrap_or(0);
    let scale = Scale::new(world, exp_max);
    let quantized: Vec<Vec<i32>> = blocks.iter().map(|b| quantize(&scale, b, kind)).collect();
    let mut sums = vec![0i32; len];
    for (i, s) in sums.iter_mut().enumerate() {
        let total: i64 = (0..n)
            .map(|w| i64::from(quantized[w % blocks.len()][i]))
            .sum();
        *s = i32::try_from(total)
            .unwrap_or_else(|_| panic!("element {i}: the {n}-way sum {total} overflows int32"));
    }
    let payload: Vec<u8> = sums.iter().flat_map(|s| s.to_be_bytes()).collect();
    let mut y = vec![f32::NAN; len];
    Unscale::new(world, exp_max, op).dequantize_f32(&payload, &mut y);
    let Some(e) = exponent_value(exp_max) else {
        assert!(y.iter().all(|v| v.to_bits() == 0), "all-zero input: {y:?}");
        return;
    };
    let divisor = match op {
        Op::Sum => 1.0,
        Op::Average => n as f64,
    };
    // n units of 2^(e + p − 31), and the rounding to f32: 2⁻²⁴ relative, three times that
    // for an average over a world that is not a power of two.
    let units = n as f64 * 2f64.powi(e + sum_bits(world) - 31) / divisor;
    let rho = match op {
        Op::Average if !n.is_power_of_two() => 3.0 * 2f64.powi(-24),
        _ => 2f64.powi(-24),
    };
    for (i, &got) in y.iter().enumerate() {
        let exact: f64 = (0..n)
            .map(|w| f64::from(blocks[w % blocks.len()][i]))
            .sum::<f64>()
            / divisor;
        let tol = (units + rho * (exact.abs() + units)) * (1.0 + 2f64.powi(-20)) + 2f64.powi(-149);
        let what = || {
            format!("element {i} of {kind:?} {op:?}, n = {n}, e = {e}: got {got:e}, exact {exact:e}, bound {tol:e}")
        };
        if got.is_infinite() {
            let reachable = exact.abs() + tol >= f64::from(f32::MAX);
            assert!(reachable && (got > 0.0) == (exact > 0.0), "{}", what());
        } else {
            assert!((f64::from(got) - exact).abs() <= tol, "{}", what());
        }
    }
}

/// §5.1: 0 iff all zero, else the smallest `e ≥ −126` with `max|x| < 2^e`.
fn check_exponent(block: &[f32], b: u8) {
    let max = block.iter().map(|x| f64::from(x.abs())).fold(0.0, f64::max);
    match exponent_value(b) {
        None => assert!(max == 0.0, "exponent byte 0 for max |x| = {max:e}"),
        Some(e) => {
            assert!(max > 0.0, "exponent byte {b} for an all-zero block");
            assert!(max < 2f64.powi(e), "max |x| = {max:e} ≥ 2^{e}");
            assert!(
                e == -126 || max >= 2f64.powi(e - 1),
                "2^{e} is not the smallest"
            );
        }
    }
}
