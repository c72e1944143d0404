//! Deterministic inputs and their verification.
//!
//! Rank `r`'s element `i` is a pure function of `(seed, r, i)`, so any process — the demo,
//! a `switchml worker` on another host — can recompute every rank's input and check its
//! result against the exact sum in f64 without anyone shipping tensors around. The
//! formulas are spelled out in `switchml worker --help` ([`DATA_HELP`]), so a program
//! outside can do the same.

use half::{bf16, f16};

/// How the inputs are made, for `--help`: enough to compute the expected result elsewhere.
pub const DATA_HELP: &str = "\
Data: rank r's element i (i = 0..elements) comes from the 64-bit word
  u = mix(seed ^ (r << 48) ^ mix(i)),
where mix is SplitMix64's output function on wrapping 64-bit integers:
  z += 0x9E3779B97F4A7C15; z = (z ^ z >> 30) * 0xBF58476D1CE4E5B9;
  z = (z ^ z >> 27) * 0x94D049BB133111EB; return z ^ z >> 31.
  f32:  (u >> 40) / 2^23 - 1   (in [-1, 1), exact in f32)
  f16:  (u >> 53) / 2^10 - 1   (exact in f16)
  bf16: (u >> 56) / 2^7 - 1    (exact in bf16)
  i32:  (u mod (2b + 1)) - b,  b = 2147483647 div WORLD (so the sum fits)
The expected result of element i is the sum over r = 0..WORLD-1 (divided by WORLD with
--average): exact for i32, within docs/protocol.md section 5.2's bound for floats. Every
iteration reduces the same input; --output writes the last result.";

pub use switchml_core::splitmix::mix;

fn draw(seed: u64, rank: u16, i: usize) -> u64 {
    mix(seed ^ (u64::from(rank) << 48) ^ mix(i as u64))
}

/// Rank `rank`'s f32 element `i`: uniform in [-1, 1).
pub fn f32_at(seed: u64, rank: u16, i: usize) -> f32 {
    ((draw(seed, rank, i) >> 40) as f32 / (1u64 << 23) as f32) - 1.0
}

/// Rank `rank`'s f16 element `i`: a multiple of 2⁻¹⁰ in [-1, 1), exact in f16.
pub fn f16_at(seed: u64, rank: u16, i: usize) -> f16 {
    f16::from_f32((draw(seed, rank, i) >> 53) as f32 / 1024.0 - 1.0)
}

/// Rank `rank`'s bf16 element `i`: a multiple of 2⁻⁷ in [-1, 1), exact in bf16.
pub fn bf16_at(seed: u64, rank: u16, i: usize) -> bf16 {
    bf16::from_f32((draw(seed, rank, i) >> 56) as f32 / 128.0 - 1.0)
}

/// Rank `rank`'s i32 element `i`: uniform in ±`i32::MAX / world`, so the sum fits.
pub fn i32_at(seed: u64, rank: u16, world: u16, i: usize) -> i32 {
    let bound = i64::from(i32::MAX / i32::from(world.max(1)));
    ((draw(seed, rank, i) % (2 * bound as u64 + 1)) as i64 - bound) as i32
}

/// Fill rank `rank`'s f32 input.
pub fn f32_input(seed: u64, rank: u16, len: usize) -> Vec<f32> {
    (0..len).map(|i| f32_at(seed, rank, i)).collect()
}

/// Fill rank `rank`'s f16 input.
pub fn f16_input(seed: u64, rank: u16, len: usize) -> Vec<f16> {
    (0..len).map(|i| f16_at(seed, rank, i)).collect()
}

/// Fill rank `rank`'s bf16 input.
pub fn bf16_input(seed: u64, rank: u16, len: usize) -> Vec<bf16> {
    (0..len).map(|i| bf16_at(seed, rank, i)).collect()
}

/// Fill rank `rank`'s i32 input.
pub fn i32_input(seed: u64, rank: u16, world: u16, len: usize) -> Vec<i32> {
    (0..len).map(|i| i32_at(seed, rank, world, i)).collect()
}

/// How a result compares with the exact reference.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Check {
    /// Elements checked.
    pub elements: usize,
    /// The largest absolute error against the f64 sum.
    pub max_error: f64,
    /// The error bound of protocol.md §5.2 for these inputs.
    pub bound: f64,
    /// The first element outside the bound, if any.
    pub first_bad: Option<usize>,
}

impl Check {
    /// Return whether every element is within the bound.
    pub fn ok(&self) -> bool {
        self.first_bad.is_none()
    }
}

/// Check an f32 sum (or average) over `world` ranks against the exact f64 reference. With
/// inputs in [-1, 1), every block exponent is at most 2⁰, so a summed element is within
/// `n² / (2³¹−1)` of the exact sum, plus the rounding to f32.
pub fn check_f32(result: &[f32], seed: u64, world: u16, average: bool) -> Check {
    let exact = |r, i| f64::from(f32_at(seed, r, i));
    let rounding = Rounding {
        unit: 2f64.powi(-24),
        tiny: 2f64.powi(-149),
    };
    check_float(
        result.iter().map(|&y| f64::from(y)),
        exact,
        world,
        average,
        rounding,
    )
}

/// Check an f16 result as [`check_f32`] does, plus the rounding of the f32 result to f16.
pub fn check_f16(result: &[f16], seed: u64, world: u16, average: bool) -> Check {
    let exact = |r, i| f64::from(f16_at(seed, r, i));
    let rounding = Rounding {
        unit: 2f64.powi(-24) + 2f64.powi(-11),
        tiny: 2f64.powi(-25),
    };
    check_float(
        result.iter().map(|&y| f64::from(y)),
        exact,
        world,
        average,
        rounding,
    )
}

/// Check a bf16 result as [`check_f32`] does, plus the rounding of the f32 result to bf16.
pub fn check_bf16(result: &[bf16], seed: u64, world: u16, average: bool) -> Check {
    let exact = |r, i| f64::from(bf16_at(seed, r, i));
    let rounding = Rounding {
        unit: 2f64.powi(-24) + 2f64.powi(-8),
        tiny: 2f64.powi(-134),
    };
    check_float(
        result.iter().map(|&y| f64::from(y)),
        exact,
        world,
        average,
        rounding,
    )
}

/// The rounding of a result to its type: relative `unit`, and `tiny` below the normals.
struct Rounding {
    unit: f64,
    tiny: f64,
}

/// Check float results against the exact f64 sum of `input(rank, i)` over the world.
fn check_float(
    result: impl Iterator<Item = f64>,
    input: impl Fn(u16, usize) -> f64,
    world: u16,
    average: bool,
    rounding: Rounding,
) -> Check {
    let n = f64::from(world);
    // §5.2: n units of 2^(e_max + p − 31), p = max(1, ceil(log2 n)); the inputs lie in
    // (−1, 1), so e_max ≤ 0. An average over n not a power of two rounds three times.
    let p = world.max(2).next_power_of_two().trailing_zeros();
    let quantum = n * 2f64.powi(p as i32 - 31);
    let roundings = if average && !world.is_power_of_two() {
        3.0
    } else {
        1.0
    };
    let mut check = Check::default();
    for (i, y) in result.enumerate() {
        let mut exact: f64 = (0..world).map(|r| input(r, i)).sum();
        let mut bound = quantum + exact.abs() * rounding.unit * roundings + rounding.tiny;
        if average {
            exact /= n;
            bound /= n;
        }
        let err = (y - exact).abs();
        check.elements += 1;
        check.max_error = check.max_error.max(err);
        check.bound = check.bound.max(bound);
        if err > bound && check.first_bad.is_none() {
            check.first_bad = Some(i);
        }
    }
    check
}

/// Check an i32 sum: it must be exact.
pub fn check_i32(result: &[i32], seed: u64, world: u16) -> Check {
    let mut check = Check {
        elements: result.len(),
        ..Check::default()
    };
    for (i, y) in result.iter().enumerate() {
        let exact = (0..world).fold(0i32, |s, r| s.wrapping_add(i32_at(seed, r, world, i)));
        let err = (f64::from(*y) - f64::from(exact)).abs();
        check.max_error = check.max_error.max(err);
        if err != 0.0 && check.first_bad.is_none() {
            check.first_bad = Some(i);
        }
    }
    check
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inputs_are_in_range_and_checks_catch_errors() {
        let x = f32_input(1, 0, 1000);
        assert!(x.iter().all(|v| (-1.0..1.0).contains(v)));
        assert!(x.iter().any(|v| *v < -0.5) && x.iter().any(|v| *v > 0.5));
        let sum: Vec<f32> = (0..1000)
            .map(|i| f32_at(1, 0, i) + f32_at(1, 1, i))
            .collect();
        assert!(check_f32(&sum, 1, 2, false).ok());
        let mut bad = sum.clone();
        bad[7] += 0.01;
        assert_eq!(check_f32(&bad, 1, 2, false).first_bad, Some(7));
        let ints: Vec<i32> = (0..100)
            .map(|i| {
                i32_at(2, 0, 3, i)
                    .wrapping_add(i32_at(2, 1, 3, i))
                    .wrapping_add(i32_at(2, 2, 3, i))
            })
            .collect();
        assert!(check_i32(&ints, 2, 3).ok());
        assert!(!check_i32(&ints, 3, 3).ok());
    }

    #[test]
    fn half_inputs_are_exact_grids_in_range_and_checks_catch_errors() {
        let h = f16_input(4, 1, 2000);
        let b = bf16_input(4, 1, 2000);
        for (x, grid) in [
            (h.iter().map(|v| v.to_f32()).collect::<Vec<_>>(), 1024.0),
            (b.iter().map(|v| v.to_f32()).collect(), 128.0),
        ] {
            assert!(x.iter().all(|v| (-1.0..1.0).contains(v)));
            assert!(x.iter().all(|v| (v * grid).fract() == 0.0));
            assert!(x.iter().any(|v| *v < -0.5) && x.iter().any(|v| *v > 0.5));
        }
        let sum: Vec<f16> = (0..2000)
            .map(|i| f16::from_f32(f16_at(4, 0, i).to_f32() + f16_at(4, 1, i).to_f32()))
            .collect();
        assert!(check_f16(&sum, 4, 2, false).ok());
        let mut bad = sum.clone();
        bad[3] = f16::from_f32(bad[3].to_f32() + 0.125);
        assert_eq!(check_f16(&bad, 4, 2, false).first_bad, Some(3));
        let mean: Vec<bf16> = (0..2000)
            .map(|i| bf16::from_f32((bf16_at(4, 0, i).to_f32() + bf16_at(4, 1, i).to_f32()) / 2.0))
            .collect();
        assert!(check_bf16(&mean, 4, 2, true).ok());
        assert!(!check_bf16(&mean, 4, 2, false).ok());
    }

    /// `--help` describes the inputs: its formula, written out again here, gives them.
    #[test]
    fn the_help_text_formula_makes_the_inputs() {
        assert!(DATA_HELP.contains("0x9E3779B97F4A7C15"));
        let splitmix = |mut z: u64| {
            z = z.wrapping_add(0x9E3779B97F4A7C15);
            z = (z ^ z >> 30).wrapping_mul(0xBF58476D1CE4E5B9);
            z = (z ^ z >> 27).wrapping_mul(0x94D049BB133111EB);
            z ^ z >> 31
        };
        let (seed, world) = (9u64, 3u16);
        for r in 0..world {
            for i in [0usize, 1, 77, 100_000] {
                let u = splitmix(seed ^ (u64::from(r) << 48) ^ splitmix(i as u64));
                assert_eq!(f32_at(seed, r, i), (u >> 40) as f32 / 8_388_608.0 - 1.0);
                assert_eq!(f16_at(seed, r, i).to_f64(), (u >> 53) as f64 / 1024.0 - 1.0);
                assert_eq!(bf16_at(seed, r, i).to_f64(), (u >> 56) as f64 / 128.0 - 1.0);
                let b = (2147483647 / i64::from(world)) as u64;
                let v = (u % (2 * b + 1)) as i64 - b as i64;
                assert_eq!(i64::from(i32_at(seed, r, world, i)), v);
            }
        }
    }
}
