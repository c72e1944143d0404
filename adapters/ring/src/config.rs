//! What a rank needs to join the ring.

use std::time::Duration;

/// What a rank needs to join the ring.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RingConfig {
    /// This rank, `0..world`.
    pub rank: u16,
    /// The number of ranks.
    pub world: u16,
    /// The job id: a handshake for another job is refused.
    pub job: u16,
    /// The job's key, which every handshake and frame proves (0: no key).
    pub key: u64,
    /// How long any step waits for a peer before it fails, naming the peer.
    pub timeout: Duration,
}
