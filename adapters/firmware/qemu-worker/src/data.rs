//! The inputs and their check, by the formulas `switchml worker --help` publishes, so that
//! this rank and the host's `switchml worker` ranks reduce the same data and each can
//! check the sum of all of them on its own:
//!
//! ```text
//! u = mix(seed ^ (r << 48) ^ mix(i))          (mix: SplitMix64's output function)
//! f32:  (u >> 40) / 2^23 - 1
//! i32:  (u mod (2b + 1)) - b,  b = 2147483647 div WORLD
//! ```

use switchml_core::splitmix::mix;

fn draw(seed: u64, rank: u16, i: usize) -> u64 {
    mix(seed ^ (u64::from(rank) << 48) ^ mix(i as u64))
}

/// Rank `rank`'s f32 element `i`: uniform in [-1, 1), exact in f32.
pub fn f32_at(seed: u64, rank: u16, i: usize) -> f32 {
    ((draw(seed, rank, i) >> 40) as f32 / (1u64 << 23) as f32) - 1.0
}

/// Rank `rank`'s i32 element `i`: uniform in ±`i32::MAX / world`, so the sum fits.
pub fn i32_at(seed: u64, rank: u16, world: u16, i: usize) -> i32 {
    let bound = i64::from(i32::MAX / i32::from(world.max(1)));
    ((draw(seed, rank, i) % (2 * bound as u64 + 1)) as i64 - bound) as i32
}

/// The first element that differs from the exact integer sum of every rank's input.
pub fn check_i32(result: &[i32], seed: u64, world: u16) -> Option<usize> {
    result.iter().enumerate().position(|(i, &y)| {
        let exact = (0..world).fold(0i32, |s, r| s.wrapping_add(i32_at(seed, r, world, i)));
        y != exact
    })
}

/// The largest error of an f32 sum, and the first element outside protocol.md §5.2's
/// bound: with inputs in [-1, 1) every block exponent is at most 2⁰, so a sum of `n`
/// values is within `n² / (2³¹−1)` of the exact sum, plus its rounding to f32.
pub fn check_f32(result: &[f32], seed: u64, world: u16) -> (f64, Option<usize>) {
    let n = f64::from(world);
    let quantum = n * n / 2147483647.0;
    let mut max_error = 0.0f64;
    let mut first_bad = None;
    for (i, &y) in result.iter().enumerate() {
        let exact: f64 = (0..world).map(|r| f64::from(f32_at(seed, r, i))).sum();
        let bound = quantum + abs(exact) * f64::from(f32::EPSILON) / 2.0 + 1e-45;
        let err = abs(f64::from(y) - exact);
        if err > max_error {
            max_error = err;
        }
        if err > bound && first_bad.is_none() {
            first_bad = Some(i);
        }
    }
    (max_error, first_bad)
}

/// `f64::abs` lives in std; this is the same for finite values.
fn abs(x: f64) -> f64 {
    if x < 0.0 {
        -x
    } else {
        x
    }
}

/// The POSIX `cksum` of `words` as little-endian bytes (CRC-32, polynomial 0x04C11DB7,
/// the length appended), so that the e2e script can compare this rank's result with the
/// host ranks' `--output` files: every rank must get the same bits.
pub fn cksum(words: impl Iterator<Item = u32>) -> u32 {
    fn feed(crc: u32, byte: u8) -> u32 {
        let mut crc = crc ^ (u32::from(byte) << 24);
        for _ in 0..8 {
            crc = if crc & 0x8000_0000 != 0 {
                (crc << 1) ^ 0x04C1_1DB7
            } else {
                crc << 1
            };
        }
        crc
    }
    let mut len = 0usize;
    let mut crc = words
        .inspect(|_| len += 4)
        .flat_map(u32::to_le_bytes)
        .fold(0, feed);
    while len > 0 {
        crc = feed(crc, len as u8);
        len >>= 8;
    }
    !crc
}
