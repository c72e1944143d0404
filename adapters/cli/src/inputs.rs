//! Deterministic inputs and their verification.
//!
//! Rank `r`'s element `i` is a pure function of `(seed, r, i)`, so any process — the demo,
//! a `switchml worker` on another host — can recompute every rank's input and check its
//! result against the exact sum in f64 without anyone shipping tensors around.

/// SplitMix64's mixer.
pub fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

fn draw(seed: u64, rank: u16, i: usize) -> u64 {
    mix(seed ^ (u64::from(rank) << 48) ^ mix(i as u64))
}

/// Rank `rank`'s f32 element `i`: uniform in [-1, 1).
pub fn f32_at(seed: u64, rank: u16, i: usize) -> f32 {
    ((draw(seed, rank, i) >> 40) as f32 / (1u64 << 23) as f32) - 1.0
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
    let n = f64::from(world);
    let quantum = n * n / 2147483647.0;
    let mut check = Check {
        elements: result.len(),
        ..Check::default()
    };
    for (i, y) in result.iter().enumerate() {
        let mut exact: f64 = (0..world).map(|r| f64::from(f32_at(seed, r, i))).sum();
        let mut bound = quantum + exact.abs() * 2f64.powi(-24) + 2f64.powi(-149);
        if average {
            exact /= n;
            bound /= n;
        }
        let err = (f64::from(*y) - exact).abs();
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
}
