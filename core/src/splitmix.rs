//! SplitMix64 (Steele, Lea and Flood, OOPSLA 2014): a tiny, well-mixed generator and its
//! output function, for the seeded streams of the simulators, the tests, loss injection
//! and the published input formulas (`switchml worker --help`). The core itself draws
//! nothing at random: a stream exists only where a caller seeds one.

/// The generator's increment (the golden ratio in 64 bits).
const GAMMA: u64 = 0x9E37_79B9_7F4A_7C15;

/// Return SplitMix64's output for state `z`: the state advanced once, then mixed.
pub const fn mix(z: u64) -> u64 {
    let mut z = z.wrapping_add(GAMMA);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A SplitMix64 stream.
#[derive(Debug, Clone)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    /// Seed a stream.
    pub const fn new(seed: u64) -> SplitMix64 {
        SplitMix64(seed)
    }

    /// Return the next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        let out = mix(self.0);
        self.0 = self.0.wrapping_add(GAMMA);
        out
    }

    /// Return a uniform float in [0, 1) (53 random bits).
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The first outputs of SplitMix64 seeded with 1234567, as the reference C code gives
    /// them (6457827717110365317, 3203168211198807973, 9817491932198370423).
    #[test]
    fn the_stream_is_splitmix64() {
        let mut s = SplitMix64::new(1_234_567);
        let first: [u64; 3] = core::array::from_fn(|_| s.next_u64());
        assert_eq!(
            first,
            [
                0x599E_D017_FB08_FC85,
                0x2C73_F084_5854_0FA5,
                0x883E_BCE5_A3F2_7C77
            ]
        );
        assert_eq!(mix(1_234_567), 0x599E_D017_FB08_FC85);
    }
}
