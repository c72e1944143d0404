//! What one simulated run is: the job, the network and the protocol's knobs.

use switchml_core::wire;

use crate::clock::Nanos;
use crate::link::LinkConfig;

/// The element type the workers reduce.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dtype {
    /// f32, quantized to int32 per block (each tensor primes its exponents first).
    F32,
    /// int32, summed as is.
    I32,
}

/// Which switch aggregates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SwitchModel {
    /// The core's reference switch (k up to 1,024).
    #[default]
    Reference,
    /// The Rust model of the P4 pipeline, register by register (k up to 256, 64 ranks).
    P4Model,
}

/// Which links lose packets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LossOn {
    /// Uplinks and downlinks.
    #[default]
    Both,
    /// Only the uplinks (Contributions and Joins are lost).
    Uplinks,
    /// Only the downlinks (Results and JoinReplies are lost).
    Downlinks,
}

/// A link's direction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// Rank to switch.
    Up,
    /// Switch to rank.
    Down,
}

/// One worker slowed down: rank 0 starts late, or has slower links, or both.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Straggler {
    /// How long after the others rank 0 submits its tensor.
    pub delay: Nanos,
    /// Rank 0's line rate (both directions), if not the others'.
    pub bits_per_sec: Option<u64>,
}

/// One run: `workers` ranks on a star around one switch, every link alike.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Scenario {
    /// Number of ranks (`P`).
    pub workers: u16,
    /// Every link's line rate, bits per second.
    pub bits_per_sec: u64,
    /// Every link's one-way propagation delay.
    pub propagation: Nanos,
    /// Time the switch takes from a packet's arrival to its answer's enqueueing.
    pub switch_latency: Nanos,
    /// The loss probability of every link `loss_on` names.
    pub loss: f64,
    /// Which links lose packets.
    pub loss_on: LossOn,
    /// Every transmit queue's limit in bytes.
    pub queue_bytes: u64,
    /// Every transmit queue's limit in packets.
    pub queue_packets: usize,
    /// Elements of the tensor each rank all-reduces.
    pub elements: usize,
    /// Elements per bucket: the tensor is submitted in buckets of this size, two in
    /// flight at a time (as PyTorch DDP hands gradient buckets to its backend).
    pub bucket_elements: usize,
    /// Values per packet (`k`).
    pub count: u16,
    /// Slots each worker drives (the pool size `s`).
    pub window: u16,
    /// The retransmission timeout's floor (the first timeout), microseconds.
    pub rto_us: u64,
    /// The retransmission timeout's ceiling after doubling, microseconds.
    pub max_rto_us: u64,
    /// Staggered timeouts: rank `r`'s first timeout (and ceiling) is `r` times this longer,
    /// microseconds (0: every rank alike).
    pub rto_stagger_us: u64,
    /// What the tensor holds.
    pub dtype: Dtype,
    /// The seed of every random choice.
    pub seed: u64,
    /// A slow rank, if any.
    pub straggler: Straggler,
    /// The switch.
    pub switch: SwitchModel,
    /// Whether the reference switch offers `PROBE_RESULTS` (protocol.md §6.1), as the
    /// software switch does; the P4 model never does.
    pub probe_results: bool,
    /// Whether the workers run the congestion controller (protocol.md §6.3).
    pub congestion: bool,
    /// Every queue marks a packet that finds this many bytes ahead of it (a Contribution
    /// or Result gets `CONGESTED`, as an ECN queue sets CE); `u64::MAX`: no marking.
    pub mark_bytes: u64,
    /// A bulk TCP-like flow (Reno) shares rank 0's uplink for the whole run.
    pub competing_flow: bool,
    /// The width of the throughput-over-time bins.
    pub series_bin: Nanos,
}

impl Default for Scenario {
    /// 16 ranks at 100 Gb/s, 1 µs links, 100 MiB of f32 each in 25 MiB buckets, k = 256,
    /// 256 slots, 1 ms first timeout, no loss.
    fn default() -> Self {
        Scenario {
            workers: 16,
            bits_per_sec: 100_000_000_000,
            propagation: 1000,
            switch_latency: 0,
            loss: 0.0,
            loss_on: LossOn::Both,
            queue_bytes: 16 << 20,
            queue_packets: usize::MAX,
            elements: 25 << 20,
            bucket_elements: 25 << 18,
            count: 256,
            window: 256,
            rto_us: 1000,
            max_rto_us: 64_000,
            rto_stagger_us: 0,
            dtype: Dtype::F32,
            seed: 1,
            straggler: Straggler::default(),
            switch: SwitchModel::Reference,
            probe_results: true,
            congestion: false,
            mark_bytes: u64::MAX,
            competing_flow: false,
            series_bin: 100_000_000,
        }
    }
}

impl Scenario {
    /// Return the link config of `rank`'s link in `direction`.
    pub fn link(&self, rank: u16, direction: Direction) -> LinkConfig {
        let slow = self.straggler.bits_per_sec.filter(|_| rank == 0);
        let lossy = matches!(
            (self.loss_on, direction),
            (LossOn::Both, _)
                | (LossOn::Uplinks, Direction::Up)
                | (LossOn::Downlinks, Direction::Down)
        );
        LinkConfig {
            bits_per_sec: slow.unwrap_or(self.bits_per_sec),
            propagation: self.propagation,
            loss: if lossy { self.loss } else { 0.0 },
            queue_bytes: self.queue_bytes,
            queue_packets: self.queue_packets,
            mark_bytes: self.mark_bytes,
        }
    }

    /// Return the UDP payload of a full data packet: the header and `k` int32.
    pub fn data_payload(&self) -> usize {
        wire::data::HEADER_LEN + 4 * usize::from(self.count)
    }
}
