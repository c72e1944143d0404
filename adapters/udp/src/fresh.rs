//! Fresh values from the host, the adapters' only randomness: job keys for a switch and
//! workers started together, a communicator's nonce, a switch's epoch.

/// A random value from the standard library's OS-seeded hasher keys: a job key for a switch
/// and workers started together (the demo, benchmarks), a communicator's nonce.
pub fn fresh_key() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u32(fresh_epoch());
    h.finish()
}

/// A new epoch: wall-clock nanoseconds and the process id, mixed.
pub fn fresh_epoch() -> u32 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    let mut z = nanos ^ (u64::from(std::process::id()) << 32);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    (z ^ (z >> 31)) as u32
}
